// quantize_model and perplexity: Q8_0/Q4_0 output bit-exact with the reference
// quantizers, the type plan (fallbacks, llama.cpp's Q4_K_M mix), metadata, and
// quantized models that load and stay close to the float model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "python_tools.h"
#include "runtime/quantize_plan.h"
#include "seam/error.h"
#include "seam/model.h"
#include "seam/perplexity.h"
#include "seam/quantize.h"
#include "test_model.h"

namespace seam {
namespace {

using testing::generate_model;
using testing::run_command;
using testing::scratch_dir;

std::string quantized(const std::string& src, const std::string& tag, const std::string& type,
                      const std::string& mix = "") {
  const std::string out = scratch_dir() + "/quantize_" + tag + ".gguf";
  QuantizeOptions o;
  o.type = type;
  o.mix = mix;
  o.n_threads = 2;
  quantize_model(src, out, o);
  return out;
}

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

// 2-D weights whose rows are multiples of 32: every one gets the target type.
std::string small_f32_model() {
  return generate_model("quant_src_f32", "--dim 64 --heads 4 --ffn 96 --vocab 300 --seed 11");
}

class BitExact : public ::testing::TestWithParam<const char*> {};

TEST_P(BitExact, MatchesReferenceQuantizerPerTensor) {
  const std::string type = GetParam();
  const std::string src = small_f32_model();
  const std::string out = quantized(src, "bitexact_" + type, type);
  // The reference: tools/gguf.py's quantize_<type> of each 2-D tensor's F32 values.
  const std::string dir = scratch_dir() + "/quantize_ref_" + type;
  std::filesystem::create_directories(dir);
  std::string lower = type;
  for (char& c : lower) c = static_cast<char>(std::tolower(c));
  const std::string py = "import sys; sys.path.insert(0, '" + std::string(SEAM_SOURCE_DIR) +
                         "/tools'); import gguf\n"
                         "r = gguf.GGUFReader('" +
                         src +
                         "')\n"
                         "for n, ti in r.tensors.items():\n"
                         "    if len(ti.ne) >= 2:\n"
                         "        open('" +
                         dir + "/' + n, 'wb').write(gguf.quantize_" + lower +
                         "(r.tensor(n).ravel()))\n";
  std::ofstream(dir + "/ref.py") << py;
  run_command(std::string(SEAM_PYTHON) + " " + dir + "/ref.py");

  const GgufFile in = GgufFile::open(src);
  const GgufFile q = GgufFile::open(out);
  ASSERT_EQ(q.tensors().size(), in.tensors().size());
  int checked = 0;
  for (const GgufTensor& t : q.tensors()) {
    const GgufTensor* orig = in.find_tensor(t.name);
    ASSERT_NE(orig, nullptr) << t.name;
    EXPECT_EQ(t.ne, orig->ne) << t.name;
    if (t.ne.size() < 2) {
      EXPECT_EQ(t.type, TensorType::F32) << t.name;
      continue;
    }
    EXPECT_EQ(std::string(type_info(t.type).name), type) << t.name;
    const std::vector<char> ref = read_bytes(dir + "/" + t.name);
    ASSERT_EQ(ref.size(), t.nbytes) << t.name;
    EXPECT_EQ(std::memcmp(ref.data(), t.data, t.nbytes), 0) << t.name << " differs";
    ++checked;
  }
  EXPECT_GE(checked, 2 + 7 * 2);  // token_embd, output, 7 per layer
}

INSTANTIATE_TEST_SUITE_P(Types, BitExact, ::testing::Values("Q8_0", "Q4_0"));

TEST(Quantize, MetadataCopiedAndFileTypeUpdated) {
  const std::string src = small_f32_model();
  const std::string out = quantized(src, "meta_q4_0", "q4_0");
  const GgufFile in = GgufFile::open(src);
  const GgufFile q = GgufFile::open(out);
  EXPECT_EQ(q.version(), 3u);
  EXPECT_EQ(q.get_uint("general.file_type"), 2u);
  for (const auto& [key, value] : in.metadata()) {
    if (key == "general.file_type") continue;
    const GgufValue* v = q.find(key);
    ASSERT_NE(v, nullptr) << key;
    EXPECT_TRUE(*v == value) << key;
  }
}

// Tensors are made as the writer reaches them: progress comes once per tensor,
// in order, and the report's sizes are those of the tensors written.
TEST(Quantize, ReportsEachTensorOnceInOrderWithTheSizesWritten) {
  const std::string src = small_f32_model();
  const std::string out = scratch_dir() + "/quantize_progress.gguf";
  QuantizeOptions o;
  o.mix = "q4_k_m";
  o.n_threads = 2;
  std::vector<std::pair<std::size_t, std::size_t>> calls;
  o.on_tensor = [&calls](std::size_t done, std::size_t total) { calls.emplace_back(done, total); };
  const QuantizeReport r = quantize_model(src, out, o);
  ASSERT_EQ(calls.size(), r.tensors.size());
  for (std::size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i].first, i + 1);
    EXPECT_EQ(calls[i].second, r.tensors.size());
  }
  const GgufFile q = GgufFile::open(out);
  std::uint64_t total = 0;
  for (const QuantizedTensor& t : r.tensors) {
    const GgufTensor* w = q.find_tensor(t.name);
    ASSERT_NE(w, nullptr) << t.name;
    EXPECT_EQ(t.bytes_out, w->nbytes) << t.name;
    EXPECT_EQ(t.to, type_info(w->type).name) << t.name;
    total += w->nbytes;
  }
  EXPECT_EQ(r.bytes_out, total);
}

