#include "compute/quantize_k.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "compute/quant.h"
#include "compute/quant_blocks.h"
#include "compute/quantize_fit.h"
#include "compute/quantize_iq4.h"
#include "compute/round.h"
#include "core/half.h"
#include "seam/error.h"

// Last: every product from here on rounded on its own, as ggml's quantizers do.
#include "compute/no_fp_contraction.h"

namespace seam::quant {

namespace {

void check_k_row(std::int64_t n, const char* type) {
  if (n < 0 || n % kQK_K != 0) {
    throw Error(Errc::InvalidArgument, std::string(type) + " rows must be a multiple of 256 " +
                                           "elements; got " + std::to_string(n));
  }
}

// Q2_K and Q3_K pack 2-bit levels the same way: qs[32*h + l] holds element
// 128*h + 32*k + l in bits 2k..2k+1.
void pack_2bit(const std::uint8_t* L, std::uint8_t* qs) {
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      const std::uint8_t* q = L + 128 * h + l;
      qs[32 * h + l] = static_cast<std::uint8_t>((q[0] & 3) | ((q[32] & 3) << 2) |
                                                 ((q[64] & 3) << 4) | ((q[96] & 3) << 6));
    }
  }
}

// Shared by Q4_K and Q5_K: 8 sub-blocks of 32 with 6-bit scale and min.
// Fills the header (d, dmin, scales[12]) and L[256] (levels 0..nmax).
void quantize_k_superblock(const float* x, int nmax, float rmin, int nstep, std::uint16_t& d_out,
                           std::uint16_t& dmin_out, std::uint8_t* packed, std::uint8_t* L) {
  float scales[8], mins[8], w[kQK_K];
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    // Weight by magnitude, floored by the group's RMS so small values still count.
    for (int l = 0; l < 32; ++l) w[32 * j + l] = av_x + std::fabs(xs[l]);
  }
  for (int j = 0; j < 8; j += 4)
    fit_scale_min_x4(32, nmax, x + 32 * j, w + 32 * j, scales + j, mins + j, rmin, 0.1f, nstep);
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  std::uint8_t ls[8], lm[8];
  for (int j = 0; j < 8; ++j) {
    ls[j] = static_cast<std::uint8_t>(std::min(63, nearest_int(inv_scale * scales[j])));
    lm[j] = static_cast<std::uint8_t>(std::min(63, nearest_int(inv_min * mins[j])));
  }
  set_scale_min_k4(ls, lm, packed);
  d_out = f32_to_fp16(max_scale / 63.f);
  dmin_out = f32_to_fp16(max_min / 63.f);
  // Requantize against the scales as they will be decoded (6-bit, f16 super-scales).
  const float d = fp16_to_f32(d_out);
  const float dmin = fp16_to_f32(dmin_out);
  for (int j = 0; j < 8; ++j) {
    std::uint8_t sc, mn;
    scale_min_k4(j, packed, sc, mn);
    const float ds = d * sc;
    if (ds == 0) {
      std::fill(L + 32 * j, L + 32 * j + 32, 0);
      continue;
    }
    const float dm = dmin * mn;
    for (int l = 0; l < 32; ++l) {
      L[32 * j + l] =
          static_cast<std::uint8_t>(std::clamp(nearest_int((x[32 * j + l] + dm) / ds), 0, nmax));
    }
  }
}

}  // namespace

void quantize_row_q4_K(const float* x, void* dst, std::int64_t n) {
  check_k_row(n, "Q4_K");
  auto* out = static_cast<BlockQ4_K*>(dst);
  std::uint8_t L[kQK_K];
  for (std::int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    BlockQ4_K& blk = out[b];
    quantize_k_superblock(x, 15, -1.f, 20, blk.d, blk.dmin, blk.scales, L);
    // qs[32p + l]: low nibble element 64p + l, high nibble element 64p + 32 + l.
    for (int p = 0; p < 4; ++p) {
      for (int l = 0; l < 32; ++l) {
        blk.qs[32 * p + l] = static_cast<std::uint8_t>(L[64 * p + l] | (L[64 * p + 32 + l] << 4));
      }
    }
  }
}

void quantize_row_q5_K(const float* x, void* dst, std::int64_t n) {
  check_k_row(n, "Q5_K");
  auto* out = static_cast<BlockQ5_K*>(dst);
  std::uint8_t L[kQK_K];
  for (std::int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    BlockQ5_K& blk = out[b];
    quantize_k_superblock(x, 31, -0.5f, 15, blk.d, blk.dmin, blk.scales, L);
    std::memset(blk.qh, 0, sizeof blk.qh);
    for (int p = 0; p < 4; ++p) {
      for (int l = 0; l < 32; ++l) {
        const int lo = L[64 * p + l], hi = L[64 * p + 32 + l];
        blk.qs[32 * p + l] = static_cast<std::uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
        // Element 32k + l keeps its fifth bit in bit k of qh[l].
        blk.qh[l] |= static_cast<std::uint8_t>(((lo >> 4) << (2 * p)) | ((hi >> 4) << (2 * p + 1)));
      }
    }
  }
}

