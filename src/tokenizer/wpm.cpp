// WordPiece (tokenizer.ggml.model = "bert"), as Hugging Face's BERT tokenizer.
//
// Normalization: drop NUL, U+FFFD and other/control characters, split on
// whitespace, isolate CJK ideographs and punctuation, strip accents (NFD, then
// drop nonspacing marks) and lowercase. Each word is then cut greedily into the
// longest vocab pieces; a word that cannot be cut, or is over 100 characters,
// becomes one unknown token.
//
// GGUF spells word-initial pieces with a leading '▁' and continuations bare
// (the "##" prefix of vocab.txt removed).
#include <utf8proc.h>

#include <algorithm>

#include "format/gguf.h"
#include "seam/error.h"
#include "tokenizer/families.h"
#include "tokenizer/unicode.h"

namespace seam {

namespace {

constexpr std::string_view kSpace = unicode::kMetaspace;  // marks a word start
constexpr std::size_t kMaxWordChars = 100;

bool is_whitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

bool is_cjk(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool is_other(char32_t c) {
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
      return true;
    default:
      return false;
  }
}

bool is_punctuation(char32_t c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
      (c >= 123 && c <= 126)) {
    return true;
  }
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

class WpmTokenizer final : public Tokenizer {
 public:
  explicit WpmTokenizer(Vocab v) : Tokenizer(std::move(v)) {
    for (std::size_t id = 0; id < v_.text.size(); ++id)
      max_piece_ = std::max(max_piece_, v_.text[id].size());
  }

 protected:
  void encode_fragment(std::string_view text, bool after_special,
                       std::vector<Token>& out) const override;
  std::string normal_piece(Token t) const override;
  bool strips_leading_space() const override { return true; }

 private:
  void word_pieces(const std::string& word, std::size_t n_chars, std::vector<Token>& out) const;
  std::size_t max_piece_ = 0;  // longest vocab string, bytes
};

void WpmTokenizer::encode_fragment(std::string_view text, bool /*after_special*/,
                                   std::vector<Token>& out) const {
  std::string word;
  std::size_t word_chars = 0;
  const auto flush = [&] {
    if (!word.empty()) word_pieces(word, word_chars, out);
    word.clear();
    word_chars = 0;
  };
  const auto alone = [&](char32_t c) {
    flush();
    unicode::append_utf8(word, c);
    word_chars = 1;
    flush();
  };

  utf8proc_int32_t dec[32];
  char32_t cp;
  for (std::size_t i = 0; i < text.size();) {
    const int n = unicode::decode_utf8(text, i, cp);
    i += n == 0 ? 1 : n;
    if (n == 0 || cp == 0 || cp == unicode::kReplacement) continue;
    if (is_whitespace(cp)) {
      flush();
      continue;
    }
    if (is_other(cp)) continue;
    const bool cjk = is_cjk(cp);
    // Canonical decomposition of one character, so nonspacing marks can be dropped.
    utf8proc_int32_t last_boundclass = 0;
    const auto nd = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), dec, 32,
                                            UTF8PROC_DECOMPOSE, &last_boundclass);
    const int count = nd > 0 && nd <= 32 ? static_cast<int>(nd) : 0;
    if (cjk) flush();
    for (int k = 0; k < count; ++k) {
      if (utf8proc_category(dec[k]) == UTF8PROC_CATEGORY_MN) continue;
      const auto c = static_cast<char32_t>(utf8proc_tolower(dec[k]));
      if (is_punctuation(c)) {
        alone(c);
      } else {
        unicode::append_utf8(word, c);
        ++word_chars;
      }
    }
    if (cjk) flush();
  }
  flush();
}

void WpmTokenizer::word_pieces(const std::string& word, std::size_t n_chars,
                               std::vector<Token>& out) const {
  const std::size_t first = out.size();
  bool ok = n_chars <= kMaxWordChars;
  std::string key;
  for (std::size_t i = 0; ok && i < word.size();) {
    // Longest piece first: try every character boundary from the right.
    std::size_t j = std::min(word.size(), i + max_piece_);
    bool found = false;
    for (; j > i; --j) {
      if (j < word.size() && (static_cast<unsigned char>(word[j]) & 0xC0) == 0x80) continue;
      key.clear();
      if (i == 0) key += kSpace;
      key.append(word, i, j - i);
      if (auto t = find(key)) {
        out.push_back(*t);
        found = true;
        break;
      }
    }
    if (!found) ok = false;
    i = j;
  }
  if (ok) return;
  out.resize(first);
  if (v_.unk) out.push_back(*v_.unk);  // without an unknown token the word is dropped
}

std::string WpmTokenizer::normal_piece(Token t) const {
  const std::string_view s = v_.text[t];
  return unicode::metaspace_to_spaces(s);
}

}  // namespace

std::unique_ptr<Tokenizer> make_wpm_tokenizer(Vocab v, const GgufFile& file) {
  if (v.pre != "default" && v.pre != "bert-bge") {
    throw Error(Errc::Unsupported, "[tokenizer] " + file.source() +
                                       ": unsupported pre-tokenizer '" + v.pre +
                                       "' for a WordPiece ('bert') vocabulary");
  }
  return std::make_unique<WpmTokenizer>(std::move(v));
}

}  // namespace seam
