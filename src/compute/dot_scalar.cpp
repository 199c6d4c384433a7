// Scalar reference dot kernels. Integer products are summed exactly per block
// (or sub-block), then scaled in f32, the same decomposition the SIMD kernels
// use, so the two differ only in float accumulation order.
#include <cstring>

#include "compute/dot.h"
#include "compute/quant_blocks.h"
#include "core/half.h"

namespace seam::dot {
namespace {

using namespace seam::quant;

template <class Block>
const Block* act_row(const void* act, std::size_t stride, int t) {
  return reinterpret_cast<const Block*>(static_cast<const std::byte*>(act) + t * stride);
}

inline std::uint32_t load_u32le(const std::uint8_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;  // the format is little-endian, as is every target we build for
}

}  // namespace

void f32_f32(std::int64_t n, const void* w, const void* act, std::size_t act_stride, int n_act,
             float* out, std::size_t out_stride) {
  const auto* x = static_cast<const float*>(w);
  for (int t = 0; t < n_act; ++t) {
    const float* a = act_row<float>(act, act_stride, t);
    float s = 0.0f;
    for (std::int64_t k = 0; k < n; ++k) s += x[k] * a[k];
    out[t * out_stride] = s;
  }
}

void f16_f32(std::int64_t n, const void* w, const void* act, std::size_t act_stride, int n_act,
             float* out, std::size_t out_stride) {
  const auto* x = static_cast<const std::uint16_t*>(w);
  for (int t = 0; t < n_act; ++t) {
    const float* a = act_row<float>(act, act_stride, t);
    float s = 0.0f;
    for (std::int64_t k = 0; k < n; ++k) s += fp16_to_f32(x[k]) * a[k];
    out[t * out_stride] = s;
  }
}

void bf16_f32(std::int64_t n, const void* w, const void* act, std::size_t act_stride, int n_act,
              float* out, std::size_t out_stride) {
  const auto* x = static_cast<const std::uint16_t*>(w);
  for (int t = 0; t < n_act; ++t) {
    const float* a = act_row<float>(act, act_stride, t);
    float s = 0.0f;
    for (std::int64_t k = 0; k < n; ++k) s += bf16_to_f32(x[k]) * a[k];
    out[t * out_stride] = s;
  }
}

void q4_0_q8_0(std::int64_t n, const void* w, const void* act, std::size_t act_stride, int n_act,
               float* out, std::size_t out_stride) {
  const auto* x = static_cast<const BlockQ4_0*>(w);
  const std::int64_t nb = n / kQK4_0;
  for (int t = 0; t < n_act; ++t) {
    const auto* y = act_row<BlockQ8_0>(act, act_stride, t);
    float s = 0.0f;
    for (std::int64_t i = 0; i < nb; ++i) {
      int sumi = 0;
      for (int j = 0; j < 16; ++j) {
        sumi += ((x[i].qs[j] & 0xF) - 8) * y[i].qs[j] + ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + 16];
      }
      s += static_cast<float>(sumi) * (fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d));
    }
    out[t * out_stride] = s;
  }
}

void q4_1_q8_1(std::int64_t n, const void* w, const void* act, std::size_t act_stride, int n_act,
               float* out, std::size_t out_stride) {
  const auto* x = static_cast<const BlockQ4_1*>(w);
  const std::int64_t nb = n / kQK4_1;
  for (int t = 0; t < n_act; ++t) {
    const auto* y = act_row<BlockQ8_1>(act, act_stride, t);
    float s = 0.0f;
    for (std::int64_t i = 0; i < nb; ++i) {
      int sumi = 0;
      for (int j = 0; j < 16; ++j) {
        sumi += (x[i].qs[j] & 0xF) * y[i].qs[j] + (x[i].qs[j] >> 4) * y[i].qs[j + 16];
      }
      // sum (q*d + m) * a = d * da * sumi + m * (da * sum qa) = ... + m * s
      s += static_cast<float>(sumi) * (fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d)) +
           fp16_to_f32(x[i].m) * fp16_to_f32(y[i].s);
    }
    out[t * out_stride] = s;
  }
}

