// Replays the Hugging Face import fuzz targets (fuzz/hf_fuzz.h) on their seeds
// (fuzz/make_hf_fixtures.sh's directories) and on deterministic mutations of
// them, in seconds: only seam::Error may come out. The campaign itself is
// scripts/fuzz_campaign.sh.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "../../fuzz/hf_fuzz.h"
#include "../../fuzz/mutator.h"
#include "python_tools.h"

namespace seam {
namespace {

// The fixture root, made once per scratch folder.
std::string fixtures() {
  const std::string root = testing::scratch_dir() + "/fuzz_hf";
  if (!std::filesystem::exists(root)) {
    const std::string tmp = testing::private_tmp(root);
    testing::run_command(std::string(SEAM_SOURCE_DIR) + "/fuzz/make_hf_fixtures.sh " + tmp + " " +
                         SEAM_PYTHON + " && " + testing::publish(tmp, root));
  }
  return root;
}

const std::uint8_t* bytes_of(const std::string& s) {
  return reinterpret_cast<const std::uint8_t*>(s.data());
}

template <class Target>
int replay(Target& target, const std::vector<std::string>& seeds, int n, std::uint64_t seed) {
  fuzz::Mutator m(seed);
  int accepted = 0;
  for (int i = 0; i < n; ++i) {
    const std::string in =
        fuzz::mutate_string(m, seeds[static_cast<std::size_t>(i) % seeds.size()]);
    try {
      target.run(bytes_of(in), in.size());
      ++accepted;
    } catch (const Error&) {
    }
  }
  return accepted;
}

TEST(HfConfigFuzz, EveryFixtureConfigLoadsAndMutationsOnlyEverRefuse) {
  const std::string root = fixtures();
  fuzz::HfConfigTarget target(root);
  const auto seeds = fuzz::hf_config_seeds(root);
  ASSERT_GE(seeds.size(), 11u);
  // Each config meets the weights of the first fixture of its class: those
  // load (the others' shapes may differ from their donor's: refused by name).
  std::set<std::string> classes;
  for (const auto& d : fuzz::hf_fixture_dirs(root)) {
    const std::string s = fuzz::read_file((d / "config.json").string());
    const std::string cls = s.substr(s.find("\"architectures\""), 80);
    if (classes.insert(cls.substr(0, cls.find(']'))).second) {
      EXPECT_NO_THROW(target.run(bytes_of(s), s.size())) << d;
    } else {
      try {
        target.run(bytes_of(s), s.size());
      } catch (const Error&) {
      }
    }
  }
  EXPECT_GE(classes.size(), 10u);
  // A config that no longer matches the weights must be refused, and some
  // mutations (whitespace, unread keys) still load.
  const int accepted = replay(target, seeds, 3000, 0xc0f);
  EXPECT_GT(accepted, 5);
  EXPECT_LT(accepted, 3000);
}

TEST(HfTokenizerFuzz, EveryFixtureImportsAndMutationsOnlyEverRefuse) {
  const std::string root = fixtures();
  fuzz::HfTokenizerTarget target(root);
  const auto seeds = fuzz::hf_tokenizer_seeds(root);
  ASSERT_GE(seeds.size(), 9u);
  // SentencePiece-style (with and without Metaspace) and byte-level seeds all import.
  for (const std::string& s : seeds) EXPECT_NO_THROW(target.run(bytes_of(s), s.size()));
  const int accepted = replay(target, seeds, 1500, 0x70c);
  EXPECT_GT(accepted, 5);
  EXPECT_LT(accepted, 1500);
}

}  // namespace
}  // namespace seam
