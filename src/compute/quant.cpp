#include "compute/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "compute/dot.h"
#include "compute/quant_blocks.h"
#include "compute/round.h"
#include "core/half.h"
#include "seam/error.h"

// Last: every product from here on rounded on its own, as ggml's quantizers do.
#include "compute/no_fp_contraction.h"

namespace seam::quant {
namespace {

float h2f(std::uint16_t h) { return fp16_to_f32(h); }

// C's roundf (half away from zero), narrowed to int8. Out-of-range values occur
// only when 1/d overflows (subnormal scales); they saturate, as the numpy
// reference does, where C's cast would be undefined. NaN becomes 0.
// Written without roundf: the portable build has no SSE4.1 rounding, so
// std::round is a libm call per activation element (a few % of prefill).
// For |v| < 128, v - trunc(v) is exact, so comparing it with 0.5 rounds half
// away from zero exactly as roundf does.
std::int8_t round_i8(float v) {
  if (!(v == v)) return 0;
  if (v >= 127.0f) return 127;
  if (v <= -128.0f) return -128;
  int i = static_cast<int>(v);  // truncates toward zero
  const float frac = v - static_cast<float>(i);
  if (frac >= 0.5f) ++i;
  if (frac <= -0.5f) --i;
  return static_cast<std::int8_t>(std::clamp(i, -128, 127));
}

// +8.5 then truncation is round-half-up into 0..16, and 16 clamps to 15. A
// non-finite t (1/d overflowed for a block of subnormals) gives 0, as ggml's
// cast does on x86 and as the numpy reference does.
int q4_nibble(float t) {
  if (!std::isfinite(t)) return 0;
  return std::clamp(static_cast<int>(t), 0, 15);
}

void dequant_q4_0(const BlockQ4_0* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, y += kQK4_0) {
    const float d = h2f(b[i].d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      y[j] = static_cast<float>((b[i].qs[j] & 0xF) - 8) * d;
      y[j + 16] = static_cast<float>((b[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void dequant_q4_1(const BlockQ4_1* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, y += kQK4_1) {
    const float d = h2f(b[i].d), m = h2f(b[i].m);
    for (int j = 0; j < kQK4_1 / 2; ++j) {
      y[j] = static_cast<float>(b[i].qs[j] & 0xF) * d + m;
      y[j + 16] = static_cast<float>(b[i].qs[j] >> 4) * d + m;
    }
  }
}

// Element j of a Q5 block: low nibble from qs, bit 4 from the little-endian qh word.
inline int q5_value(const std::uint8_t* qs, std::uint32_t qh, int j) {
  const int lo = j < 16 ? (qs[j] & 0xF) : (qs[j - 16] >> 4);
  return lo | static_cast<int>(((qh >> j) & 1u) << 4);
}

inline std::uint32_t load_u32le(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

void dequant_q5_0(const BlockQ5_0* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, y += kQK5_0) {
    const float d = h2f(b[i].d);
    const std::uint32_t qh = load_u32le(b[i].qh);
    for (int j = 0; j < kQK5_0; ++j) y[j] = static_cast<float>(q5_value(b[i].qs, qh, j) - 16) * d;
  }
}

void dequant_q5_1(const BlockQ5_1* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, y += kQK5_1) {
    const float d = h2f(b[i].d), m = h2f(b[i].m);
    const std::uint32_t qh = load_u32le(b[i].qh);
    for (int j = 0; j < kQK5_1; ++j) y[j] = static_cast<float>(q5_value(b[i].qs, qh, j)) * d + m;
  }
}

void dequant_q8_0(const BlockQ8_0* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, y += kQK8_0) {
    const float d = h2f(b[i].d);
    for (int j = 0; j < kQK8_0; ++j) y[j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

// In the K-quant decoders every product d * sc * q is exact in f32, so the only
// rounding is the final subtraction of the min: any evaluation order gives ggml's bits.
void dequant_q2_k(const BlockQ2_K* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, y += kQK_K) {
    const float d = h2f(b[i].d), dmin = h2f(b[i].dmin);
    for (int e = 0; e < kQK_K; ++e) {
      const int h = e / 128, k = (e % 128) / 32, l = e % 32;
      const int q = (b[i].qs[32 * h + l] >> (2 * k)) & 3;
      const std::uint8_t sc = b[i].scales[e / 16];
      const float dl = d * static_cast<float>(sc & 0xF);
      const float ml = dmin * static_cast<float>(sc >> 4);
      y[e] = dl * static_cast<float>(q) - ml;
    }
  }
}

void dequant_q3_k(const BlockQ3_K* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, y += kQK_K) {
    const float d = h2f(b[i].d);
    for (int e = 0; e < kQK_K; ++e) {
      const int h = e / 128, k = (e % 128) / 32, l = e % 32;
      int q = (b[i].qs[32 * h + l] >> (2 * k)) & 3;
      if (!((b[i].hmask[l] >> (e / 32)) & 1)) q -= 4;
      const float dl = d * static_cast<float>(scale_q3_k(e / 16, b[i].scales) - 32);
      y[e] = dl * static_cast<float>(q);
    }
  }
}

void dequant_q4_k(const BlockQ4_K* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, y += kQK_K) {
    const float d = h2f(b[i].d), dmin = h2f(b[i].dmin);
    for (int s = 0; s < 8; ++s) {
      std::uint8_t sc, mn;
      scale_min_k4(s, b[i].scales, sc, mn);
      const float dl = d * sc, ml = dmin * mn;
      const std::uint8_t* q = b[i].qs + 32 * (s / 2);
      const int shift = 4 * (s & 1);
      for (int l = 0; l < 32; ++l) {
        y[32 * s + l] = dl * static_cast<float>((q[l] >> shift) & 0xF) - ml;
      }
    }
  }
}

void dequant_q5_k(const BlockQ5_K* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, y += kQK_K) {
    const float d = h2f(b[i].d), dmin = h2f(b[i].dmin);
    for (int s = 0; s < 8; ++s) {
      std::uint8_t sc, mn;
      scale_min_k4(s, b[i].scales, sc, mn);
      const float dl = d * sc, ml = dmin * mn;
      const std::uint8_t* q = b[i].qs + 32 * (s / 2);
      const int shift = 4 * (s & 1);
      for (int l = 0; l < 32; ++l) {
        const int v = ((q[l] >> shift) & 0xF) | (((b[i].qh[l] >> s) & 1) << 4);
        y[32 * s + l] = dl * static_cast<float>(v) - ml;
      }
    }
  }
}

// Element e of a Q6_K block as a signed 6-bit value (-32..31).
inline int q6_value(const BlockQ6_K& b, int e) {
  const int h = e / 128, g = (e % 128) / 32, l = e % 32;  // g: which 32-run of the half
  const std::uint8_t lo_byte = b.ql[64 * h + 32 * (g & 1) + l];
  const int lo = (g < 2) ? (lo_byte & 0xF) : (lo_byte >> 4);
  const int hi = (b.qh[32 * h + l] >> (2 * g)) & 3;
  return (lo | (hi << 4)) - 32;
}

void dequant_q6_k(const BlockQ6_K* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, y += kQK_K) {
    const float d = h2f(b[i].d);
    for (int e = 0; e < kQK_K; ++e) {
      y[e] = d * static_cast<float>(b[i].scales[e / 16]) * static_cast<float>(q6_value(b[i], e));
    }
  }
}

void dequant_iq4_nl(const BlockIQ4_NL* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = h2f(b[i].d);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>(kIQ4Values[b[i].qs[j] & 0xF]);
      y[j + 16] = d * static_cast<float>(kIQ4Values[b[i].qs[j] >> 4]);
    }
  }
}

