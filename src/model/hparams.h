// Hyperparameters and recipe options of a decoder-only transformer: the data
// that makes one forward pass serve every architecture (DESIGN.md §2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compute/backend.h"
#include "model/delta_net.h"

namespace seam {

struct Hparams {
  std::uint32_t n_vocab = 0;
  std::uint32_t n_ctx_train = 0;
  std::uint32_t n_embd = 0;
  std::uint32_t n_layer = 0;
  std::uint32_t n_head = 0;
  std::uint32_t n_head_kv = 0;
  std::uint32_t head_dim = 0;  // per-head q/k/v width (n_embd / n_head unless the file says)
  std::uint32_t n_ff = 0;
  float norm_eps = 1e-5f;
  float rope_base = 10000.0f;
  float rope_scale = 1.0f;  // linear RoPE scaling: positions are multiplied by it
  // `<arch>.rope.scaling.original_context_length` (else n_ctx_train): the
  // context YaRN's ramp is computed for, and LongRoPE's long/short threshold.
  std::uint32_t n_ctx_orig = 0;
  // cos and sin of every rotation are multiplied by rope_attn_factor (the
  // file's `rope.scaling.attn_factor`, phi3 LongRoPE's sqrt(1 + ln s / ln n_orig))
  // and, on layers that use rope_scale, by yarn_mscale (YaRN's 0.1 ln s + 1).
  float rope_attn_factor = 1.0f;
  float yarn_mscale = 1.0f;
  float yarn_ext_factor = 0.0f;  // 0 = no YaRN; else the weight of the unscaled angle's ramp
  float yarn_beta_fast = 32.0f;  // ramp ends, in rotations over n_ctx_orig
  float yarn_beta_slow = 1.0f;
  // LongRoPE (phi3): rope_factors_long.weight divides the frequencies when the
  // session's context exceeds n_ctx_orig, rope_factors_short.weight otherwise.
  bool longrope = false;
  // Attention temperature (mistral3, Llama 4): q at position p is multiplied by
  // 1 + attn_temp_scale * ln(1 + floor(p / n_ctx_orig)); 0 = off.
  float attn_temp_scale = 0.0f;
  std::uint32_t n_rot = 0;  // rotated dims per head
  // Sliding-window attention: a token at position p of an SWA layer sees the
  // cells with positions in (p - n_swa, p]; the other layers see all of (.., p].
  std::uint32_t n_swa = 0;         // 0 = no layer uses a window
  std::vector<bool> swa_layers;    // [n_layer] (empty when n_swa == 0)
  float rope_base_swa = 10000.0f;  // RoPE base of SWA layers (gemma3's local layers)
  float rope_scale_swa = 1.0f;

  // Mixture of experts (`<arch>.expert_count` > 0): every layer's FFN is n_expert
  // experts of width n_ff_exp of which n_expert_used run per token.
  std::uint32_t n_expert = 0;
  std::uint32_t n_expert_used = 0;
  std::uint32_t n_ff_exp = 0;
  // Width of the shared expert every token runs beside the routed ones, its
  // output scaled by sigmoid(ffn_gate_inp_shexp . h) (qwen35moe, qwen3next); 0 = none.
  std::uint32_t n_ff_shexp = 0;

  // Gated-delta-net layers (qwen35*, qwen3next): the `<arch>.ssm.*` sizes.
  DeltaNetParams delta_net;

  // Per-Layer Embeddings (gemma4 E models, `<arch>.embedding_length_per_layer_input`):
  // each layer adds a gated input of this width made from the token and the
  // embedding (runtime/per_layer_embd.h); 0 = none.
  std::uint32_t n_embd_ple = 0;

