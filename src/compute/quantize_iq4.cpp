#include "compute/quantize_iq4.h"

#include <algorithm>
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

// Codes of 32 values at inverse scale id, in IQ4_NL's nibble layout (qs[j]:
// element j low, element 16 + j high).
void pack_codes(const float* x, float id, std::uint8_t* qs) {
  for (int j = 0; j < 16; ++j) {
    qs[j] = static_cast<std::uint8_t>(nearest_iq4_code(id * x[j]) |
                                      (nearest_iq4_code(id * x[16 + j]) << 4));
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
  const std::int64_t n_blocks = n / 32;
  for (std::int64_t b = 0; b < n_blocks; b += 4) {
    // Four blocks at a time; a row's last one to three by the one-block search.
    const int m = static_cast<int>(std::min<std::int64_t>(4, n_blocks - b));
    float d[4];
    if (m == 4) fit_scale_iq4_x4(x + 32 * b, d);
    for (int i = 0; i < m; ++i) {
      if (m < 4) d[i] = fit_scale_iq4(x + 32 * (b + i));
      out[b + i].d = f32_to_fp16(d[i]);
      // Codes against the scale as found (llama-quantize does the same, not the f16 one).
      pack_codes(x + 32 * (b + i), d[i] != 0 ? 1.f / d[i] : 0.f, out[b + i].qs);
    }
  }
}

void quantize_row_iq4_xs(const float* x, void* dst, std::int64_t n) {
  check_row(n, kQK_K, "IQ4_XS");
  auto* out = static_cast<BlockIQ4_XS*>(dst);
  for (std::int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    BlockIQ4_XS& blk = out[b];
    float scales[8];
    for (int ib = 0; ib < 8; ib += 4) fit_scale_iq4_x4(x + 32 * ib, scales + ib);
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < 8; ++ib) {
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
