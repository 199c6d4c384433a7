#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "format/gguf.h"
#include "seam/error.h"
#include "tokenizer/families.h"

namespace seam {

namespace {

[[noreturn]] void bad_format(const GgufFile& f, const std::string& what) {
  throw Error(Errc::BadFormat, "[tokenizer] " + f.source() + ": " + what);
}

const GgufArray& require_array(const GgufFile& f, std::string_view key, GgufValueType elem) {
  const GgufArray* a = f.get_array(key);
  if (a == nullptr)
    bad_format(f, "missing " + std::string(key) + "; the file carries no tokenizer");
  for (const GgufValue& item : a->items) {
    const bool ok = elem == GgufValueType::STRING ? std::holds_alternative<std::string>(item.v)
                                                  : !std::holds_alternative<std::string>(item.v) &&
                                                        !std::holds_alternative<GgufArray>(item.v);
    if (!ok) bad_format(f, std::string(key) + " holds an element of the wrong type");
  }
  return *a;
}

double as_number(const GgufValue& v) {
  if (const auto* d = std::get_if<double>(&v.v)) return *d;
  if (const auto* i = std::get_if<std::int64_t>(&v.v)) return static_cast<double>(*i);
  if (const auto* u = std::get_if<std::uint64_t>(&v.v)) return static_cast<double>(*u);
  if (const auto* b = std::get_if<bool>(&v.v)) return *b ? 1.0 : 0.0;
  return 0.0;
}

// Texts llama.cpp treats as ending a turn, whatever the metadata says.
constexpr std::array<std::string_view, 15> kEogTexts = {
    "<|eot_id|>", "<|im_end|>",    "<|end|>",         "<|return|>",
    "<|call|>",   "<end_of_turn>", "<|endoftext|>",   "<|eom_id|>",
    "<EOT>",      "_<EOT>",        "<|end_of_text|>", "<end_of_utterance>",
    "<eos>",      "<turn|>",       "<|tool_response>"};  // the last three: Gemma 4
// Candidates for EOT when tokenizer.ggml.eot_token_id is absent, in priority order.
constexpr std::array<std::string_view, 9> kEotTexts = {
    "<|eot_id|>",        "<|im_end|>", "<|end|>", "<end_of_turn>",
    "<|endoftext|>",     "<EOT>",      "_<EOT>",  "<｜end▁of▁sentence｜>",
    "<end_of_utterance>"};
// Fill-in-the-middle pad / repo / file-separator tokens, when their keys are
// absent, are found by these texts (first in list order); they end generation too.
constexpr std::array<std::string_view, 4> kFimPadTexts = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>",
                                                          "<PAD>"};
constexpr std::array<std::string_view, 5> kFimRepTexts = {"<|fim_repo|>", "<|repo_name|>",
                                                          "<fim-repo>", "<REPO>", "<reponame>"};
constexpr std::array<std::string_view, 1> kFimSepTexts = {"<|file_sep|>"};

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufFile& f) {
  const auto model = f.get_string("tokenizer.ggml.model");
  if (!model) bad_format(f, "missing tokenizer.ggml.model; the file carries no tokenizer");
  if (*model != "llama" && *model != "gpt2" && *model != "gemma4" && *model != "bert" &&
      *model != "t5") {
    throw Error(Errc::Unsupported,
                "[tokenizer] " + f.source() + ": unsupported tokenizer model '" + *model +
                    "' (tokenizer.ggml.model); supported: llama, gpt2, gemma4, bert, t5");
  }

  Vocab v;
  v.model = *model;
  v.pre = f.get_string("tokenizer.ggml.pre").value_or("default");

  const GgufArray& tokens = require_array(f, "tokenizer.ggml.tokens", GgufValueType::STRING);
  const std::size_t n = tokens.items.size();
  if (n == 0) bad_format(f, "tokenizer.ggml.tokens is empty");
  if (n > static_cast<std::size_t>(INT32_MAX)) bad_format(f, "tokenizer.ggml.tokens is too long");
  std::size_t n_bytes = 0;
  for (const GgufValue& t : tokens.items) n_bytes += std::get<std::string>(t.v).size();
  v.text.reserve(n, n_bytes);
  for (const GgufValue& t : tokens.items) v.text.push_back(std::get<std::string>(t.v));

  v.score.assign(n, 0.0f);
  if (f.find("tokenizer.ggml.scores") != nullptr) {
    const GgufArray& scores = require_array(f, "tokenizer.ggml.scores", GgufValueType::FLOAT32);
    if (scores.items.size() != n) {
      bad_format(f, "tokenizer.ggml.scores has " + std::to_string(scores.items.size()) +
                        " entries for " + std::to_string(n) + " tokens");
    }
    for (std::size_t i = 0; i < n; ++i) v.score[i] = static_cast<float>(as_number(scores.items[i]));
  }

  v.attr.assign(n, TokenAttr::Normal);
  if (f.find("tokenizer.ggml.token_type") != nullptr) {
    const GgufArray& types = require_array(f, "tokenizer.ggml.token_type", GgufValueType::INT32);
    if (types.items.size() != n) {
      bad_format(f, "tokenizer.ggml.token_type has " + std::to_string(types.items.size()) +
                        " entries for " + std::to_string(n) + " tokens");
    }
    for (std::size_t i = 0; i < n; ++i) {
      const double t = as_number(types.items[i]);
      if (t < 0 || t > 6) {
        bad_format(f, "tokenizer.ggml.token_type[" + std::to_string(i) +
                          "] = " + std::to_string(static_cast<long long>(t)) +
                          " is not a token type (0..6)");
      }
      v.attr[i] = t == 0 ? TokenAttr::Normal : static_cast<TokenAttr>(static_cast<int>(t) - 1);
    }
  }

  v.text.build_index();

  const auto id = [&](std::string_view key) -> std::optional<Token> {
    const auto x = f.get_int(key);
    // Some converters write -1 (or UINT32_MAX) for "no such token".
    if (!x || *x == -1 || *x == 0xFFFFFFFFll) return std::nullopt;
    if (*x < 0 || static_cast<std::uint64_t>(*x) >= n) {
      bad_format(f, std::string(key) + " = " + std::to_string(*x) + " is out of range for " +
                        std::to_string(n) + " tokens");
    }
    return static_cast<Token>(*x);
  };
  v.bos = id("tokenizer.ggml.bos_token_id");
  v.eos = id("tokenizer.ggml.eos_token_id");
  v.unk = id("tokenizer.ggml.unknown_token_id");
  v.sep = id("tokenizer.ggml.seperator_token_id");
  v.pad = id("tokenizer.ggml.padding_token_id");
  v.eot = id("tokenizer.ggml.eot_token_id");
  v.eom = id("tokenizer.ggml.eom_token_id");

  // Family defaults as llama.cpp applies them when the metadata is silent.
  if (v.model == "llama") {
    v.add_bos = true;
  } else if (v.model == "bert") {
    if (!v.bos) v.bos = id("tokenizer.ggml.cls_token_id");
    if (!v.eos) v.eos = v.sep;
    v.add_bos = v.add_eos = true;
  } else if (v.model == "t5") {
    v.add_eos = true;
  }  // BPE defaults depend on the pre-tokenizer: make_bpe_tokenizer applies them.
  v.add_bos = f.get_bool("tokenizer.ggml.add_bos_token").value_or(v.add_bos);
  v.add_eos = f.get_bool("tokenizer.ggml.add_eos_token").value_or(v.add_eos);

  if (!v.eot) {
    for (std::string_view s : kEotTexts) {
      if (auto t = v.text.find(s)) {
        v.eot = t;
        v.attr[*t] = TokenAttr::Control;
        break;
      }
    }
  }
  if (!v.eom) v.eom = v.text.find("<|eom_id|>");
  // Tokens that end a turn or a FIM document, found by text, become control
  // tokens (as llama.cpp makes them): never split out of plain text, never
  // rendered by Detok::Plain.
  std::vector<Token> eog;
  const auto add_eog = [&](std::optional<Token> t, bool make_control) {
    if (!t) return;
    eog.push_back(*t);
    if (make_control) v.attr[*t] = TokenAttr::Control;
  };
  const auto first_of = [&](std::span<const std::string_view> texts) -> std::optional<Token> {
    for (std::string_view s : texts) {
      if (auto t = v.text.find(s)) return t;
    }
    return std::nullopt;
  };
  for (std::string_view s : kEogTexts) add_eog(v.text.find(s), true);
  const std::pair<const char*, std::span<const std::string_view>> fim[] = {
      {"tokenizer.ggml.fim_pad_token_id", kFimPadTexts},
      {"tokenizer.ggml.fim_rep_token_id", kFimRepTexts},
      {"tokenizer.ggml.fim_sep_token_id", kFimSepTexts}};
  for (const auto& [key, texts] : fim) {
    if (auto t = id(key)) {
      add_eog(t, false);
    } else {
      add_eog(first_of(texts), true);
    }
  }
  add_eog(v.eos, false);
  add_eog(v.eot, false);
  add_eog(v.eom, false);
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
  // gpt-oss (o200k_harmony) ends turns with <|return|> / <|call|>; its <|end|>
  // only closes a message, so it is ordinary user-defined text there.
  const auto ret = v.text.find("<|return|>"), call = v.text.find("<|call|>"),
             end = v.text.find("<|end|>");
  if (ret && call && end) {
    eog.erase(std::remove(eog.begin(), eog.end(), *end), eog.end());
    v.attr[*end] = TokenAttr::UserDefined;
  }
  v.eog = std::move(eog);

  // Phi-3's special tokens swallow the whitespace after them (rstrip in its
  // tokenizer.json, which GGUF does not carry; llama.cpp keys it on the name).
  v.rstrip.assign(n, 0);
  std::string name = f.get_string("general.name").value_or("");
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
    for (std::size_t i = 0; i < n; ++i) {
      const TokenAttr a = v.attr[i];
      v.rstrip[i] =
          a == TokenAttr::Control || a == TokenAttr::UserDefined || a == TokenAttr::Unknown;
    }
    for (std::string_view s : {"<unk>", "<s>", "<|endoftext|>"}) {
      if (auto t = v.text.find(s)) v.rstrip[*t] = 0;
    }
  }

  if (v.model == "llama") return make_spm_tokenizer(std::move(v), f);
  if (v.model == "gpt2" || v.model == "gemma4") return make_bpe_tokenizer(std::move(v), f);
  if (v.model == "t5") return make_ugm_tokenizer(std::move(v), f);
  return make_wpm_tokenizer(std::move(v), f);
}

