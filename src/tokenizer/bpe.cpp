// Byte-level BPE (tokenizer.ggml.model = "gpt2").
//
// The text is cut into pre-tokens by the regex sequence tokenizer.ggml.pre
// names (each regex splits every current piece into its matches and the gaps
// between them). Each pre-token's UTF-8 bytes are spelled in the GPT-2
// byte<->unicode alphabet, and merges (tokenizer.ggml.merges, lower index =
// higher priority) are applied to adjacent symbols, lowest rank first, leftmost
// on ties.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>
#include <memory>
#include <queue>

#include "format/gguf.h"
#include "seam/error.h"
#include "tokenizer/families.h"
#include "tokenizer/unicode.h"

namespace seam {

namespace {

// ---- pre-tokenizer regexes -------------------------------------------------
// Written for PCRE2 with UTF and UCP, so \p{L}, \p{N} and \s are Unicode-aware.

constexpr const char* kGpt2 =
    R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)re";
// Llama 3 and Qwen2 spell the case-insensitive contractions out, ASCII only.
constexpr const char* kLlama3 =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kQwen2 =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kCjk = R"re([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)re";
// DeepSeek LLM's letter class, from its tokenizer.json. Written as escapes: some
// endpoints are compatibility characters (U+1F7D, U+1FBE, U+2126, U+212A, ...)
// that an editor's NFC pass would silently turn into other letters.
constexpr const char* kDeepseekLetters =
    R"re(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293})re"
    R"re(\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A})re"
    R"re(\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556})re"
    R"re(\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF})re"
    R"re(\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D})re"
    R"re(\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D})re"
    R"re(\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4})re"
    R"re(\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4})re"
    R"re(\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124})re"
    R"re(\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F})re"
    R"re(\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4})re"
    R"re(\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F})re"
    R"re(\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17})re"
    R"re(\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3})re"
    R"re(\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF})re"
    R"re(\x{1E900}-\x{1E943}]+)re";
constexpr const char* kDeepseekPunct =
    R"re(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)re";

struct PreSpec {
  std::vector<const char*> regexes;
  bool nfc = false;
  bool ignore_merges = false;
};

std::optional<PreSpec> pre_spec(std::string_view pre) {
  if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "falcon3") {
    return PreSpec{{kLlama3}, false, true};
  }
  if (pre == "dbrx" || pre == "smaug-bpe") return PreSpec{{kLlama3}};
  if (pre == "qwen2") return PreSpec{{kQwen2}, true};
  if (pre == "gpt-2" || pre == "phi-2" || pre == "mpt" || pre == "olmo" || pre == "roberta-bpe") {
    return PreSpec{{kGpt2}};
  }
  if (pre == "starcoder" || pre == "refact" || pre == "smollm" || pre == "codeshell") {
    return PreSpec{{R"re(\p{N})re", kGpt2}};
  }
  if (pre == "falcon") {
    return PreSpec{{R"re([\p{P}\$\+<=>\^~\|`]+)re", kGpt2, R"re([0-9][0-9][0-9])re"}};
  }
  if (pre == "deepseek-coder") {
    return PreSpec{{R"re([\r\n])re", R"re(\s?\p{L}+)re", R"re(\s?\p{P}+)re", kCjk, R"re(\p{N})re"}};
  }
  if (pre == "deepseek-llm") {
    return PreSpec{
        {R"re([\r\n])re", kDeepseekLetters, kDeepseekPunct, R"re(\s+$)re", kCjk, R"re(\p{N}+)re"}};
  }
  if (pre == "default") {
    return PreSpec{
        {R"re([\p{P}\$\+<=>\^~\|]+)re", kGpt2, R"re(\p{N}+)re", R"re([0-9][0-9][0-9])re"}};
  }
  return std::nullopt;
}

class Regex {
 public:
  explicit Regex(const char* pattern) {
    int err = 0;
    PCRE2_SIZE at = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern), PCRE2_ZERO_TERMINATED,
                          PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &err, &at, nullptr);
    if (code_ == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      throw Error(Errc::Internal,
                  std::string("[tokenizer] pre-tokenizer regex does not compile at ") +
                      std::to_string(at) + ": " + reinterpret_cast<char*>(msg));
    }
    // JIT is an optimization only; without it pcre2_match interprets.
    pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);
  }
  Regex(Regex&& o) noexcept : code_(o.code_) { o.code_ = nullptr; }
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  Regex& operator=(Regex&&) = delete;
  ~Regex() { pcre2_code_free(code_); }

  // Finds the next match in subject[start..]; false when none. The subject is
  // valid UTF-8 and `start` a character boundary.
  bool next(std::string_view subject, std::size_t start, pcre2_match_data* md, std::size_t& b,
            std::size_t& e) const {
    const auto* s = reinterpret_cast<PCRE2_SPTR>(subject.data());
    int rc = pcre2_match(code_, s, subject.size(), start, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      // Very long runs can exhaust the JIT's stack; the interpreter uses the heap.
      rc = pcre2_match(code_, s, subject.size(), start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md,
                       nullptr);
    }
    if (rc == PCRE2_ERROR_NOMATCH) return false;
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      throw Error(Errc::InvalidArgument, std::string("[tokenizer] pre-tokenizer failed on this "
                                                     "text: ") +
                                             reinterpret_cast<char*>(msg));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    b = ov[0];
    e = ov[1];
    return true;
  }
  const pcre2_code* code() const { return code_; }

 private:
  pcre2_code* code_ = nullptr;
};

