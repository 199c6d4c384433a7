// Helpers shared by the compute kernel tests: random weight blocks with sane
// scales, and a decoder of the activation formats (Q8_0/Q8_1/Q8_K).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "compute/quant.h"
#include "compute/quant_blocks.h"
#include "core/half.h"

namespace seam::testutil {

// n_rows rows of n_in elements of type t, rows `stride` bytes apart. Quant bytes
// are uniform random; every fp16 scale/min is replaced by a value in
// [1e-3, 2e-2) (mins signed) so results stay finite and of sane magnitude.
inline std::vector<std::byte> random_weights(TensorType t, std::int64_t n_rows, std::int64_t n_in,
                                             std::size_t stride, std::mt19937& rng) {
  using namespace seam::quant;
  std::vector<std::byte> buf(stride * static_cast<std::size_t>(n_rows));
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& b : buf) b = static_cast<std::byte>(byte(rng));
  std::uniform_real_distribution<float> scale(1e-3f, 2e-2f), sgn(-1.0f, 1.0f);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto put_half = [&](std::byte* p, float v) {
    const std::uint16_t h = f32_to_fp16(v);
    std::memcpy(p, &h, 2);
  };
  const TypeTraits* tr = traits(t);
  const std::size_t bs = tr->type_size;
  const std::int64_t nb = n_in / tr->block_size;
  for (std::int64_t r = 0; r < n_rows; ++r) {
    std::byte* row = buf.data() + r * stride;
    for (std::int64_t i = 0; i < nb; ++i) {
      std::byte* b = row + i * bs;
      switch (t) {
        case TensorType::F32: {
          const float v = normal(rng);
          std::memcpy(b, &v, 4);
          break;
        }
        case TensorType::F16:
          put_half(b, normal(rng));
          break;
        case TensorType::BF16: {
          const std::uint16_t h = f32_to_bf16(normal(rng));
          std::memcpy(b, &h, 2);
          break;
        }
        case TensorType::Q4_0:
        case TensorType::Q5_0:
        case TensorType::Q8_0:
        case TensorType::IQ4_NL:
        case TensorType::IQ4_XS:
          put_half(b, scale(rng));
          break;
        case TensorType::Q4_1:
        case TensorType::Q5_1:
        case TensorType::Q4_K:
        case TensorType::Q5_K:
          put_half(b, scale(rng));
          put_half(b + 2, t == TensorType::Q4_1 || t == TensorType::Q5_1 ? scale(rng) * sgn(rng)
                                                                         : scale(rng));
          break;
        case TensorType::MXFP4:
          // Exponent byte e: scale 2^(e - 128) in [2^-10, 2^-5], as put_half's range.
          *b = static_cast<std::byte>(118 + byte(rng) % 6);
          break;
        case TensorType::Q2_K:
          put_half(b + offsetof(BlockQ2_K, d), scale(rng));
          put_half(b + offsetof(BlockQ2_K, dmin), scale(rng));
          break;
        case TensorType::Q3_K:
          put_half(b + offsetof(BlockQ3_K, d), scale(rng));
          break;
        case TensorType::Q6_K:
          put_half(b + offsetof(BlockQ6_K, d), scale(rng));
          break;
        default:
          break;
      }
    }
  }
  return buf;
}

