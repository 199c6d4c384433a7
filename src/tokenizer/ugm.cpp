// Unigram (tokenizer.ggml.model = "t5"; SentencePiece's UGM model).
//
// The text is first normalized as SentencePiece does: each longest prefix
// found in tokenizer.ggml.precompiled_charsmap is replaced by its mapping (NFKC
// and friends, compiled into a double array), spaces become U+2581, one is put
// in front (add_space_prefix), and with remove_extra_whitespaces runs of spaces
// collapse and leading/trailing spaces go. Then Viterbi picks the segmentation
// with the highest sum of piece scores (log probabilities); a character no piece
// covers costs (lowest score - 10) as <unk>, and adjacent <unk>s fuse.
#include <algorithm>
#include <cfloat>
#include <cstring>

#include <utf8proc.h>

#include "format/gguf.h"
#include "seam/error.h"
#include "tokenizer/families.h"
#include "tokenizer/unicode.h"

namespace seam {

namespace {

constexpr std::string_view kSpace = unicode::kMetaspace;

// SentencePiece's precompiled normalization map: a u32 byte count, that many
// bytes of XOR-compressed compact double array (Kanda 2018) over the UTF-8
// bytes of the source strings, then the NUL-terminated replacement strings.
// Each u32 node packs LCHECK (bits 0-7, with bit 31 set on value nodes), LEAF
// (bit 8), and BASE (bits 10-30, shifted left by 8 when bit 9 is set).
class CharsMap {
 public:
  CharsMap() = default;
  CharsMap(std::vector<std::uint8_t> blob, const std::string& source) : blob_(std::move(blob)) {
    if (blob_.size() < 4) bad(source, "is shorter than its 4-byte header");
    std::uint32_t n = 0;
    std::memcpy(&n, blob_.data(), 4);  // little endian, as GGUF itself
    if (n % 4 != 0 || std::size_t{n} + 4 > blob_.size()) {
      bad(source, "declares " + std::to_string(n) + " bytes of trie in " +
                      std::to_string(blob_.size()) + " bytes");
    }
    nodes_.resize(n / 4);
    std::memcpy(nodes_.data(), blob_.data() + 4, n);
    strings_ =
        std::string_view(reinterpret_cast<const char*>(blob_.data()) + 4 + n, blob_.size() - 4 - n);
  }

  // The shortest prefix of s the map has: its length and replacement, or
  // length 0.
  std::pair<std::size_t, std::string_view> match(std::string_view s) const {
    if (nodes_.empty()) return {0, {}};
    std::size_t best_len = 0;
    std::uint32_t best_value = 0;
    std::uint32_t node = base(0);
    for (std::size_t i = 0; i < s.size() && best_len == 0; ++i) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (c == 0) break;
      node ^= c;
      // An index past the array is a child the trie does not have.
      if (node >= nodes_.size() || lcheck(node) != c) break;
      const bool leaf = (get(node) >> 8) & 1u;
      node ^= base(node);
      if (leaf) {
        best_len = i + 1;
        best_value = get(node) & 0x7FFFFFFFu;
      }
    }
    if (best_len == 0) return {0, {}};
    if (best_value >= strings_.size()) corrupt();
    const std::size_t end = strings_.find('\0', best_value);
    if (end == std::string_view::npos) corrupt();
    return {best_len, strings_.substr(best_value, end - best_value)};
  }

 private:
  [[noreturn]] static void bad(const std::string& source, const std::string& what) {
    throw Error(Errc::BadFormat,
                "[tokenizer] " + source + ": tokenizer.ggml.precompiled_charsmap " + what);
  }
  [[noreturn]] static void corrupt() {
    throw Error(Errc::BadFormat,
                "[tokenizer] tokenizer.ggml.precompiled_charsmap points outside itself; the "
                "file is corrupt");
  }
  std::uint32_t get(std::uint32_t i) const {
    if (i >= nodes_.size()) corrupt();
    return nodes_[i];
  }
  std::uint32_t base(std::uint32_t i) const {
    const std::uint32_t p = get(i);
    return (p >> 10) << ((p & (1u << 9)) >> 6);
  }
  std::uint32_t lcheck(std::uint32_t i) const { return get(i) & ((1u << 31) | 0xFFu); }

