#include "compute/ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "compute/quant.h"
#include "compute/quant_blocks.h"
#include "compute/vec.h"
#include "core/half.h"

namespace seam::ops {

float dot_f32_ref(const float* a, const float* b, std::int64_t n) {
  float s = 0.0f;
  for (std::int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// The SIMD bodies are chosen at run time (compute/vec.h): this file is built for the
// baseline CPU.
float dot_f32(const float* a, const float* b, std::int64_t n) {
  return vec::vec_fns().dot_f32(a, b, n);
}

double sum_squares(const float* x, std::int64_t n) {
  // Eight running sums (element i in sum i % 8) met in a fixed tree: one
  // chain of dependent double adds per element was a prefill's rms_norm
  // (3.5% of a 135M pp512); this form the compiler turns into vector adds at
  // any level, in the same order, so every build and level gives one result.
  double part[8] = {};
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) part[k] += static_cast<double>(x[i + k]) * x[i + k];
  for (; i < n; ++i) part[i % 8] += static_cast<double>(x[i]) * x[i];
  return ((part[0] + part[4]) + (part[2] + part[6])) + ((part[1] + part[5]) + (part[3] + part[7]));
}

void rms_norm_row(const float* x, const float* w, std::int64_t n, float eps, float* y) {
  const double sum = sum_squares(x, n);
  const float scale = static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(n) + eps));
  if (w) {
    for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * w[i];
  } else {
    for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] * scale;
  }
}

void rope_angles(std::int32_t pos, const RopeParams& p, float* cs) {
  const int half = p.n_rot / 2;
  const double ramp_width = std::max(0.001, static_cast<double>(p.corr_high - p.corr_low));
  for (int i = 0; i < half; ++i) {
    double extrap = static_cast<double>(pos) * std::pow(static_cast<double>(p.freq_base),
                                                        -2.0 * i / static_cast<double>(p.n_rot));
    if (p.freq_factors) extrap /= static_cast<double>(p.freq_factors[i]);
    double theta = extrap * static_cast<double>(p.freq_scale);
    if (p.ext_factor != 0.0f) {
      // YaRN: high-frequency pairs (i < corr_low) keep the unscaled angle,
      // low-frequency ones (i > corr_high) are interpolated, linear between.
      const double y = (i - static_cast<double>(p.corr_low)) / ramp_width;
      const double mix = (1.0 - std::clamp(y, 0.0, 1.0)) * static_cast<double>(p.ext_factor);
      theta = theta * (1.0 - mix) + extrap * mix;
    }
    cs[2 * i] = static_cast<float>(std::cos(theta) * p.attn_factor);
    cs[2 * i + 1] = static_cast<float>(std::sin(theta) * p.attn_factor);
  }
}

void yarn_corr_dims(std::int32_t n_rot, std::uint32_t n_ctx_orig, float freq_base, float beta_fast,
                    float beta_slow, float* low, float* high) {
  // The pair index whose wavelength fits `rotations` times into n_ctx_orig:
  // n_rot * ln(n_ctx_orig / (2 pi rotations)) / (2 ln base).
  const auto dim = [&](double rotations) {
    return n_rot * std::log(n_ctx_orig / (rotations * 2.0 * std::numbers::pi)) /
           (2.0 * std::log(static_cast<double>(freq_base)));
  };
  *low = static_cast<float>(std::max(0.0, std::floor(dim(beta_fast))));
  *high = static_cast<float>(std::min(n_rot - 1.0, std::ceil(dim(beta_slow))));
}

void rope_head(float* x, const RopeParams& p, const float* cs) {
  const int half = p.n_rot / 2;
  for (int i = 0; i < half; ++i) {
    const int i0 = p.neox ? i : 2 * i;
    const int i1 = p.neox ? i + half : 2 * i + 1;
    const float c = cs[2 * i], s = cs[2 * i + 1];
    const float x0 = x[i0], x1 = x[i1];
    x[i0] = x0 * c - x1 * s;
    x[i1] = x0 * s + x1 * c;
  }
}

void f32_to_f16_row(const float* src, std::uint16_t* dst, std::int64_t n) {
  vec::vec_fns().f32_to_f16(src, dst, n);
}

void f16_to_f32_row(const std::uint16_t* src, float* dst, std::int64_t n) {
  vec::vec_fns().f16_to_f32(src, dst, n);
}

void f32_to_kv_row(KvType t, const float* src, void* dst, std::int64_t n) {
  switch (t) {
    case KvType::F32:
      std::copy(src, src + n, static_cast<float*>(dst));
      break;
    case KvType::F16:
      f32_to_f16_row(src, static_cast<std::uint16_t*>(dst), n);
      break;
    case KvType::Q8_0:
      quant::quantize_row_q8_0(src, dst, n);
      break;
  }
}

