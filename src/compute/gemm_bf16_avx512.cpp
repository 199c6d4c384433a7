// BF16 prefill GEMM with vdpbf16ps (AVX512_BF16: Zen 4, Intel Cooper Lake and
// Sapphire Rapids on): one instruction multiplies a pair of bf16 weights by a
// pair of bf16 activations in each of 16 f32 lanes and adds both products, twice
// the work of the f32 FMA kernel (dot_avx512.cpp float_run) per instruction, on a
// panel half its size. Compiled with the AVX-512 flags (CMakeLists.txt); see
// dot.h on keeping this unit's code out of baseline callers.
//
// Not in the kernel table yet: on Sapphire Rapids it measured slower than the
// f32 FMA GEMM (one thread, CPU time, 1536 x 576 weights x 512 tokens: 86 vs
// 106 GFLOP/s; vdpbf16ps issues on one port there, the FMA on two). Where the
// CPU issues vdpbf16ps at the FMA rate (to be measured on Zen 4), quant.cpp's
// BF16 row can take it for gemm512 when cpu_has_avx512_bf16(); the test runs
// it wherever the CPU has the instruction.
//
// The price is the activations: they are rounded to bf16 (round to nearest
// even, relative error <= 2^-9 each), so a result moves by at most
// 2^-9 * sum_k |w_k * a_k| from the f32-activation product (GemmFns::act_rel_error),
// on top of the f32 accumulation error. The products of two bf16 values are
// exact in f32. vdpbf16ps treats subnormal inputs and results as zero, which
// adds at most about n * 2^-126 * (1 + max|w|): nothing at the sizes of a model.
//
// Panel layout: u32 p[ceil(n / 2)][16]: lane r holds row r's elements 2k
// (low half) and 2k + 1 (high half) as bf16; an odd n pads the last pair with
// zero. Prepared activations per token: bf16 a[2 * ceil(n / 2)], zero-padded,
// round64 bytes in all.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstring>
#include <utility>

#include "compute/dot.h"

namespace seam::dot::avx512 {
namespace {

constexpr int kRows = kPanelRows;
constexpr int kMaxTokens = 12;  // tokens per micro-kernel call: 12 accumulators

std::int64_t pairs(std::int64_t n) { return (n + 1) / 2; }
std::size_t round64(std::size_t b) { return (b + 63) / 64 * 64; }

std::size_t dp_act_bytes(std::int64_t n) { return round64(static_cast<std::size_t>(pairs(n)) * 4); }
std::size_t dp_panel_bytes(std::int64_t n) {
  return static_cast<std::size_t>(pairs(n)) * 4 * kRows;
}

// f32 -> bf16, round to nearest even, 16 at a time (vcvtneps2bf16); the tail
// through a masked load, so the padding element is +0.
void dp_prepare(std::int64_t n, const void* act, void* dst) {
  const auto* x = static_cast<const float*>(act);
  auto* out = static_cast<std::uint16_t*>(dst);
  std::int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    const __m256bh b = _mm512_cvtneps_pbh(_mm512_loadu_ps(x + k));
    std::memcpy(out + k, &b, 32);
  }
  if (k < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - k)) - 1);
    const __m256bh b = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x + k));
    std::memcpy(out + k, &b, static_cast<std::size_t>(2 * (n - k)));
  }
  if (n % 2) out[n] = 0;
}

// 16 rows of bf16 -> the pair-interleaved panel, one dword (pair) at a time;
// rows past n_rows are zero.
void dp_pack(std::int64_t n, const void* w, std::size_t row_stride, int n_rows, void* panel) {
  auto* p = static_cast<std::uint32_t*>(panel);
  const std::int64_t np = pairs(n);
  const auto* base = static_cast<const std::byte*>(w);
  for (std::int64_t k = 0; k < np; ++k) {
    for (int r = 0; r < kRows; ++r) {
      std::uint32_t v = 0;
      if (r < n_rows) {
        const auto* row = reinterpret_cast<const std::uint16_t*>(base + r * row_stride);
        const std::uint32_t lo = row[2 * k];
        const std::uint32_t hi = 2 * k + 1 < n ? row[2 * k + 1] : 0;
        v = lo | hi << 16;
      }
      p[k * kRows + r] = v;
    }
  }
}

template <int NT>
void dp_tile(std::int64_t n, const std::uint32_t* p, const std::byte* act, std::size_t as,
             int n_rows, float* out, std::size_t ldy) {
  const std::uint32_t* a[NT];
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) {
    a[t] = reinterpret_cast<const std::uint32_t*>(act + t * as);
    acc[t] = _mm512_setzero_ps();
  }
  const std::int64_t np = pairs(n);
  for (std::int64_t k = 0; k < np; ++k) {
    const __m512bh wv = (__m512bh)_mm512_loadu_si512(p + k * kRows);
    for (int t = 0; t < NT; ++t) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[t][k]));
      acc[t] = _mm512_dpbf16_ps(acc[t], wv, av);
    }
  }
  const __mmask16 mask = static_cast<__mmask16>((1u << n_rows) - 1);
  for (int t = 0; t < NT; ++t) _mm512_mask_storeu_ps(out + t * ldy, mask, acc[t]);
}

template <int... I>
void dp_rest(int rest, std::int64_t n, const std::uint32_t* p, const std::byte* act, std::size_t as,
             int n_rows, float* out, std::size_t ldy, std::integer_sequence<int, I...>) {
  ((rest == I + 1 ? dp_tile<I + 1>(n, p, act, as, n_rows, out, ldy) : void()), ...);
}

void dp_run(std::int64_t n, const void* panel, const void* act, std::int64_t n_tok, int n_rows,
            float* out, std::size_t ldy) {
  const auto* p = static_cast<const std::uint32_t*>(panel);
  const auto* a = static_cast<const std::byte*>(act);
  const std::size_t as = dp_act_bytes(n);
  std::int64_t t = 0;
  for (; t + kMaxTokens <= n_tok; t += kMaxTokens) {
    dp_tile<kMaxTokens>(n, p, a + t * as, as, n_rows, out + t * ldy, ldy);
  }
  if (t < n_tok) {
    dp_rest(static_cast<int>(n_tok - t), n, p, a + t * as, as, n_rows, out + t * ldy, ldy,
            std::make_integer_sequence<int, kMaxTokens - 1>{});
  }
}

}  // namespace

// Packing a bf16 panel costs about what the f32 one does (dot_avx512.cpp).
constexpr int kDpMinTokens = 12;
constexpr double kBf16ActRelError = 1.0 / 512;  // 2^-9: bf16's unit roundoff

// Constant-initialized: no start-up code runs in this unit.
constinit const GemmFns gemm_bf16_dp = {kDpMinTokens, dp_act_bytes, dp_panel_bytes,  dp_prepare,
                                        dp_pack,      dp_run,       kBf16ActRelError};

}  // namespace seam::dot::avx512
