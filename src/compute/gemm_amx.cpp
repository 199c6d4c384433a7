// AMX-INT8 prefill GEMM for Q4_0, Q5_0, Q8_0, IQ4_NL, Q4_K and Q6_K weights:
// the `run` step of the AVX-512 GEMM (dot_avx512.cpp) with the integer dot
// products on the tile unit. It reads that GEMM's panels and prepared
// activations unchanged, so their layout (dot_avx512.cpp's header) is this
// file's input: per unit of U elements (32, or 16 for Q6_K) int8 w[U/4][16
// rows][4] -- exactly a TDPBUSD B tile of U/4 rows x 64 bytes -- then int32
// corr[16], f32 scale[16] and for Q4_K f32 min[16]; per token u8 q[n] (a +
// 128), f32 d[n / SB], and for Q8_K f32 sum[n / 32].
//
// One TDPBUSD multiplies an A tile of 16 tokens x U activation bytes (loaded
// straight from the prepared rows, act_bytes apart) by the unit's B tile: a C
// tile of 16 tokens x 16 rows of exact int32 sums, 8192 multiply-adds where
// the VNNI kernel spends 8 vpdpbusd per token. Each unit has its own scales,
// so C goes to memory after every unit and AVX-512 applies corr and the
// scales in f32 (the same arithmetic as the VNNI kernel's); two C tiles
// alternate so that the tile unit works on the next unit meanwhile.
// Compiled with the AVX-512 and AMX flags (CMakeLists.txt); run only at
// CpuLevel::Amx, which cpu_level.cpp grants after Linux has given the process
// the tile state. See dot.h on keeping this unit's code out of baseline callers.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // see dot_avx512.cpp
#endif
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "compute/dot.h"

namespace seam::dot::amx {
namespace {

constexpr int kRows = kPanelRows;  // weight rows per panel = C tile columns
constexpr int kTok = 16;           // tokens per A / C tile

// The layout facts of each type's AVX-512 panels and activations.
template <int U, int SB, bool Min>
struct Layout {
  static constexpr int kUnit = U, kActBlock = SB;
  static constexpr bool kMin = Min;
  static constexpr std::size_t kUnitBytes =
      static_cast<std::size_t>(U) * kRows + 64 * (Min ? 3 : 2);
};
using Block32 = Layout<32, 32, false>;  // Q4_0, Q5_0, Q8_0, IQ4_NL (Q8_0 activations)
using Q4K = Layout<32, 256, true>;
using Q6K = Layout<16, 256, false>;

struct alignas(64) TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t colsb[16] = {};
  std::uint8_t rows[16] = {};
};

// tmm0/1: C (16 tokens x 16 int32), tmm2/3: A (16 tokens x U bytes),
// tmm4/5: B (U/4 rows x 64 bytes); pairs alternate between units.
template <int U>
void configure() {
  TileConfig c;
  for (int i = 0; i < 2; ++i) {
    c.colsb[i] = 64, c.rows[i] = kTok;
    c.colsb[2 + i] = U, c.rows[2 + i] = kTok;
    c.colsb[4 + i] = 64, c.rows[4 + i] = U / 4;
  }
  _tile_loadconfig(&c);
}

// C tile (0 or 1, by Odd) = A (unit u of 16 tokens) x B (unit u of the
// panel), stored to c. The tile numbers are literals: GCC's _tile_* macros
// paste them into the register name.
template <bool Odd, class L>
inline void multiply(const std::uint8_t* aq, std::size_t as, const std::byte* panel, std::int64_t u,
                     std::int32_t* c) {
  const std::uint8_t* a = aq + u * L::kUnit;
  const std::byte* b = panel + u * L::kUnitBytes;
  if constexpr (Odd) {
    _tile_zero(1);
    _tile_loadd(3, a, as);
    _tile_loadd(5, b, 64);
    _tile_dpbusd(1, 3, 5);
    _tile_stored(1, c, 64);
  } else {
    _tile_zero(0);
    _tile_loadd(2, a, as);
    _tile_loadd(4, b, 64);
    _tile_dpbusd(0, 2, 4);
    _tile_stored(0, c, 64);
  }
}

// 16 tokens x the panel's rows, all units.
template <class L>
void block(std::int64_t n, const std::byte* panel, const std::byte* act, std::size_t as, int n_rows,
           float* out, std::size_t ldy) {
  constexpr int U = L::kUnit, SB = L::kActBlock;
  const auto* aq = reinterpret_cast<const std::uint8_t*>(act);
  __m512 facc[kTok];
  for (int m = 0; m < kTok; ++m) facc[m] = _mm512_setzero_ps();
  alignas(64) std::int32_t cbuf[2][kTok * kRows];
  const std::int64_t nu = n / U;
  multiply<false, L>(aq, as, panel, 0, cbuf[0]);
  for (std::int64_t u = 0; u < nu; ++u) {
    if (u + 1 < nu) {
      if (u % 2 == 0) {
        multiply<true, L>(aq, as, panel, u + 1, cbuf[1]);
      } else {
        multiply<false, L>(aq, as, panel, u + 1, cbuf[0]);
      }
    }
    const std::int32_t* c = cbuf[u % 2];
    const std::byte* pu = panel + u * L::kUnitBytes + U * kRows;
    const __m512i corr = _mm512_loadu_si512(pu);
    const __m512 sc = _mm512_loadu_ps(pu + 64);
    const std::int64_t sb = u * U / SB;
    for (int m = 0; m < kTok; ++m) {
      const float* ad = reinterpret_cast<const float*>(act + m * as + n);
      const __m512 d = _mm512_set1_ps(ad[sb]);
      const __m512i ci = _mm512_add_epi32(_mm512_load_si512(c + m * kRows), corr);
      facc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ci), _mm512_mul_ps(sc, d), facc[m]);
      if constexpr (L::kMin) {
        const __m512 mn = _mm512_loadu_ps(pu + 128);
        const float* asum = ad + n / SB;
        facc[m] = _mm512_fmadd_ps(_mm512_mul_ps(mn, d), _mm512_set1_ps(asum[u]), facc[m]);
      }
    }
  }
  const __mmask16 mask = static_cast<__mmask16>((1u << n_rows) - 1);
  for (int m = 0; m < kTok; ++m) _mm512_mask_storeu_ps(out + m * ldy, mask, facc[m]);
}

