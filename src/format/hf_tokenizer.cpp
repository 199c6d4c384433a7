// tokenizer.json + tokenizer_config.json -> the tokenizer.ggml.* metadata the
// tokenizer module reads (the same keys the GGUF converters write).
//
// Two shapes of BPE model are recognized:
//   SentencePiece-style ("llama"): byte_fallback, '▁' for spaces, a Metaspace
//     pre-tokenizer or a Prepend('▁')/Replace(' ', '▁') normalizer. SPM merges
//     by piece score; HF stores merge ranks instead, so a piece's score is
//     minus the rank of the first merge that produces it (the order the HF
//     converter derived the merges from).
//   Byte-level ("gpt2"): a ByteLevel pre-tokenizer, alone or after a Split
//     regex; the regex is matched against the ones whose tokenizer.ggml.pre
//     the tokenizer module implements, and anything else is refused by name.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <unordered_map>

#include "format/hf_json.h"
#include "format/hf_model.h"
#include "seam/error.h"

namespace seam {

namespace {

using hf::json;
namespace fs = std::filesystem;

// Largest token id accepted (the largest real vocabularies hold ~262k).
constexpr std::uint64_t kMaxTokenId = 1u << 21;
// Ids no token has (holes, filled with [PADn] as llama.cpp's converter does) beyond the
// number of tokens defined: real vocabularies have a few hundred at most. Without the
// bound a 2 KB file naming one id near kMaxTokenId costs two million placeholder tokens.
constexpr std::size_t kMaxExtraHoles = 65536;

[[noreturn]] void bad(const std::string& file, const std::string& what) {
  throw Error(Errc::BadFormat, "[hf] " + file + ": " + what);
}
[[noreturn]] void unsupported(const std::string& file, const std::string& what) {
  throw Error(Errc::Unsupported, "[hf] " + file + ": " + what);
}

// Pre-tokenizer regexes as tokenizer.json spells them, and the
// tokenizer.ggml.pre whose regex is the same.
constexpr std::pair<std::string_view, std::string_view> kSplitRegexes[] = {
    {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     "llama-bpe"},
    {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     "qwen2"},
    // GPT-2's own regex written out as a Split (ByteLevel then has use_regex false).
    {R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)", "gpt-2"},
};

std::string type_of(const json& j) {
  if (!j.is_object()) return "";
  auto t = j.find("type");
  return t != j.end() && t->is_string() ? t->get<std::string>() : "";
}

// The list of steps of a Sequence (its key differs per component), or the
// component itself.
std::vector<json> steps(const json& j, std::string_view list_key) {
  if (j.is_null()) return {};
  if (type_of(j) == "Sequence") {
    auto it = j.find(list_key);
    if (it == j.end() || !it->is_array()) return {};
    return std::vector<json>(it->begin(), it->end());
  }
  return {j};
}

std::string summary(const json& j) {
  std::string s = j.dump();
  return s.size() > 160 ? s.substr(0, 160) + "..." : s;
}

// The byte-level pre-tokenizer name, or Error(Unsupported) naming the shape.
std::string byte_level_pre(const json& pre, const std::string& file) {
  const std::vector<json> st = steps(pre, "pretokenizers");
  const auto use_regex = [&](const json& bl) {
    auto it = bl.find("use_regex");
    return it == bl.end() || !it->is_boolean() || it->get<bool>();
  };
  if (st.size() == 1 && type_of(st[0]) == "ByteLevel" && use_regex(st[0])) return "gpt-2";
  if (st.size() == 2 && type_of(st[0]) == "Digits" && type_of(st[1]) == "ByteLevel" &&
      use_regex(st[1])) {
    auto ind = st[0].find("individual_digits");
    if (ind != st[0].end() && ind->is_boolean() && ind->get<bool>()) return "starcoder";
  }
  if (st.size() == 2 && type_of(st[0]) == "Split" && type_of(st[1]) == "ByteLevel" &&
      !use_regex(st[1])) {
    const json& split = st[0];
    auto pat = split.find("pattern");
    auto beh = split.find("behavior");
    auto inv = split.find("invert");
    const bool isolated = beh != split.end() && beh->is_string() && *beh == "Isolated";
    const bool inverted = inv != split.end() && inv->is_boolean() && inv->get<bool>();
    if (pat != split.end() && pat->is_object() && isolated && !inverted) {
      auto rx = pat->find("Regex");
      if (rx != pat->end() && rx->is_string()) {
        for (const auto& [regex, name] : kSplitRegexes) {
          if (*rx == regex) return std::string(name);
        }
      }
    }
  }
  unsupported(file, "byte-level pre-tokenizer " + summary(pre) +
                        " is not one seam implements (known: GPT-2, Llama 3, Qwen2, StarCoder)");
}

// Whether a SentencePiece-style tokenizer adds '▁' in front of the text.
bool spm_space_prefix(const json& tok, const std::string& file) {
  const json& pre = tok.contains("pre_tokenizer") ? tok["pre_tokenizer"] : json();
  const json& norm = tok.contains("normalizer") ? tok["normalizer"] : json();
  for (const json& n : steps(norm, "normalizers")) {
    const std::string t = type_of(n);
    if (t == "Prepend") {
      if (n.value("prepend", "") != "\u2581") unsupported(file, "normalizer " + summary(n));
      return true;
    }
    if (t != "Replace" && t != "NFKC" && t != "NFC") unsupported(file, "normalizer " + summary(n));
  }
  for (const json& p : steps(pre, "pretokenizers")) {
    if (type_of(p) != "Metaspace") {
      unsupported(file, "SentencePiece-style pre-tokenizer " + summary(p) + " is not supported");
    }
    if (auto scheme = p.find("prepend_scheme"); scheme != p.end() && scheme->is_string()) {
      return *scheme != "never";
    }
    return p.value("add_prefix_space", true);
  }
  return false;
}

// Token text of an AddedToken written as a string or as {"content": ...}.
std::optional<std::string> token_text(const json& cfg, std::string_view key,
                                      const std::string& file) {
  auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) {
    auto c = it->find("content");
    if (c != it->end() && c->is_string()) return c->get<std::string>();
  }
  bad(file, "'" + std::string(key) + "' must be a token string");
}

}  // namespace

