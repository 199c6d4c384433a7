#include "tokenizer/pre_tokenizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <memory>

#include "seam/error.h"
#include "tokenizer/families.h"
#include "tokenizer/unicode.h"

namespace seam {

namespace {

// ---- pre-tokenizer regexes -------------------------------------------------
// Each is the pattern of a Hugging Face tokenizer.json Split / ByteLevel
// pre-tokenizer (the reference), compiled by PCRE2 with UTF and UCP so \p{..},
// \s, \d and \b are Unicode-aware as in Oniguruma, which the reference uses.
// Non-ASCII characters are written as escapes: some are compatibility
// characters that an editor's NFC pass would silently turn into others.

// The ByteLevel pre-tokenizer's own regex (GPT-2).
constexpr const char* kGpt2 =
    R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)re";
// cl100k (Llama 3): case-insensitive contractions, letters with one leading
// non-letter, digits in groups of up to three, newlines kept with punctuation.
constexpr const char* kLlama3 =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
// Llama 3's, with whitespace runs cut into power-of-two lengths (Jais 2).
constexpr const char* kJais2 =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1})re";
// Qwen2: Llama 3's with every digit on its own.
constexpr const char* kQwen2 =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
// Qwen3.5: Qwen2's with combining marks (\p{M}) counted as letters.
constexpr const char* kQwen35 =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
// Seed-Coder: single digits, and punctuation runs that never take a newline.
constexpr const char* kSeedCoder =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)re";
// Ling / Bailing MoE: possessive quantifiers, one newline per whitespace token.
constexpr const char* kBailing =
    R"re('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)re";
// EXAONE MoE: words joined by single spaces stay one pre-token.
constexpr const char* kExaoneMoe =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+)re";
// MiniCPM 5 (after digits were cut into groups of three).
constexpr const char* kMinicpm5 =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
// Tekken (Mistral NeMo): a word is upper-case letters then at least one
// lower-case one, or at least one upper-case then lower-case ones, so camel case
// splits ("helloWorld" -> "hello" "World"); digits one by one.
constexpr const char* kTekken =
    R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
// o200k (GPT-4o, Llama 4): Tekken's case-split words with contractions
// attached, digits in groups of up to three.
constexpr const char* kO200k =
    R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
// Youtu: Hangul, CJK punctuation, Bopomofo and Han/kana runs first, then
// o200k-style case-split words with single digits.
constexpr const char* kYoutuCjk =
    R"re([\x{AC00}-\x{D7A3}\x{3131}-\x{318E}]+|[\x{FF01}\x{2026}\x{201C}\x{201D}\x{2018}\x{2019}\x{2014}\x{FF1A}\x{FF1B}\x{FF0C}\x{3001}-\x{303F}\x{FE30}-\x{FE4F}]+|[\x{3105}-\x{312F}]+|[\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)re";
constexpr const char* kYoutu =
    R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
// DeepSeek V3: Han and kana runs; an ASCII punctuation mark may lead an ASCII
// word; letters include combining marks.
constexpr const char* kHanKana = R"re([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)re";
constexpr const char* kDeepseekV3 =
    R"re([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
// BLOOM: anything but whitespace and sentence punctuation, with one leading
// space. The class is BLOOM's "[^(\s|[.,!?…。，、।۔،])]" (Oniguruma nests
// classes; PCRE2 does not, so the inner one is spelled out).
constexpr const char* kBloom =
    R"re( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{0964}\x{06D4}\x{060C})]+)re";
constexpr const char* kCjk = R"re([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)re";
// DeepSeek LLM's letter class, from its tokenizer.json.
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
// Tiny Aya's "\d{1,3}(?=(?:\d{3})*\b)". The \b always follows a digit, so it
// means "no word character next"; Oniguruma's word characters include marks,
// which PCRE2's \w does not (before 10.43), so the class is spelled out.
constexpr const char* kDigitsFromRight = R"re(\d{1,3}(?=(?:\d{3})*(?![\p{L}\p{M}\p{N}\p{Pc}])))re";
// SuperBPE's "(?=(\d{3})+(?!\d))": empty matches that cut a digit run into
// threes from the right.
constexpr const char* kThreesFromRight = R"re((?=(\d{3})+(?!\d)))re";
constexpr const char* kEachDigit = R"re(\p{N})re";
constexpr const char* kLines = R"re([^\n]+|[\n]+)re";

