// Replays the safetensors fuzz targets (fuzz/safetensors_fuzz.h) on their seeds
// and on deterministic mutations of them, in seconds: only seam::Error may come
// out, and a file that parses keeps its tensors inside the input (the target
// aborts otherwise). The campaign itself is scripts/fuzz_campaign.sh.
#include <gtest/gtest.h>

#include "../../fuzz/mutator.h"
#include "../../fuzz/safetensors_fuzz.h"

namespace seam {
namespace {

const std::uint8_t* bytes_of(const std::string& s) {
  return reinterpret_cast<const std::uint8_t*>(s.data());
}

// Runs `n` mutations of `seeds` through `one`; returns how many were accepted.
template <class F>
int replay(const std::vector<std::string>& seeds, int n, std::uint64_t seed, F&& one) {
  fuzz::Mutator m(seed);
  int accepted = 0;
  for (int i = 0; i < n; ++i) {
    const std::string in =
        fuzz::mutate_string(m, seeds[static_cast<std::size_t>(i) % seeds.size()]);
    try {
      one(in);
      ++accepted;
    } catch (const Error&) {
    }
  }
  return accepted;
}

TEST(SafetensorsFuzz, SeedsParseAndMutationsStayInBounds) {
  const auto seeds = fuzz::safetensors_seeds();
  ASSERT_GE(seeds.size(), 4u);
  // The first two are valid files of every loadable dtype.
  for (int i = 0; i < 2; ++i)
    EXPECT_NO_THROW(fuzz::safetensors_one_input(bytes_of(seeds[i]), seeds[i].size())) << i;
  const int accepted = replay(seeds, 20000, 0x5afe, [](const std::string& in) {
    fuzz::safetensors_one_input(bytes_of(in), in.size());
  });
  // Both outcomes must occur, or the mutations are not probing the parser.
  EXPECT_GT(accepted, 100);
  EXPECT_LT(accepted, 19000);
}

TEST(SafetensorsFuzz, IndexSeedsOpenAndMutationsOnlyEverRefuse) {
  fuzz::SafetensorsIndexTarget target;
  const auto seeds = fuzz::safetensors_index_seeds();
  // The full index and one listing a subset open; a path out of the folder and a
  // tensor in the wrong shard are refused.
  for (std::size_t i = 0; i < 2; ++i)
    EXPECT_NO_THROW(target.run(bytes_of(seeds[i]), seeds[i].size())) << seeds[i];
  for (std::size_t i = 2; i < seeds.size(); ++i)
    EXPECT_THROW(target.run(bytes_of(seeds[i]), seeds[i].size()), Error) << seeds[i];
  const int accepted = replay(seeds, 3000, 0x1d0,
                              [&](const std::string& in) { target.run(bytes_of(in), in.size()); });
  // Most byte mutations break the JSON; some (whitespace, metadata) still open.
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace seam