void q5_0_q8_0(std::int64_t n, const void* w, const void* act, std::size_t act_stride, int n_act,
               float* out, std::size_t out_stride) {
  const auto* x = static_cast<const BlockQ5_0*>(w);
  const std::int64_t nb = n / kQK5_0;
  for (int t = 0; t < n_act; ++t) {
    const auto* y = act_row<BlockQ8_0>(act, act_stride, t);
    float s = 0.0f;
    for (std::int64_t i = 0; i < nb; ++i) {
      const std::uint32_t qh = load_u32le(x[i].qh);
      int sumi = 0;
      for (int j = 0; j < 16; ++j) {
        const int q0 = ((x[i].qs[j] & 0xF) | (((qh >> j) & 1) << 4)) - 16;
        const int q1 = ((x[i].qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4)) - 16;
        sumi += q0 * y[i].qs[j] + q1 * y[i].qs[j + 16];
      }
      s += static_cast<float>(sumi) * (fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d));
    }
    out[t * out_stride] = s;
  }
}

void q5_1_q8_1(std::int64_t n, const void* w, const void* act, std::size_t act_stride, int n_act,
               float* out, std::size_t out_stride) {
  const auto* x = static_cast<const BlockQ5_1*>(w);
  const std::int64_t nb = n / kQK5_1;
  for (int t = 0; t < n_act; ++t) {
    const auto* y = act_row<BlockQ8_1>(act, act_stride, t);
    float s = 0.0f;
    for (std::int64_t i = 0; i < nb; ++i) {
      const std::uint32_t qh = load_u32le(x[i].qh);
      int sumi = 0;
      for (int j = 0; j < 16; ++j) {
        const int q0 = (x[i].qs[j] & 0xF) | (((qh >> j) & 1) << 4);
        const int q1 = (x[i].qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
        sumi += q0 * y[i].qs[j] + q1 * y[i].qs[j + 16];
      }
      s += static_cast<float>(sumi) * (fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d)) +
           fp16_to_f32(x[i].m) * fp16_to_f32(y[i].s);
    }
    out[t * out_stride] = s;
  }
}

void q8_0_q8_0(std::int64_t n, const void* w, const void* act, std::size_t act_stride, int n_act,
               float* out, std::size_t out_stride) {
  const auto* x = static_cast<const BlockQ8_0*>(w);
  const std::int64_t nb = n / kQK8_0;
  for (int t = 0; t < n_act; ++t) {
    const auto* y = act_row<BlockQ8_0>(act, act_stride, t);
    float s = 0.0f;
    for (std::int64_t i = 0; i < nb; ++i) {
      int sumi = 0;
      for (int j = 0; j < kQK8_0; ++j) sumi += x[i].qs[j] * y[i].qs[j];
      s += static_cast<float>(sumi) * (fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d));
    }
    out[t * out_stride] = s;
  }
}

