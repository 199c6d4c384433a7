#include <algorithm>
#include <cmath>
#include <vector>

#include "compute/attention.h"
#include "compute/backend.h"
#include "compute/ops.h"
#include "compute/recurrent_ops.h"

namespace seam {

void CpuBackend::matmul(const WeightView& w, const float* x, std::int64_t n_tokens, float* y,
                        std::int64_t ldy) {
  seam::matmul(w, x, n_tokens, y, ldy, pool_, scratch_);
}

void CpuBackend::get_rows(const WeightView& w, std::span<const std::int32_t> ids, float* out) {
  for (std::size_t i = 0; i < ids.size(); ++i) {
    get_row(w, ids[i], out + static_cast<std::int64_t>(i) * w.n_in);
  }
}

void CpuBackend::rms_norm(const float* x, const float* w, std::int64_t n_rows, std::int64_t n,
                          float eps, float* y) {
  for (std::int64_t r = 0; r < n_rows; ++r) ops::rms_norm_row(x + r * n, w, n, eps, y + r * n);
}

void CpuBackend::rope(float* x, std::int64_t n_tokens, std::int32_t n_heads, std::int32_t head_dim,
                      std::span<const std::int32_t> pos, const RopeParams& p) {
  std::vector<float>& cs = rope_cs_;  // [n_rot/2][cos, sin]
  if (cs.size() < static_cast<std::size_t>(p.n_rot)) cs.resize(static_cast<std::size_t>(p.n_rot));
  for (std::int64_t t = 0; t < n_tokens; ++t) {
    ops::rope_angles(pos[static_cast<std::size_t>(t)], p, cs.data());
    for (std::int32_t h = 0; h < n_heads; ++h) {
      ops::rope_head(x + (t * n_heads + h) * head_dim, p, cs.data());
    }
  }
}

void CpuBackend::attention(const AttentionArgs& a) { attention_tiled(a, pool_, attn_scratch_); }

void CpuBackend::gated_activation(const float* gate, const float* up, std::int64_t n,
                                  Activation act, float* out) {
  ops::gated_activation(gate, up, n, act, out);
}

void CpuBackend::add(float* x, const float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void CpuBackend::softmax(float* x, std::int64_t n_rows, std::int64_t n) {
  for (std::int64_t r = 0; r < n_rows; ++r) ops::softmax_row(x + r * n, n);
}

void CpuBackend::softplus(const float* x, std::int64_t n, float* y) { ops::softplus(x, n, y); }

void CpuBackend::sigmoid(const float* x, std::int64_t n, float* y) { ops::sigmoid(x, n, y); }

void CpuBackend::silu(const float* x, std::int64_t n, float* y) { ops::silu(x, n, y); }

void CpuBackend::l2_norm(const float* x, std::int64_t n_rows, std::int64_t n, float eps, float* y) {
  for (std::int64_t r = 0; r < n_rows; ++r) ops::l2_norm_row(x + r * n, n, eps, y + r * n);
}

void CpuBackend::rms_norm_gated(const float* x, const float* w, const float* z, std::int64_t n_rows,
                                std::int64_t n, float eps, float* y) {
  for (std::int64_t r = 0; r < n_rows; ++r) {
    ops::rms_norm_gated_row(x + r * n, w, z + r * n, n, eps, y + r * n);
  }
}

void CpuBackend::ssm_conv(const float* x, std::int64_t n_tokens, std::int64_t n_ch, const float* w,
                          std::int32_t width, float* state, float* y) {
  // Channels are independent; a chunk of 256 keeps a thread's work above the
  // cost of waking it at decode (one token).
  pool_.parallel_for(static_cast<std::size_t>(n_ch), 256, [&](std::size_t c0, std::size_t c1) {
    ops::ssm_conv_channels(x, n_tokens, n_ch, w, width, state, y, static_cast<std::int64_t>(c0),
                           static_cast<std::int64_t>(c1));
  });
}

void CpuBackend::gated_delta_rule(const GatedDeltaArgs& a) {
  // Heads are independent (each owns its state matrix).
  pool_.parallel_for(static_cast<std::size_t>(a.n_head_v), 1, [&](std::size_t h0, std::size_t h1) {
    ops::gated_delta_rule_heads(a, static_cast<std::int32_t>(h0), static_cast<std::int32_t>(h1),
                                active_cpu_level());
  });
}

}  // namespace seam