void dequant_mxfp4(const BlockMXFP4* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = mxfp4_scale(b[i].e);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>(kMXFP4Values[b[i].qs[j] & 0xF]);
      y[j + 16] = d * static_cast<float>(kMXFP4Values[b[i].qs[j] >> 4]);
    }
  }
}

void dequant_iq4_xs(const BlockIQ4_XS* b, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i) {
    const float d = h2f(b[i].d);
    for (int ib = 0; ib < kQK_K / 32; ++ib, y += 32) {
      // The sub-block scale first, as ggml rounds it: (d * ls) * value.
      const float dl = d * static_cast<float>(iq4_xs_scale(b[i], ib));
      const std::uint8_t* qs = b[i].qs + 16 * ib;
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * static_cast<float>(kIQ4Values[qs[j] & 0xF]);
        y[j + 16] = dl * static_cast<float>(kIQ4Values[qs[j] >> 4]);
      }
    }
  }
}

// Decoders of the float formats; the block formats' are above.
void dequant_f32(const float* x, float* y, std::int64_t n) {
  std::memcpy(y, x, static_cast<std::size_t>(n) * sizeof(float));
}
void dequant_f16(const std::uint16_t* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = fp16_to_f32(x[i]);
}
void dequant_bf16(const std::uint16_t* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = bf16_to_f32(x[i]);
}

