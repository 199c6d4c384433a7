// End-to-end tests of `seam bench` on the real stories260K checkpoint: the
// shape of what it reports (never its speed) and its refusals.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "seam_binary.h"

namespace {

using namespace seam::e2e;

namespace fs = std::filesystem;

Output seam_bench(std::vector<std::string> args) {
  args.insert(args.begin(), "bench");
  return run_seam(args);
}

const std::string kModel = std::string(SEAM_SHARED_DIR) + "/models/stories260K.gguf";

TEST(BenchCli, JsonHasOneResultPerThreadsDepthAndTest) {
  // --membw skips the bandwidth probe: the test stays fast and the bound is known.
  const Output o = seam_bench({"-m", kModel, "-p", "16", "-n", "4", "-d", "0,20", "-t", "1,2", "-r",
                               "2", "--membw", "10", "--json"});
  ASSERT_EQ(o.rc, 0) << o.err;
  const auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["architecture"], "llama");
  EXPECT_GT(j["size_bytes"].get<double>(), 0);
  // The bundled model's output is not its embedding: a token reads one row of that.
  EXPECT_GT(j["decode_bytes"].get<double>(), 0);
  EXPECT_LT(j["decode_bytes"].get<double>(), j["size_bytes"].get<double>());
  EXPECT_GT(j["peak_rss_mib"].get<double>(), 0);
  EXPECT_EQ(j["membw_gbps"]["2"], 10.0);
  ASSERT_EQ(j["results"].size(), 8u);
  std::size_t i = 0;
  for (int t : {1, 2}) {
    for (int d : {0, 20}) {
      for (const char* test : {"pp16", "tg4"}) {
        const auto& r = j["results"][i++];
        SCOPED_TRACE(r.dump());
        EXPECT_EQ(r["threads"], t);
        EXPECT_EQ(r["depth"], d);
        EXPECT_EQ(r["test"], test);
        EXPECT_GT(r["tps"].get<double>(), 0);
        EXPECT_GE(r["tps_sd"].get<double>(), 0);
        const bool tg = std::string(test).starts_with("tg");
        ASSERT_EQ(r.contains("bw_pct"), tg);
        if (tg) {
          // % of the bound = tok/s * bytes per token / bandwidth, as documented.
          const double expect =
              100.0 * r["tps"].get<double>() * j["decode_bytes"].get<double>() / 10e9;
          EXPECT_NEAR(r["bw_pct"].get<double>(), expect, 1e-9 * expect + 1e-12);
        }
      }
    }
  }
}

// A mix is named by its file type, not by the type most tensors have (a
// Q4_K_M file holds more F32 norms than Q4_K matrices); the summary puts the
// type holding most bytes first.
TEST(BenchCli, TypeIsTheFilesOwn) {
  const std::string q4km = std::string(SEAM_SHARED_DIR) + "/models/quant/ref-llama-512-q4_k_m.gguf";
  const Output o = seam_bench({"-m", q4km, "-p", "4", "-n", "1", "-d", "0", "-t", "1", "-r", "1",
                               "--membw", "10", "--json"});
  ASSERT_EQ(o.rc, 0) << o.err;
  const auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["type"], "Q4_K_M");
  EXPECT_EQ(j["quantization"], "Q4_K x25, Q6_K x5, F32 x9");
}

TEST(BenchCli, TableNamesTheModelTheTestsAndPeakRss) {
  const Output o = seam_bench(
      {"-m", kModel, "-p", "8", "-n", "2", "-d", "0,8", "-t", "1", "-r", "1", "--membw", "10"});
  ASSERT_EQ(o.rc, 0) << o.err;
  EXPECT_NE(o.out.find("| pp8 "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("| tg2 @ d8 "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("peak RSS: "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("bandwidth bound: 10.0 GB/s with 1 thread (--membw)"), std::string::npos);
}

TEST(BenchCli, RejectsNonsenseWithOneLine) {
  const std::vector<std::vector<std::string>> bad = {
      {"-d", "abc"},          {"-d", "1,,2"},   {"-t", "0"},
      {"-t", "2x"},           {"-r", "0"},      {"-p", "-1"},
      {"-p", "0", "-n", "0"}, {"--membw", "0"}, {"--membw", "-3"},
      {"--cache-type", "q2"},
  };
  for (const auto& extra : bad) {
    // Every refusal comes before the model loads or bandwidth is measured.
    std::vector<std::string> args = {"-m", kModel};
    args.insert(args.end(), extra.begin(), extra.end());
    const Output o = seam_bench(args);
    SCOPED_TRACE(extra[0] + " " + extra[1]);
    EXPECT_NE(o.rc, 0);
    EXPECT_TRUE(o.out.empty()) << o.out;
    ASSERT_FALSE(o.err.empty());
    EXPECT_EQ(o.err.find('\n'), o.err.size() - 1) << o.err;
  }
  const Output missing = seam_bench({"-m", "/nonexistent.gguf", "-r", "1", "--membw", "10"});
  EXPECT_NE(missing.rc, 0);
  EXPECT_TRUE(missing.out.empty());
}

}  // namespace
