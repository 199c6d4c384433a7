// Gemma 4 "E" models against tools/reference.py (float64) and llama.cpp, on the
// scaled-down file tools/families.py writes: 6 layers (local, local, global,
// then three that share KV), local head 16 / global head 32, window 4, RoPE
// bases 1e4 / 1e6 with proportional RoPE on the global layers, per-layer FFN
// widths, Per-Layer Embeddings, layer_output_scale and a final soft-cap.
#include <gtest/gtest.h>

#include <memory>

#include "format/gguf.h"
#include "llamacpp_compare.h"
#include "model/loader.h"
#include "peer.h"
#include "python_tools.h"
#include "runtime/forward.h"
#include "seam/error.h"
#include "test_model.h"

namespace seam {
namespace {

using namespace seam::testing;

std::string gemma4_file() { return generate_model("gemma4_e", "--arch gemma4"); }
// The same weights without attn_v on one local and one global KV-owning layer:
// their V is the K projection (before the K norm and RoPE), and the layers that
// share their cache read that V too.
std::string gemma4_v_from_k_file() {
  return generate_model("gemma4_e_v_from_k",
                        "--arch gemma4 --drop blk.0.attn_v.weight --drop blk.2.attn_v.weight");
}

// Prompts are longer than the window (4) and cross it in every chunk size used.
constexpr std::size_t kPromptLen = 14;

TEST(Gemma4, LayerSpecsFromMetadata) {
  const GgufFile f = GgufFile::open(gemma4_file());
  const ModelSpec spec = admit_model(f);
  ASSERT_EQ(spec.layers.size(), 6u);
  const std::uint32_t head_dim[6] = {16, 16, 32, 16, 16, 32};
  const std::uint32_t window[6] = {4, 4, 0, 4, 4, 0};
  const std::uint32_t n_ff[6] = {64, 64, 64, 128, 128, 128};
  // The shared layers read the last KV-owning layer of their own kind.
  const std::uint32_t kv_source[6] = {0, 1, 2, 1, 1, 2};
  for (std::uint32_t l = 0; l < 6; ++l) {
    const LayerSpec& L = spec.layers[l];
    EXPECT_EQ(L.head_dim, head_dim[l]) << l;
    EXPECT_EQ(L.n_swa, window[l]) << l;
    EXPECT_EQ(L.n_ff, n_ff[l]) << l;
    EXPECT_EQ(L.kv_source, kv_source[l]) << l;
    EXPECT_EQ(L.rope.n_rot, static_cast<std::int32_t>(head_dim[l])) << l;
    EXPECT_FLOAT_EQ(L.rope.freq_base, window[l] ? 1e4f : 1e6f) << l;
    EXPECT_EQ(L.rope_factors, window[l] == 0) << l;
  }
  EXPECT_EQ(spec.hp.n_embd_ple, 8u);
  EXPECT_FLOAT_EQ(spec.recipe.attn_scale, 1.0f);
  EXPECT_FLOAT_EQ(spec.recipe.final_softcap, 30.0f);
  // No KV cells for the layers that share: their cache width is 0.
  const std::vector<std::uint32_t> widths = kv_widths(spec);
  EXPECT_EQ(widths, (std::vector<std::uint32_t>{16, 16, 32, 0, 0, 0}));
}

TEST(Gemma4, VFromKWhenAttnVIsAbsent) {
  const std::string path = gemma4_v_from_k_file();
  auto model = load_two_threads(path);
  const std::size_t nv = model->info().n_vocab;
  const std::vector<Token> a = random_prompt(nv, kPromptLen, 45);
  const std::vector<float> ref = reference_logits(path, a, "gemma4_e_v_from_k");
  expect_logits_match(*model, a, ref, kExactTol, "gemma4 V from K");
}

TEST(Gemma4, LogitsMatchReferenceEveryPosition) {
  const std::string path = gemma4_file();
  auto model = load_two_threads(path);
  const std::size_t nv = model->info().n_vocab;
  const std::vector<Token> a = random_prompt(nv, kPromptLen, 41);
  const std::vector<float> ref = reference_logits(path, a, "gemma4_e_a");
  // Prefilled in chunks of 5.
  expect_logits_match(*model, a, ref, kExactTol, "gemma4 chunked prefill");
  // One token per decode call, and the whole prompt in one call.
  for (const std::uint32_t n_batch : {1u, 16u}) {
    auto s = model->session(exact_config(64, n_batch));
    double worst = 0;
    for (std::size_t i = 0; i < a.size(); i += n_batch) {
      const std::size_t n = std::min<std::size_t>(n_batch, a.size() - i);
      const auto rows = decode_all(*s, std::span(a).subspan(i, n), 0, static_cast<std::int32_t>(i));
      for (std::size_t j = 0; j < n; ++j) {
        const double r = rel_diff(rows[j], std::span(ref).subspan((i + j) * nv, nv));
        EXPECT_LT(r, kExactTol) << "n_batch " << n_batch << " position " << i + j;
        worst = std::max(worst, r);
      }
    }
    std::printf("[ gemma4 n_batch %u ] worst relative logit difference %.3g\n", n_batch, worst);
  }
}

TEST(Gemma4, MixedBatchesForksAndPrefixReuse) {
  const std::string path = gemma4_file();
  auto model = load_two_threads(path);
  const std::size_t nv = model->info().n_vocab;
  // a has two tokens more than the mixed batch decodes: sequence 0 continues
  // with them after its prefix was forked and reused by another sequence.
  const std::vector<Token> a = random_prompt(nv, kPromptLen + 2, 42);
  const std::vector<Token> b = random_prompt(nv, kPromptLen, 43);
  // c: a's first half, then b's second half.
  const std::size_t half = kPromptLen / 2;
  std::vector<Token> c(a.begin(), a.begin() + half);
  c.insert(c.end(), b.begin() + half, b.end());
  ASSERT_NE(a[half], c[half]);
  const std::vector<float> ref_a = reference_logits(path, a, "gemma4_e_mix_a");
  const std::vector<float> ref_b = reference_logits(path, b, "gemma4_e_mix_b");
  const std::vector<float> ref_c = reference_logits(path, c, "gemma4_e_mix_c");
  const auto row = [nv](const std::vector<float>& ref, std::size_t i) {
    return std::span(ref).subspan(i * nv, nv);
  };
  double worst = 0;
  const auto expect_rows = [&](const std::vector<std::vector<float>>& got,
                               const std::vector<float>& ref, std::size_t first, const char* what) {
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double r = rel_diff(got[i], row(ref, first + i));
      EXPECT_LT(r, kExactTol) << what << ", position " << first + i;
      worst = std::max(worst, r);
    }
  };