// The decoders take their block type; the table stores them type-erased.
template <class Block, void (*F)(const Block*, float*, std::int64_t)>
void erased(const void* src, float* y, std::int64_t n_blocks) {
  F(static_cast<const Block*>(src), y, n_blocks);
}

// The AMX GEMMs are the AVX-512 ones with the tile unit's `run` (dot.h).
dot::GemmFns with_amx_run(const dot::GemmFns& vnni, decltype(dot::GemmFns::run) run) {
  dot::GemmFns g = vnni;
  g.run = run;
  // At least one full A tile (fewer tokens run the VNNI kernel anyway), and no
  // fewer than the VNNI GEMM takes: the tiles pack the same panels, and below
  // that count the packing costs more than the decode kernels take.
  g.min_tokens = std::max(16, vnni.min_tokens);
  return g;
}
const dot::GemmFns kAmxQ4_0 = with_amx_run(dot::avx512::gemm_q4_0, dot::amx::run_q4_0);
const dot::GemmFns kAmxQ5_0 = with_amx_run(dot::avx512::gemm_q5_0, dot::amx::run_q5_0);
const dot::GemmFns kAmxQ8_0 = with_amx_run(dot::avx512::gemm_q8_0, dot::amx::run_q8_0);
const dot::GemmFns kAmxIQ4_NL = with_amx_run(dot::avx512::gemm_iq4_nl, dot::amx::run_iq4_nl);
const dot::GemmFns kAmxQ4_K = with_amx_run(dot::avx512::gemm_q4_k, dot::amx::run_q4_k);
const dot::GemmFns kAmxQ6_K = with_amx_run(dot::avx512::gemm_q6_k, dot::amx::run_q6_k);

// K(name) gives a type its scalar and AVX2 dot kernels; the designated
// fields add what exists at the other levels (dot.h Kernels).
#define K(name) .scalar = dot::name, .avx2 = dot::avx2::name