// K-quants: x = d*sc*q - dmin*mn per sub-block, so
// sum x*a = d*da * sum_j sc_j * (q . a)_j  -  dmin*da * sum_j mn_j * (sum of a_j),
// where the activation sums come precomputed in Q8_K's bsums.
void q2_k_q8_k(std::int64_t n, const void* w, const void* act, std::size_t act_stride, int n_act,
               float* out, std::size_t out_stride) {
  const auto* x = static_cast<const BlockQ2_K*>(w);
  const std::int64_t nb = n / kQK_K;
  for (int t = 0; t < n_act; ++t) {
    const auto* y = act_row<BlockQ8_K>(act, act_stride, t);
    float s = 0.0f;
    for (std::int64_t i = 0; i < nb; ++i) {
      int isum = 0, summs = 0;
      for (int j = 0; j < 16; ++j) {
        int dot = 0;
        for (int l = 0; l < 16; ++l) {
          const int e = 16 * j + l;
          const int q = (x[i].qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
          dot += q * y[i].qs[e];
        }
        isum += (x[i].scales[j] & 0xF) * dot;
        summs += (x[i].scales[j] >> 4) * y[i].bsums[j];
      }
      const float dall = y[i].d * fp16_to_f32(x[i].d);
      const float dmin = y[i].d * fp16_to_f32(x[i].dmin);
      s += dall * static_cast<float>(isum) - dmin * static_cast<float>(summs);
    }
    out[t * out_stride] = s;
  }
}

void q3_k_q8_k(std::int64_t n, const void* w, const void* act, std::size_t act_stride, int n_act,
               float* out, std::size_t out_stride) {
  const auto* x = static_cast<const BlockQ3_K*>(w);
  const std::int64_t nb = n / kQK_K;
  for (int t = 0; t < n_act; ++t) {
    const auto* y = act_row<BlockQ8_K>(act, act_stride, t);
    float s = 0.0f;
    for (std::int64_t i = 0; i < nb; ++i) {
      int isum = 0;
      for (int j = 0; j < 16; ++j) {
        int dot = 0;
        for (int l = 0; l < 16; ++l) {
          const int e = 16 * j + l;
          int q = (x[i].qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
          if (!((x[i].hmask[e % 32] >> (e / 32)) & 1)) q -= 4;
          dot += q * y[i].qs[e];
        }
        isum += (scale_q3_k(j, x[i].scales) - 32) * dot;
      }
      s += y[i].d * fp16_to_f32(x[i].d) * static_cast<float>(isum);
    }
    out[t * out_stride] = s;
  }
}

namespace {

// Shared by Q4_K and Q5_K: `qhbit` adds the fifth bit for Q5_K (nullptr for Q4_K).
template <class Block>
float k4_block(const Block& b, const std::uint8_t* qh, const BlockQ8_K& y) {
  int isum = 0, summs = 0;
  for (int j = 0; j < 8; ++j) {
    std::uint8_t sc, mn;
    scale_min_k4(j, b.scales, sc, mn);
    const std::uint8_t* q = b.qs + 32 * (j / 2);
    const int shift = 4 * (j & 1);
    int dot = 0;
    for (int l = 0; l < 32; ++l) {
      int v = (q[l] >> shift) & 0xF;
      if (qh) v |= ((qh[l] >> j) & 1) << 4;
      dot += v * y.qs[32 * j + l];
    }
    isum += sc * dot;
    summs += mn * (y.bsums[2 * j] + y.bsums[2 * j + 1]);
  }
  return y.d * fp16_to_f32(b.d) * static_cast<float>(isum) -
         y.d * fp16_to_f32(b.dmin) * static_cast<float>(summs);
}

}  // namespace

void q4_k_q8_k(std::int64_t n, const void* w, const void* act, std::size_t act_stride, int n_act,
               float* out, std::size_t out_stride) {
  const auto* x = static_cast<const BlockQ4_K*>(w);
  const std::int64_t nb = n / kQK_K;
  for (int t = 0; t < n_act; ++t) {
    const auto* y = act_row<BlockQ8_K>(act, act_stride, t);
    float s = 0.0f;
    for (std::int64_t i = 0; i < nb; ++i) s += k4_block(x[i], nullptr, y[i]);
    out[t * out_stride] = s;
  }
}

void q5_k_q8_k(std::int64_t n, const void* w, const void* act, std::size_t act_stride, int n_act,
               float* out, std::size_t out_stride) {
  const auto* x = static_cast<const BlockQ5_K*>(w);
  const std::int64_t nb = n / kQK_K;
  for (int t = 0; t < n_act; ++t) {
    const auto* y = act_row<BlockQ8_K>(act, act_stride, t);
    float s = 0.0f;
    for (std::int64_t i = 0; i < nb; ++i) s += k4_block(x[i], x[i].qh, y[i]);
    out[t * out_stride] = s;
  }
}

void q6_k_q8_k(std::int64_t n, const void* w, const void* act, std::size_t act_stride, int n_act,
               float* out, std::size_t out_stride) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const std::int64_t nb = n / kQK_K;
  for (int t = 0; t < n_act; ++t) {
    const auto* y = act_row<BlockQ8_K>(act, act_stride, t);
    float s = 0.0f;
    for (std::int64_t i = 0; i < nb; ++i) {
      int isum = 0;
      for (int j = 0; j < 16; ++j) {
        int dot = 0;
        for (int l = 0; l < 16; ++l) {
          const int e = 16 * j + l;
          const int h = e / 128, g = (e % 128) / 32, m = e % 32;
          const std::uint8_t lo_byte = x[i].ql[64 * h + 32 * (g & 1) + m];
          const int lo = g < 2 ? (lo_byte & 0xF) : (lo_byte >> 4);
          const int hi = (x[i].qh[32 * h + m] >> (2 * g)) & 3;
          dot += ((lo | (hi << 4)) - 32) * y[i].qs[e];
        }
        isum += x[i].scales[j] * dot;
      }
      s += y[i].d * fp16_to_f32(x[i].d) * static_cast<float>(isum);
    }
    out[t * out_stride] = s;
  }
}

void iq4_nl_q8_0(std::int64_t n, const void* w, const void* act, std::size_t act_stride, int n_act,
                 float* out, std::size_t out_stride) {
  const auto* x = static_cast<const BlockIQ4_NL*>(w);
  const std::int64_t nb = n / 32;
  for (int t = 0; t < n_act; ++t) {
    const auto* y = act_row<BlockQ8_0>(act, act_stride, t);
    float s = 0.0f;
    for (std::int64_t i = 0; i < nb; ++i) {
      int sumi = 0;
      for (int j = 0; j < 16; ++j) {
        sumi += kIQ4Values[x[i].qs[j] & 0xF] * y[i].qs[j] +
                kIQ4Values[x[i].qs[j] >> 4] * y[i].qs[j + 16];
      }
      s += static_cast<float>(sumi) * (fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d));
    }
    out[t * out_stride] = s;
  }
}

