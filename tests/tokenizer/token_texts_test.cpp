// TokenTexts: every text back as pushed, and find() giving the lowest id of a
// text, as the unordered_map it replaced did (the tokenizers' lookups rely on
// it: duplicated texts occur in real vocabularies).
#include "tokenizer/token_texts.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

namespace seam {
namespace {

TEST(TokenTexts, TextsComeBackAndFindGivesTheLowestId) {
  // Random texts from a small alphabet (so many repeat), empty ones included,
  // and bytes a std::string would carry: NUL and high bytes.
  std::mt19937 rng(5);
  std::vector<std::string> texts;
  for (int i = 0; i < 5000; ++i) {
    std::string s(rng() % 6, '\0');
    for (char& c : s) c = "ab\0\xff\xe2"[rng() % 5];
    texts.push_back(s);
  }
  TokenTexts t;
  t.reserve(texts.size(), 0);  // too small: growing past it must be fine
  for (const std::string& s : texts) t.push_back(s);
  t.build_index();
  ASSERT_EQ(t.size(), texts.size());
  std::map<std::string, Token> lowest;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(t[i], texts[i]) << i;
    lowest.emplace(texts[i], static_cast<Token>(i));  // keeps the first
  }
  ASSERT_LT(lowest.size(), texts.size() / 2) << "the case must have many repeated texts";
  for (const auto& [text, id] : lowest) EXPECT_EQ(t.find(text), id) << text;
  EXPECT_EQ(t.find("abc"), std::nullopt);  // 'c' is not in the alphabet
  EXPECT_EQ(t.find(std::string(7, 'a')), std::nullopt);
}

TEST(TokenTexts, EmptyTableFindsNothing) {
  TokenTexts t;
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.find(""), std::nullopt);
  t.build_index();
  EXPECT_EQ(t.find("x"), std::nullopt);
  t.push_back("");
  t.build_index();
  EXPECT_EQ(t.find(""), 0);
  EXPECT_EQ(t[0], "");
}

}  // namespace
}  // namespace seam
