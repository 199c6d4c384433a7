// llama.cpp's mixes (Q2_K, Q3_K_S/M/L, Q4_K_S/M, Q5_K_S/M, IQ4_NL, IQ4_XS): the type each
// tensor gets, checked against llama_tensor_get_type's rules written out per
// layer on real shapes, and the perplexity of each mix against the F16 model.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "python_tools.h"
#include "runtime/quantize_plan.h"
#include "seam/error.h"
#include "seam/model.h"
#include "seam/perplexity.h"
#include "seam/quantize.h"

namespace seam {
namespace {

using testing::scratch_dir;

// The layer of a "blk.N.*" name, or -1.
int layer(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return -1;
  return std::stoi(name.substr(4));
}

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// What llama.cpp's llama_tensor_get_type gives a 2-D weight of a llama model
// with `n_layer` layers, every row a multiple of 256, written out from its
// rules rather than from seam's plan code: `more` is the set of layers its
// use_more_bits picks (listed by hand per test), `v_index` counts attn_v
// tensors in file order.
TensorType expected(QuantMix mix, const std::string& name, int n_layer, const std::set<int>& more,
                    int v_index, int n_gqa) {
  using M = QuantMix;
  using T = TensorType;
  const int l = layer(name);
  if (name == "output.weight") return T::Q6_K;
  const bool v = has(name, "attn_v.weight"), down = has(name, "ffn_down"),
             out = has(name, "attn_output.weight");
  switch (mix) {
    case M::Q2_K:
      if (v) return n_gqa >= 4 ? T::Q4_K : T::Q3_K;
      return down || out ? T::Q3_K : T::Q2_K;
    case M::Q3_K_S:
      return T::Q3_K;
    case M::Q3_K_M:
      if (v) return v_index < 2 ? T::Q5_K : T::Q4_K;
      if (down) return l < n_layer / 16 ? T::Q5_K : T::Q4_K;
      return out ? T::Q4_K : T::Q3_K;
    case M::Q3_K_L:
      return v || down || out ? T::Q5_K : T::Q3_K;
    case M::Q4_K_S:
      if (v) return v_index < 4 ? T::Q5_K : T::Q4_K;
      if (down) return l < n_layer / 8 ? T::Q5_K : T::Q4_K;
      return T::Q4_K;
    case M::Q4_K_M:
      if (v) return more.count(v_index) ? T::Q6_K : T::Q4_K;
      if (down) return more.count(l) ? T::Q6_K : T::Q4_K;
      return T::Q4_K;
    case M::Q5_K_S:
      return T::Q5_K;
    case M::Q5_K_M:
      if (v) return more.count(v_index) ? T::Q6_K : T::Q5_K;
      if (down) return more.count(l) ? T::Q6_K : T::Q5_K;
      return T::Q5_K;
    case M::IQ4_NL:
    case M::IQ4_XS: {
      const T base = mix == M::IQ4_NL ? T::IQ4_NL : T::IQ4_XS;
      if (v) return n_gqa >= 4 ? T::Q5_K : base;
      if (down) return l < n_layer / 8 ? T::Q5_K : base;
      return base;
    }
    case M::None:
      break;
  }
  return T::F32;
}

constexpr QuantMix kAllMixes[] = {
    QuantMix::Q2_K,   QuantMix::Q3_K_S, QuantMix::Q3_K_M, QuantMix::Q3_K_L, QuantMix::Q4_K_S,
    QuantMix::Q4_K_M, QuantMix::Q5_K_S, QuantMix::Q5_K_M, QuantMix::IQ4_NL, QuantMix::IQ4_XS};

void expect_plan(const GgufFile& f, QuantMix mix, int n_layer, const std::set<int>& more, int n_gqa,
                 const char* what) {
  int v_index = 0;
  std::map<TensorType, int> counts;
  for (const PlannedTensor& p : plan_quantization(f, TensorType::Q8_0, mix)) {
    const std::string& n = p.src->name;
    if (p.src->ne.size() < 2) {
      EXPECT_EQ(p.to, TensorType::F32) << n;
      continue;
    }
    EXPECT_EQ(p.to, expected(mix, n, n_layer, more, v_index, n_gqa))
        << what << " mix " << llama_file_type(TensorType::F32, mix) << ": " << n;
    v_index += has(n, "attn_v.weight");
    ++counts[p.to];
  }
  EXPECT_GT(counts.size(), 1u) << what << ": a mix gives more than one type";
}

// llama-quantize's own Q4_K_M file of a 4-layer llama (512 wide, ffn 1536):
// its shapes are real, and the Q4_K_M types are what llama.cpp chose.
TEST(QuantizeMix, RulesOnTheShapesOfALlamaQuantizeFile) {
  const GgufFile ref =
      GgufFile::open(std::string(SEAM_SHARED_DIR) + "/models/quant/ref-llama-512-q4_k_m.gguf");
  ASSERT_EQ(ref.get_uint("llama.block_count"), 4u);
  // use_more_bits(i, 4): i < 0 || i >= 3 || i % 3 == 2 -> layers 2 and 3.
  const std::set<int> more = {2, 3};
  for (QuantMix mix : kAllMixes) expect_plan(ref, mix, 4, more, 2, "ref-llama-512");
  // And the written-out rules agree with llama.cpp's file itself for Q4_K_M.
  int v_index = 0;
  for (const GgufTensor& t : ref.tensors()) {
    if (t.ne.size() < 2) continue;
    EXPECT_EQ(expected(QuantMix::Q4_K_M, t.name, 4, more, v_index, 2), t.type) << t.name;
    v_index += has(t.name, "attn_v.weight");
  }
}

// A 16-layer file of 256-wide tensors: Q4_K_S's first-eighth rule (ffn_down of
// layers 0-1, attn_v of the first four), Q3_K_M's first-sixteenth, and
// use_more_bits over more layers.
GgufFile sixteen_layers(std::vector<std::byte>& storage, std::uint32_t n_layer = 16,
                        std::uint32_t n_head_kv = 8) {
  GgufWriter w;
  w.set("general.architecture", GgufValue::str("llama"));
  w.set("llama.block_count", GgufValue::u32(n_layer));
  w.set("llama.attention.head_count", GgufValue::u32(8));
  w.set("llama.attention.head_count_kv", GgufValue::u32(n_head_kv));
  const std::vector<std::byte> zeros(256 * 2 * 2);  // [2][256] F16
  w.add_tensor("token_embd.weight", {256, 2}, TensorType::F16, zeros);
  w.add_tensor("output.weight", {256, 2}, TensorType::F16, zeros);
  for (std::uint32_t l = 0; l < n_layer; ++l) {
    for (const char* t :
         {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"})
      w.add_tensor("blk." + std::to_string(l) + "." + t + ".weight", {256, 2}, TensorType::F16,
                   zeros);
  }
  storage = w.to_bytes();
  return GgufFile::parse(storage, "sixteen-layers");
}

TEST(QuantizeMix, RulesOverSixteenLayers) {
  std::vector<std::byte> storage;
  const GgufFile f = sixteen_layers(storage);
  // use_more_bits(i, 16): i < 2 || i >= 14 || (i - 2) % 3 == 2.
  const std::set<int> more = {0, 1, 4, 7, 10, 13, 14, 15};
  for (QuantMix mix : kAllMixes) expect_plan(f, mix, 16, more, 1, "16 layers");
  // Four query heads per KV head: Q2_K's attn_v is Q4_K instead of Q3_K, IQ4's Q5_K.
  std::vector<std::byte> storage_gqa;
  const GgufFile g = sixteen_layers(storage_gqa, 16, 2);
  for (QuantMix mix : kAllMixes) expect_plan(g, mix, 16, more, 4, "16 layers, GQA 4");
}

TEST(QuantizeMix, Llama70BShapeGetsQ5KAttnV) {
  // llama.cpp labels an 80-layer llama with grouped-query attention 70B and
  // raises its Q3_K/Q4_K attn_v to Q5_K (the Q6_K ones stay).
  std::vector<std::byte> storage;
  const GgufFile gqa = sixteen_layers(storage, 80, 1);
  int q5 = 0, q6 = 0;
  for (const PlannedTensor& p : plan_quantization(gqa, TensorType::Q8_0, QuantMix::Q4_K_M)) {
    if (!has(p.src->name, "attn_v.weight")) continue;
    EXPECT_TRUE(p.to == TensorType::Q5_K || p.to == TensorType::Q6_K) << p.src->name;
    q5 += p.to == TensorType::Q5_K;
    q6 += p.to == TensorType::Q6_K;
  }
  EXPECT_GT(q5, 0);
  EXPECT_GT(q6, 0);
  // Without grouped-query attention it is llama.cpp's 65B: no bump.
  std::vector<std::byte> storage_mha;
  const GgufFile mha = sixteen_layers(storage_mha, 80, 8);
  for (const PlannedTensor& p : plan_quantization(mha, TensorType::Q8_0, QuantMix::Q4_K_M)) {
    if (has(p.src->name, "attn_v.weight")) {
      EXPECT_NE(p.to, TensorType::Q5_K) << p.src->name;
    }
  }
}

TEST(QuantizeMix, NamesAndFileTypes) {
  EXPECT_EQ(parse_quant_mix(""), QuantMix::None);
  EXPECT_EQ(parse_quant_mix("q4_k_s"), QuantMix::Q4_K_S);
  EXPECT_EQ(parse_quant_mix("Q4_K_M"), QuantMix::Q4_K_M);
  EXPECT_EQ(parse_quant_mix("q5_k_s"), QuantMix::Q5_K_S);
  EXPECT_EQ(parse_quant_mix("Q5_K_M"), QuantMix::Q5_K_M);
  EXPECT_EQ(parse_quant_mix("q2_k"), QuantMix::Q2_K);
  EXPECT_EQ(parse_quant_mix("Q3_K_L"), QuantMix::Q3_K_L);
  EXPECT_THROW(parse_quant_mix("q6_k_m"), Error);
  EXPECT_EQ(parse_quant_mix("iq4_xs"), QuantMix::IQ4_XS);
  EXPECT_EQ(parse_quant_mix("IQ4_NL"), QuantMix::IQ4_NL);
  EXPECT_THROW(parse_quant_mix("iq2_xs"), Error);
  // llama.cpp's names seam does not write are refused by name, with what it does write.
  for (const char* name : {"iq2_xs", "IQ3_XXS", "iq1_m", "TQ2_0", "mxfp4_moe"}) {
    for (bool as_mix : {true, false}) {
      try {
        if (as_mix)
          parse_quant_mix(name);
        else
          parse_quant_type(name);
        ADD_FAILURE() << name << " accepted";
      } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("cannot write"), std::string::npos) << m;
        EXPECT_NE(m.find("IQ4_XS"), std::string::npos) << m;
        EXPECT_EQ(m.find("unknown"), std::string::npos) << m;
      }
    }
  }
  // llama_ftype: MOSTLY_Q2_K 10, Q3_K_S 11, Q3_K_M 12, Q3_K_L 13, Q4_K_S 14, Q4_K_M 15,
  // Q5_K_S 16, Q5_K_M 17.
  EXPECT_EQ(llama_file_type(TensorType::F32, QuantMix::Q2_K), 10u);
  EXPECT_EQ(llama_file_type(TensorType::F32, QuantMix::Q3_K_S), 11u);
  EXPECT_EQ(llama_file_type(TensorType::F32, QuantMix::Q3_K_M), 12u);
  EXPECT_EQ(llama_file_type(TensorType::F32, QuantMix::Q3_K_L), 13u);
  EXPECT_EQ(llama_file_type(TensorType::F32, QuantMix::IQ4_NL), 25u);
  EXPECT_EQ(llama_file_type(TensorType::F32, QuantMix::IQ4_XS), 30u);
  EXPECT_EQ(llama_file_type(TensorType::F32, QuantMix::Q4_K_S), 14u);
  EXPECT_EQ(llama_file_type(TensorType::F32, QuantMix::Q4_K_M), 15u);
  EXPECT_EQ(llama_file_type(TensorType::F32, QuantMix::Q5_K_S), 16u);
  EXPECT_EQ(llama_file_type(TensorType::F32, QuantMix::Q5_K_M), 17u);
  // One type throughout: its own id; an all-Q4_K (Q5_K) file is llama.cpp's Q4_K_S (Q5_K_S).
  EXPECT_EQ(llama_file_type(TensorType::F16, QuantMix::None), 1u);
  EXPECT_EQ(llama_file_type(TensorType::Q5_1, QuantMix::None), 9u);
  EXPECT_EQ(llama_file_type(TensorType::Q4_K, QuantMix::None), 14u);
  EXPECT_EQ(llama_file_type(TensorType::Q5_K, QuantMix::None), 16u);
  EXPECT_EQ(llama_file_type(TensorType::Q6_K, QuantMix::None), 18u);
  EXPECT_EQ(llama_file_type(TensorType::BF16, QuantMix::None), 32u);
  EXPECT_EQ(mix_base_type(QuantMix::Q5_K_M), TensorType::Q5_K);
  EXPECT_EQ(mix_base_type(QuantMix::Q4_K_S), TensorType::Q4_K);
}

// The bundled KJV model (F16, trained) quantized with each mix: its perplexity
// on held-in text stays close to the F16 figure. Bounds: about 3x the measured
// relative increase (see docs/quantize.md).
TEST(QuantizeMix, PerplexityCloseToF16) {
  const std::string f16 = std::string(SEAM_SOURCE_DIR) + "/models/seam-kjv.gguf";
  const std::string text =
      "And it came to pass, when men began to multiply on the face of the earth, and daughters "
      "were born unto them, That the sons of God saw the daughters of men that they were fair; "
      "and they took them wives of all which they chose. And the LORD said, My spirit shall not "
      "always strive with man, for that he also is flesh: yet his days shall be an hundred and "
      "twenty years. There were giants in the earth in those days; and also after that, when "
      "the sons of God came in unto the daughters of men, and they bare children to them, the "
      "same became mighty men which were of old, men of renown.\n";
  LoadOptions lo;
  lo.n_threads = 2;
  PerplexityOptions po;
  po.n_ctx = 64;
  const double base = perplexity(*Model::load(f16, lo), text, po).ppl;
  ASSERT_TRUE(std::isfinite(base));
  const struct {
    const char* mix;
    double bound;  // relative ppl increase allowed
  } cases[] = {{"q5_k_m", 0.03}, {"q5_k_s", 0.03}, {"q4_k_m", 0.08}, {"q4_k_s", 0.08},
               {"q3_k_l", 0.15}, {"q3_k_m", 0.15}, {"q3_k_s", 0.2},  {"q2_k", 0.4},
               {"iq4_nl", 0.08}, {"iq4_xs", 0.08}};
  for (const auto& c : cases) {
    const std::string out = scratch_dir() + "/quantize_mix_kjv_" + c.mix + ".gguf";
    QuantizeOptions o;
    o.mix = c.mix;
    o.n_threads = 2;
    const QuantizeReport r = quantize_model(f16, out, o);
    EXPECT_LT(r.bytes_out, r.bytes_in) << c.mix;
    const double ppl = perplexity(*Model::load(out, lo), text, po).ppl;
    std::printf("seam-kjv %s: ppl %.4f vs F16 %.4f (%+.2f%%)\n", c.mix, ppl, base,
                100 * (ppl / base - 1));
    EXPECT_TRUE(std::isfinite(ppl)) << c.mix;
    EXPECT_LT(std::abs(ppl / base - 1), c.bound) << c.mix << ": " << ppl << " vs " << base;
  }
}

// What llama-quantize never quantizes stays in its own type in every plan: the
// MoE router (ffn_gate_inp: a quantized router picks other experts), the
// gated-delta-net layers' short-convolution kernels, norms; the expert
// matrices themselves are quantized.
TEST(QuantizeMix, RouterAndConvolutionKernelsKeepTheirType) {
  const std::string moe = testing::generate_model("quant_keep_qwen3moe", "--arch qwen3moe");
  const std::string hybrid = testing::generate_model("quant_keep_qwen35moe", "--arch qwen35moe");
  for (const std::string& path : {moe, hybrid}) {
    const GgufFile f = GgufFile::open(path);
    for (const QuantMix mix : {QuantMix::None, QuantMix::Q4_K_M}) {
      int kept = 0, experts = 0;
      for (const PlannedTensor& p : plan_quantization(f, TensorType::Q8_0, mix)) {
        const std::string& n = p.src->name;
        if (has(n, "ffn_gate_inp.weight") || has(n, "ssm_conv1d")) {
          EXPECT_EQ(p.to, p.src->type) << path << ": " << n;
          EXPECT_EQ(p.note.rfind("kept: ", 0), 0u) << n << ": " << p.note;
          ++kept;
        } else if (has(n, "_exps.weight")) {
          EXPECT_NE(p.to, p.src->type) << path << ": " << n << " is quantized";
          ++experts;
        }
      }
      EXPECT_GT(kept, 0) << path;
      EXPECT_GT(experts, 0) << path;
    }
  }
}

}  // namespace
}  // namespace seam