void kv_row_to_f32(KvType t, const void* src, float* dst, std::int64_t n) {
  switch (t) {
    case KvType::F32:
      std::copy_n(static_cast<const float*>(src), n, dst);
      break;
    case KvType::F16:
      f16_to_f32_row(static_cast<const std::uint16_t*>(src), dst, n);
      break;
    case KvType::Q8_0:
      quant::dequantize_row(TensorType::Q8_0, src, dst, n);
      break;
  }
}

namespace {

// Row `cell` of kv head `kv_h` in a K or V cache, as floats (converted into
// `buf` when the cache is F16).
// `offset` counts elements (a multiple of 32 for Q8_0, whose rows are blocks).
const float* kv_row(const void* base, KvType type, std::int64_t offset, std::int32_t hd,
                    float* buf) {
  if (type == KvType::F32) return static_cast<const float*>(base) + offset;
  if (type == KvType::Q8_0) {
    const auto* b = static_cast<const quant::BlockQ8_0*>(base) + offset / quant::kQK8_0;
    for (std::int32_t d = 0; d < hd; ++d)
      buf[d] = static_cast<float>(b[d / quant::kQK8_0].qs[d % quant::kQK8_0]) *
               fp16_to_f32(b[d / quant::kQK8_0].d);
    return buf;
  }
  const std::uint16_t* h = static_cast<const std::uint16_t*>(base) + offset;
  for (std::int32_t d = 0; d < hd; ++d) buf[d] = fp16_to_f32(h[d]);
  return buf;
}

}  // namespace

void attention_head(const AttentionArgs& a, std::int64_t t, std::int32_t h,
                    std::vector<float>& scores, std::vector<float>& row) {
  const std::int32_t hd = a.head_dim;
  const std::int32_t kv_h = h / (a.n_head / a.n_head_kv);
  const std::int64_t kv_stride = static_cast<std::int64_t>(a.n_head_kv) * hd;
  const float* q = a.q + (t * a.n_head + h) * hd;
  float* out = a.out + (t * a.n_head + h) * hd;
  const std::uint32_t begin = a.mask.begin[static_cast<std::size_t>(t)];
  const std::uint32_t end = a.mask.end[static_cast<std::size_t>(t)];
  const std::size_t n = end - begin;
  std::fill(out, out + hd, 0.0f);
  if (n == 0) return;  // no cell: zeros, with or without a sink
  scores.resize(n);
  row.resize(static_cast<std::size_t>(hd));
  float max_score = -std::numeric_limits<float>::infinity();
  for (std::size_t j = 0; j < n; ++j) {
    const float* k =
        kv_row(a.k, a.kv_type, a.mask.cells[begin + j] * kv_stride + kv_h * hd, hd, row.data());
    float s = dot_f32(q, k, hd) * a.scale;
    if (a.softcap > 0.0f) s = a.softcap * std::tanh(s / a.softcap);
    scores[j] = s;
    max_score = std::max(max_score, s);
  }
  // A sink is one more logit in the denominator; it may exceed every score.
  const float sink = a.sinks ? a.sinks[h] : -std::numeric_limits<float>::infinity();
  max_score = std::max(max_score, sink);
  double sum = a.sinks ? std::exp(static_cast<double>(sink) - max_score) : 0.0;
  for (std::size_t j = 0; j < n; ++j) {
    scores[j] = std::exp(scores[j] - max_score);
    sum += scores[j];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (std::size_t j = 0; j < n; ++j) {
    const float* v =
        kv_row(a.v, a.kv_type, a.mask.cells[begin + j] * kv_stride + kv_h * hd, hd, row.data());
    const float p = scores[j] * inv;
    for (std::int32_t d = 0; d < hd; ++d) out[d] += p * v[d];
  }
}

void gated_activation(const float* gate, const float* up, std::int64_t n, Activation act,
                      float* out) {
  if (act == Activation::Silu) {
    vec::vec_fns().silu_mul(gate, up, n, out);
  } else if (act == Activation::SwigluOai) {
    vec::vec_fns().swiglu_oai_mul(gate, up, n, out);
  } else {
    vec::vec_fns().gelu_mul(gate, up, n, out);
  }
}

void softmax_row(float* x, std::int64_t n) {
  float mx = -std::numeric_limits<float>::infinity();
  for (std::int64_t i = 0; i < n; ++i) mx = std::max(mx, x[i]);
  double sum = 0.0;
  for (std::int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (std::int64_t i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace seam::ops
