// Byte-level BPE (tokenizer.ggml.model = "gpt2").
//
// The text is cut into pre-tokens by the regex sequence tokenizer.ggml.pre
// names (each regex splits every current piece into its matches and the gaps
// between them). Each pre-token's UTF-8 bytes are spelled in the GPT-2
// byte<->unicode alphabet, and merges (tokenizer.ggml.merges, lower index =
// higher priority) are applied to adjacent symbols, lowest rank first, leftmost
// on ties.
#include <array>
#include <memory>
#include <optional>
#include <queue>

#include "format/gguf.h"
#include "seam/error.h"
#include "tokenizer/families.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/unicode.h"

namespace seam {

namespace {

struct Merge {
  std::int32_t rank;
  Token result;
};

class BpeTokenizer final : public Tokenizer {
 public:
  BpeTokenizer(Vocab v, const GgufFile& file, const Family& family)
      : Tokenizer(std::move(v)), pre_(family) {
    if (pre_.flags() & kMetaspace) {
      for (std::size_t id = 0; id < v_.text.size(); ++id) {
        if (v_.attr[id] != TokenAttr::Byte) continue;
        const int b = unicode::byte_of_piece(v_.text[id]);
        if (b >= 0 && fallback_[b] < 0) fallback_[b] = static_cast<Token>(id);
      }
    } else {
      const auto& alphabet = unicode::byte_to_unicode();
      for (int b = 0; b < 256; ++b) {
        std::string s;
        unicode::append_utf8(s, alphabet[b]);
        byte_token_[b] = v_.text.find(s).value_or(-1);
        byte_char_[b] = std::move(s);
      }
    }

    const GgufArray* merges = file.get_array("tokenizer.ggml.merges");
    if (merges == nullptr) {
      throw Error(Errc::BadFormat, "[tokenizer] " + file.source() +
                                       ": missing tokenizer.ggml.merges for a BPE ('" + v_.model +
                                       "') vocabulary");
    }
    merges_.reserve(merges->items.size());
    std::string joined;
    for (std::size_t rank = 0; rank < merges->items.size(); ++rank) {
      const auto* m = std::get_if<std::string>(&merges->items[rank].v);
      // A merge is "left right"; searching from 1 lets `left` itself be a space.
      const std::size_t sp = m == nullptr || m->empty() ? std::string::npos : m->find(' ', 1);
      if (sp == std::string::npos) {
        throw Error(Errc::BadFormat, "[tokenizer] " + file.source() + ": tokenizer.ggml.merges[" +
                                         std::to_string(rank) + "] is not \"left right\"");
      }
      const std::string_view ms(*m);
      const auto l = find(ms.substr(0, sp));
      const auto r = find(ms.substr(sp + 1));
      joined.assign(ms.substr(0, sp));
      joined.append(ms.substr(sp + 1));
      const auto lr = find(joined);
      // A merge whose parts or result are not in the vocab can never fire.
      if (!l || !r || !lr) continue;
      merges_.try_emplace(key(*l, *r), Merge{static_cast<std::int32_t>(rank), *lr});
    }
  }

 protected:
  void encode_fragment(std::string_view text, bool after_special,
                       std::vector<Token>& out) const override;
  std::string normal_piece(Token t) const override;

 private:
  static std::uint64_t key(Token l, Token r) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(l)) << 32) |
           static_cast<std::uint32_t>(r);
  }
  void bpe(std::string_view word, std::vector<Token>& out) const;

  PreTokenizer pre_;
  std::array<Token, 256> byte_token_{};     // byte -> token of its alphabet symbol, -1 if absent
  std::array<std::string, 256> byte_char_;  // byte -> its alphabet symbol, UTF-8
  std::array<Token, 256> fallback_ =
      filled(-1);  // metaspace: byte -> its <0xXX> token, -1 if absent
  std::unordered_map<std::uint64_t, Merge> merges_;  // (left, right) -> rank, result

  static constexpr std::array<Token, 256> filled(Token t) {
    std::array<Token, 256> a{};
    a.fill(t);
    return a;
  }
};

void BpeTokenizer::encode_fragment(std::string_view raw, bool /*after_special*/,
                                   std::vector<Token>& out) const {
  std::string buf;
  const std::string_view text = pre_.normalize(raw, buf);
  std::vector<std::pair<std::size_t, std::size_t>> words;
  pre_.split(text, words);
  std::string spelled;
  for (const auto& [off, len] : words) {
    const std::string_view w = text.substr(off, len);
    if ((pre_.flags() & kIgnoreMerges) && len > 1) {
      // A pre-token that is itself a vocab entry is emitted whole.
      spelled.clear();
      for (char c : w) spelled += byte_char_[static_cast<unsigned char>(c)];
      if (auto t = find(spelled)) {
        out.push_back(*t);
        continue;
      }
    }
    if ((pre_.flags() & kNewlineRuns) && w.find_first_not_of('\n') == std::string_view::npos) {
      // Gemma 4 keeps a run of newlines whole when the vocab has it (llama.cpp
      // matches the reference this way; the merges would split long runs).
      if (auto t = find(w)) {
        out.push_back(*t);
        continue;
      }
    }
    bpe(w, out);
  }
}