std::vector<std::pair<std::string, GgufValue>> hf_tokenizer_metadata(const std::string& dir) {
  const fs::path root(dir);
  const std::string tok_path = (root / "tokenizer.json").string();
  if (!fs::exists(tok_path)) {
    throw Error(Errc::Io, "[hf] " + dir +
                              " has no tokenizer.json; seam reads Hugging Face tokenizers only in "
                              "that form");
  }
  const json tok = hf::read_json_object(tok_path);
  const std::string cfg_path = (root / "tokenizer_config.json").string();
  const json tcfg = fs::exists(cfg_path) ? hf::read_json_object(cfg_path) : json::object();
  const std::string model_cfg_path = (root / "config.json").string();
  const json mcfg =
      fs::exists(model_cfg_path) ? hf::read_json_object(model_cfg_path) : json::object();

  auto model_it = tok.find("model");
  if (model_it == tok.end() || !model_it->is_object()) bad(tok_path, "lacks a 'model' object");
  const json& model = *model_it;
  std::string mtype = type_of(model);
  if (mtype.empty() && model.contains("merges")) mtype = "BPE";
  if (mtype != "BPE") {
    unsupported(tok_path, "tokenizer model type '" + mtype +
                              "' is not supported (seam reads BPE tokenizer.json files)");
  }

  // ---- vocabulary: model.vocab plus added_tokens, by id ----
  auto vocab_it = model.find("vocab");
  if (vocab_it == model.end() || !vocab_it->is_object() || vocab_it->empty()) {
    bad(tok_path, "model.vocab must be a non-empty object");
  }
  std::vector<std::optional<std::string>> text;
  std::vector<std::int32_t> type;  // tokenizer.ggml.token_type, 0 = not yet known
  const auto put = [&](std::uint64_t id, const std::string& what) {
    if (id >= kMaxTokenId) bad(tok_path, what + " id " + std::to_string(id) + " is too large");
    if (id >= text.size()) {
      text.resize(id + 1);
      type.resize(id + 1, 0);
    }
    return id;
  };
  for (const auto& [piece, idv] : vocab_it->items()) {
    if (!idv.is_number_unsigned()) bad(tok_path, "model.vocab id of '" + piece + "' is not an id");
    const std::uint64_t id = put(idv.get<std::uint64_t>(), "model.vocab");
    if (text[id] && *text[id] != piece) {
      bad(tok_path, "model.vocab gives id " + std::to_string(id) + " to both '" + *text[id] +
                        "' and '" + piece + "'");
    }
    text[id] = piece;
    type[id] = 1;  // normal
  }
  if (auto added = tok.find("added_tokens"); added != tok.end() && !added->is_null()) {
    if (!added->is_array()) bad(tok_path, "added_tokens must be a list");
    for (const json& a : *added) {
      if (!a.is_object()) bad(tok_path, "added_tokens holds a non-object");
      const auto id = hf::get_uint(a, "id", tok_path);
      const auto content = hf::get_string(a, "content", tok_path);
      if (!id || !content) bad(tok_path, "an added token lacks 'id' or 'content'");
      put(*id, "added token");
      text[*id] = *content;
      type[*id] = hf::get_bool(a, "special", tok_path).value_or(false) ? 3 : 4;
    }
  }
  const std::size_t n = text.size();
  const auto defined = static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](const auto& t) { return t.has_value(); }));
  if (n - defined > defined + kMaxExtraHoles) {
    bad(tok_path, "the vocabulary names " + std::to_string(defined) + " tokens but ids up to " +
                      std::to_string(n - 1) + ": at most " +
                      std::to_string(defined + kMaxExtraHoles) + " ids may lack a token");
  }
  std::unordered_map<std::string, std::uint32_t> by_text;
  for (std::size_t i = n; i-- > 0;) {
    if (text[i]) by_text[*text[i]] = static_cast<std::uint32_t>(i);  // lowest id wins
  }
  const auto id_of = [&](const std::string& s, const std::string& what) -> std::uint32_t {
    auto it = by_text.find(s);
    if (it == by_text.end()) bad(tok_path, what + " '" + s + "' is not in the vocabulary");
    return it->second;
  };

  // ---- merges: "a b" strings or [a, b] pairs ----
  std::vector<std::pair<std::string, std::string>> merges;
  if (auto m = model.find("merges"); m != model.end() && !m->is_null()) {
    if (!m->is_array()) bad(tok_path, "model.merges must be a list");
    merges.reserve(m->size());
    for (const json& e : *m) {
      if (e.is_string()) {
        const std::string s = e.get<std::string>();
        const auto sp = s.find(' ');
        if (sp == std::string::npos || sp == 0 || sp + 1 >= s.size() ||
            s.find(' ', sp + 1) != std::string::npos) {
          bad(tok_path, "merge '" + s + "' is not two symbols separated by one space");
        }
        merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
      } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
        merges.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
      } else {
        bad(tok_path, "merge " + summary(e) + " is neither \"a b\" nor [a, b]");
      }
    }
  }

  std::vector<std::pair<std::string, GgufValue>> kv;
  const bool byte_fallback = hf::get_bool(model, "byte_fallback", tok_path).value_or(false);
  const json pre = tok.contains("pre_tokenizer") ? tok["pre_tokenizer"] : json();
  std::vector<float> scores;
  std::string family;
  if (byte_fallback) {
    family = "llama";
    const bool prefix = spm_space_prefix(tok, tok_path);
    // Score = -(rank of the first merge producing the piece); pieces no merge
    // produces rank after every merge so SPM never prefers them.
    scores.assign(n, 0.0f);
    std::vector<bool> scored(n, false);
    for (std::size_t r = 0; r < merges.size(); ++r) {
      auto it = by_text.find(merges[r].first + merges[r].second);
      if (it != by_text.end() && !scored[it->second]) {
        scores[it->second] = -static_cast<float>(r);
        scored[it->second] = true;
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (!scored[i] && type[i] == 1 && text[i] && text[i]->size() > 1) {
        scores[i] = -static_cast<float>(merges.size() + i);
      }
      // <0xXX> pieces are the byte-fallback tokens.
      const std::string& s = text[i] ? *text[i] : std::string();
      if (type[i] == 1 && s.size() == 6 && s.starts_with("<0x") && s.back() == '>' &&
          std::isxdigit(static_cast<unsigned char>(s[3])) &&
          std::isxdigit(static_cast<unsigned char>(s[4]))) {
        type[i] = 6;
      }
    }
    if (auto unk = hf::get_string(model, "unk_token", tok_path)) {
      const std::uint32_t u = id_of(*unk, "model.unk_token");
      type[u] = 2;
      kv.emplace_back("tokenizer.ggml.unknown_token_id", GgufValue::u32(u));
    }
    kv.emplace_back("tokenizer.ggml.add_space_prefix", GgufValue::boolean(prefix));
  } else {
    if (pre.is_null()) unsupported(tok_path, "a BPE tokenizer without a pre-tokenizer");
    family = "gpt2";
    kv.emplace_back("tokenizer.ggml.pre", GgufValue::str(byte_level_pre(pre, tok_path)));
  }

  std::vector<std::string> tokens(n);
  std::vector<std::int32_t> types(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (text[i]) {
      tokens[i] = *text[i];
      types[i] = type[i];
    } else {
      tokens[i] = "[PAD" + std::to_string(i) + "]";  // a hole in the id space
      types[i] = 5;                                  // unused
    }
  }
  kv.insert(kv.begin(), {"tokenizer.ggml.model", GgufValue::str(family)});
  kv.emplace_back("tokenizer.ggml.tokens", GgufValue::strings(tokens));
  if (!scores.empty()) kv.emplace_back("tokenizer.ggml.scores", GgufValue::f32s(scores));
  kv.emplace_back("tokenizer.ggml.token_type", GgufValue::i32s(types));
  if (family == "gpt2") {
    std::vector<std::string> joined;
    joined.reserve(merges.size());
    for (const auto& [a, b] : merges) joined.push_back(a + " " + b);
    kv.emplace_back("tokenizer.ggml.merges", GgufValue::strings(joined));
  }

  // ---- special tokens: tokenizer_config.json, then config.json ids ----
  const auto special = [&](std::string_view cfg_key, std::string_view id_key,
                           const std::string& gguf_key) {
    std::optional<std::uint32_t> id;
    if (auto t = token_text(tcfg, cfg_key, cfg_path)) {
      id = id_of(*t, std::string(cfg_key));
    } else if (auto it = mcfg.find(id_key); it != mcfg.end() && !it->is_null()) {
      const json& v = it->is_array() && !it->empty() ? (*it)[0] : *it;
      if (!v.is_number_unsigned() || v.get<std::uint64_t>() >= n) {
        bad(model_cfg_path, "'" + std::string(id_key) + "' is not a token id of this vocabulary");
      }
      id = static_cast<std::uint32_t>(v.get<std::uint64_t>());
    }
    if (id) kv.emplace_back(gguf_key, GgufValue::u32(*id));
    return id;
  };
  const auto bos = special("bos_token", "bos_token_id", "tokenizer.ggml.bos_token_id");
  special("eos_token", "eos_token_id", "tokenizer.ggml.eos_token_id");
  special("pad_token", "pad_token_id", "tokenizer.ggml.padding_token_id");

  std::optional<bool> add_bos = hf::get_bool(tcfg, "add_bos_token", cfg_path);
  if (!add_bos && bos) {
    // Without the flag, the post-processor says whether BOS leads every text.
    if (auto pp = tok.find("post_processor"); pp != tok.end()) {
      for (const json& p : steps(*pp, "processors")) {
        if (type_of(p) != "TemplateProcessing") continue;
        auto single = p.find("single");
        add_bos = false;
        if (single != p.end() && single->is_array() && !single->empty()) {
          const json& first = (*single)[0];
          auto st = first.find("SpecialToken");
          if (st != first.end() && st->is_object()) {
            auto sid = st->find("id");
            add_bos = sid != st->end() && sid->is_string() && *sid == tokens[*bos];
          }
        }
      }
    }
  }
  if (add_bos) kv.emplace_back("tokenizer.ggml.add_bos_token", GgufValue::boolean(*add_bos));
  if (auto add_eos = hf::get_bool(tcfg, "add_eos_token", cfg_path)) {
    kv.emplace_back("tokenizer.ggml.add_eos_token", GgufValue::boolean(*add_eos));
  }

  // ---- chat templates: a string, a list of {name, template}, or chat_template.jinja ----
  if (auto ct = tcfg.find("chat_template"); ct != tcfg.end() && !ct->is_null()) {
    if (ct->is_string()) {
      kv.emplace_back("tokenizer.chat_template", GgufValue::str(ct->get<std::string>()));
    } else if (ct->is_array()) {
      for (const json& e : *ct) {
        const auto name = e.is_object() ? hf::get_string(e, "name", cfg_path) : std::nullopt;
        const auto tmpl = e.is_object() ? hf::get_string(e, "template", cfg_path) : std::nullopt;
        if (!name || !tmpl) bad(cfg_path, "chat_template list entries need 'name' and 'template'");
        kv.emplace_back(
            *name == "default" ? "tokenizer.chat_template" : "tokenizer.chat_template." + *name,
            GgufValue::str(*tmpl));
      }
    } else {
      bad(cfg_path, "'chat_template' must be a string or a list of {name, template}");
    }
  } else if (const fs::path jinja = root / "chat_template.jinja"; fs::exists(jinja)) {
    std::ifstream in(jinja, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    kv.emplace_back("tokenizer.chat_template", GgufValue::str(ss.str()));
  }
  return kv;
}

}  // namespace seam