  // Two sequences interleaved in every batch (n_batch 6: chunks cross the window).
  auto s = model->session(exact_config(64, 6, 3));
  std::vector<Decode> batch;
  for (std::size_t i = 0; i < kPromptLen; ++i) {
    batch.push_back({a[i], static_cast<std::int32_t>(i), 0, true});
    batch.push_back({b[i], static_cast<std::int32_t>(i), 1, true});
  }
  s->decode(batch);
  for (std::size_t i = 0; i < kPromptLen; ++i) {
    const double ra = rel_diff(s->logits(2 * i), row(ref_a, i));
    const double rb = rel_diff(s->logits(2 * i + 1), row(ref_b, i));
    EXPECT_LT(ra, kExactTol) << "mixed batch, sequence 0 position " << i;
    EXPECT_LT(rb, kExactTol) << "mixed batch, sequence 1 position " << i;
    worst = std::max({worst, ra, rb});
  }

  // clear_seq frees every cell only sequence 1 held.
  const std::uint32_t free_before = s->free_cells();
  s->clear_seq(1);
  EXPECT_EQ(s->free_cells(), free_before + kPromptLen);

  // Fork a into sequence 2, then reuse its prefix for c: begin_prompt keeps
  // a's first half (shared with sequence 0) and drops the rest for sequence 2
  // only. The kept cells serve the KV-owning and the KV-sharing layers.
  s->copy_seq(0, 2);
  const std::size_t kept = s->begin_prompt(2, c);
  EXPECT_EQ(kept, half);
  expect_rows(decode_all(*s, std::span(c).subspan(kept), 2, static_cast<std::int32_t>(kept)), ref_c,
              kept, "prefix reuse on a fork");