// clang-format off
constexpr Family kFamilies[] = {
    {"gpt-2",          {kGpt2},                                         0},
    {"starcoder",      {kEachDigit, kGpt2},                             0},
    {"falcon",         {R"re([\p{P}\$\+<=>\^~\|`]+)re", kGpt2, R"re([0-9][0-9][0-9])re"}, 0},
    {"default",        {R"re([\p{P}\$\+<=>\^~\|]+)re", kGpt2, R"re(\p{N}+)re", R"re([0-9][0-9][0-9])re"}, 0},
    {"llama-bpe",      {kLlama3},                                       kIgnoreMerges | kBosDefault},
    {"dbrx",           {kLlama3},                                       0},
    {"jais-2",         {kJais2},                                        0},
    {"minicpm5",       {R"re(\p{N}{1,3})re", kMinicpm5},                kIgnoreMerges},
    {"qwen2",          {kQwen2},                                        kNfc},
    {"stablelm2",      {kQwen2},                                        0},
    {"laguna",         {kLines, kQwen2},                                0},
    {"qwen35",         {kQwen35},                                       0},
    {"seed-coder",     {kSeedCoder},                                    0},
    {"bailingmoe",     {kBailing},                                      0},
    {"exaone-moe",     {kExaoneMoe},                                    0},
    {"tekken",         {kTekken},                                       kIgnoreMerges | kBosDefault},
    {"gpt-4o",         {kO200k},                                        0},
    {"granite-embed-multi-97m", {kO200k},                               kIgnoreMerges},
    {"tiny_aya",       {kDigitsFromRight, kO200k},                      0},
    {"youtu",          {kYoutuCjk, kYoutu},                             kIgnoreMerges},
    {"deepseek-coder", {R"re([\r\n])re", R"re(\s?\p{L}+)re", R"re(\s?\p{P}+)re", kCjk, kEachDigit}, 0},
    {"deepseek-llm",   {R"re([\r\n])re", kDeepseekLetters, kDeepseekPunct, R"re(\s+$)re", kCjk, R"re(\p{N}+)re"}, 0},
    {"deepseek-v3",    {R"re(\p{N}{1,3})re", kHanKana, kDeepseekV3},    0},
    {"bloom",          {kBloom},                                        0},
    {"viking",         {kBloom, kEachDigit},                            0},
    {"superbpe",       {R"re(\p{N}+)re", kThreesFromRight},            0},
    {"chameleon",      {R"re(<sentinel:[0-9]+>)re", R"re((IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z)re",
                        R"re(([\t\n]|    |  ))re", kEachDigit, R"re([\p{P}!-/:-@\[-`{-~])re", kGpt2},
                                                                        kBosDefault},
    {"gemma4",         {kLines},                                        kMetaspace | kNewlineRuns | kBosAlways},
    {"sarvam-moe",     {kLines},                                        kMetaspace},
};

