// The llama.cpp reference set (../shared/models/quant): our decoding of each
// shipped quantized file gives llama.cpp's greedy ids, and logits within the
// tolerances its README derives.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_model.h"

namespace seam {
namespace {

using testing::decode_all;

const std::string kQuantDir = std::string(SEAM_SHARED_DIR) + "/models/quant/";

nlohmann::json expected() {
  std::ifstream f(kQuantDir + "expected.json");
  return nlohmann::json::parse(f);
}

std::vector<float> read_f32(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  std::vector<float> v(static_cast<std::size_t>(f.tellg()) / 4);
  f.seekg(0);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
  return v;
}

struct Diff {
  double max_abs = 0, rms = 0;
};
Diff diff(std::span<const float> a, std::span<const float> b) {
  Diff d;
  double ss = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double e = std::abs(static_cast<double>(a[i]) - b[i]);
    d.max_abs = std::max(d.max_abs, e);
    ss += e * e;
  }
  d.rms = std::sqrt(ss / static_cast<double>(a.size()));
  return d;
}

class LlamaCppQuant : public ::testing::TestWithParam<std::string> {};

TEST_P(LlamaCppQuant, GreedyIdsAndLogitsMatch) {
  const std::string key = GetParam();
  const nlohmann::json all = expected();
  const nlohmann::json& e = all["files"][key];
  ASSERT_TRUE(e["shipped"].get<bool>());
  LoadOptions lo;
  lo.n_threads = 2;
  auto model = Model::load(kQuantDir + e["file"].get<std::string>(), lo);
  const std::vector<Token> prompt = e["prompt_ids"].get<std::vector<Token>>();
  EXPECT_EQ(model->tokenize(all["prompt"]["text"].get<std::string>(), true, false), prompt);

  auto s = model->session({64, 512, 1});
  std::vector<Decode> batch;
  for (std::size_t i = 0; i < prompt.size(); ++i)
    batch.push_back({prompt[i], static_cast<std::int32_t>(i), 0, i + 1 == prompt.size()});
  s->decode(batch);
  const auto row = s->logits(prompt.size() - 1);
  const std::vector<float> own = read_f32(kQuantDir + "logits/" + key + ".p0.f32");
  const std::vector<float> twin = read_f32(kQuantDir + "logits/" + key + ".p0.dqf32.f32");
  ASSERT_EQ(own.size(), row.size());
  const Diff vs_own = diff(row, own);
  const Diff vs_twin = diff(row, twin);
  std::printf(
      "[ %s ] vs llama.cpp: max abs %.4f rms %.4f; vs its dequantized twin: max abs %.4f rms "
      "%.4f\n",
      key.c_str(), vs_own.max_abs, vs_own.rms, vs_twin.max_abs, vs_twin.rms);
  // README: engine math vs llama.cpp's own logits of the same file.
  EXPECT_LE(vs_own.max_abs, 0.1);
  EXPECT_LE(vs_own.rms, 0.025);

  std::vector<Token> greedy;
  std::vector<float> last(row.begin(), row.end());
  for (std::size_t i = 0; i < e["greedy_ids"].size(); ++i) {
    Token best = 0;
    for (std::size_t j = 1; j < last.size(); ++j)
      if (last[j] > last[static_cast<std::size_t>(best)]) best = static_cast<Token>(j);
    greedy.push_back(best);
    last = decode_all(*s, std::span(&best, 1), 0, static_cast<std::int32_t>(prompt.size() + i))[0];
  }
  EXPECT_EQ(greedy, e["greedy_ids"].get<std::vector<Token>>());
}

INSTANTIATE_TEST_SUITE_P(Shipped, LlamaCppQuant, ::testing::Values("q4_0", "q4_k_m", "q2_k-pure"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace seam