  // Sequence 0 kept all of a: its next tokens see none of sequence 2's.
  expect_rows(
      decode_all(*s, std::span(a).subspan(kPromptLen), 0, static_cast<std::int32_t>(kPromptLen)),
      ref_a, kPromptLen, "the fork's source after the fork");
  std::printf("[ gemma4 sessions ] worst relative logit difference %.3g\n", worst);
}

TEST(Gemma4, GreedyIdsMatchLlamaCpp) {
  SEAM_NEED_PEER(peer_logits_tool());
  for (const std::string& path : {gemma4_file(), gemma4_v_from_k_file()}) {
    auto model = load_two_threads(path);
    const std::vector<Token> prompt = random_prompt(model->info().n_vocab, 12, 44);
    const PeerComparison r = compare_with_llamacpp(path, prompt, 8);
    std::printf(
        "[ %s ] llama.cpp vs seam: worst relative logit difference %.3g, smallest top-1 "
        "margin %.3g\n",
        path.c_str(), r.worst_rel, r.min_peer_margin);
    EXPECT_EQ(r.seam_ids, r.peer_ids) << path;
    // llama.cpp keeps K and V in F16 (relative rounding 2^-11 per element) and
    // this file has 6 layers: tools/families.py bounds that at 6 * 2^-11 ~ 3e-3
    // of the row's largest logit; seam's cache is F32.
    EXPECT_LT(r.worst_rel, 3e-3) << path;
  }
}

// The generated file's header with one key replaced (or removed, when `value`
// is null), over the same tensors.
GgufFile with_key(const std::string& key, const GgufValue* value) {
  auto original = std::make_shared<GgufFile>(GgufFile::open(gemma4_file()));
  std::vector<std::pair<std::string, GgufValue>> md;
  for (const auto& [k, v] : original->metadata()) {
    if (k != key) md.emplace_back(k, v);
  }
  if (value) md.emplace_back(key, *value);
  return GgufFile::assemble("gemma4 with " + key, md, original->tensors(), {original});
}

void expect_refused(const std::string& key, const GgufValue* value, Errc code,
                    const std::string& says) {
  const GgufFile f = with_key(key, value);
  try {
    admit_model(f);
    ADD_FAILURE() << key << ": admitted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << key << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
}

TEST(Gemma4, RefusesInconsistentMetadata) {
  const GgufValue all_shared = GgufValue::u32(6);
  expect_refused("gemma4.attention.shared_kv_layers", &all_shared, Errc::BadFormat,
                 "shared_kv_layers");
  const GgufValue five_widths =
      GgufValue::array(GgufValueType::INT32, std::vector<GgufValue>(5, GgufValue::i32(64)));
  expect_refused("gemma4.feed_forward_length", &five_widths, Errc::BadFormat, "5 entries");
  expect_refused("gemma4.attention.sliding_window_pattern", nullptr, Errc::BadFormat,
                 "sliding_window_pattern");
  // Layers 3..5 share, and layer 5 is the only global layer: nothing to read.
  std::vector<GgufValue> flags(6, GgufValue::boolean(true));
  flags[5] = GgufValue::boolean(false);
  const GgufValue one_global = GgufValue::array(GgufValueType::BOOL, flags);
  expect_refused("gemma4.attention.sliding_window_pattern", &one_global, Errc::BadFormat,
                 "no earlier layer is global");
  // Experts need their used count (and then their tensors).
  const GgufValue experts = GgufValue::u32(8);
  expect_refused("gemma4.expert_count", &experts, Errc::BadFormat, "expert_used_count");
}

// ---- the mixture-of-experts model (26B-A4B's form, scaled down) ----
// No PLE and no shared KV; 2 KV heads on local layers, 1 on global ones whose
// V is their K projection; in every layer a dense MLP of 64 beside 8 experts of
// 32, 2 used, fused as ffn_gate_up_exps (or split: the same values).
constexpr const char* kMoeArgs = "--arch gemma4 --experts 8 --experts-used 2";
std::string gemma4_moe_file() { return generate_model("gemma4_moe", kMoeArgs); }

TEST(Gemma4Moe, LayerSpecsFromMetadata) {
  const GgufFile f = GgufFile::open(gemma4_moe_file());
  const ModelSpec spec = admit_model(f);
  ASSERT_EQ(spec.layers.size(), 6u);
  EXPECT_EQ(spec.hp.n_embd_ple, 0u);
  EXPECT_TRUE(spec.recipe.fused_gate_up_exps);
  for (std::uint32_t l = 0; l < 6; ++l) {
    const LayerSpec& L = spec.layers[l];
    const bool local = l % 3 != 2;
    EXPECT_EQ(L.ffn, FfnKind::Moe) << l;
    EXPECT_EQ(L.n_ff, 32u) << l;
    EXPECT_EQ(L.n_ff_dense, 64u) << l;
    EXPECT_EQ(L.n_expert, 8u) << l;
    EXPECT_EQ(L.n_expert_used, 2u) << l;
    EXPECT_EQ(L.n_head_kv, local ? 2u : 1u) << l;
    EXPECT_EQ(L.kv_source, l) << l;
  }
}

TEST(Gemma4Moe, LogitsMatchReferenceEveryPositionAndMixedBatches) {
  const std::string path = gemma4_moe_file();
  auto model = load_two_threads(path);
  const std::size_t nv = model->info().n_vocab;
  const std::vector<Token> a = random_prompt(nv, kPromptLen, 51);
  const std::vector<Token> b = random_prompt(nv, kPromptLen, 52);
  const std::vector<float> ref_a = reference_logits(path, a, "gemma4_moe_a");
  const std::vector<float> ref_b = reference_logits(path, b, "gemma4_moe_b");
  expect_logits_match(*model, a, ref_a, kExactTol, "gemma4 moe chunked prefill");
  expect_mixed_batch_match(*model, a, b, ref_a, ref_b, 8, kExactTol, "gemma4 moe");
}

// ffn_gate_up_exps and the split ffn_gate_exps + ffn_up_exps hold the same
// weights: the same logits, bit for bit.
TEST(Gemma4Moe, FusedAndSplitExpertsAgreeBitwise) {
  const auto fused = load_two_threads(gemma4_moe_file());
  const auto split = load_two_threads(
      generate_model("gemma4_moe_split", std::string(kMoeArgs) + " --split-experts"));
  const std::vector<Token> prompt = random_prompt(fused->info().n_vocab, 10, 53);
  expect_same_logits_bitwise(*fused, *split, prompt);
}

TEST(Gemma4Moe, GreedyIdsMatchLlamaCpp) {
  SEAM_NEED_PEER(peer_logits_tool());
  const std::string path = gemma4_moe_file();
  auto model = load_two_threads(path);
  const std::vector<Token> prompt = random_prompt(model->info().n_vocab, 12, 44);
  const PeerComparison r = compare_with_llamacpp(path, prompt, 8);
  std::printf(
      "[ gemma4 moe ] llama.cpp vs seam: worst relative logit difference %.3g, smallest top-1 "
      "margin %.3g\n",
      r.worst_rel, r.min_peer_margin);
  EXPECT_EQ(r.seam_ids, r.peer_ids);
  EXPECT_LT(r.worst_rel, 3e-3);  // as the dense file: F16 K/V over 6 layers
}

}  // namespace
}  // namespace seam