  bool is_swa(std::uint32_t layer) const {
    return n_swa > 0 && layer < swa_layers.size() && swa_layers[layer];
  }
};

// Options of the one forward pass; each architecture file sets its own.
struct Recipe {
  bool rope_neox = false;   // rotate (i, i+n_rot/2) pairs instead of (2i, 2i+1)
  bool qkv_bias = false;    // blk.N.attn_{q,k,v}.bias
  bool qk_norm = false;     // per-head RMSNorm of q and k before RoPE
  bool post_norms = false;  // extra norms after attention and FFN (gemma2/3)
  float embd_scale = 0.0f;  // if > 0: embeddings are multiplied by it
  Activation ffn_act = Activation::Silu;
  float attn_softcap = 0.0f;   // 0 = off
  float final_softcap = 0.0f;  // 0 = off
  float attn_scale = 0.0f;     // 0 = 1/sqrt(head_dim)
  // phi3 stores q, k, v as one blk.N.attn_qkv.weight ([q; k; v] rows) and
  // gate, up as one blk.N.ffn_up.weight ([gate; up] rows of 2 * n_ff); the
  // loader binds row ranges of them, so the forward pass is unchanged.
  bool fused_qkv = false;
  bool fused_gate_up = false;
  // The experts' gate and up as one blk.N.ffn_gate_up_exps.weight (per expert
  // [gate; up] rows of 2 * n_ff), as llama.cpp's converters may write them
  // (Gemma 4 always); set at admission when the file holds one.
  bool fused_gate_up_exps = false;
  // How a MoE layer turns router logits into expert weights (compute/backend.h).
  Routing routing = Routing::Softmax;
  // gemma4: each V head is RMS-normed without a weight after the projection,
  // and a KV-owning layer may lack blk.N.attn_v (then V is the K projection,
  // taken before the K norm and RoPE).
  bool v_norm = false;
  bool v_from_k = false;
  // Gated attention (qwen35*, qwen3next): attn_q holds per head [q | gate] and
  // the attention output is multiplied by sigmoid(gate) before Wo.
  bool gated_q = false;
  // The pre-FFN norm's tensor, blk.N.<ffn_norm>.weight (gpt-oss, qwen35*: post_attention_norm).
  const char* ffn_norm = "ffn_norm";
};

enum class LayerKind : std::uint8_t { Attention, GatedDeltaNet };
enum class FfnKind : std::uint8_t { Dense, Moe };

// One block as the forward pass runs it: what may differ from layer to layer
// (model/layers.h builds the list from Hparams and checks it).
struct LayerSpec {
  LayerKind kind = LayerKind::Attention;
  std::uint32_t n_head = 0;
  std::uint32_t n_head_kv = 0;
  std::uint32_t head_dim = 0;  // q/k/v width per head
  // RoPE of this layer; freq_factors stays null here: the forward pass puts the
  // model's factors (rope_freqs, LongRoPE) in when rope_factors is set.
  RopeParams rope;
  bool rope_factors = true;
  std::uint32_t n_swa = 0;  // sliding window (0 = sees the whole sequence)
  // The layer whose KV cache this one reads: itself, or an earlier layer whose
  // cache it shares (then it writes none).
  std::uint32_t kv_source = 0;
  FfnKind ffn = FfnKind::Dense;
  std::uint32_t n_ff = 0;  // dense width, or the width of each expert
  std::uint32_t n_expert = 0;
  std::uint32_t n_expert_used = 0;
  std::uint32_t n_ff_shexp = 0;  // shared expert of a MoE FFN (0 = none)
  // A dense MLP beside the routed experts, each branch with its own norms
  // (Gemma 4 26B-A4B); 0 = none.
  std::uint32_t n_ff_dense = 0;

  std::uint32_t q_width() const { return n_head * head_dim; }
  std::uint32_t kv_width() const { return n_head_kv * head_dim; }
};

// What admission knows about a model: global hyperparameters, the recipe and
// one LayerSpec per layer.
struct ModelSpec {
  std::string arch;
  Hparams hp;
  Recipe recipe;
  bool tied_output = false;
  std::vector<LayerSpec> layers;  // [n_layer]
};

}  // namespace seam
