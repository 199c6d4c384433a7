// Replays the tokenize fuzz target (fuzz/tokenize_fuzz.h): every tokenizer of
// its set builds from ../shared/tokenizers, and arbitrary bytes through each
// give ids inside the vocabulary (the target aborts otherwise). The campaign
// itself is scripts/fuzz_campaign.sh.
#include <gtest/gtest.h>

#include <filesystem>

#include "../../fuzz/mutator.h"
#include "../../fuzz/tokenize_fuzz.h"

namespace seam {
namespace {

TEST(TokenizeFuzz, EveryFamilyBuildsAndSurvivesMutations) {
  if (!std::filesystem::exists(fuzz::shared_dir() + "/tokenizers/llama2-vocab.gguf"))
    GTEST_SKIP() << "../shared/tokenizers is absent";
  fuzz::TokenizerSet set;
  // SentencePiece, WordPiece, Unigram, the real byte-level vocabularies, and
  // one per pre-tokenizer family.
  ASSERT_GE(set.size(), 12 + pre_families().size());
  for (std::size_t i = 0; i < set.size(); ++i)
    EXPECT_NO_THROW((void)set.get(i)) << set.spec(i).name;
  const auto seeds = fuzz::tokenize_seeds(set.size());
  for (const std::string& s : seeds)
    fuzz::tokenize_one_input(set, reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
  fuzz::Mutator m(0x70e);
  for (int i = 0; i < 4000; ++i) {
    const std::string in =
        fuzz::mutate_string(m, seeds[static_cast<std::size_t>(i) % seeds.size()]);
    fuzz::tokenize_one_input(set, reinterpret_cast<const std::uint8_t*>(in.data()), in.size());
  }
}

}  // namespace
}  // namespace seam
