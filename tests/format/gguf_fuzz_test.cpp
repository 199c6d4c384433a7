// Runs the GGUF fuzz target (fuzz/gguf_fuzz.h) on deterministic mutations of
// the writer's seed files, so every CI configuration (including ASan+UBSan)
// fuzzes the reader. Only seam::Error may come out of a refused input; a
// parsed input must satisfy the reader's invariants and survive a rewrite
// (the target aborts otherwise).
#include <gtest/gtest.h>

#include "../../fuzz/gguf_fuzz.h"

namespace seam {
namespace {

TEST(GgufFuzz, SeedsParseAndRoundTrip) {
  for (const auto& s : fuzz::gguf_seeds()) {
    EXPECT_NO_THROW(
        fuzz::gguf_one_input(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()));
  }
}

TEST(GgufFuzz, MutationsAreDeterministic) {
  fuzz::Mutator a(7), b(7);
  const auto seed = fuzz::gguf_seeds().front();
  for (int i = 0; i < 50; ++i) EXPECT_EQ(a.mutate(seed), b.mutate(seed));
}

TEST(GgufFuzz, TwentyThousandMutations) {
  const fuzz::FuzzStats stats = fuzz::run_gguf_fuzz(20000, 0x5eed);
  EXPECT_EQ(stats.runs, 20000u);
  // Both outcomes must be well exercised, or the mutator is not probing the
  // parser (all refused) or not mutating (all parsed).
  EXPECT_GT(stats.parsed, 500u) << "refused " << stats.refused;
  EXPECT_GT(stats.refused, 5000u) << "parsed " << stats.parsed;
}

}  // namespace
}  // namespace seam
