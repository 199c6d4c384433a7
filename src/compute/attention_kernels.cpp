#include "compute/attention_kernels.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "compute/quant_blocks.h"
#include "core/half.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace seam::attn {

namespace {

// The integer nearest t, ties to even, as std::nearbyint gives it in the
// default rounding mode. On x86 that is one cvtss2si: nearbyintf is a libm
// call there, and it was 3.9% of a 135M prefill after 4,096 cells (perf,
// Zen 5), where every new running maximum asks for an exp.
inline float nearest_even(float t) {
#if defined(__x86_64__) || defined(__i386__)
  return static_cast<float>(_mm_cvtss_si32(_mm_set_ss(t)));
#else
  return std::nearbyint(t);
#endif
}

}  // namespace

// x = n ln2 + r, |r| <= ln2/2, e^r by its degree-6 Taylor polynomial
// (truncation < 2e-8 relative), times 2^n built in the exponent bits. Below
// -87 it returns 0 (e^-87 < 2^-125 is negligible against the largest weight,
// which is 1). The AVX2 unit evaluates the same polynomial in 8 lanes.
float exp_nonpositive(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693145751953125f;  // ln 2 split so n * kLn2Hi is exact
  constexpr float kLn2Lo = 1.428606765330187e-06f;
  const float xc = std::max(x, -87.0f);
  const float n = nearest_even(xc * kLog2e);
  const float r = (xc - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const float scale =
      std::bit_cast<float>(static_cast<std::uint32_t>(static_cast<std::int32_t>(n) + 127) << 23);
  return x < -87.0f ? 0.0f : p * scale;
}

namespace {

constexpr int C = kAttnChunk;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// One kv head's row of `cell` as hd floats.
void load_row(const std::byte* base, const KvHead& kv, std::uint32_t cell, int hd, float* out) {
  const std::byte* p = base + slice_offset(kv, cell);
  switch (kv.type) {
    case KvType::F32:
      std::memcpy(out, p, static_cast<std::size_t>(hd) * sizeof(float));
      break;
    case KvType::F16:
      for (int d = 0; d < hd; ++d) {
        std::uint16_t h;
        std::memcpy(&h, p + 2 * d, 2);
        out[d] = fp16_to_f32(h);
      }
      break;
    case KvType::Q8_0:
      for (int b = 0; b < hd / quant::kQK8_0; ++b) {
        quant::BlockQ8_0 blk;
        std::memcpy(&blk, p + b * sizeof(blk), sizeof(blk));
        const float s = fp16_to_f32(blk.d);
        for (int j = 0; j < quant::kQK8_0; ++j)
          out[b * quant::kQK8_0 + j] = static_cast<float>(blk.qs[j]) * s;
      }
      break;
  }
}

void load_chunk_scalar(const KvHead& kv, const std::uint32_t* cells, int nc, int hd, float* kt,
                       float* v) {
  for (int j = 0; j < nc; ++j) {
    float* vj = v + static_cast<std::size_t>(j) * hd;
    load_row(kv.k, kv, cells[j], hd, vj);  // K passes through v's row on its way to kt
    for (int d = 0; d < hd; ++d) kt[d * C + j] = vj[d];
    load_row(kv.v, kv, cells[j], hd, vj);
  }
  for (int d = 0; d < hd; ++d)
    for (int j = nc; j < C; ++j) kt[d * C + j] = 0.0f;
}

// Folds raw scores sc[j] = q.k_j, j in [jlo, jhi), into (m, l, acc); v_j is
// v + j * v_stride. sc is overwritten with the weights.
void fold_scalar(float* sc, const float* v, std::size_t v_stride, int jlo, int jhi, int hd,
                 float scale, float softcap, float* m, float* l, float* acc) {
  float mx = kNegInf;
  for (int j = jlo; j < jhi; ++j) {
    float x = sc[j] * scale;
    if (softcap > 0.0f) x = softcap * std::tanh(x / softcap);
    sc[j] = x;
    mx = std::max(mx, x);
  }
  const float m_new = std::max(*m, mx);
  if (*m != m_new) {
    const float corr = exp_nonpositive(*m - m_new);  // 0 when m was -inf
    *l *= corr;
    for (int d = 0; d < hd; ++d) acc[d] *= corr;
    *m = m_new;
  }
  float sum = 0.0f;
  for (int j = jlo; j < jhi; ++j) {
    sc[j] = exp_nonpositive(sc[j] - m_new);
    sum += sc[j];
  }
  *l += sum;
  for (int j = jlo; j < jhi; ++j) {
    const float p = sc[j];
    const float* vj = v + static_cast<std::size_t>(j) * v_stride;
    for (int d = 0; d < hd; ++d) acc[d] += p * vj[d];
  }
}

void query_chunk_scalar(const float* q, const float* kt, const float* v, int jlo, int jhi, int hd,
                        int nq, float scale, float softcap, float* m, float* l, float* acc) {
  for (int h = 0; h < nq; ++h) {
    const float* qh = q + static_cast<std::size_t>(h) * hd;
    float sc[C] = {};
    for (int d = 0; d < hd; ++d) {
      const float qd = qh[d];
      const float* kd = kt + d * C;
      for (int j = 0; j < C; ++j) sc[j] += qd * kd[j];
    }
    fold_scalar(sc, v, static_cast<std::size_t>(hd), jlo, jhi, hd, scale, softcap, m + h, l + h,
                acc + static_cast<std::size_t>(h) * hd);
  }
}

// The reference asks for nothing ahead (n_next unused).
void decode_chunk_scalar(const KvHead& kv, const std::uint32_t* cells, int nc, int /*n_next*/,
                         int hd, int nq, const float* q, float scale, float softcap, float* m,
                         float* l, float* acc) {
  // [kAttnChunk][hd] each; grown once per thread, so decoding allocates nothing.
  thread_local std::vector<float> k, v;
  k.resize(static_cast<std::size_t>(C) * hd);
  v.resize(k.size());
  for (int j = 0; j < nc; ++j) {
    load_row(kv.k, kv, cells[j], hd, k.data() + static_cast<std::size_t>(j) * hd);
    load_row(kv.v, kv, cells[j], hd, v.data() + static_cast<std::size_t>(j) * hd);
  }
  for (int h = 0; h < nq; ++h) {
    const float* qh = q + static_cast<std::size_t>(h) * hd;
    float sc[C];
    for (int j = 0; j < nc; ++j) {
      const float* kj = k.data() + static_cast<std::size_t>(j) * hd;
      float s = 0.0f;
      for (int d = 0; d < hd; ++d) s += qh[d] * kj[d];
      sc[j] = s;
    }
    fold_scalar(sc, v.data(), static_cast<std::size_t>(hd), 0, nc, hd, scale, softcap, m + h, l + h,
                acc + static_cast<std::size_t>(h) * hd);
  }
}

constexpr AttnFns kScalar = {load_chunk_scalar, query_chunk_scalar, decode_chunk_scalar};
constexpr AttnFns kAvx2 = {avx2::load_chunk, avx2::query_chunk, avx2::decode_chunk};
constexpr AttnFns kAvx512 = {avx2::load_chunk, avx512::query_chunk, avx512::decode_chunk};

}  // namespace

const AttnFns& attn_fns(CpuLevel level) {
  return level >= CpuLevel::Avx512 ? kAvx512 : level >= CpuLevel::Avx2 ? kAvx2 : kScalar;
}

}  // namespace seam::attn
