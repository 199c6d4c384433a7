// SentencePiece-style BPE (tokenizer.ggml.model = "llama").
//
// The text gets a dummy-prefix space, spaces become U+2581 '▁', and the text is
// cut into UTF-8 characters. Adjacent symbols whose concatenation is a vocab
// piece are merged, highest score first (leftmost on ties), until no pair is a
// piece. A final symbol that is not a piece falls back to its <0xXX> byte tokens.
// No Unicode normalization is applied, as in Llama 2's sentencepiece model.
#include <array>
#include <queue>

#include "format/gguf.h"
#include "seam/error.h"
#include "tokenizer/families.h"
#include "tokenizer/unicode.h"

namespace seam {

namespace {

constexpr std::string_view kSpace = unicode::kMetaspace;

class SpmTokenizer final : public Tokenizer {
 public:
  SpmTokenizer(Vocab v, bool add_space_prefix)
      : Tokenizer(std::move(v)), add_space_prefix_(add_space_prefix) {
    byte_token_.fill(-1);
    // Byte tokens are typed Byte; a file without token types leaves them Normal,
    // and then (as llama.cpp does) their "<0xXX>" spelling identifies them.
    bool any_typed = false;
    for (TokenAttr a : v_.attr) any_typed |= a == TokenAttr::Byte;
    for (std::size_t id = 0; id < v_.text.size(); ++id) {
      const TokenAttr a = v_.attr[id];
      if (a != TokenAttr::Byte && (any_typed || a != TokenAttr::Normal)) continue;
      const int b = unicode::byte_of_piece(v_.text[id]);
      if (b >= 0 && byte_token_[b] < 0) byte_token_[b] = static_cast<Token>(id);
    }
    for (std::size_t id = 0; id < v_.text.size() && !inner_space_; ++id) {
      const std::string_view t = v_.text[id];
      for (std::size_t p = t.find(kSpace, 1); p != std::string_view::npos && !inner_space_;
           p = t.find(kSpace, p + 1)) {
        inner_space_ = p < kSpace.size() || t.substr(p - kSpace.size(), kSpace.size()) != kSpace;
      }
    }
  }

 protected:
  void encode_fragment(std::string_view text, bool after_special,
                       std::vector<Token>& out) const override;
  std::string normal_piece(Token t) const override;
  bool strips_leading_space() const override { return add_space_prefix_; }

 private:
  // Pieces a merge may produce: sentencepiece never merges into control,
  // unknown, byte or unused pieces.
  std::optional<Token> mergeable(std::string_view s) const {
    const std::optional<Token> t = v_.text.find(s);
    if (!t) return std::nullopt;
    const TokenAttr a = v_.attr[*t];
    if (a != TokenAttr::Normal && a != TokenAttr::UserDefined) return std::nullopt;
    return t;
  }

  void encode_segment(std::string_view s, std::vector<Token>& out) const;

  bool add_space_prefix_;
  // Whether some piece holds a '▁' right after another character. When none
  // does, no merge can cross the start of a word, so words are merged one at a
  // time: same result, small queues.
  bool inner_space_ = false;
  std::array<Token, 256> byte_token_;  // byte -> its <0xXX> token, -1 if the vocab lacks it
};

void SpmTokenizer::encode_fragment(std::string_view text, bool after_special,
                                   std::vector<Token>& out) const {
  std::string s;
  s.reserve(text.size() + 3);
  if (add_space_prefix_ && after_special) s += kSpace;
  for (char c : text) {
    if (c == ' ') {
      s += kSpace;
    } else {
      s += c;
    }
  }
  if (inner_space_) {
    encode_segment(s, out);
    return;
  }
  const std::string_view sv(s);
  std::size_t start = 0;
  for (std::size_t p = sv.find(kSpace, 1); p != std::string_view::npos;
       p = sv.find(kSpace, p + 1)) {
    if (p >= kSpace.size() && sv.substr(p - kSpace.size(), kSpace.size()) == kSpace) {
      continue;  // a run of spaces stays together ("▁▁▁▁" is a piece)
    }
    if (p > start) encode_segment(sv.substr(start, p - start), out);
    start = p;
  }
  encode_segment(sv.substr(start), out);
}

void SpmTokenizer::encode_segment(std::string_view s, std::vector<Token>& out) const {
  // Symbols form a doubly linked list over `s`; a merged-away symbol has len 0.
  struct Sym {
    std::uint32_t off, len;
    std::int32_t prev, next;
  };
  std::vector<Sym> sym;
  sym.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    char32_t cp;
    // An invalid byte stands alone, so it reaches byte fallback unchanged.
    const int n = std::max(1, unicode::decode_utf8(s, i, cp));
    const auto k = static_cast<std::int32_t>(sym.size());
    sym.push_back({static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(n), k - 1, k + 1});
    i += n;
  }
  if (sym.empty()) return;
  sym.back().next = -1;