Tokenizer::Tokenizer(Vocab v) : v_(std::move(v)) { build_trie(); }

Tokenizer::~Tokenizer() = default;

void Tokenizer::build_trie() {
  trie_.assign(1, TrieNode{});
  for (std::size_t id = 0; id < v_.text.size(); ++id) {
    const TokenAttr a = v_.attr[id];
    if (a != TokenAttr::Control && a != TokenAttr::UserDefined && a != TokenAttr::Unknown) continue;
    const std::string_view s = v_.text[id];
    if (s.empty()) continue;
    std::uint32_t node = 0;
    for (unsigned char c : s) {
      auto& next = trie_[node].next;
      auto it = std::lower_bound(next.begin(), next.end(), c,
                                 [](const auto& p, unsigned char b) { return p.first < b; });
      if (it != next.end() && it->first == c) {
        node = it->second;
      } else {
        const auto child = static_cast<std::uint32_t>(trie_.size());
        next.insert(it, {c, child});
        trie_.emplace_back();  // invalidates `next`; not used after this
        node = child;
      }
    }
    if (trie_[node].token < 0) trie_[node].token = static_cast<Token>(id);
  }
}

std::vector<Token> Tokenizer::encode(std::string_view text, bool add_special,
                                     bool parse_special) const {
  if (text.size() > static_cast<std::size_t>(INT32_MAX)) {
    throw Error(Errc::InvalidArgument, "[tokenizer] text of " + std::to_string(text.size()) +
                                           " bytes is too long to tokenize (limit 2 GiB)");
  }
  std::vector<Token> out;
  out.reserve(text.size() / 3 + 4);
  if (add_special && v_.add_bos && v_.bos) out.push_back(*v_.bos);

  // Split special tokens out leftmost-longest (as Hugging Face's added-token
  // matcher does); control and unknown tokens only when parse_special.
  bool after_special = true;
  std::size_t start = 0;
  const auto flush = [&](std::size_t end) {
    if (end > start) {
      encode_fragment(text.substr(start, end - start), after_special, out);
      after_special = false;
    }
  };
  for (std::size_t i = 0; i < text.size();) {
    std::uint32_t node = 0;
    Token best = -1;
    std::size_t best_len = 0;
    for (std::size_t j = i; j < text.size(); ++j) {
      const auto& next = trie_[node].next;
      const auto c = static_cast<unsigned char>(text[j]);
      auto it = std::lower_bound(next.begin(), next.end(), c,
                                 [](const auto& p, unsigned char b) { return p.first < b; });
      if (it == next.end() || it->first != c) break;
      node = it->second;
      const Token t = trie_[node].token;
      if (t >= 0 && (parse_special || v_.attr[t] == TokenAttr::UserDefined)) {
        best = t;
        best_len = j - i + 1;
      }
    }
    if (best < 0) {
      ++i;
      continue;
    }
    flush(i);
    out.push_back(best);
    after_special = true;
    i += best_len;
    if (v_.rstrip[best]) {
      while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    }
    start = i;
  }
  flush(text.size());

  if (add_special && v_.add_eos && v_.eos) out.push_back(*v_.eos);
  return out;
}