  std::vector<std::uint8_t> blob_;
  std::vector<std::uint32_t> nodes_;
  std::string_view strings_;  // views blob_
};

class UgmTokenizer final : public Tokenizer {
 public:
  UgmTokenizer(Vocab v, CharsMap map, bool add_space_prefix, bool remove_extra_ws)
      : Tokenizer(std::move(v)),
        map_(std::move(map)),
        add_space_prefix_(add_space_prefix),
        remove_extra_ws_(remove_extra_ws) {
    float min_score = FLT_MAX;
    for (std::size_t id = 0; id < v_.text.size(); ++id) {
      const TokenAttr a = v_.attr[id];
      if (a == TokenAttr::Normal) min_score = std::min(min_score, v_.score[id]);
      if ((a == TokenAttr::Normal || a == TokenAttr::UserDefined || a == TokenAttr::Unused) &&
          !v_.text[id].empty()) {
        pieces_.emplace_back(v_.text[id], static_cast<Token>(id));
      }
    }
    // Sorted by text, lowest id first among equal texts: a prefix search is a
    // narrowing binary search, with no trie to build for 250k pieces.
    std::sort(pieces_.begin(), pieces_.end());
    unk_score_ = static_cast<double>(min_score == FLT_MAX ? 0.0f : min_score) - 10.0;
  }

 protected:
  void encode_fragment(std::string_view text, bool after_special,
                       std::vector<Token>& out) const override;
  std::string normal_piece(Token t) const override {
    const std::string_view s = v_.text[t];
    const int b = unicode::byte_of_piece(s);
    if (b >= 0 && v_.attr[t] == TokenAttr::Byte) return std::string(1, static_cast<char>(b));
    return unicode::metaspace_to_spaces(s);
  }
  bool strips_leading_space() const override { return add_space_prefix_; }

 private:
  std::string normalize(std::string_view text) const;

