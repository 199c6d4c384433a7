// Byte-level BPE pre-tokenizer families: each test feeds a string that
// exercises the family's distinctive rule. Expectations are worked out by hand
// from the reference regexes (Hugging Face tokenizer.json Split patterns),
// alternative by alternative; the comments show the reasoning.
#include <gtest/gtest.h>

#include <algorithm>
#include <ctime>

#include "seam/error.h"
#include "tokenizer/families.h"

namespace seam {
namespace {

using Pieces = std::vector<std::string>;

Pieces pre(std::string_view name, std::string_view text) { return pre_tokenize(name, text); }

TEST(PreTokenizer, CommandRIsolatesEveryDigitBeforeTheGpt2Regex) {
  // \p{N} first cuts "abc 12345 x" into "abc ", 1, 2, 3, 4, 5, " x"; GPT-2's
  // regex then splits "abc " into "abc" and " " (the space cannot reach a digit).
  EXPECT_EQ(pre("command-r", "abc 12345 x"), (Pieces{"abc", " ", "1", "2", "3", "4", "5", " x"}));
  EXPECT_EQ(pre("starcoder", "abc 12345 x"), pre("command-r", "abc 12345 x"));
  // Plain GPT-2 keeps digit runs together, with their leading space.
  EXPECT_EQ(pre("gpt-2", "abc 12345 x"), (Pieces{"abc", " 12345", " x"}));
}

TEST(PreTokenizer, DeepseekV3DigitGroupsHanKanaRunsAndPunctuationLedWords) {
  // \p{N}{1,3} from the left: 123 456 7.
  EXPECT_EQ(pre("deepseek-v3", "1234567"), (Pieces{"123", "456", "7"}));
  // Han and hiragana share one run; "x" and "=" come from the last regex's
  // letter and punctuation alternatives.
  EXPECT_EQ(pre("deepseek-v3", "x=12345中文ひらがな"),
            (Pieces{"x", "=", "123", "45", "中文ひらがな"}));
  // One ASCII punctuation mark may lead an ASCII word; a space leads the next.
  EXPECT_EQ(pre("deepseek-v3", ".Hello world"), (Pieces{".Hello", " world"}));
  EXPECT_EQ(pre("hunyuan-dense", ".Hello world"), pre("deepseek-v3", ".Hello world"));
}

TEST(PreTokenizer, Qwen35CountsCombiningMarksAsLetters) {
  // "ne\u0301e": [\p{L}\p{M}]+ runs over the combining acute.
  EXPECT_EQ(pre("qwen35", "ne\u0301e"), (Pieces{"ne\u0301e"}));
  // Qwen2's regex without normalization (stablelm2): \p{L}+ stops at the mark,
  // which then serves as the optional non-letter before the next letters.
  EXPECT_EQ(pre("stablelm2", "ne\u0301e"), (Pieces{"ne", "\u0301e"}));
  // Qwen 3.5 leaves marks out of punctuation runs: "!!" stops at the mark,
  // which the letter alternative then takes; Qwen2's punctuation run takes it.
  // (With a single "!", the letter alternative's optional lead takes "!" and
  // both regexes give one piece.)
  EXPECT_EQ(pre("qwen35", "!!\u0301"), (Pieces{"!!", "\u0301"}));
  EXPECT_EQ(pre("stablelm2", "!!\u0301"), (Pieces{"!!\u0301"}));
  EXPECT_EQ(pre("qwen35", "!\u0301"), (Pieces{"!\u0301"}));
  // Qwen2 proper NFC-normalizes first, and so do its aliases; Qwen 3.5 does not.
  EXPECT_EQ(pre("qwen2", "e\u0301"), (Pieces{"\u00e9"}));
  EXPECT_EQ(pre("deepseek-r1-qwen", "e\u0301"), (Pieces{"\u00e9"}));
  EXPECT_EQ(pre("qwen35", "e\u0301"), (Pieces{"e\u0301"}));
}

TEST(PreTokenizer, TekkenSplitsCamelCaseAndSingleDigits) {
  // "hello" stops at "W"; "World" is one upper then lower letters; " HTTPServer"
  // takes the upper run HTTPS then the lower run "erver"; digits one by one.
  EXPECT_EQ(pre("tekken", "helloWorld HTTPServer abc123"),
            (Pieces{"hello", "World", " HTTPServer", " abc", "1", "2", "3"}));
  // All capitals: the second alternative (upper+ lower*).
  EXPECT_EQ(pre("tekken", "ABC"), (Pieces{"ABC"}));
}

TEST(PreTokenizer, Gpt4oAttachesContractionsAndGroupsDigitsInThrees) {
  // "I" has no lower-case letter, so the second alternative takes it, with the
  // case-insensitive contraction "'M". The space before digits stands alone.
  EXPECT_EQ(pre("gpt-4o", "I'M fine 1234567"), (Pieces{"I'M", " fine", " ", "123", "456", "7"}));
  EXPECT_EQ(pre("llama4", "helloWorld"), (Pieces{"hello", "World"}));
}

TEST(PreTokenizer, Llama3ContractionsAreCaseInsensitive) {
  EXPECT_EQ(pre("llama-bpe", "I'VE 12345"), (Pieces{"I", "'VE", " ", "123", "45"}));
  EXPECT_EQ(pre("pixtral", "I'VE 12345"), pre("llama-bpe", "I'VE 12345"));
  EXPECT_EQ(pre("lfm2", "I'VE 12345"), pre("llama-bpe", "I'VE 12345"));
}

TEST(PreTokenizer, BloomKeepsPunctuationAndSpacesBetweenMatchesAsPieces) {
  // " ?[^(\s|.,!?…)]+" matches words with one leading space; the text between
  // matches (",", "! ") is a piece of its own.
  EXPECT_EQ(pre("bloom", "Hello, world!  Ok"), (Pieces{"Hello", ",", " world", "! ", " Ok"}));
  EXPECT_EQ(pre("poro-chat",
                "a\xE3\x80\x82"
                "b"),
            (Pieces{"a", "\xE3\x80\x82", "b"}));
  // Viking then isolates digits.
  EXPECT_EQ(pre("viking", "abc123"), (Pieces{"abc", "1", "2", "3"}));
}

TEST(PreTokenizer, SuperbpeCutsDigitRunsIntoThreesFromTheRight) {
  // \p{N}+ isolates "1234567"; the lookahead (?=(\d{3})+(?!\d)) matches empty at
  // offsets 1 and 4, and an empty match still cuts. Words keep their spaces.
  EXPECT_EQ(pre("superbpe", "abc 1234567 x"), (Pieces{"abc ", "1", "234", "567", " x"}));
  EXPECT_EQ(pre("superbpe", "123456"), (Pieces{"123", "456"}));
}

TEST(PreTokenizer, DigitGroupsOnlyCutDecimalRuns) {
  // SuperBPE: \p{N}+ gives "12", "a", "345678"; only the six-digit run is a
  // multiple of three, cut at offset 3 ("2" is too short to cut).
  EXPECT_EQ(pre("superbpe", "12a345678"), (Pieces{"12", "a", "345", "678"}));
  // Tiny Aya: "12" is followed by a letter (a word character), so no group
  // there; "345" ends the text. The o200k regex then cuts "12a" into "12", "a".
  EXPECT_EQ(pre("tiny_aya", "12a345"), (Pieces{"12", "a", "345"}));
  // "²" is \p{N} but not a decimal digit: SuperBPE's \p{N}+ keeps it with the
  // digits, and the cut counts only the four decimal digits after it.
  EXPECT_EQ(pre("superbpe", "\u00b21234"), (Pieces{"\u00b21", "234"}));
}

TEST(PreTokenizer, DigitGroupsStayLinearOnAMegabyteOfDigits) {
  const std::string digits(1 << 20, '7');
  for (const char* name : {"superbpe", "tiny_aya"}) {
    // CPU time, as a guard against the regexes' super-linear work (over 60 s),
    // not a speed target: the one-pass cut takes ~0.3 s even under ASan.
    const std::clock_t c0 = std::clock();
    const auto p = pre(name, digits);
    const double s = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    // 1048576 = 3 * 349525 + 1: a single digit first, then threes.
    ASSERT_EQ(p.size(), 349526u) << name;
    EXPECT_EQ(p.front(), "7") << name;
    EXPECT_LT(s, 20.0) << name;
  }
}

TEST(PreTokenizer, TinyAyaGroupsDigitsFromTheRight) {
  // \d{1,3}(?=(?:\d{3})*\b): the first group is as short as the run needs.
  EXPECT_EQ(pre("tiny_aya", "1234567"), (Pieces{"1", "234", "567"}));
  // \b is Oniguruma's: a combining mark is a word character, so no digit group
  // of "1234\u0301" ends at a boundary; the o200k regex then groups "123", "4".
  EXPECT_EQ(pre("tiny_aya", "1234\u0301"), (Pieces{"123", "4", "\u0301"}));
}

TEST(PreTokenizer, SeedCoderKeepsNewlinesOutOfPunctuation) {
  EXPECT_EQ(pre("seed-coder", "a.\n"), (Pieces{"a", ".", "\n"}));
  EXPECT_EQ(pre("dbrx", "a.\n"), (Pieces{"a", ".\n"}));
}

TEST(PreTokenizer, BailingContractionsAndExaoneMoeSpacedWords) {
  EXPECT_EQ(pre("bailingmoe", "'LL'd7"), (Pieces{"'LL", "'d", "7"}));
  // Letters joined by single spaces stay one pre-token.
  EXPECT_EQ(pre("exaone-moe", "ab cd 12"), (Pieces{"ab cd", " ", "1", "2"}));
}

TEST(PreTokenizer, Jais2CutsWhitespaceRunsIntoPowersOfTwo) {
  // 20 spaces before "b": \s{16} (followed by a space), then \s{1,2} twice
  // (2, then 1 so that one space is left for " b"). Llama 3 keeps 19 together.
  const std::string text = "a" + std::string(20, ' ') + "b";
  EXPECT_EQ(pre("jais-2", text), (Pieces{"a", std::string(16, ' '), "  ", " ", " b"}));
  EXPECT_EQ(pre("llama-bpe", text), (Pieces{"a", std::string(19, ' '), " b"}));
}

TEST(PreTokenizer, Gemma4WritesSpacesAsMetaspaceAndCutsOnlyAtNewlineRuns) {
  EXPECT_EQ(pre("gemma4", "Hi there\n\nok"), (Pieces{"Hi\xE2\x96\x81there", "\n\n", "ok"}));
  // Sarvam: the same cut, and every space (the leading one too) is "▁".
  EXPECT_EQ(pre("sarvam-moe", " a b\n"), (Pieces{"\xE2\x96\x81"
                                                 "a"
                                                 "\xE2\x96\x81"
                                                 "b",
                                                 "\n"}));
}

TEST(PreTokenizer, KnownButUnimplementedNamesAreRefusedWithTheReason) {
  for (const char* name : {"kimi-k2", "afmoe"}) {
    try {
      pre(name, "x");
      ADD_FAILURE() << name << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::Unsupported);
      const std::string msg = e.what();
      EXPECT_NE(msg.find(name), std::string::npos) << msg;
      EXPECT_NE(msg.find("not supported: "), std::string::npos) << msg;
    }
  }
  try {
    pre("made-up", "x");
    ADD_FAILURE() << "made-up was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::Unsupported);
    EXPECT_NE(std::string(e.what()).find("'made-up'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("command-r"), std::string::npos) << e.what();
  }
}

TEST(PreTokenizer, EveryNameConvertersWriteIsAccepted) {
  const auto names = bpe_pre_names();
  for (const char* n : {"command-r",    "qwen35",
                        "deepseek-v3",  "tekken",
                        "gpt-4o",       "llama4",
                        "chatglm-bpe",  "glm4",
                        "stablelm2",    "poro-chat",
                        "bloom",        "gpt3-finnish",
                        "viking",       "jais",
                        "exaone",       "minerva-7b",
                        "megrez",       "seed-coder",
                        "grok-2",       "bailingmoe",
                        "superbpe",     "deepseek-r1-qwen",
                        "pixtral",      "lfm2",
                        "llama-bpe",    "qwen2",
                        "gpt-2",        "falcon",
                        "starcoder",    "refact",
                        "smollm",       "codeshell",
                        "olmo",         "mpt",
                        "dbrx",         "smaug-bpe",
                        "deepseek-llm", "deepseek-coder",
                        "default",      "roberta-bpe",
                        "phi-2",        "gemma4"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
    // Every name compiles its regexes and splits text.
    EXPECT_FALSE(pre(n, "Hello, world 123!").empty()) << n;
  }
  // No name is listed twice (an alias shadowing a family would be ambiguous).
  auto sorted = names;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
  // Pieces always concatenate back to the (normalized) text, for every name.
  for (std::string_view n : names) {
    std::string joined;
    for (const auto& p : pre(n, "It's 2024: naïve café, 東京 ok?\n\n  x")) joined += p;
    EXPECT_FALSE(joined.empty()) << n;
    if (n != "gemma4" && n != "granite-embed-multi-311m" && n != "sarvam-moe") {
      EXPECT_EQ(joined, "It's 2024: naïve café, 東京 ok?\n\n  x") << n;
    }
  }
}

}  // namespace
}  // namespace seam