// Other names for the families above, as converters write them.
constexpr std::pair<std::string_view, std::string_view> kAliases[] = {
    {"phi-2", "gpt-2"}, {"mpt", "gpt-2"}, {"olmo", "gpt-2"}, {"jais", "gpt-2"},
    {"trillion", "gpt-2"}, {"granite-docling", "gpt-2"}, {"exaone4", "gpt-2"},
    {"roberta-bpe", "gpt-2"}, {"jina-v1-en", "gpt-2"}, {"jina-v2-code", "gpt-2"},
    {"jina-es", "gpt-2"}, {"jina-de", "gpt-2"}, {"jina-v2-es", "gpt-2"}, {"jina-v2-de", "gpt-2"},
    {"gigachat", "gpt-2"}, {"a.x-4.0", "gpt-2"}, {"mellum", "gpt-2"}, {"modern-bert", "gpt-2"},
    {"refact", "starcoder"}, {"command-r", "starcoder"}, {"smollm", "starcoder"},
    {"codeshell", "starcoder"}, {"exaone", "starcoder"}, {"minerva-7b", "starcoder"},
    {"mellum2", "starcoder"},
    {"llama3", "llama-bpe"}, {"llama-v3", "llama-bpe"}, {"falcon3", "llama-bpe"},
    {"falcon-h1", "llama-bpe"}, {"pixtral", "llama-bpe"}, {"midm-2.0", "llama-bpe"},
    {"lfm2", "llama-bpe"}, {"jina-v5-nano", "llama-bpe"},
    {"smaug-bpe", "dbrx"}, {"chatglm-bpe", "dbrx"}, {"glm4", "dbrx"},
    {"deepseek-r1-qwen", "qwen2"}, {"f2llmv2", "qwen2"},
    {"kormo", "stablelm2"}, {"megrez", "stablelm2"}, {"hunyuan", "stablelm2"},
    {"solar-open", "stablelm2"}, {"grok-2", "stablelm2"},
    {"bailingmoe2", "bailingmoe"}, {"llada-moe", "bailingmoe"},
    {"llama4", "gpt-4o"}, {"kanana2", "gpt-4o"}, {"talkie", "gpt-4o"}, {"minimax-m2", "gpt-4o"},
    {"cohere2moe", "tiny_aya"},
    {"hunyuan-dense", "deepseek-v3"}, {"joyai-llm", "deepseek-v3"},
    {"poro-chat", "bloom"}, {"gpt3-finnish", "bloom"},
    {"granite-embed-multi-311m", "gemma4"},
};

// Names we know and do not implement, with the reason.
constexpr std::pair<std::string_view, std::string_view> kRefused[] = {
    {"kimi-k2", "its pre-tokenizer excludes Han characters from word runs with code no regex expresses"},
    {"afmoe", "its pre-tokenizer groups digits by the run's length modulo 3, which no regex expresses"},
    {"whitespace", "it is a whitespace-split vocabulary without byte-level merges"},
};
// clang-format on

const Family* family_of(std::string_view pre) {
  for (const auto& [alias, family] : kAliases) {
    if (alias == pre) {
      pre = family;
      break;
    }
  }
  for (const Family& f : kFamilies) {
    if (f.name == pre) return &f;
  }
  return nullptr;
}

bool is_decimal(char32_t cp) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_ND;
}
bool is_word(char32_t cp) {  // Oniguruma's Unicode \w: L, M, N, Pc
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
    case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}

// Appends the pieces of `piece` (at `off` in the text) under a digit-group step.
void split_digit_groups(DigitGroups kind, std::string_view piece, std::size_t off,
                        std::vector<std::pair<std::size_t, std::size_t>>& out) {
  std::vector<std::size_t> starts;  // byte offsets of the run's characters, then its end
  std::size_t gap = 0;              // start of the text not yet emitted
  char32_t cp;
  for (std::size_t i = 0; i < piece.size();) {
    std::size_t n = static_cast<std::size_t>(std::max(1, unicode::decode_utf8(piece, i, cp)));
    if (!is_decimal(cp)) {
      i += n;
      continue;
    }
    starts.clear();
    while (i < piece.size() && unicode::decode_utf8(piece, i, cp) > 0 && is_decimal(cp)) {
      starts.push_back(i);
      i += static_cast<std::size_t>(unicode::decode_utf8(piece, i, cp));
    }
    const std::size_t len = starts.size();
    starts.push_back(i);
    if (kind == DigitGroups::Cut) {
      for (std::size_t k = len % 3; k + 3 <= len; k += 3) {
        if (starts[k] > gap) out.emplace_back(off + gap, starts[k] - gap);
        gap = std::max(gap, starts[k]);
      }
    } else {
      const bool boundary = i == piece.size() || !is_word(cp);  // cp: the run's follower
      if (!boundary) continue;
      for (std::size_t k = 0; k < len;) {
        const std::size_t j = k == 0 ? (len - 1) % 3 + 1 : 3;
        if (starts[k] > gap) out.emplace_back(off + gap, starts[k] - gap);
        out.emplace_back(off + starts[k], starts[k + j] - starts[k]);
        gap = starts[k + j];
        k += j;
      }
    }
  }
  if (gap < piece.size()) out.emplace_back(off + gap, piece.size() - gap);
}

}  // namespace