template <class L>
void run(const GemmFns& vnni, std::int64_t n, const void* panel, const void* act,
         std::int64_t n_tok, int n_rows, float* out, std::size_t ldy) {
  const auto* p = static_cast<const std::byte*>(panel);
  const auto* a = static_cast<const std::byte*>(act);
  const std::size_t as = vnni.act_bytes(n);
  const std::int64_t full = n_tok / kTok * kTok;
  if (full > 0) {
    configure<L::kUnit>();
    for (std::int64_t t = 0; t < full; t += kTok) {
      block<L>(n, p, a + t * as, as, n_rows, out + t * ldy, ldy);
    }
    _tile_release();
  }
  if (full < n_tok) vnni.run(n, panel, a + full * as, n_tok - full, n_rows, out + full * ldy, ldy);
}

}  // namespace

void run_q4_0(std::int64_t n, const void* panel, const void* act, std::int64_t n_tok, int n_rows,
              float* out, std::size_t ldy) {
  run<Block32>(avx512::gemm_q4_0, n, panel, act, n_tok, n_rows, out, ldy);
}
void run_q5_0(std::int64_t n, const void* panel, const void* act, std::int64_t n_tok, int n_rows,
              float* out, std::size_t ldy) {
  run<Block32>(avx512::gemm_q5_0, n, panel, act, n_tok, n_rows, out, ldy);
}
void run_q8_0(std::int64_t n, const void* panel, const void* act, std::int64_t n_tok, int n_rows,
              float* out, std::size_t ldy) {
  run<Block32>(avx512::gemm_q8_0, n, panel, act, n_tok, n_rows, out, ldy);
}
void run_iq4_nl(std::int64_t n, const void* panel, const void* act, std::int64_t n_tok, int n_rows,
                float* out, std::size_t ldy) {
  run<Block32>(avx512::gemm_iq4_nl, n, panel, act, n_tok, n_rows, out, ldy);
}
void run_q4_k(std::int64_t n, const void* panel, const void* act, std::int64_t n_tok, int n_rows,
              float* out, std::size_t ldy) {
  run<Q4K>(avx512::gemm_q4_k, n, panel, act, n_tok, n_rows, out, ldy);
}
void run_q6_k(std::int64_t n, const void* panel, const void* act, std::int64_t n_tok, int n_rows,
              float* out, std::size_t ldy) {
  run<Q6K>(avx512::gemm_q6_k, n, panel, act, n_tok, n_rows, out, ldy);
}

}  // namespace seam::dot::amx
