#include "compute/recurrent_ops.h"

#include <algorithm>
#include <cmath>

#include "compute/ops.h"
#include "compute/vec.h"

namespace seam::ops {

void softplus(const float* x, std::int64_t n, float* y) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] > 20.0f ? x[i] : std::log1p(std::exp(x[i]));
}

void sigmoid(const float* x, std::int64_t n, float* y) { vec::vec_fns().sigmoid(x, n, y); }

void silu(const float* x, std::int64_t n, float* y) { vec::vec_fns().silu(x, n, y); }

void l2_norm_row(const float* x, std::int64_t n, float eps, float* y) {
  const double sum = sum_squares(x, n);
  const float inv = static_cast<float>(1.0 / std::max(std::sqrt(sum), static_cast<double>(eps)));
  for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] * inv;
}

void rms_norm_gated_row(const float* x, const float* w, const float* z, std::int64_t n, float eps,
                        float* y) {
  const double sum = sum_squares(x, n);
  const float scale = static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(n) + eps));
  // x scale w first (in place is allowed), then silu(z) times it in the
  // level's lanes: a std::exp per element was most of this op's time.
  for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * w[i];
  vec::vec_fns().silu_mul(z, y, n, y);
}

void ssm_conv_ref(const float* x, std::int64_t n_tokens, std::int64_t n_ch, const float* w,
                  std::int32_t width, float* state, float* y) {
  const std::int64_t hist = width - 1;
  for (std::int64_t c = 0; c < n_ch; ++c) {
    const float* wc = w + c * width;
    // win[r] is state row r for r < hist, else x row r - hist.
    const auto win = [&](std::int64_t r) {
      return r < hist ? state[r * n_ch + c] : x[(r - hist) * n_ch + c];
    };
    for (std::int64_t t = 0; t < n_tokens; ++t) {
      float acc = 0.0f;
      for (std::int32_t j = 0; j < width; ++j) acc += wc[j] * win(t + j);
      y[t * n_ch + c] = acc;
    }
    // The new window: the last hist rows of [state; x]. Walk upward so a row
    // is read before it is overwritten (row r reads row r + T >= r).
    for (std::int64_t r = 0; r < hist; ++r) state[r * n_ch + c] = win(n_tokens + r);
  }
}

void ssm_conv_channels(const float* x, std::int64_t n_tokens, std::int64_t n_ch, const float* w,
                       std::int32_t width, float* state, float* y, std::int64_t c0,
                       std::int64_t c1) {
  // Token by token over a block of channels, so every access runs along a
  // row (x and y are [T][n_ch]) and the channel loop vectorizes; the taps
  // are transposed per block to [width][block] for the same reason. Each
  // output sums its taps in order from 0, as ssm_conv_ref does. The window's
  // rows live in a ring of `width` rows (row r of [state; x] in slot r %
  // width), so an input row is read once, before its output is written: y may
  // be x.
  constexpr std::int64_t kBlock = 64;
  const std::int64_t hist = width - 1;
  float wt[64 * kBlock];    // width <= 64 (the recipe's bound)
  float ring[64 * kBlock];  // [width][block]
  const auto slot = [&](std::int64_t r) { return ring + r % width * kBlock; };
  for (std::int64_t cb = c0; cb < c1; cb += kBlock) {
    const std::int64_t nb = std::min(kBlock, c1 - cb);
    for (std::int64_t i = 0; i < nb; ++i)
      for (std::int32_t j = 0; j < width; ++j) wt[j * kBlock + i] = w[(cb + i) * width + j];
    for (std::int64_t r = 0; r < hist; ++r) std::copy_n(state + r * n_ch + cb, nb, slot(r));
    for (std::int64_t t = 0; t < n_tokens; ++t) {
      std::copy_n(x + t * n_ch + cb, nb, slot(t + hist));
      float* yt = y + t * n_ch + cb;
      for (std::int64_t i = 0; i < nb; ++i) yt[i] = 0.0f;
      for (std::int32_t j = 0; j < width; ++j) {
        const float* r = slot(t + j);
        const float* wj = wt + j * kBlock;
        for (std::int64_t i = 0; i < nb; ++i) yt[i] += wj[i] * r[i];
      }
    }
    // The new window: the last hist rows of [state; x], all in the ring.
    for (std::int64_t r = 0; r < hist; ++r)
      std::copy_n(slot(n_tokens + r), nb, state + r * n_ch + cb);
  }
}

