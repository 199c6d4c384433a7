// Kernels of the recurrent (gated delta net) layers: the element-wise maps,
// per-head norms, the short causal convolution with its state window and the
// gated delta rule. Each states its math; the threaded and SIMD-backed paths
// are checked against the scalar `*_ref` versions and float64 in tests.
#pragma once

#include <cstdint>

#include "compute/backend.h"
#include "compute/cpu_level.h"

namespace seam::ops {

// y = ln(1 + e^x), stable: x itself for x > 20 (where e^-x < 2^-28 is below a
// float's resolution), log1p(e^x) otherwise (no overflow, no lost small values).
void softplus(const float* x, std::int64_t n, float* y);
// y = 1 / (1 + e^-x), with e^-x taken on the side where it cannot overflow.
void sigmoid(const float* x, std::int64_t n, float* y);
// y = x / (1 + e^-x)
void silu(const float* x, std::int64_t n, float* y);

// Each row of n: y = x / max(||x||_2, eps). In place allowed.
void l2_norm_row(const float* x, std::int64_t n, float eps, float* y);
// Each row of n: y = x / sqrt(mean(x^2) + eps) * w * silu(z). In place (y == x) allowed.
void rms_norm_gated_row(const float* x, const float* w, const float* z, std::int64_t n, float eps,
                        float* y);

// Causal depthwise convolution of width K over the tokens of ONE sequence, in
// order, channels c < n_ch:
//   y[t][c] = sum_{j<K} w[c][j] * win[t + j][c],  win = [state (K-1 rows); x (T rows)]
// and afterwards state = the last K-1 rows of win (raw inputs, before the conv).
// x [T][n_ch], w [n_ch][K], state [K-1][n_ch], y [T][n_ch]; y must not alias x.
void ssm_conv_ref(const float* x, std::int64_t n_tokens, std::int64_t n_ch, const float* w,
                  std::int32_t width, float* state, float* y);

// Channels [c0, c1) of ssm_conv_ref, computed token by token over blocks of
// channels (the threaded kernel splits channels); the same sums, in order.
// Unlike ssm_conv_ref, y may be x (each block's window is kept apart).
void ssm_conv_channels(const float* x, std::int64_t n_tokens, std::int64_t n_ch, const float* w,
                       std::int32_t width, float* state, float* y, std::int64_t c0,
                       std::int64_t c1);

// The gated delta rule (Yang et al., "Gated Delta Networks", eq. 10), per
// v-head h and token t, with S = state[h], kk = k[t][kh(h)], qq = q[t][kh(h)]:
//   S <- S e^g;  S <- S + beta (v - S kk) kk^T;  out = S (scale qq).
// Row i of S only meets row i of the update, so heads and rows are independent.
void gated_delta_rule_ref(const GatedDeltaArgs& a);
// Heads [h0, h1) of the rule, rows through `level`'s dot product (compute/vec.h).
void gated_delta_rule_heads(const GatedDeltaArgs& a, std::int32_t h0, std::int32_t h1,
                            CpuLevel level);

}  // namespace seam::ops