  struct Bigram {
    float score;
    std::int32_t left, right;
    std::uint32_t len;  // len of the merged piece when queued; a mismatch marks it stale
  };
  const auto worse = [](const Bigram& a, const Bigram& b) {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  };
  std::priority_queue<Bigram, std::vector<Bigram>, decltype(worse)> queue(worse);
  const auto try_add = [&](std::int32_t l, std::int32_t r) {
    if (l < 0 || r < 0) return;
    const std::uint32_t len = sym[l].len + sym[r].len;
    if (auto t = mergeable(s.substr(sym[l].off, len))) {
      queue.push({v_.score[*t], l, r, len});
    }
  };
  for (std::size_t i = 1; i < sym.size(); ++i) {
    try_add(static_cast<std::int32_t>(i - 1), static_cast<std::int32_t>(i));
  }

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Sym& l = sym[b.left];
    Sym& r = sym[b.right];
    if (l.len == 0 || r.len == 0 || l.next != b.right || l.len + r.len != b.len) continue;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = b.left;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }

  for (std::int32_t i = 0; i >= 0; i = sym[i].next) {
    const std::string_view p = s.substr(sym[i].off, sym[i].len);
    if (auto t = mergeable(p)) {
      out.push_back(*t);
      continue;
    }
    bool all_bytes = true;
    for (char c : p) all_bytes &= byte_token_[static_cast<unsigned char>(c)] >= 0;
    if (all_bytes) {
      for (char c : p) out.push_back(byte_token_[static_cast<unsigned char>(c)]);
    } else if (v_.unk) {
      out.push_back(*v_.unk);  // sentencepiece without byte fallback: one <unk> per piece
    } else {
      throw Error(Errc::InvalidArgument,
                  "[tokenizer] the text holds a character this vocabulary cannot represent "
                  "(no byte tokens and no unknown token)");
    }
  }
}

std::string SpmTokenizer::normal_piece(Token t) const {
  const std::string_view s = v_.text[t];
  const int b = unicode::byte_of_piece(s);
  if (b >= 0 && byte_token_[b] == t) return std::string(1, static_cast<char>(b));
  return unicode::metaspace_to_spaces(s);
}

}  // namespace

std::unique_ptr<Tokenizer> make_spm_tokenizer(Vocab v, const GgufFile& file) {
  // llama.cpp ignores the pre-tokenizer of SentencePiece vocabularies; we accept
  // only the value converters write for them rather than guess at another.
  if (v.pre != "default") {
    throw Error(Errc::Unsupported, "[tokenizer] " + file.source() +
                                       ": unsupported pre-tokenizer '" + v.pre +
                                       "' for a SentencePiece ('llama') vocabulary");
  }
  const bool prefix = file.get_bool("tokenizer.ggml.add_space_prefix").value_or(true);
  return std::make_unique<SpmTokenizer>(std::move(v), prefix);
}

}  // namespace seam