void mxfp4_q8_0(std::int64_t n, const void* w, const void* act, std::size_t act_stride, int n_act,
                float* out, std::size_t out_stride) {
  const auto* x = static_cast<const BlockMXFP4*>(w);
  const std::int64_t nb = n / 32;
  for (int t = 0; t < n_act; ++t) {
    const auto* y = act_row<BlockQ8_0>(act, act_stride, t);
    float s = 0.0f;
    for (std::int64_t i = 0; i < nb; ++i) {
      int sumi = 0;
      for (int j = 0; j < 16; ++j) {
        sumi += kMXFP4Values[x[i].qs[j] & 0xF] * y[i].qs[j] +
                kMXFP4Values[x[i].qs[j] >> 4] * y[i].qs[j + 16];
      }
      s += static_cast<float>(sumi) * (mxfp4_scale(x[i].e) * fp16_to_f32(y[i].d));
    }
    out[t * out_stride] = s;
  }
}

void iq4_xs_q8_k(std::int64_t n, const void* w, const void* act, std::size_t act_stride, int n_act,
                 float* out, std::size_t out_stride) {
  const auto* x = static_cast<const BlockIQ4_XS*>(w);
  const std::int64_t nb = n / kQK_K;
  for (int t = 0; t < n_act; ++t) {
    const auto* y = act_row<BlockQ8_K>(act, act_stride, t);
    float s = 0.0f;
    for (std::int64_t i = 0; i < nb; ++i) {
      int isum = 0;
      for (int ib = 0; ib < kQK_K / 32; ++ib) {
        const std::uint8_t* qs = x[i].qs + 16 * ib;
        const std::int8_t* a = y[i].qs + 32 * ib;
        int dot = 0;
        for (int j = 0; j < 16; ++j) {
          dot += kIQ4Values[qs[j] & 0xF] * a[j] + kIQ4Values[qs[j] >> 4] * a[j + 16];
        }
        isum += iq4_xs_scale(x[i], ib) * dot;
      }
      s += y[i].d * fp16_to_f32(x[i].d) * static_cast<float>(isum);
    }
    out[t * out_stride] = s;
  }
}

}  // namespace seam::dot
