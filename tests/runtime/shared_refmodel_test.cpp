// The shared generator and reference (../shared/tools): models that
// mkgguf.py writes (llama, qwen2, qwen3 in every dtype it has) decode in seam
// as refmodel.py, a float64 reference of llama.cpp's semantics written apart
// from ours, says they must. Teacher-forced logits at every position, and a
// greedy continuation whose every pick the reference agrees with.
#include <gtest/gtest.h>

#include <algorithm>

#include "python_tools.h"
#include "test_model.h"

namespace seam {
namespace {

using namespace seam::testing;

const std::string kTools = std::string(SEAM_SHARED_DIR) + "/tools";

struct SharedCase {
  std::string arch, dtype, shape;
  double tol;  // max |ours - reference| / max |reference| over each logits row
};

std::string case_name(const SharedCase& c) { return c.arch + "_" + c.dtype; }

// refmodel.py's logits for every position of `ids`: [n_tokens][n_vocab].
std::vector<float> refmodel_logits(const std::string& model, const std::vector<Token>& ids,
                                   const std::string& tag) {
  const std::string out = scratch_dir() + "/" + tag + "." + std::to_string(::getpid()) + ".f32";
  run_command(std::string(SEAM_PYTHON) + " -c \"import sys; sys.path.insert(0, '" + kTools +
              "'); import numpy as np, refmodel; m = refmodel.Model('" + model + "'); m.forward([" +
              join_ids(ids) + "]).astype('<f4').tofile('" + out + "')\"");
  std::vector<float> v = read_f32_file(out);
  std::filesystem::remove(out);
  return v;
}

class SharedRefmodel : public ::testing::TestWithParam<SharedCase> {};

TEST_P(SharedRefmodel, LogitsAndGreedyMatch) {
  const SharedCase& c = GetParam();
  const std::string path =
      cached_file(scratch_dir() + "/mkgguf_" + case_name(c) + ".gguf",
                  std::string(SEAM_PYTHON) + " " + kTools + "/mkgguf.py --arch " + c.arch + " " +
                      c.shape + " --dtype " + c.dtype + " --seed 7 -o TMP > /dev/null");
  auto model = load_two_threads(path);
  const std::size_t nv = model->info().n_vocab;

  std::vector<Token> ids = random_prompt(nv, 12, 11);
  const std::size_t n_prompt = ids.size();

  // Our greedy continuation (argmax, lowest id on ties), decoded one token at a time.
  auto s = model->session({64, 512, 1, CacheType::F32});
  std::vector<float> last = decode_all(*s, ids, 0).back();
  for (int step = 0; step < 8; ++step) {
    const Token best =
        static_cast<Token>(std::max_element(last.begin(), last.end()) - last.begin());
    ids.push_back(best);
    last = decode_all(*s, std::span(&best, 1), 0, static_cast<std::int32_t>(ids.size() - 1))[0];
  }

  // The reference over prompt + continuation: every row within tolerance, and
  // each greedy pick the reference's best or within the tolerance of it (a
  // near-tie that the bound cannot order).
  const std::vector<float> ref = refmodel_logits(path, ids, case_name(c));
  expect_logits_match(*model, ids, ref, c.tol, case_name(c));
  for (std::size_t t = n_prompt - 1; t + 1 < ids.size(); ++t) {
    const std::span<const float> row = std::span(ref).subspan(t * nv, nv);
    const float best = *std::max_element(row.begin(), row.end());
    float scale = 0;
    for (float v : row) scale = std::max(scale, std::abs(v));
    EXPECT_GE(row[static_cast<std::size_t>(ids[t + 1])], best - 2 * c.tol * scale)
        << case_name(c) << ": greedy pick at position " << t + 1;
  }
}

// F32 and F16 weights are used exactly (F16 meets float activations), so only
// float32 accumulation differs from float64; Q8_0/Q4_0 activations are
// quantized to 8-bit blocks (the bounds the rest of the reference tests use).
const std::string kLlamaShape = "--dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 96 --vocab 320";
const std::string kQwen3Shape =
    "--dim 64 --layers 2 --heads 4 --kv-heads 2 --head-dim 32 --ffn 96 --vocab 320";

std::vector<SharedCase> cases() {
  std::vector<SharedCase> v;
  for (const std::string arch : {"llama", "qwen2", "qwen3"}) {
    const std::string& shape = arch == "qwen3" ? kQwen3Shape : kLlamaShape;
    v.push_back({arch, "F32", shape, 1e-4});
    v.push_back({arch, "F16", shape, 1e-4});
    v.push_back({arch, "Q8_0", shape, 2e-2});
    v.push_back({arch, "Q4_0", shape, 2e-2});
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Mkgguf, SharedRefmodel, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return case_name(info.param); });

}  // namespace
}  // namespace seam