PreTokenizer::PreTokenizer(const Family& f) : flags_(f.flags) {
  for (const char* r : f.regexes) {
    if (r == nullptr) continue;
    const std::string_view pattern(r);
    const DigitGroups kind = pattern == kThreesFromRight   ? DigitGroups::Cut
                             : pattern == kDigitsFromRight ? DigitGroups::Match
                                                           : DigitGroups::None;
    steps_.push_back(
        {kind == DigitGroups::None ? std::optional<Regex>(std::in_place, r) : std::nullopt, kind});
  }
}

std::string_view PreTokenizer::normalize(std::string_view text, std::string& buf) const {
  if (!unicode::is_valid_utf8(text)) {
    buf = unicode::sanitize_utf8(text);
    text = buf;
  }
  if (flags_ & kNfc) {
    buf = unicode::nfc(text);
    text = buf;
  }
  if (flags_ & kMetaspace) {
    std::string spaced;
    spaced.reserve(text.size() + text.size() / 2);
    for (char c : text) {
      if (c == ' ') {
        spaced += unicode::kMetaspace;
      } else {
        spaced += c;
      }
    }
    buf = std::move(spaced);
    text = buf;
  }
  return text;
}

void PreTokenizer::split(std::string_view text,
                         std::vector<std::pair<std::size_t, std::size_t>>& words) const {
  words.assign(1, {0, text.size()});
  std::vector<std::pair<std::size_t, std::size_t>> next;
  for (const Step& step : steps_) {
    next.clear();
    if (!step.regex) {
      for (const auto& [off, len] : words) {
        split_digit_groups(step.digits, text.substr(off, len), off, next);
      }
      words.swap(next);
      continue;
    }
    const Regex& re = *step.regex;
    const std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
        pcre2_match_data_create_from_pattern(re.code(), nullptr), &pcre2_match_data_free);
    if (!md) throw Error(Errc::Internal, "[tokenizer] out of memory for regex match data");
    for (const auto& [off, len] : words) {
      // Each piece is matched on its own, so lookaheads end at the piece's end.
      const std::string_view piece = text.substr(off, len);
      std::size_t gap = 0, search = 0, b = 0, e = 0;  // gap: start of the unmatched text
      while (search < len && re.next(piece, search, md.get(), b, e)) {
        if (e == b) {
          // An empty match (a pure lookahead, as in superbpe's digit groups)
          // still cuts the text there, as the reference's Split does; the
          // search then moves on by one character.
          if (b > gap) next.emplace_back(off + gap, b - gap);
          gap = std::max(gap, b);
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

std::span<const Family> pre_families() { return kFamilies; }

const Family& require_pre_family(std::string_view pre, const std::string& source) {
  if (const Family* f = family_of(pre)) return *f;
  for (const auto& [name, why] : kRefused) {
    if (name == pre) {
      throw Error(Errc::Unsupported,
                  "[tokenizer] " + source + ": pre-tokenizer '" + std::string(pre) +
                      "' (tokenizer.ggml.pre) is not supported: " + std::string(why));
    }
  }
  std::string known;
  for (std::string_view n : bpe_pre_names()) known += (known.empty() ? "" : ", ") + std::string(n);
  throw Error(Errc::Unsupported, "[tokenizer] " + source + ": unsupported pre-tokenizer '" +
                                     std::string(pre) +
                                     "' (tokenizer.ggml.pre); supported: " + known);
}

std::vector<std::string_view> bpe_pre_names() {
  std::vector<std::string_view> out;
  for (const Family& f : kFamilies) out.push_back(f.name);
  for (const auto& [alias, family] : kAliases) out.push_back(alias);
  return out;
}

std::vector<std::string> pre_tokenize(std::string_view pre, std::string_view text) {
  const PreTokenizer p(require_pre_family(pre, "pre_tokenize"));
  std::string buf;
  const std::string_view t = p.normalize(text, buf);
  std::vector<std::pair<std::size_t, std::size_t>> words;
  p.split(t, words);
  std::vector<std::string> out;
  out.reserve(words.size());
  for (const auto& [off, len] : words) out.emplace_back(t.substr(off, len));
  return out;
}

}  // namespace seam
