// Typed views of a model's tensors, validated at load (model/tensor_table.h).
// 2-D and 3-D weights stay in the file's block format (memory-mapped); 1-D
// vectors are copied to f32. Members a layer's recipe does not use stay empty.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compute/backend.h"
#include "compute/matmul.h"
#include "model/delta_net.h"

namespace seam {

struct LayerWeights {
  const float* attn_norm = nullptr;       // [n_embd]
  WeightView wq;                          // [n_embd] -> [n_head * head_dim] (gated_q: x2)
  WeightView wk;                          // [n_embd] -> [n_head_kv * head_dim]
  WeightView wv;                          // [n_embd] -> [n_head_kv * head_dim]
  WeightView wo;                          // [n_head * head_dim] -> [n_embd]
  const float* bq = nullptr;              // [n_head * head_dim] (qkv_bias)
  const float* bk = nullptr;              // [n_head_kv * head_dim]
  const float* bv = nullptr;              // [n_head_kv * head_dim]
  const float* q_norm = nullptr;          // [head_dim] (qk_norm)
  const float* k_norm = nullptr;          // [head_dim]
  const float* post_attn_norm = nullptr;  // [n_embd] (post_norms)
  const float* ffn_norm = nullptr;        // [n_embd]
  WeightView ffn_gate;                    // [n_embd] -> [n_ff] (dense FFN)
  WeightView ffn_up;                      // [n_embd] -> [n_ff]
  WeightView ffn_down;                    // [n_ff] -> [n_embd]
  WeightView ffn_gate_inp;                // [n_embd] -> [n_expert] router (MoE FFN)
  ExpertsView ffn_gate_exps;              // n_expert x ([n_embd] -> [n_ff])
  ExpertsView ffn_up_exps;                // n_expert x ([n_embd] -> [n_ff])
  ExpertsView ffn_down_exps;              // n_expert x ([n_ff] -> [n_embd])
  const float* post_ffn_norm = nullptr;   // [n_embd] (post_norms)
  WeightView ple_gate;                    // [n_embd] -> [n_embd_ple] (Per-Layer Embeddings)
  WeightView ple_proj;                    // [n_embd_ple] -> [n_embd]
  const float* ple_post_norm = nullptr;   // [n_embd]
  const float* out_scale = nullptr;       // [1] the residual stream's scale after the block

  // The shared expert of a MoE FFN (n_ff_shexp > 0), scaled by sigmoid(gate . h).
  WeightView ffn_gate_shexp;                  // [n_embd] -> [n_ff_shexp]
  WeightView ffn_up_shexp;                    // [n_embd] -> [n_ff_shexp]
  WeightView ffn_down_shexp;                  // [n_ff_shexp] -> [n_embd]
  const float* ffn_gate_inp_shexp = nullptr;  // [n_embd]
  DeltaNetWeights delta_net;                  // gated-delta-net layers

  // gpt-oss (arch/gpt_oss.cpp); null elsewhere.
  const float* attn_sinks = nullptr;       // [n_head] one softmax-denominator logit per head
  const float* bo = nullptr;               // [n_embd] attn_output bias
  const float* ffn_gate_inp_b = nullptr;   // [n_expert] router bias
  const float* ffn_gate_exps_b = nullptr;  // [n_expert][n_ff] per-expert biases
  const float* ffn_up_exps_b = nullptr;    // [n_expert][n_ff]
  const float* ffn_down_exps_b = nullptr;  // [n_expert][n_embd]

  // Gemma 4 26B-A4B (n_ff_dense > 0): the dense MLP (ffn_gate/up/down above)
  // and the routed experts side by side, each with its own norms.
  const float* ffn_gate_inp_scale = nullptr;   // [n_embd] the router input's scale
  const float* ffn_down_exps_scale = nullptr;  // [n_expert] each expert's output scale
  const float* pre_ffn_norm_2 = nullptr;       // [n_embd] the experts' input norm
  const float* post_ffn_norm_1 = nullptr;      // [n_embd] the dense MLP's output norm
  const float* post_ffn_norm_2 = nullptr;      // [n_embd] the experts' output norm
};

struct ModelWeights {
  WeightView token_embd;               // [n_embd] x n_vocab rows
  const float* output_norm = nullptr;  // [n_embd]
  WeightView output;                   // [n_embd] -> [n_vocab] (token_embd when tied)
  const float* rope_freqs = nullptr;   // [n_rot/2] Llama 3 frequency factors, optional
  const float* rope_long = nullptr;    // [n_rot/2] LongRoPE divisors for n_ctx > n_ctx_orig
  const float* rope_short = nullptr;   // [n_rot/2] LongRoPE divisors otherwise
  // Per-Layer Embeddings (hp.n_embd_ple > 0).
  WeightView ple_token_embd;             // [n_layer * n_embd_ple] x n_vocab rows
  WeightView ple_model_proj;             // [n_embd] -> [n_layer * n_embd_ple]
  const float* ple_proj_norm = nullptr;  // [n_embd_ple]
  std::vector<LayerWeights> layers;
  std::vector<std::vector<float>> owned;  // storage of the f32 copies above
};

}  // namespace seam