struct Merge {
  std::int32_t rank;
  Token result;
};

class BpeTokenizer final : public Tokenizer {
 public:
  BpeTokenizer(Vocab v, const GgufFile& file, const PreSpec& spec)
      : Tokenizer(std::move(v)), nfc_(spec.nfc), ignore_merges_(spec.ignore_merges) {
    for (const char* r : spec.regexes) regexes_.emplace_back(r);

    const auto& alphabet = unicode::byte_to_unicode();
    for (int b = 0; b < 256; ++b) {
      std::string s;
      unicode::append_utf8(s, alphabet[b]);
      auto it = v_.index.find(s);
      byte_token_[b] = it == v_.index.end() ? -1 : it->second;
      byte_char_[b] = std::move(s);
    }

    const GgufArray* merges = file.get_array("tokenizer.ggml.merges");
    if (merges == nullptr) {
      throw Error(Errc::BadFormat, "[tokenizer] " + file.source() +
                                       ": missing tokenizer.ggml.merges for a byte-level BPE "
                                       "('gpt2') vocabulary");
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
  void split(std::string_view text, std::vector<std::pair<std::size_t, std::size_t>>& words) const;
  void bpe(std::string_view word, std::vector<Token>& out) const;

  std::vector<Regex> regexes_;
  bool nfc_;
  bool ignore_merges_;
  std::array<Token, 256> byte_token_;       // byte -> token of its alphabet symbol, -1 if absent
  std::array<std::string, 256> byte_char_;  // byte -> its alphabet symbol, UTF-8
  std::unordered_map<std::uint64_t, Merge> merges_;  // (left, right) -> rank, result
};

void BpeTokenizer::split(std::string_view text,
                         std::vector<std::pair<std::size_t, std::size_t>>& words) const {
  words.assign(1, {0, text.size()});
  std::vector<std::pair<std::size_t, std::size_t>> next;
  for (const Regex& re : regexes_) {
    const std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
        pcre2_match_data_create_from_pattern(re.code(), nullptr), &pcre2_match_data_free);
    if (!md) throw Error(Errc::Internal, "[tokenizer] out of memory for regex match data");
    next.clear();
    for (const auto& [off, len] : words) {
      // Each piece is matched on its own, so lookaheads end at the piece's end.
      const std::string_view piece = text.substr(off, len);
      std::size_t gap = 0, search = 0, b = 0, e = 0;  // gap: start of the unmatched text
      while (search < len && re.next(piece, search, md.get(), b, e)) {
        if (e == b) {  // an empty match splits nothing; search on past one character
          char32_t cp;
          search = b + std::max(1, unicode::decode_utf8(piece, b, cp));
          continue;
        }
        if (b > gap) next.emplace_back(off + gap, b - gap);
        next.emplace_back(off + b, e - b);
        gap = search = e;
      }
      if (gap < len) next.emplace_back(off + gap, len - gap);
    }
    words.swap(next);
  }
}

void BpeTokenizer::encode_fragment(std::string_view text, bool /*after_special*/,
                                   std::vector<Token>& out) const {
  std::string owned;
  if (!unicode::is_valid_utf8(text)) {
    owned = unicode::sanitize_utf8(text);
    text = owned;
  }
  if (nfc_) {
    owned = unicode::nfc(text);
    text = owned;
  }
  std::vector<std::pair<std::size_t, std::size_t>> words;
  split(text, words);
  std::string spelled;
  for (const auto& [off, len] : words) {
    const std::string_view w = text.substr(off, len);
    if (ignore_merges_ && len > 1) {
      // Llama 3: a pre-token that is itself a vocab entry is emitted whole.
      spelled.clear();
      for (char c : w) spelled += byte_char_[static_cast<unsigned char>(c)];
      if (auto t = find(spelled)) {
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
    Token id;  // -1: a byte whose symbol is not in the vocab; kDead: merged away
    std::int32_t prev, next;
  };
  const auto n = static_cast<std::int32_t>(word.size());
  std::vector<Sym> sym(word.size());
  for (std::int32_t i = 0; i < n; ++i) {
    sym[i] = {byte_token_[static_cast<unsigned char>(word[i])], i - 1, i + 1 < n ? i + 1 : -1};
  }

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
    if (sym[i].id >= 0) {
      out.push_back(sym[i].id);
    } else if (v_.unk) {
      out.push_back(*v_.unk);
    }
    // else: like the references, a byte the vocab cannot spell is dropped.
  }
}

std::string BpeTokenizer::normal_piece(Token t) const {
  const std::string& s = v_.text[t];
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
  const auto spec = pre_spec(v.pre);
  if (!spec) {
    throw Error(Errc::Unsupported,
                "[tokenizer] " + file.source() + ": unsupported pre-tokenizer '" + v.pre +
                    "' (tokenizer.ggml.pre); supported: llama-bpe (llama3, llama-v3, falcon3), "
                    "dbrx, smaug-bpe, qwen2, gpt-2, phi-2, mpt, olmo, roberta-bpe, starcoder, "
                    "refact, smollm, codeshell, falcon, deepseek-coder, deepseek-llm, default");
  }
  return std::make_unique<BpeTokenizer>(std::move(v), file, *spec);
}

}  // namespace seam