// Decodes one activation row in dot type `t` (F32 rows are copied).
inline std::vector<double> decode_act(TensorType t, const void* src, std::int64_t n) {
  using namespace seam::quant;
  std::vector<double> out(static_cast<std::size_t>(n));
  switch (t) {
    case TensorType::F32: {
      const auto* f = static_cast<const float*>(src);
      for (std::int64_t i = 0; i < n; ++i) out[i] = f[i];
      break;
    }
    case TensorType::Q8_0: {
      const auto* b = static_cast<const BlockQ8_0*>(src);
      for (std::int64_t i = 0; i < n; ++i) out[i] = fp16_to_f32(b[i / 32].d) * b[i / 32].qs[i % 32];
      break;
    }
    case TensorType::Q8_1: {
      const auto* b = static_cast<const BlockQ8_1*>(src);
      for (std::int64_t i = 0; i < n; ++i) out[i] = fp16_to_f32(b[i / 32].d) * b[i / 32].qs[i % 32];
      break;
    }
    case TensorType::Q8_K: {
      const auto* b = static_cast<const BlockQ8_K*>(src);
      for (std::int64_t i = 0; i < n; ++i) {
        out[i] = static_cast<double>(b[i / 256].d) * b[i / 256].qs[i % 256];
      }
      break;
    }
    default:
      break;
  }
  return out;
}

// |min term| of each element of one weight row: the part of x = d*sc*q - m that
// does not scale with q (zero for types without mins). Kernels subtract it
// separately, so float rounding scales with it as well as with |x|.
inline std::vector<double> min_terms(TensorType t, const std::byte* row, std::int64_t n) {
  using namespace seam::quant;
  std::vector<double> m(static_cast<std::size_t>(n), 0.0);
  auto half = [](const std::byte* p) {
    std::uint16_t h;
    std::memcpy(&h, p, 2);
    return static_cast<double>(fp16_to_f32(h));
  };
  const std::size_t bs = traits(t)->type_size;
  for (std::int64_t e = 0; e < n; ++e) {
    switch (t) {
      case TensorType::Q4_1:
      case TensorType::Q5_1:
        m[e] = std::abs(half(row + e / 32 * bs + 2));
        break;
      case TensorType::Q2_K: {
        const auto* b = reinterpret_cast<const BlockQ2_K*>(row + e / 256 * bs);
        m[e] = std::abs(fp16_to_f32(b->dmin) * (b->scales[e % 256 / 16] >> 4));
        break;
      }
      case TensorType::Q4_K:
      case TensorType::Q5_K: {
        const std::byte* b = row + e / 256 * bs;
        std::uint8_t sc, mn;
        scale_min_k4(static_cast<int>(e % 256 / 32), reinterpret_cast<const std::uint8_t*>(b + 4),
                     sc, mn);
        m[e] = std::abs(half(b + 2) * mn);
        break;
      }
      default:
        break;
    }
  }
  return m;
}

// All weight types with CPU kernels.
inline const std::vector<TensorType>& kernel_types() {
  static const std::vector<TensorType> v = {
      TensorType::F32,  TensorType::F16,    TensorType::BF16,   TensorType::Q4_0,
      TensorType::Q4_1, TensorType::Q5_0,   TensorType::Q5_1,   TensorType::Q8_0,
      TensorType::Q2_K, TensorType::Q3_K,   TensorType::Q4_K,   TensorType::Q5_K,
      TensorType::Q6_K, TensorType::IQ4_NL, TensorType::IQ4_XS, TensorType::MXFP4};
  return v;
}

// A row length with several blocks (an odd count) that is not a power of two.
inline std::int64_t test_row_len(TensorType t) {
  const std::uint32_t bs = quant::traits(t)->block_size;
  return bs == 1 ? 83 : bs == 32 ? 32 * 7 : 256 * 3;
}

// Batch sizes for checks that a token's row does not depend on its batch:
// small ones, and both sides of where `level` hands type t to its GEMM: nine
// counts from there on, so that a GEMM taking up to nine tokens per tile runs
// its last, partial tile at every size.
inline std::vector<std::int64_t> batch_sizes_around_gemm(TensorType t, CpuLevel level) {
  std::vector<std::int64_t> n = {2, 5, 8, 11, 12, 13, 20};
  if (const dot::GemmFns* gemm = quant::traits(t)->dot.gemm_at(level)) {
    n.push_back(gemm->min_tokens - 1);
    for (int i = 0; i < 9; ++i) n.push_back(gemm->min_tokens + i);
  }
  return n;
}

}  // namespace seam::testutil