TEST(Quantize, RowsThatDoNotFitFallBackAndSaySo) {
  // dim 48 and ffn 100: no row length is a multiple of 32, so Q8_0 falls back to F16.
  const std::string src = generate_model("quant_src_odd", "--dim 48 --ffn 100 --seed 3");
  QuantizeOptions o;
  o.type = "Q8_0";
  const QuantizeReport r = quantize_model(src, scratch_dir() + "/quantize_odd.gguf", o);
  int fell_back = 0;
  for (const QuantizedTensor& t : r.tensors) {
    if (t.to == "F16") {
      EXPECT_NE(t.note.find("not a multiple of 32"), std::string::npos) << t.name;
      ++fell_back;
    }
  }
  EXPECT_GT(fell_back, 0);
  EXPECT_NO_THROW(Model::load(scratch_dir() + "/quantize_odd.gguf"));

  // K-quants on rows of 64/96: Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0.
  const GgufFile f = GgufFile::open(small_f32_model());
  const std::pair<TensorType, TensorType> expect[] = {{TensorType::Q4_K, TensorType::Q5_0},
                                                      {TensorType::Q5_K, TensorType::Q5_1},
                                                      {TensorType::Q6_K, TensorType::Q8_0}};
  for (const auto& [target, alt] : expect) {
    for (const PlannedTensor& p : plan_quantization(f, target, QuantMix::None)) {
      if (p.src->ne.size() >= 2) {
        EXPECT_EQ(p.to, alt) << p.src->name;
        EXPECT_FALSE(p.note.empty());
      }
    }
  }
}

// The type plan of llama.cpp's Q4_K_M, checked against a file llama-quantize wrote.
TEST(Quantize, Q4KMMixMatchesLlamaQuantize) {
  const GgufFile ref =
      GgufFile::open(std::string(SEAM_SHARED_DIR) + "/models/quant/ref-llama-512-q4_k_m.gguf");
  const auto plan = plan_quantization(ref, TensorType::Q8_0, QuantMix::Q4_K_M);
  int q6 = 0;
  for (const PlannedTensor& p : plan) {
    EXPECT_EQ(p.to, p.src->type) << p.src->name;
    q6 += p.to == TensorType::Q6_K;
  }
  EXPECT_EQ(q6, 5);  // output + attn_v and ffn_down of layers 2 and 3
  EXPECT_EQ(llama_file_type(TensorType::Q4_K, QuantMix::Q4_K_M), ref.get_uint("general.file_type"));
}

TEST(Quantize, BadRequestsAreRefusedClearly) {
  const std::string src = small_f32_model();
  QuantizeOptions o;
  o.type = "Q3_Z";
  EXPECT_THROW(quantize_model(src, scratch_dir() + "/quantize_bad.gguf", o), Error);
  o.type = "Q8_0";
  o.mix = "q9_k_m";
  EXPECT_THROW(quantize_model(src, scratch_dir() + "/quantize_bad.gguf", o), Error);
  o.mix = "";
  EXPECT_THROW(quantize_model(src, src, o), Error);
  EXPECT_THROW(
      quantize_model(scratch_dir() + "/no-such-file.gguf", scratch_dir() + "/quantize_bad.gguf", o),
      Error);
}