  CharsMap map_;  // empty: no normalization map
  bool add_space_prefix_, remove_extra_ws_;
  double unk_score_;
  std::vector<std::pair<std::string_view, Token>> pieces_;  // sorted; views v_.text
};

std::string UgmTokenizer::normalize(std::string_view in) const {
  std::string out;
  out.reserve(in.size() * 3 / 2 + 3);
  bool in_word = false, prefixed = false;
  const auto put = [&](std::string_view s) {
    for (char c : s) {
      if (c == ' ') {
        in_word = false;
        if (!remove_extra_ws_) out += kSpace;
        continue;
      }
      if (!in_word) {
        in_word = true;
        // Collapsing spaces puts exactly one before every word, the first too.
        if ((add_space_prefix_ && !prefixed) || remove_extra_ws_) {
          out += kSpace;
          prefixed = true;
        }
      }
      out += c;
    }
  };
  // Hugging Face's Precompiled normalizer (our reference) maps a whole
  // grapheme cluster shorter than 6 bytes by its shortest mapped prefix, and
  // otherwise each character on its own; SentencePiece's longest-prefix walk
  // differs on clusters such as decomposed Hangul.
  std::string valid;
  if (!unicode::is_valid_utf8(in)) {
    valid = unicode::sanitize_utf8(in);
    in = valid;
  }
  char32_t cp;
  for (std::size_t i = 0; i < in.size();) {
    std::size_t j = i + static_cast<std::size_t>(unicode::decode_utf8(in, i, cp));
    std::int32_t state = 0;
    while (j < in.size()) {
      char32_t next;
      const int n = unicode::decode_utf8(in, j, next);
      if (utf8proc_grapheme_break_stateful(static_cast<utf8proc_int32_t>(cp),
                                           static_cast<utf8proc_int32_t>(next), &state)) {
        break;
      }
      cp = next;
      j += static_cast<std::size_t>(n);
    }
    const std::string_view cluster = in.substr(i, j - i);
    i = j;
    if (cluster.size() < 6) {
      if (const auto [len, repl] = map_.match(cluster); len > 0) {
        put(repl);
        continue;
      }
    }
    for (std::size_t k = 0; k < cluster.size();) {
      const auto n = static_cast<std::size_t>(unicode::decode_utf8(cluster, k, cp));
      const std::string_view c = cluster.substr(k, n);
      const auto [len, repl] = map_.match(c);
      put(len > 0 ? repl : c);
      k += n;
    }
  }
  return out;
}

void UgmTokenizer::encode_fragment(std::string_view text, bool /*after_special*/,
                                   std::vector<Token>& out) const {
  const std::string s = normalize(text);
  if (s.empty()) return;
  struct Best {
    double score;
    std::size_t from;  // where the last piece starts
    Token token;       // -1: <unk>
  };
  const Token unk = v_.unk.value_or(-1);
  std::vector<Best> best(s.size() + 1, {-DBL_MAX, 0, unk});
  best[0].score = 0;
  for (std::size_t i = 0; i < s.size();) {
    char32_t cp;
    const auto char_len = static_cast<std::size_t>(std::max(1, unicode::decode_utf8(s, i, cp)));
    const double here = best[i].score;
    bool covered = false;  // some piece is exactly this character
    // Narrow [lo, hi) to the pieces that start with s[i..i+k).
    auto lo = pieces_.begin(), hi = pieces_.end();
    for (std::size_t k = 0; i + k < s.size() && lo != hi; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      const auto key = [k](const std::pair<std::string_view, Token>& p) {
        return p.first.size() > k ? static_cast<int>(static_cast<unsigned char>(p.first[k])) : -1;
      };
      lo = std::partition_point(lo, hi, [&](const auto& p) { return key(p) < c; });
      hi = std::partition_point(lo, hi, [&](const auto& p) { return key(p) <= c; });
      if (lo == hi || lo->first.size() != k + 1) continue;
      const Token t = lo->second;
      // User-defined pieces score 0, above every log probability.
      const double score =
          here + (v_.attr[t] == TokenAttr::UserDefined ? 0.0 : static_cast<double>(v_.score[t]));
      Best& b = best[i + k + 1];
      if (score > b.score) b = {score, i, t};
      covered |= k + 1 == char_len;
    }
    if (!covered) {
      Best& b = best[i + char_len];
      if (here + unk_score_ > b.score) b = {here + unk_score_, i, unk};
    }
    i += char_len;
  }
  const std::size_t first = out.size();
  bool prev_unk = false;
  for (std::size_t at = s.size(); at > 0;) {
    const Best& b = best[at];
    const bool is_unk = b.token == unk;
    if (!(prev_unk && is_unk)) {
      if (b.token < 0) {
        throw Error(Errc::InvalidArgument,
                    "[tokenizer] the text holds a character this vocabulary cannot represent "
                    "(and it has no unknown token)");
      }
      out.push_back(b.token);
    }
    prev_unk = is_unk;
    at = b.from;
  }
  std::reverse(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
}

}  // namespace

std::unique_ptr<Tokenizer> make_ugm_tokenizer(Vocab v, const GgufFile& file) {
  if (v.pre != "default") {
    throw Error(Errc::Unsupported, "[tokenizer] " + file.source() +
                                       ": unsupported pre-tokenizer '" + v.pre +
                                       "' for a Unigram ('t5') vocabulary");
  }
  CharsMap map;
  if (const GgufArray* a = file.get_array("tokenizer.ggml.precompiled_charsmap")) {
    std::vector<std::uint8_t> blob;
    blob.reserve(a->items.size());
    for (const GgufValue& item : a->items) {
      const auto* i = std::get_if<std::int64_t>(&item.v);
      const auto* u = std::get_if<std::uint64_t>(&item.v);
      if (i == nullptr && u == nullptr) {
        throw Error(Errc::BadFormat, "[tokenizer] " + file.source() +
                                         ": tokenizer.ggml.precompiled_charsmap is not an "
                                         "array of bytes");
      }
      blob.push_back(static_cast<std::uint8_t>(i != nullptr ? *i : *u));
    }
    map = CharsMap(std::move(blob), file.source());
  }
  const bool prefix = file.get_bool("tokenizer.ggml.add_space_prefix").value_or(false);
  const bool collapse = file.get_bool("tokenizer.ggml.remove_extra_whitespaces").value_or(false);
  return std::make_unique<UgmTokenizer>(std::move(v), std::move(map), prefix, collapse);
}

}  // namespace seam