void quantize_row_q6_K(const float* x, void* dst, std::int64_t n) {
  check_k_row(n, "Q6_K");
  auto* out = static_cast<BlockQ6_K*>(dst);
  std::uint8_t L[kQK_K];
  for (std::int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    BlockQ6_K& blk = out[b];
    float scales[16];
    for (int j = 0; j < 16; j += 4) fit_scale_sym_x4(16, 32, x + 16 * j, scales + j);
    float max_scale = 0, max_abs = 0;
    for (int j = 0; j < 16; ++j) {
      if (std::fabs(scales[j]) > max_abs) {
        max_abs = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    std::memset(&blk, 0, sizeof blk);
    if (max_abs < kGroupEps) continue;  // all zero: d = 0 decodes zeros
    // The signed int8 scales span [-128, 127]; mapping the extreme to -128 uses the full range.
    const float iscale = -128.f / max_scale;
    blk.d = f32_to_fp16(1.f / iscale);
    for (int j = 0; j < 16; ++j) {
      blk.scales[j] = static_cast<std::int8_t>(std::min(127, nearest_int(iscale * scales[j])));
    }
    const float d = fp16_to_f32(blk.d);
    for (int j = 0; j < 16; ++j) {
      const float ds = d * blk.scales[j];
      for (int l = 0; l < 16; ++l) {
        const int q = ds == 0 ? 0 : std::clamp(nearest_int(x[16 * j + l] / ds), -32, 31);
        L[16 * j + l] = static_cast<std::uint8_t>(q + 32);
      }
    }
    // Per 128-element half h: ql[64h + l] holds elements 128h + l (low) and +64 (high),
    // ql[64h + 32 + l] elements +32 and +96; qh[32h + l] their top 2 bits at 0, 2, 4, 6.
    for (int h = 0; h < 2; ++h) {
      const std::uint8_t* q = L + 128 * h;
      for (int l = 0; l < 32; ++l) {
        blk.ql[64 * h + l] = static_cast<std::uint8_t>((q[l] & 0xF) | ((q[l + 64] & 0xF) << 4));
        blk.ql[64 * h + 32 + l] =
            static_cast<std::uint8_t>((q[l + 32] & 0xF) | ((q[l + 96] & 0xF) << 4));
        blk.qh[32 * h + l] =
            static_cast<std::uint8_t>((q[l] >> 4) | ((q[l + 32] >> 4) << 2) |
                                      ((q[l + 64] >> 4) << 4) | ((q[l + 96] >> 4) << 6));
      }
    }
  }
}

void quantize_row_q2_K(const float* x, void* dst, std::int64_t n) {
  check_k_row(n, "Q2_K");
  auto* out = static_cast<BlockQ2_K*>(dst);
  std::uint8_t L[kQK_K];
  for (std::int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    BlockQ2_K& blk = out[b];
    // 16 sub-blocks of 16, each x ~= scale * q - min with q in 0..3, weighted by |x|.
    // The fit's levels too: a sub-block whose scale rounds to zero keeps them.
    float scales[16], mins[16], w[kQK_K];
    for (int l = 0; l < kQK_K; ++l) w[l] = std::fabs(x[l]);
    for (int j = 0; j < 16; j += 4) {
      fit_scale_min_x4(16, 3, x + 16 * j, w + 16 * j, scales + j, mins + j, -0.5f, 0.1f, 15,
                       /*abs_error=*/true, L + 16 * j);
    }
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; ++j) {
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }
    // Scales and mins as 4-bit multiples of f16 super-scales (max / 15).
    for (int j = 0; j < 16; ++j) blk.scales[j] = 0;
    blk.d = f32_to_fp16(0.f);
    blk.dmin = f32_to_fp16(0.f);
    if (max_scale > 0) {
      const float inv = 15.f / max_scale;
      for (int j = 0; j < 16; ++j)
        blk.scales[j] = static_cast<std::uint8_t>(nearest_int(inv * scales[j]));
      blk.d = f32_to_fp16(max_scale / 15.f);
    }
    if (max_min > 0) {
      const float inv = 15.f / max_min;
      for (int j = 0; j < 16; ++j)
        blk.scales[j] |= static_cast<std::uint8_t>(nearest_int(inv * mins[j]) << 4);
      blk.dmin = f32_to_fp16(max_min / 15.f);
    }
    // Requantize against the scales as decoded; a zero scale keeps the fit's levels.
    const float d = fp16_to_f32(blk.d), dmin = fp16_to_f32(blk.dmin);
    for (int j = 0; j < 16; ++j) {
      const float ds = d * (blk.scales[j] & 0xF);
      if (ds == 0) continue;
      const float dm = dmin * (blk.scales[j] >> 4);
      for (int l = 0; l < 16; ++l)
        L[16 * j + l] =
            static_cast<std::uint8_t>(std::clamp(nearest_int((x[16 * j + l] + dm) / ds), 0, 3));
    }
    pack_2bit(L, blk.qs);
  }
}

void quantize_row_q3_K(const float* x, void* dst, std::int64_t n) {
  check_k_row(n, "Q3_K");
  auto* out = static_cast<BlockQ3_K*>(dst);
  std::int8_t Ls[kQK_K];
  std::uint8_t L[kQK_K];
  for (std::int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    BlockQ3_K& blk = out[b];
    // 16 sub-blocks of 16, each x ~= scale * (q - 4) with q in 0..7.
    float scales[16];
    float max_scale = 0, max_abs = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = fit_scale_sym_refined(16, 4, x + 16 * j, Ls + 16 * j);
      if (std::fabs(scales[j]) > max_abs) {
        max_abs = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    // Signed 6-bit scales (stored + 32): low 4 bits in scales[0..7] (nibble j / 8),
    // top 2 bits of sub-block j in scales[8 + j % 4] at bit 2 * (j / 4).
    std::memset(blk.scales, 0, sizeof blk.scales);
    blk.d = f32_to_fp16(0.f);
    if (max_scale != 0) {
      const float iscale = -32.f / max_scale;
      for (int j = 0; j < 16; ++j) {
        const int l = std::clamp(nearest_int(iscale * scales[j]), -32, 31) + 32;
        blk.scales[j % 8] |= static_cast<std::uint8_t>((l & 0xF) << (4 * (j / 8)));
        blk.scales[8 + j % 4] |= static_cast<std::uint8_t>((l >> 4) << (2 * (j / 4)));
      }
      blk.d = f32_to_fp16(1.f / iscale);
    }
    const float d = fp16_to_f32(blk.d);
    for (int j = 0; j < 16; ++j) {
      const int sc = ((blk.scales[j % 8] >> (4 * (j / 8))) & 0xF) |
                     (((blk.scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4);
      const float ds = d * (sc - 32);
      for (int l = 0; l < 16; ++l) {
        // A zero scale keeps the fit's levels.
        L[16 * j + l] =
            ds == 0
                ? static_cast<std::uint8_t>(Ls[16 * j + l])
                : static_cast<std::uint8_t>(std::clamp(nearest_int(x[16 * j + l] / ds), -4, 3) + 4);
      }
    }
    // The third bit of element 32k + l goes to bit k of hmask[l]; qs keeps the low two.
    std::memset(blk.hmask, 0, sizeof blk.hmask);
    for (int i = 0; i < kQK_K; ++i) {
      if (L[i] > 3) blk.hmask[i % 32] |= static_cast<std::uint8_t>(1u << (i / 32));
    }
    pack_2bit(L, blk.qs);
  }
}

bool can_quantize_weight(TensorType t) {
  switch (t) {
    case TensorType::Q2_K:
    case TensorType::Q3_K:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K:
    case TensorType::IQ4_NL:
    case TensorType::IQ4_XS:
    case TensorType::Q8_0:
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
    case TensorType::F16:
    case TensorType::BF16:
    case TensorType::F32:
      return true;
    default:
      return false;
  }
}

void quantize_weight_row(TensorType t, const float* x, void* dst, std::int64_t n) {
  switch (t) {
    case TensorType::Q2_K:
      return quantize_row_q2_K(x, dst, n);
    case TensorType::Q3_K:
      return quantize_row_q3_K(x, dst, n);
    case TensorType::Q4_K:
      return quantize_row_q4_K(x, dst, n);
    case TensorType::Q5_K:
      return quantize_row_q5_K(x, dst, n);
    case TensorType::Q6_K:
      return quantize_row_q6_K(x, dst, n);
    case TensorType::IQ4_NL:
      return quantize_row_iq4_nl(x, dst, n);
    case TensorType::IQ4_XS:
      return quantize_row_iq4_xs(x, dst, n);
    default:
      if (!can_quantize_weight(t)) {
        throw Error(Errc::Unsupported, "cannot write weights as " + type_name(t) +
                                           "; choose Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, "
                                           "Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, F16 or F32");
      }
      return quantize_row(t, x, dst, n);
  }
}

}  // namespace seam::quant