// Every weight type compute can decode and multiply, each in one row.
struct TypeEntry {
  TensorType type;
  TypeTraits traits;
};
constexpr TypeEntry kTypes[] = {
    {TensorType::F32,
     {1,
      4,
      TensorType::F32,
      erased<float, dequant_f32>,
      {K(f32_f32), .avx512 = dot::avx512::f32_f32, .gemm512 = &dot::avx512::gemm_f32,
       .gemm2 = &dot::avx2::gemm_f32,
       .float_rows512 = {dot::avx512::long_rows_f32, dot::avx512::short_rows_f32,
                         dot::kLongRowRows},
       .float_rows2 = {dot::avx2::long_rows_f32, dot::avx2::short_rows_f32, dot::kLongRowRows2}}}},
    {TensorType::F16,
     {1,
      2,
      TensorType::F32,
      erased<std::uint16_t, dequant_f16>,
      {K(f16_f32), .avx512 = dot::avx512::f16_f32, .gemm512 = &dot::avx512::gemm_f16,
       .gemm2 = &dot::avx2::gemm_f16,
       .float_rows512 = {dot::avx512::long_rows_f16, dot::avx512::short_rows_f16,
                         dot::kLongRowRows},
       .float_rows2 = {dot::avx2::long_rows_f16, dot::avx2::short_rows_f16, dot::kLongRowRows2}}}},
    {TensorType::BF16,
     {1,
      2,
      TensorType::F32,
      erased<std::uint16_t, dequant_bf16>,
      {K(bf16_f32), .avx512 = dot::avx512::bf16_f32, .gemm512 = &dot::avx512::gemm_bf16,
       .gemm2 = &dot::avx2::gemm_bf16,
       .float_rows512 = {dot::avx512::long_rows_bf16, dot::avx512::short_rows_bf16,
                         dot::kLongRowRows},
       .float_rows2 = {dot::avx2::long_rows_bf16, dot::avx2::short_rows_bf16,
                       dot::kLongRowRows2}}}},
    {TensorType::Q4_0,
     {kQK4_0,
      sizeof(BlockQ4_0),
      TensorType::Q8_0,
      erased<BlockQ4_0, dequant_q4_0>,
      {K(q4_0_q8_0), .avx512 = dot::avx512::q4_0_q8_0, .gemm512 = &dot::avx512::gemm_q4_0,
       .rows512 = &dot::avx512::rows_q4_0, .rows512_16 = &dot::avx512::rows_q4_0_16,
       .gemm2 = &dot::avx2::gemm_q4_0, .gemm_amx = &kAmxQ4_0, .rows2 = dot::avx2::rows_q4_0,
       .rows2_16 = &dot::avx2::rows_q4_0_16}}},
    {TensorType::Q4_1,
     {kQK4_1,
      sizeof(BlockQ4_1),
      TensorType::Q8_1,
      erased<BlockQ4_1, dequant_q4_1>,
      {K(q4_1_q8_1), .gemm512 = &dot::avx512::gemm_q4_1, .rows512_16 = &dot::avx512::rows_q4_1_16,
       .gemm2 = &dot::avx2::gemm_q4_1, .rows2_16 = &dot::avx2::rows_q4_1_16}}},
    {TensorType::Q5_0,
     {kQK5_0,
      sizeof(BlockQ5_0),
      TensorType::Q8_0,
      erased<BlockQ5_0, dequant_q5_0>,
      {K(q5_0_q8_0), .avx512 = dot::avx512::q5_0_q8_0, .gemm512 = &dot::avx512::gemm_q5_0,
       .rows512 = &dot::avx512::rows_q5_0, .rows512_16 = &dot::avx512::rows_q5_0_16,
       .gemm2 = &dot::avx2::gemm_q5_0, .gemm_amx = &kAmxQ5_0, .rows2 = dot::avx2::rows_q5_0,
       .rows2_16 = &dot::avx2::rows_q5_0_16}}},
    {TensorType::Q5_1,
     {kQK5_1,
      sizeof(BlockQ5_1),
      TensorType::Q8_1,
      erased<BlockQ5_1, dequant_q5_1>,
      {K(q5_1_q8_1), .gemm512 = &dot::avx512::gemm_q5_1, .rows512_16 = &dot::avx512::rows_q5_1_16,
       .gemm2 = &dot::avx2::gemm_q5_1, .rows2_16 = &dot::avx2::rows_q5_1_16}}},
    {TensorType::Q8_0,
     {kQK8_0,
      sizeof(BlockQ8_0),
      TensorType::Q8_0,
      erased<BlockQ8_0, dequant_q8_0>,
      {K(q8_0_q8_0), .avx512 = dot::avx512::q8_0_q8_0, .gemm512 = &dot::avx512::gemm_q8_0,
       .rows512 = &dot::avx512::rows_q8_0, .rows512_16 = &dot::avx512::rows_q8_0_16,
       .gemm2 = &dot::avx2::gemm_q8_0, .gemm_amx = &kAmxQ8_0, .rows2 = dot::avx2::rows_q8_0,
       .rows2_16 = &dot::avx2::rows_q8_0_16}}},
    {TensorType::Q2_K,
     {kQK_K,
      sizeof(BlockQ2_K),
      TensorType::Q8_K,
      erased<BlockQ2_K, dequant_q2_k>,
      {K(q2_k_q8_k), .gemm512 = &dot::avx512::gemm_q2_k, .rows512_16 = &dot::avx512::rows_q2_k_16,
       .gemm2 = &dot::avx2::gemm_q2_k, .rows2_16 = &dot::avx2::rows_q2_k_16}}},
    {TensorType::Q3_K,
     {kQK_K,
      sizeof(BlockQ3_K),
      TensorType::Q8_K,
      erased<BlockQ3_K, dequant_q3_k>,
      {K(q3_k_q8_k), .gemm512 = &dot::avx512::gemm_q3_k, .rows512_16 = &dot::avx512::rows_q3_k_16,
       .gemm2 = &dot::avx2::gemm_q3_k, .rows2_16 = &dot::avx2::rows_q3_k_16}}},
    {TensorType::Q4_K,
     {kQK_K,
      sizeof(BlockQ4_K),
      TensorType::Q8_K,
      erased<BlockQ4_K, dequant_q4_k>,
      {K(q4_k_q8_k), .avx512 = dot::avx512::q4_k_q8_k, .gemm512 = &dot::avx512::gemm_q4_k,
       .rows512_16 = &dot::avx512::rows_q4_k_16, .gemm2 = &dot::avx2::gemm_q4_k,
       .gemm_amx = &kAmxQ4_K, .rows2_16 = &dot::avx2::rows_q4_k_16}}},
    {TensorType::Q5_K,
     {kQK_K,
      sizeof(BlockQ5_K),
      TensorType::Q8_K,
      erased<BlockQ5_K, dequant_q5_k>,
      {K(q5_k_q8_k), .avx512 = dot::avx512::q5_k_q8_k, .gemm512 = &dot::avx512::gemm_q5_k,
       .rows512_16 = &dot::avx512::rows_q5_k_16, .gemm2 = &dot::avx2::gemm_q5_k,
       .rows2_16 = &dot::avx2::rows_q5_k_16}}},
    {TensorType::Q6_K,
     {kQK_K,
      sizeof(BlockQ6_K),
      TensorType::Q8_K,
      erased<BlockQ6_K, dequant_q6_k>,
      {K(q6_k_q8_k), .avx512 = dot::avx512::q6_k_q8_k, .gemm512 = &dot::avx512::gemm_q6_k,
       .rows512_16 = &dot::avx512::rows_q6_k_16, .gemm2 = &dot::avx2::gemm_q6_k,
       .gemm_amx = &kAmxQ6_K, .rows2_16 = &dot::avx2::rows_q6_k_16}}},
    {TensorType::IQ4_NL,
     {32,
      sizeof(BlockIQ4_NL),
      TensorType::Q8_0,
      erased<BlockIQ4_NL, dequant_iq4_nl>,
      {K(iq4_nl_q8_0), .avx512 = dot::avx512::iq4_nl_q8_0, .gemm512 = &dot::avx512::gemm_iq4_nl,
       .rows512 = &dot::avx512::rows_iq4_nl, .rows512_16 = &dot::avx512::rows_iq4_nl_16,
       .gemm2 = &dot::avx2::gemm_iq4_nl, .gemm_amx = &kAmxIQ4_NL, .rows2 = dot::avx2::rows_iq4_nl,
       .rows2_16 = &dot::avx2::rows_iq4_nl_16}}},
    {TensorType::IQ4_XS,
     {kQK_K,
      sizeof(BlockIQ4_XS),
      TensorType::Q8_K,
      erased<BlockIQ4_XS, dequant_iq4_xs>,
      {K(iq4_xs_q8_k), .gemm512 = &dot::avx512::gemm_iq4_xs,
       .rows512_16 = &dot::avx512::rows_iq4_xs_16, .gemm2 = &dot::avx2::gemm_iq4_xs,
       .rows2_16 = &dot::avx2::rows_iq4_xs_16}}},
    {TensorType::MXFP4,
     {32,
      sizeof(BlockMXFP4),
      TensorType::Q8_0,
      erased<BlockMXFP4, dequant_mxfp4>,
      {K(mxfp4_q8_0), .avx512 = dot::avx512::mxfp4_q8_0, .gemm512 = &dot::avx512::gemm_mxfp4,
       .rows512_16 = &dot::avx512::rows_mxfp4_16, .gemm2 = &dot::avx2::gemm_mxfp4,
       .rows2_16 = &dot::avx2::rows_mxfp4_16}}},
};
#undef K

}  // namespace