namespace {

std::int32_t k_head(const GatedDeltaArgs& a, std::int32_t h) {
  return a.map == KHeadMap::Tiled ? h % a.n_head_k : h / (a.n_head_v / a.n_head_k);
}

// Token t's q, k (of k-head kh), v and out (of v-head h), packed or
// row_stride apart.
struct TokenHead {
  const float *q, *k, *v;
  float* o;
};
TokenHead token_head(const GatedDeltaArgs& a, std::int64_t t, std::int64_t kh, std::int64_t h) {
  const std::int64_t qk = a.row_stride ? a.row_stride : std::int64_t{a.n_head_k} * a.dk;
  const std::int64_t v = a.row_stride ? a.row_stride : std::int64_t{a.n_head_v} * a.dv;
  return {a.q + t * qk + kh * a.dk, a.k + t * qk + kh * a.dk, a.v + t * v + h * a.dv,
          a.out + t * v + h * a.dv};
}

}  // namespace

void gated_delta_rule_ref(const GatedDeltaArgs& a) {
  const std::int64_t dk = a.dk, dv = a.dv;
  for (std::int64_t t = 0; t < a.n_tokens; ++t) {
    for (std::int32_t h = 0; h < a.n_head_v; ++h) {
      const auto [q, k, v, o] = token_head(a, t, k_head(a, h), h);
      const float decay = std::exp(a.g[t * a.n_head_v + h]);
      const float beta = a.beta[t * a.n_head_v + h];
      float* S = a.state + h * dv * dk;
      for (std::int64_t i = 0; i < dv * dk; ++i) S[i] *= decay;
      for (std::int64_t i = 0; i < dv; ++i) {
        float sk = 0.0f;
        for (std::int64_t j = 0; j < dk; ++j) sk += S[i * dk + j] * k[j];
        const float d = beta * (v[i] - sk);
        for (std::int64_t j = 0; j < dk; ++j) S[i * dk + j] += d * k[j];
      }
      for (std::int64_t i = 0; i < dv; ++i) {
        float acc = 0.0f;
        for (std::int64_t j = 0; j < dk; ++j) acc += S[i * dk + j] * q[j];
        o[i] = acc * a.scale;
      }
    }
  }
}

void gated_delta_rule_heads(const GatedDeltaArgs& a, std::int32_t h0, std::int32_t h1,
                            CpuLevel level) {
  const vec::VecFns& fns = vec::vec_fns(level);
  const std::int64_t dk = a.dk, dv = a.dv;
  for (std::int64_t t = 0; t < a.n_tokens; ++t) {
    for (std::int32_t h = h0; h < h1; ++h) {
      const auto [q, k, v, o] = token_head(a, t, k_head(a, h), h);
      const float decay = std::exp(a.g[t * a.n_head_v + h]);
      const float beta = a.beta[t * a.n_head_v + h];
      float* S = a.state + h * dv * dk;
      // One read of each state row: with s = S_i (before decay),
      //   S_i k = e^g (s.k),  S_i' = e^g s + d k,  S_i' q = e^g (s.q) + d (k.q).
      const float kq = fns.dot_f32(k, q, dk);
      for (std::int64_t i = 0; i < dv; ++i) {
        float d;
        const float sq = fns.delta_row(S + i * dk, k, q, dk, decay, beta, v[i], &d);
        o[i] = (sq + d * kq) * a.scale;
      }
    }
  }
}

}  // namespace seam::ops
