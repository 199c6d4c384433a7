#include "compute/quantize_iq4.h"

#include <cmath>
#include <cstring>
#include <string>

#include "compute/quant_blocks.h"
#include "compute/quantize_fit.h"
#include "compute/round.h"
#include "core/half.h"
#include "seam/error.h"

// Last: every product from here on rounded on its own, as ggml's quantizers do.
#include "compute/no_fp_contraction.h"

namespace seam::quant {

namespace {

// The codebook index whose value is nearest to v (the lower one on a tie).
int nearest_code(float v) {
  const std::int8_t* c = kIQ4Values;
  if (v <= c[0]) return 0;
  if (v >= c[15]) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (v < c[mid] ? hi : lo) = mid;
  }
  return v - c[hi - 1] < c[hi] - v ? hi - 1 : hi;
}

// The best scale for 32 values x ~= d * code[L], weighted by x^2: the scale
// that maps the extreme value onto the codebook's extreme, refined by least
// squares, then 15 neighbouring inverse scales ((k + code[0]) / max, k in
// -7..7), keeping the one with the largest explained energy.
float fit_block(const float* x) {
  float amax = 0, vmax = 0;
  for (int j = 0; j < 32; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      vmax = x[j];
    }
  }
  if (amax < kGroupEps) return 0.f;
  auto energy = [x](float id, float& sumqx, float& sumq2) {
    sumqx = sumq2 = 0;
    for (int j = 0; j < 32; ++j) {
      const float q = kIQ4Values[nearest_code(id * x[j])];
      const float w = x[j] * x[j];
      sumqx += w * q * x[j];
      sumq2 += w * q * q;
    }
  };
  float sumqx, sumq2;
  energy(1.f / (-vmax / kIQ4Values[0]), sumqx, sumq2);
  float d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
  float best = d * sumqx;
  for (int k = -7; k <= 7; ++k) {
    energy((k + kIQ4Values[0]) / vmax, sumqx, sumq2);
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

// Codes of 32 values at inverse scale id, in IQ4_NL's nibble layout (qs[j]:
// element j low, element 16 + j high).
void pack_codes(const float* x, float id, std::uint8_t* qs) {
  for (int j = 0; j < 16; ++j) {
    qs[j] =
        static_cast<std::uint8_t>(nearest_code(id * x[j]) | (nearest_code(id * x[16 + j]) << 4));
  }
}

void check_row(std::int64_t n, int block, const char* type) {
  if (n < 0 || n % block != 0) {
    throw Error(Errc::InvalidArgument, std::string(type) + " rows must be a multiple of " +
                                           std::to_string(block) + " elements; got " +
                                           std::to_string(n));
  }
}

}  // namespace

void quantize_row_iq4_nl(const float* x, void* dst, std::int64_t n) {
  check_row(n, 32, "IQ4_NL");
  auto* out = static_cast<BlockIQ4_NL*>(dst);
  for (std::int64_t b = 0; b < n / 32; ++b, x += 32) {
    const float d = fit_block(x);
    out[b].d = f32_to_fp16(d);
    // Codes against the scale as found (llama-quantize does the same, not the f16 one).
    pack_codes(x, d != 0 ? 1.f / d : 0.f, out[b].qs);
  }
}

void quantize_row_iq4_xs(const float* x, void* dst, std::int64_t n) {
  check_row(n, kQK_K, "IQ4_XS");
  auto* out = static_cast<BlockIQ4_XS*>(dst);
  for (std::int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    BlockIQ4_XS& blk = out[b];
    float scales[8];
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < 8; ++ib) {
      scales[ib] = fit_block(x + 32 * ib);
      if (std::fabs(scales[ib]) > amax_scale) {
        amax_scale = std::fabs(scales[ib]);
        max_scale = scales[ib];
      }
    }
    // Sub-block scales as signed 6-bit multiples of d = -max/32; codes against them as decoded.
    const float d = -max_scale / 32;
    blk.d = f32_to_fp16(d);
    blk.scales_h = 0;
    std::memset(blk.scales_l, 0, sizeof blk.scales_l);
    const float id = d != 0 ? 1.f / d : 0.f;
    for (int ib = 0; ib < 8; ++ib) {
      int l = nearest_int(id * scales[ib]);
      l = l < -32 ? -32 : l > 31 ? 31 : l;
      const float dl = d * l;
      pack_codes(x + 32 * ib, dl != 0 ? 1.f / dl : 0.f, blk.qs + 16 * ib);
      l += 32;
      blk.scales_l[ib / 2] |= static_cast<std::uint8_t>((l & 0xF) << (4 * (ib % 2)));
      blk.scales_h |= static_cast<std::uint16_t>((l >> 4) << (2 * ib));
    }
  }
}

}  // namespace seam::quant