const TypeTraits* traits(TensorType t) {
  for (const TypeEntry& e : kTypes) {
    if (e.type == t) return &e.traits;
  }
  return nullptr;
}

std::string type_name(TensorType t) {
  const auto info = tensor_type_info(static_cast<std::uint32_t>(t));
  if (info) return std::string(info->name);
  std::string unknown = "#";
  unknown += std::to_string(static_cast<std::uint32_t>(t));
  return unknown;
}

namespace {

// Geometry of any type compute reads or writes, including the activation formats.
bool geometry(TensorType t, std::uint32_t& block, std::uint32_t& bytes) {
  if (const TypeTraits* tr = traits(t)) {
    block = tr->block_size;
    bytes = tr->type_size;
    return true;
  }
  switch (t) {
    case TensorType::Q8_1:
      block = kQK8_1, bytes = sizeof(BlockQ8_1);
      return true;
    case TensorType::Q8_K:
      block = kQK_K, bytes = sizeof(BlockQ8_K);
      return true;
    default:
      return false;
  }
}

std::int64_t check_blocks(TensorType t, std::int64_t n, const char* what) {
  std::uint32_t block = 0, bytes = 0;
  if (!geometry(t, block, bytes)) {
    throw Error(Errc::Unsupported, std::string(what) + ": tensor type " + type_name(t) +
                                       " is not supported by this build's CPU kernels");
  }
  if (n < 0 || n % block != 0) {
    throw Error(Errc::InvalidArgument, std::string(what) + ": row length " + std::to_string(n) +
                                           " is not a multiple of " + type_name(t) +
                                           "'s block size " + std::to_string(block));
  }
  return n / block;
}

}  // namespace