void BpeTokenizer::bpe(std::string_view word, std::vector<Token>& out) const {
  constexpr Token kDead = INT32_MIN;
  struct Sym {
    Token id;  // -1: a symbol that is not in the vocab; kDead: merged away
    std::int32_t prev, next;
    std::uint32_t off, len;  // the symbol's first character in `word`
  };
  // Initial symbols: bytes spelled in the GPT-2 alphabet, or (metaspace) UTF-8
  // characters; `word` is valid UTF-8 here.
  std::vector<Sym> sym;
  sym.reserve(word.size());
  const bool metaspace = pre_.flags() & kMetaspace;
  for (std::size_t i = 0; i < word.size();) {
    std::size_t n = 1;
    Token id = byte_token_[static_cast<unsigned char>(word[i])];
    if (metaspace) {
      char32_t cp;
      n = static_cast<std::size_t>(std::max(1, unicode::decode_utf8(word, i, cp)));
      id = find(word.substr(i, n)).value_or(-1);
    }
    const auto k = static_cast<std::int32_t>(sym.size());
    sym.push_back({id, k - 1, k + 1, static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(n)});
    i += n;
  }
  if (sym.empty()) return;
  sym.back().next = -1;
  const auto n = static_cast<std::int32_t>(sym.size());

  struct Cand {
    std::int32_t rank, left;
    Token lid, rid;
  };
  const auto worse = [](const Cand& a, const Cand& b) {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  };
  std::priority_queue<Cand, std::vector<Cand>, decltype(worse)> queue(worse);
  const auto try_add = [&](std::int32_t l) {
    if (l < 0) return;
    const std::int32_t r = sym[l].next;
    if (r < 0 || sym[l].id < 0 || sym[r].id < 0) return;
    auto it = merges_.find(key(sym[l].id, sym[r].id));
    if (it != merges_.end()) queue.push({it->second.rank, l, sym[l].id, sym[r].id});
  };
  for (std::int32_t i = 0; i + 1 < n; ++i) try_add(i);

  while (!queue.empty()) {
    const Cand c = queue.top();
    queue.pop();
    Sym& l = sym[c.left];
    if (l.id != c.lid || l.next < 0) continue;  // stale
    Sym& r = sym[l.next];
    if (r.id != c.rid) continue;
    l.id = merges_.find(key(c.lid, c.rid))->second.result;
    r.id = kDead;
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = c.left;
    try_add(l.prev);
    try_add(c.left);
  }

  for (std::int32_t i = 0; i >= 0; i = sym[i].next) {
    const Sym& s = sym[i];
    if (s.id >= 0) {
      out.push_back(s.id);
      continue;
    }
    if (metaspace) {
      // Byte fallback: a character outside the vocab becomes its <0xXX> tokens.
      bool all = true;
      for (std::uint32_t k = 0; k < s.len; ++k) {
        all &= fallback_[static_cast<unsigned char>(word[s.off + k])] >= 0;
      }
      if (all) {
        for (std::uint32_t k = 0; k < s.len; ++k) {
          out.push_back(fallback_[static_cast<unsigned char>(word[s.off + k])]);
        }
        continue;
      }
    }
    if (v_.unk) out.push_back(*v_.unk);
    // else: like the references, a byte the vocab cannot spell is dropped.
  }
}

std::string BpeTokenizer::normal_piece(Token t) const {
  const std::string_view s = v_.text[t];
  if (pre_.flags() & kMetaspace) {
    const int b = unicode::byte_of_piece(s);
    if (b >= 0 && v_.attr[t] == TokenAttr::Byte) return std::string(1, static_cast<char>(b));
    return unicode::metaspace_to_spaces(s);
  }
  std::string out;
  out.reserve(s.size());
  char32_t cp;
  for (std::size_t i = 0; i < s.size();) {
    const int n = unicode::decode_utf8(s, i, cp);
    if (n == 0) {
      out += s[i++];
      continue;
    }
    const int b = unicode::unicode_to_byte(cp);
    if (b >= 0) {
      out += static_cast<char>(b);
    } else {
      out.append(s, i, n);  // not a byte-level symbol: keep the text as it is
    }
    i += n;
  }
  return out;
}

}  // namespace

std::unique_ptr<Tokenizer> make_bpe_tokenizer(Vocab v, const GgufFile& file) {
  // A "gemma4" vocabulary is BPE whatever tokenizer.ggml.pre says.
  if (v.model == "gemma4") v.pre = "gemma4";
  const Family& family = require_pre_family(v.pre, file.source());
  const auto add_bos = file.get_bool("tokenizer.ggml.add_bos_token");
  if (family.flags & kBosDefault) v.add_bos = add_bos.value_or(true);
  if (family.flags & kBosAlways) v.add_bos = true;
  return std::make_unique<BpeTokenizer>(std::move(v), file, family);
}

}  // namespace seam