// Quantized models load and their logits stay close to the F32 model's.
// Tolerance: max |diff| / max |logit| over every position, per type, about
// 3x what was measured (see docs/quantize.md).
TEST(Quantize, LogitsStayCloseToF32) {
  const std::string src =
      generate_model("quant_src_k", "--dim 256 --heads 4 --ffn 512 --vocab 300 --seed 5");
  const std::vector<Token> ids = {1, 17, 42, 99, 5, 250, 3, 77, 120, 8};
  auto logits_of = [&](const std::string& path) {
    LoadOptions lo;
    lo.n_threads = 2;
    auto m = Model::load(path, lo);
    auto s = m->session({});
    auto rows = testing::decode_all(*s, ids, 0);
    std::vector<float> flat;
    for (auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
    return flat;
  };
  const auto base = logits_of(src);
  const std::pair<const char*, double> cases[] = {
      {"Q8_0", 0.01}, {"Q6_K", 0.02}, {"Q5_K", 0.04}, {"Q4_K", 0.08}, {"Q4_0", 0.12}};
  for (const auto& [type, tol] : cases) {
    const std::string out = quantized(src, std::string("logits_") + type, type);
    const double d = testing::rel_diff(logits_of(out), base);
    std::printf("%s: logits rel diff %.5f\n", type, d);
    EXPECT_LT(d, tol) << type;
  }
  const std::string mixed = quantized(src, "logits_q4km", "", "q4_k_m");
  const GgufFile f = GgufFile::open(mixed);
  EXPECT_EQ(f.find_tensor("output.weight")->type, TensorType::Q6_K);
  EXPECT_EQ(f.find_tensor("blk.0.attn_q.weight")->type, TensorType::Q4_K);
  const double d = testing::rel_diff(logits_of(mixed), base);
  std::printf("q4_k_m: logits rel diff %.5f\n", d);
  EXPECT_LT(d, 0.08);
}

const char* kVerses =
    "In the beginning God created the heaven and the earth. And the earth was without form, and "
    "void; and darkness was upon the face of the deep. And the Spirit of God moved upon the face "
    "of the waters. And God said, Let there be light: and there was light. And God saw the "
    "light, that it was good: and God divided the light from the darkness. And God called the "
    "light Day, and the darkness he called Night. And the evening and the morning were the first "
    "day.\n";

// Perplexity's mean negative log-likelihood recomputed apart from seam: the
// windows as perplexity.h documents them (llama.cpp's: the text tokenized
// with its BOS, cut into consecutive windows of n_ctx tokens, the first of
// each replaced by BOS, the second half scored), the logits of each window
// from tools/reference.py (float64 numpy), and a log-softmax here.
double reference_nll(const std::string& path, const Model& m, const std::string& text,
                     std::size_t n_ctx, std::size_t* n_scored) {
  const std::vector<Token> tokens = m.tokenize(text, true, false);
  const std::size_t nv = m.info().n_vocab;
  n_ctx = std::min(n_ctx, tokens.size());
  const std::size_t score_from = std::min(n_ctx / 2, n_ctx - 2);
  double nll = 0;
  *n_scored = 0;
  for (std::size_t start = 0; start + n_ctx <= tokens.size(); start += n_ctx) {
    std::vector<Token> window(tokens.begin() + start, tokens.begin() + start + n_ctx);
    window[0] = *m.bos();
    const std::vector<float> ref = testing::reference_logits(
        path, window, "ppl_ref_" + std::to_string(start) + "_" + std::to_string(::getpid()));
    for (std::size_t j = score_from; j + 1 < n_ctx; ++j) {
      const float* row = ref.data() + j * nv;
      double mx = row[0];
      for (std::size_t v = 1; v < nv; ++v) mx = std::max(mx, static_cast<double>(row[v]));
      double z = 0;
      for (std::size_t v = 0; v < nv; ++v) z += std::exp(row[v] - mx);
      nll += mx + std::log(z) - row[static_cast<std::size_t>(tokens[start + j + 1])];
      ++*n_scored;
    }
  }
  return nll / static_cast<double>(*n_scored);
}

TEST(Perplexity, KjvModelF16VersusQ8_0) {
  const std::string f16 = std::string(SEAM_SOURCE_DIR) + "/models/seam-kjv.gguf";
  const std::string q8 = quantized(f16, "kjv_q8_0", "Q8_0");
  LoadOptions lo;
  lo.n_threads = 2;
  PerplexityOptions po;
  po.n_ctx = 64;
  po.cache_type = CacheType::F32;  // the 1e-5 bound below is float32 K/V against the reference
  const auto a = perplexity(*Model::load(f16, lo), kVerses, po);
  const auto b = perplexity(*Model::load(q8, lo), kVerses, po);
  std::printf("seam-kjv F16 ppl %.4f (nll %.5f), Q8_0 ppl %.4f (nll %.5f), %zu scored\n", a.ppl,
              a.nll_per_token, b.ppl, b.nll_per_token, a.n_scored);
  ASSERT_TRUE(std::isfinite(a.ppl) && std::isfinite(b.ppl));
  EXPECT_EQ(a.n_scored, a.n_windows * (64 - 1 - 32));
  EXPECT_GE(a.n_windows, 1u);
  // The F16 figure against the reference's logits: F16 weights are used exactly,
  // so only float32 accumulation differs (logits within kExactTol of their
  // range, ~1e-4 absolute here; the nll moves by at most twice that).
  std::size_t ref_scored = 0;
  const double ref_nll = reference_nll(f16, *Model::load(f16, lo), kVerses, 64, &ref_scored);
  std::printf("reference nll %.7f, seam %.7f\n", ref_nll, a.nll_per_token);
  EXPECT_EQ(a.n_scored, ref_scored);
  // Observed |difference| < 1e-7 (3.0484488 both).
  EXPECT_NEAR(a.nll_per_token, ref_nll, 1e-5);
  EXPECT_NEAR(a.ppl, std::exp(ref_nll), 1e-5 * a.ppl);
  // Several windows: each after the first starts with BOS in place of its token.
  PerplexityOptions short_windows = po;
  short_windows.n_ctx = 16;
  const auto sw = perplexity(*Model::load(f16, lo), kVerses, short_windows);
  const double ref_w = reference_nll(f16, *Model::load(f16, lo), kVerses, 16, &ref_scored);
  std::printf("16-token windows: %zu, reference nll %.7f, seam %.7f\n", sw.n_windows, ref_w,
              sw.nll_per_token);
  EXPECT_GE(sw.n_windows, 3u);
  EXPECT_EQ(sw.n_scored, ref_scored);
  EXPECT_NEAR(sw.nll_per_token, ref_w, 1e-5);
  // A model trained on the KJV predicts Genesis far better than uniform (2048 tokens).
  EXPECT_LT(a.ppl, 100);
  EXPECT_NEAR(b.ppl / a.ppl, 1.0, 0.02);

  // The same words in scrambled order must be much less predictable.
  std::string scrambled;
  std::vector<std::string> words;
  std::string w;
  for (char c : std::string(kVerses)) {
    if (c == ' ') {
      words.push_back(w);
      w.clear();
    } else {
      w += c;
    }
  }
  for (std::size_t i = 0; i < words.size(); ++i) scrambled += words[(i * 37) % words.size()] + " ";
  const auto c = perplexity(*Model::load(f16, lo), scrambled, po);
  EXPECT_GT(c.ppl, 2 * a.ppl);
}

TEST(Perplexity, ShortTextIsOneWindowAndTinyTextIsRefused) {
  auto m = testing::stories();
  PerplexityOptions po;
  po.cache_type = CacheType::F32;  // the 1e-5 bound below is float32 K/V against the reference
  const auto r = perplexity(*m, "Once upon a time there was a little girl named Lily.", po);
  EXPECT_EQ(r.n_windows, 1u);
  EXPECT_EQ(r.n_ctx, r.n_tokens);
  EXPECT_TRUE(std::isfinite(r.ppl));
  EXPECT_NEAR(std::log(r.ppl), r.nll_per_token, 1e-9);
  std::size_t ref_scored = 0;
  const double ref_nll =
      reference_nll(testing::stories_path(), *m,
                    "Once upon a time there was a little girl named Lily.", 512, &ref_scored);
  std::printf("stories260K: reference nll %.7f, seam %.7f\n", ref_nll, r.nll_per_token);
  EXPECT_EQ(r.n_scored, ref_scored);
  EXPECT_NEAR(r.nll_per_token, ref_nll, 1e-5);  // observed < 1e-7
  EXPECT_THROW(perplexity(*m, ""), Error);
}

}  // namespace
}  // namespace seam