std::size_t row_size(TensorType t, std::int64_t n) {
  std::uint32_t block = 0, bytes = 0;
  const std::int64_t nb = check_blocks(t, n, "[row_size]");
  geometry(t, block, bytes);
  return static_cast<std::size_t>(nb) * bytes;
}

void dequantize_row(TensorType t, const void* src, float* y, std::int64_t n) {
  const std::int64_t nb = check_blocks(t, n, "[dequantize]");
  const TypeTraits* tr = traits(t);
  if (!tr) {
    throw Error(Errc::Unsupported,
                "[dequantize] tensor type " + type_name(t) + " cannot be decoded by this build");
  }
  tr->dequantize(src, y, nb);
}

void quantize_row_q8_0(const float* x, void* dst, std::int64_t n) {
  const std::int64_t nb = check_blocks(TensorType::Q8_0, n, "[quantize]");
  auto* y = static_cast<BlockQ8_0*>(dst);
  for (std::int64_t i = 0; i < nb; ++i, x += kQK8_0) {
    float amax = 0.0f;
    for (int j = 0; j < kQK8_0; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = f32_to_fp16(d);
    for (int j = 0; j < kQK8_0; ++j) y[i].qs[j] = round_i8(x[j] * id);
  }
}

void quantize_row_q8_1(const float* x, void* dst, std::int64_t n) {
  const std::int64_t nb = check_blocks(TensorType::Q8_1, n, "[quantize]");
  auto* y = static_cast<BlockQ8_1*>(dst);
  for (std::int64_t i = 0; i < nb; ++i, x += kQK8_1) {
    float amax = 0.0f;
    for (int j = 0; j < kQK8_1; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = f32_to_fp16(d);
    int sum = 0;
    for (int j = 0; j < kQK8_1; ++j) {
      y[i].qs[j] = round_i8(x[j] * id);
      sum += y[i].qs[j];
    }
    // s uses the f32 d, not its fp16 rounding, as ggml does.
    y[i].s = f32_to_fp16(static_cast<float>(sum) * d);
  }
}

void quantize_row_q8_K(const float* x, void* dst, std::int64_t n) {
  const std::int64_t nb = check_blocks(TensorType::Q8_K, n, "[quantize]");
  auto* y = static_cast<BlockQ8_K*>(dst);
  for (std::int64_t i = 0; i < nb; ++i, x += kQK_K) {
    float amax = 0.0f, max = 0.0f;  // max: the signed value of the first largest |x|
    for (int j = 0; j < kQK_K; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (amax == 0.0f) {
      std::memset(&y[i], 0, sizeof(BlockQ8_K));
      continue;
    }
    // Scaling by -127/max (not 128) keeps every q within [-127, 127].
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQK_K; ++j) {
      y[i].qs[j] = static_cast<std::int8_t>(std::min(127, nearest_int(iscale * x[j])));
    }
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += y[i].qs[16 * g + j];
      y[i].bsums[g] = static_cast<std::int16_t>(sum);
    }
    y[i].d = 1.0f / iscale;
  }
}

void quantize_row_q4_0(const float* x, void* dst, std::int64_t n) {
  const std::int64_t nb = check_blocks(TensorType::Q4_0, n, "[quantize]");
  auto* y = static_cast<BlockQ4_0*>(dst);
  for (std::int64_t i = 0; i < nb; ++i, x += kQK4_0) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK4_0; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    // The largest-magnitude value maps to -8 exactly, using the full signed nibble range.
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = f32_to_fp16(d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      const int q0 = q4_nibble(x[j] * id + 8.5f);
      const int q1 = q4_nibble(x[j + 16] * id + 8.5f);
      y[i].qs[j] = static_cast<std::uint8_t>(q0 | (q1 << 4));
    }
  }
}