void Tokenizer::check(Token t) const {
  if (t < 0 || static_cast<std::size_t>(t) >= v_.text.size()) {
    throw Error(Errc::InvalidArgument, "[tokenizer] token id " + std::to_string(t) +
                                           " is out of range (vocabulary has " +
                                           std::to_string(v_.text.size()) + " tokens)");
  }
}

std::string_view Tokenizer::token_text(Token t) const {
  check(t);
  return v_.text[t];
}

TokenAttr Tokenizer::attr(Token t) const {
  check(t);
  return v_.attr[t];
}

float Tokenizer::score(Token t) const {
  check(t);
  return v_.score[t];
}

bool Tokenizer::is_eog(Token t) const {
  check(t);
  return std::binary_search(v_.eog.begin(), v_.eog.end(), t);
}

std::optional<Token> Tokenizer::find(std::string_view text) const { return v_.text.find(text); }

std::string Tokenizer::piece(Token t, Detok mode) const {
  check(t);
  switch (v_.attr[t]) {
    case TokenAttr::Control:
    case TokenAttr::Unknown:
    case TokenAttr::Unused:
      return mode == Detok::Text ? std::string(v_.text[t]) : std::string();
    case TokenAttr::UserDefined:
      return std::string(v_.text[t]);
    case TokenAttr::Normal:
    case TokenAttr::Byte:
      break;
  }
  return normal_piece(t);
}

std::string Tokenizer::decode(std::span<const Token> tokens, Detok mode) const {
  std::string out;
  bool strip = strips_leading_space();
  for (Token t : tokens) {
    std::string p = piece(t, mode);
    if (strip) {
      const TokenAttr a = v_.attr[t];
      if (a != TokenAttr::Control && a != TokenAttr::Unknown && a != TokenAttr::Unused) {
        if (!p.empty() && p[0] == ' ') p.erase(0, 1);
        strip = false;
      }
    }
    out += p;
  }
  return out;
}

}  // namespace seam