namespace seam {
namespace {

// A Hugging Face directory (tools/hf.py) is read through the same interface.
TEST(Quantize, HuggingFaceDirectoryInput) {
  const std::string dir = scratch_dir() + "/quantize_hf_src";
  if (!std::filesystem::exists(dir + "/config.json")) {
    run_command(std::string(SEAM_PYTHON) + " " + SEAM_SOURCE_DIR + "/tools/hf.py gen --out " + dir +
                " --seed 4 --dim 64 --heads 4 --ffn 128");
  }
  const std::string out = quantized(dir, "hf_q8_0", "Q8_0");
  LoadOptions lo;
  lo.n_threads = 2;
  auto a = Model::load(dir, lo);
  auto b = Model::load(out, lo);
  EXPECT_EQ(GgufFile::open(out).find_tensor("blk.0.attn_q.weight")->type, TensorType::Q8_0);
  const std::vector<Token> ids = {1, 20, 30, 40, 50};
  auto sa = a->session({});
  auto sb = b->session({});
  const auto la = testing::decode_all(*sa, ids, 0);
  const auto lb = testing::decode_all(*sb, ids, 0);
  for (std::size_t i = 0; i < ids.size(); ++i) EXPECT_LT(testing::rel_diff(lb[i], la[i]), 0.01);
}

}  // namespace
}  // namespace seam