namespace {

// Truncation of t = v + 0.5 (or + 16.5), clamped into [0, hi]; non-finite -> 0 as in q4_nibble.
int trunc_clamp(float t, int hi) {
  if (!std::isfinite(t)) return 0;
  return std::clamp(static_cast<int>(t), 0, hi);
}

// Asymmetric 4/5-bit blocks: d = (max - min) / (2^bits - 1), m = min, q = trunc((x - min)/d + 0.5).
template <int kBits, class Block>
void quantize_min_block(const float* x, Block& y, std::uint32_t* qh) {
  float min = std::numeric_limits<float>::max(), max = -std::numeric_limits<float>::max();
  for (int j = 0; j < 32; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
  const float d = (max - min) / static_cast<float>((1 << kBits) - 1);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  y.d = f32_to_fp16(d);
  y.m = f32_to_fp16(min);
  for (int j = 0; j < 16; ++j) {
    const int q0 = trunc_clamp((x[j] - min) * id + 0.5f, (1 << kBits) - 1);
    const int q1 = trunc_clamp((x[j + 16] - min) * id + 0.5f, (1 << kBits) - 1);
    y.qs[j] = static_cast<std::uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
    if (qh)
      *qh |= static_cast<std::uint32_t>((q0 >> 4) & 1) << j |
             static_cast<std::uint32_t>((q1 >> 4) & 1) << (j + 16);
  }
}

void store_u32le(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

}  // namespace

void quantize_row_q4_1(const float* x, void* dst, std::int64_t n) {
  const std::int64_t nb = check_blocks(TensorType::Q4_1, n, "[quantize]");
  auto* y = static_cast<BlockQ4_1*>(dst);
  for (std::int64_t i = 0; i < nb; ++i) quantize_min_block<4>(x + 32 * i, y[i], nullptr);
}

void quantize_row_q5_1(const float* x, void* dst, std::int64_t n) {
  const std::int64_t nb = check_blocks(TensorType::Q5_1, n, "[quantize]");
  auto* y = static_cast<BlockQ5_1*>(dst);
  for (std::int64_t i = 0; i < nb; ++i) {
    std::uint32_t qh = 0;
    quantize_min_block<5>(x + 32 * i, y[i], &qh);
    store_u32le(y[i].qh, qh);
  }
}

void quantize_row_q5_0(const float* x, void* dst, std::int64_t n) {
  const std::int64_t nb = check_blocks(TensorType::Q5_0, n, "[quantize]");
  auto* y = static_cast<BlockQ5_0*>(dst);
  for (std::int64_t i = 0; i < nb; ++i, x += kQK5_0) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK5_0; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    // As Q4_0 with 5 bits: the extreme maps to -16, q = trunc(x/d + 16.5) clamped to 31.
    const float d = max / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = f32_to_fp16(d);
    std::uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const int q0 = trunc_clamp(x[j] * id + 16.5f, 31);
      const int q1 = trunc_clamp(x[j + 16] * id + 16.5f, 31);
      y[i].qs[j] = static_cast<std::uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
      qh |= static_cast<std::uint32_t>(q0 >> 4) << j | static_cast<std::uint32_t>(q1 >> 4)
                                                           << (j + 16);
    }
    store_u32le(y[i].qh, qh);
  }
}

