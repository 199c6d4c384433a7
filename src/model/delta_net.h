// What a gated-delta-net layer (Qwen3.5 / Qwen3-Next) needs from the file:
// its sizes (global `<arch>.ssm.*` keys) and its weights. The math is in
// runtime/delta_net_layer.h.
#pragma once

#include <cstdint>

#include "compute/backend.h"
#include "compute/matmul.h"

namespace seam {

struct DeltaNetParams {
  std::uint32_t d_conv = 0;    // ssm.conv_kernel: causal conv width (4)
  std::uint32_t d_state = 0;   // ssm.state_size: S, the size of each q/k/v head
  std::uint32_t n_head_k = 0;  // ssm.group_count: q/k heads
  std::uint32_t n_head_v = 0;  // ssm.time_step_rank: v heads (a multiple of n_head_k)
  KHeadMap k_head_map = KHeadMap::Tiled;
  bool ba_fused = false;  // qwen3next: one ssm_ba projection, per k-head [beta x r | alpha x r]

  std::uint32_t qk_width() const { return n_head_k * d_state; }
  std::uint32_t v_width() const { return n_head_v * d_state; }
  std::uint32_t conv_channels() const { return 2 * qk_width() + v_width(); }  // [q | k | v]
  std::uint32_t conv_floats() const { return (d_conv - 1) * conv_channels(); }
  std::uint32_t state_floats() const { return n_head_v * d_state * d_state; }
};

struct DeltaNetWeights {
  WeightView qkv;                  // [n_embd] -> [conv_channels]   attn_qkv
  WeightView gate;                 // [n_embd] -> [v_width] (z)     attn_gate
  WeightView beta;                 // [n_embd] -> [n_head_v]        ssm_beta
  WeightView alpha;                // [n_embd] -> [n_head_v]        ssm_alpha
  WeightView ba;                   // [n_embd] -> [2 n_head_v]      ssm_ba (ba_fused)
  const float* conv1d = nullptr;   // [conv_channels][d_conv]       ssm_conv1d
  const float* dt_bias = nullptr;  // [n_head_v]                    ssm_dt.bias
  const float* a = nullptr;        // [n_head_v] = -exp(A_log) < 0  ssm_a
  const float* norm = nullptr;     // [d_state]                     ssm_norm
  WeightView out;                  // [v_width] -> [n_embd]         ssm_out
};

}  // namespace seam