QuantizeFn act_quantizer(TensorType t, CpuLevel level) {
  const bool avx2 = level >= CpuLevel::Avx2, avx512 = level >= CpuLevel::Avx512;
  switch (t) {
    case TensorType::Q8_0:
      return avx512 ? avx512::quantize_row_q8_0
             : avx2 ? avx2::quantize_row_q8_0
                    : quantize_row_q8_0;
    case TensorType::Q8_1:
      return avx512 ? avx512::quantize_row_q8_1
             : avx2 ? avx2::quantize_row_q8_1
                    : quantize_row_q8_1;
    case TensorType::Q8_K:
      return avx512 ? avx512::quantize_row_q8_K
             : avx2 ? avx2::quantize_row_q8_K
                    : quantize_row_q8_K;
    default:
      throw Error(Errc::Unsupported,
                  "[quantize] " + type_name(t) + " is not an activation format (Q8_0, Q8_1, Q8_K)");
  }
}

void quantize_row(TensorType t, const float* x, void* dst, std::int64_t n) {
  switch (t) {
    case TensorType::Q8_0:
      return quantize_row_q8_0(x, dst, n);
    case TensorType::Q8_1:
      return quantize_row_q8_1(x, dst, n);
    case TensorType::Q8_K:
      return quantize_row_q8_K(x, dst, n);
    case TensorType::Q4_0:
      return quantize_row_q4_0(x, dst, n);
    case TensorType::Q4_1:
      return quantize_row_q4_1(x, dst, n);
    case TensorType::Q5_0:
      return quantize_row_q5_0(x, dst, n);
    case TensorType::Q5_1:
      return quantize_row_q5_1(x, dst, n);
    case TensorType::F32:
      std::memcpy(dst, x, static_cast<std::size_t>(std::max<std::int64_t>(n, 0)) * sizeof(float));
      return;
    case TensorType::F16: {
      auto* h = static_cast<std::uint16_t*>(dst);
      for (std::int64_t i = 0; i < n; ++i) h[i] = f32_to_fp16(x[i]);
      return;
    }
    case TensorType::BF16: {
      auto* h = static_cast<std::uint16_t*>(dst);
      for (std::int64_t i = 0; i < n; ++i) h[i] = f32_to_bf16(x[i]);
      return;
    }
    default:
      throw Error(Errc::Unsupported, "[quantize] quantize_row cannot write " + type_name(t) +
                                         "; use quantize_weight_row for K-quant weights");
  }
}

}  // namespace seam::quant
