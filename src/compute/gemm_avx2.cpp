// AVX2 prefill GEMM for Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, Q2_K, Q3_K, Q4_K,
// Q5_K, Q6_K and IQ4_XS weights (int8, below)
// and for F32, F16 and BF16 weights (f32 FMA, at the end): the machines
// without AVX-512 (Zen 3) multiply a panel of kPanelRows weight rows, unpacked
// once per matmul, by every token, instead of re-decoding each weight block
// for every 4-token dot tile. The same micro-kernel decodes the weights
// interleaved at load (interleave.h: the 32-element types, the K-quants, IQ4_XS), whose
// 16-row groups are already in the panel's order of steps: it reads them in
// place for decode (rows_*_16), and their panels are packed from them with
// loads, so a token's row is the same arithmetic in any batch.
// Compiled with the AVX2 flags (CMakeLists.txt); see dot.h on keeping this
// unit's code out of baseline callers.
//
// AVX2 has no vpdpbusd. vpmaddubsw multiplies unsigned bytes by signed bytes
// and adds adjacent pairs into saturating int16; vpmaddwd by ones then widens
// pairs of those into int32. Lane r of a 32-bit vector is weight row r of an
// 8-row half panel; the 4 activation bytes of a token are broadcast to all
// lanes. Saturation is avoided, not tolerated:
//  - the 4- to 6-bit types keep their weights unsigned (the stored q, before
//    the type's offset is subtracted): a pair sum is at most 2 * qmax * 127,
//    so kSteps of them fit an int16 before widening (8 for 4-bit q, 4 for
//    5-bit, 2 for 6-bit); the offset comes back as -offset * sum(a), a
//    per-token, per-unit integer the activations carry (prepare);
//  - Q8_0's and the IQ4 codebook's weights are signed: the panel keeps them as
//    they are, the kernel multiplies |w| by a with w's sign (vpsignb), widening
//    every step (2 * 128 * 127 < 2^15).
// Activations are Q8_0 / Q8_1 / Q8_K values, |a| <= 127 (quant.cpp). Integer sums are
// exact; scales are applied in f32 per unit, so results differ from the scalar
// reference only in f32 rounding.
//
// Panel layout per unit of U elements (U = 32, or 16 for Q2_K, Q3_K, Q6_K): int8
// w[U/4][16 rows][4], f32 scale[16], then for the types with a min (Q4_1, Q5_1,
// Q2_K, Q4_K, Q5_K) f32 min[16] (m, or -dmin * m for the K-quants).
// Prepared activations per token: int8 q[n], f32 d[n / SB] (one per activation
// block, SB = 32 for Q8_0/Q8_1, 256 for Q8_K), then int32 corr[n / U] (-offset *
// the unit's activation sum) for types with an offset, and for the types with a
// min f32 dsum[n / U] (d * the unit's activation sum; a Q8_1 block's stored s).
#include <immintrin.h>

#include <cstring>
#include <utility>

#include "compute/dot.h"
#include "compute/interleave.h"
#include "compute/prefetch.h"
#include "compute/quant_blocks.h"

namespace seam::dot::avx2 {
namespace {

using namespace seam::quant;

constexpr int kRows = kPanelRows;
constexpr int kHalf = 8;         // rows per 32-bit-lane vector
constexpr int kIntTokens = 4;    // tokens per int micro-kernel call (see tile's registers)
constexpr int kFloatTokens = 6;  // tokens per float micro-kernel call: 12 accumulators

inline float h2f(std::uint16_t h) { return _cvtsh_ss(h); }

std::size_t round64(std::size_t b) { return (b + 63) / 64 * 64; }

// ---------------------------------------------------------------- weight decoders

// 32 consecutive weights of one row as bytes (unsigned q, or signed for
// kSigned types), with the scale (and min) of each 16-element half; for
// 32-element units both halves carry the same values.
struct Chunk {
  __m256i q;
  float scale[2];
  float min[2];
};

struct DecQ8_0 {
  static constexpr int kUnit = 32, kActBlock = 32, kOffset = 0, kSteps = 1;
  static constexpr bool kSigned = true, kMin = false;
  static constexpr int kChunksPerGroup = 1;
  static constexpr std::size_t kGroupBytes = sizeof(BlockQ8_0);
  static void decode(const std::byte* g, Chunk* c) {
    const auto& b = *reinterpret_cast<const BlockQ8_0*>(g);
    c[0].q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
    c[0].scale[0] = c[0].scale[1] = h2f(b.d);
  }
};

inline __m256i nibbles(const std::uint8_t* qs) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i m = _mm_set1_epi8(0x0F);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m), _mm_and_si128(q, m));
}

struct DecQ4_0 {
  static constexpr int kUnit = 32, kActBlock = 32, kOffset = 8, kSteps = 8;
  static constexpr bool kSigned = false, kMin = false;
  static constexpr int kChunksPerGroup = 1;
  static constexpr std::size_t kGroupBytes = sizeof(BlockQ4_0);
  static void decode(const std::byte* g, Chunk* c) {
    const auto& b = *reinterpret_cast<const BlockQ4_0*>(g);
    c[0].q = nibbles(b.qs);
    c[0].scale[0] = c[0].scale[1] = h2f(b.d);
  }
};

// Q5_0: Q4_0's nibbles plus bit j of qh as bit 4 of element j; x = (q - 16) * d.
// (The Q4_K_M mix stores tensors whose rows are not a multiple of 256 as Q5_0.)
struct DecQ5_0 {
  static constexpr int kUnit = 32, kActBlock = 32, kOffset = 16, kSteps = 4;
  static constexpr bool kSigned = false, kMin = false;
  static constexpr int kChunksPerGroup = 1;
  static constexpr std::size_t kGroupBytes = sizeof(BlockQ5_0);
  static void decode(const std::byte* g, Chunk* c) {
    const auto& b = *reinterpret_cast<const BlockQ5_0*>(g);
    std::uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    // Byte j gets qh's byte j / 8, keeps bit j % 8 of it, and turns it into 0x10.
    const __m256i bytes = _mm256_shuffle_epi8(
        _mm256_set1_epi32(static_cast<int>(qh)),
        _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
    const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
    c[0].q = _mm256_or_si256(nibbles(b.qs), _mm256_and_si256(set, _mm256_set1_epi8(0x10)));
    c[0].scale[0] = c[0].scale[1] = h2f(b.d);
  }
};

// Q4_K: x = d * sc * q - dmin * mn per 32-element sub-block.
struct DecQ4_K {
  static constexpr int kUnit = 32, kActBlock = 256, kOffset = 0, kSteps = 8;
  static constexpr bool kSigned = false, kMin = true;
  static constexpr int kChunksPerGroup = 8;
  static constexpr std::size_t kGroupBytes = sizeof(BlockQ4_K);
  static void decode(const std::byte* g, Chunk* c) {
    const auto& b = *reinterpret_cast<const BlockQ4_K*>(g);
    const float d = h2f(b.d), dmin = h2f(b.dmin);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int p = 0; p < 4; ++p) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * p));
      c[2 * p].q = _mm256_and_si256(q, m4);
      c[2 * p + 1].q = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
    }
    for (int j = 0; j < 8; ++j) {
      std::uint8_t sc, mn;
      scale_min_k4(j, b.scales, sc, mn);
      c[j].scale[0] = c[j].scale[1] = d * sc;
      c[j].min[0] = c[j].min[1] = -dmin * mn;
    }
  }
};

// Q6_K: x = d * sc * (q - 32) per 16-element sub-block.
struct DecQ6_K {
  static constexpr int kUnit = 16, kActBlock = 256, kOffset = 32, kSteps = 2;
  static constexpr bool kSigned = false, kMin = false;
  static constexpr int kChunksPerGroup = 8;
  static constexpr std::size_t kGroupBytes = sizeof(BlockQ6_K);
  static void decode(const std::byte* g, Chunk* c) {
    const auto& b = *reinterpret_cast<const BlockQ6_K*>(g);
    const float d = h2f(b.d);
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3);
    for (int h = 0; h < 2; ++h) {
      const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h));
      const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h + 32));
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * h));
      const __m256i lo[4] = {_mm256_and_si256(l0, m4), _mm256_and_si256(l1, m4),
                             _mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                             _mm256_and_si256(_mm256_srli_epi16(l1, 4), m4)};
      for (int gq = 0; gq < 4; ++gq) {
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * gq), m2);
        c[4 * h + gq].q = _mm256_or_si256(lo[gq], _mm256_slli_epi16(hi, 4));
      }
    }
    for (int k = 0; k < 8; ++k) {
      c[k].scale[0] = d * b.scales[2 * k];
      c[k].scale[1] = d * b.scales[2 * k + 1];
      c[k].min[0] = c[k].min[1] = 0.0f;
    }
  }
};

// Q4_1: unsigned nibbles, x = d * q + m (activations Q8_1).
struct DecQ4_1 {
  static constexpr int kUnit = 32, kActBlock = 32, kOffset = 0, kSteps = 8;
  static constexpr bool kSigned = false, kMin = true, kQ8_1 = true;
  static constexpr int kChunksPerGroup = 1;
  static constexpr std::size_t kGroupBytes = sizeof(BlockQ4_1);
  static void decode(const std::byte* g, Chunk* c) {
    const auto& b = *reinterpret_cast<const BlockQ4_1*>(g);
    c[0].q = nibbles(b.qs);
    c[0].scale[0] = c[0].scale[1] = h2f(b.d);
    c[0].min[0] = c[0].min[1] = h2f(b.m);
  }
};

// 0x10 in byte j where bit j of the little-endian qh word is set.
inline __m256i fifth_bits(const std::uint8_t* qh_bytes) {
  std::uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  // Byte j gets qh's byte j / 8 and keeps bit j % 8 of it.
  const __m256i bytes = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(qh)),
      _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
  const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
  return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

// Q5_1: Q4_1 plus bit j of qh as bit 4 of element j; x = d * q + m.
struct DecQ5_1 {
  static constexpr int kUnit = 32, kActBlock = 32, kOffset = 0, kSteps = 4;
  static constexpr bool kSigned = false, kMin = true, kQ8_1 = true;
  static constexpr int kChunksPerGroup = 1;
  static constexpr std::size_t kGroupBytes = sizeof(BlockQ5_1);
  static void decode(const std::byte* g, Chunk* c) {
    const auto& b = *reinterpret_cast<const BlockQ5_1*>(g);
    c[0].q = _mm256_or_si256(nibbles(b.qs), fifth_bits(b.qh));
    c[0].scale[0] = c[0].scale[1] = h2f(b.d);
    c[0].min[0] = c[0].min[1] = h2f(b.m);
  }
};

// A 4-bit codebook block in Q4_0's nibble layout (IQ4_NL, MXFP4): each nibble
// indexes the 16-entry signed `Table`; x = Table[q] * Scale(block).
template <class Block, const std::int8_t* Table, float (*Scale)(const Block&)>
struct DecCodebook {
  static constexpr int kUnit = 32, kActBlock = 32, kOffset = 0, kSteps = 1;
  static constexpr bool kSigned = true, kMin = false;
  static constexpr int kChunksPerGroup = 1;
  static constexpr std::size_t kGroupBytes = sizeof(Block);
  static void decode(const std::byte* g, Chunk* c) {
    const auto& b = *reinterpret_cast<const Block*>(g);
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(Table)));
    c[0].q = _mm256_shuffle_epi8(table, nibbles(b.qs));
    c[0].scale[0] = c[0].scale[1] = Scale(b);
  }
};
float iq4_nl_scale(const BlockIQ4_NL& b) { return h2f(b.d); }
// MXFP4's E2M1 values are kept doubled (integers) and its E8M0 scale halved.
float mxfp4_block_scale(const BlockMXFP4& b) { return mxfp4_scale(b.e); }
using DecIQ4_NL = DecCodebook<BlockIQ4_NL, kIQ4Values, iq4_nl_scale>;
using DecMXFP4 = DecCodebook<BlockMXFP4, kMXFP4Values, mxfp4_block_scale>;

// IQ4_XS: IQ4_NL's codebook in 32-element sub-blocks with 6-bit signed scales.
struct DecIQ4_XS {
  static constexpr int kUnit = 32, kActBlock = 256, kOffset = 0, kSteps = 1;
  static constexpr bool kSigned = true, kMin = false;
  static constexpr int kChunksPerGroup = 8;
  static constexpr std::size_t kGroupBytes = sizeof(BlockIQ4_XS);
  static void decode(const std::byte* g, Chunk* c) {
    const auto& b = *reinterpret_cast<const BlockIQ4_XS*>(g);
    const float d = h2f(b.d);
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4Values)));
    for (int j = 0; j < 8; ++j) {
      c[j].q = _mm256_shuffle_epi8(table, nibbles(b.qs + 16 * j));
      c[j].scale[0] = c[j].scale[1] = d * static_cast<float>(iq4_xs_scale(b, j));
    }
  }
};

// Q5_K: Q4_K's nibbles plus bit j of qh[l] as bit 4 of sub-block j's element l.
struct DecQ5_K {
  static constexpr int kUnit = 32, kActBlock = 256, kOffset = 0, kSteps = 4;
  static constexpr bool kSigned = false, kMin = true;
  static constexpr int kChunksPerGroup = 8;
  static constexpr std::size_t kGroupBytes = sizeof(BlockQ5_K);
  static void decode(const std::byte* g, Chunk* c) {
    const auto& b = *reinterpret_cast<const BlockQ5_K*>(g);
    const float d = h2f(b.d), dmin = h2f(b.dmin);
    const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh));
    for (int p = 0; p < 4; ++p) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * p));
      const __m256i h0 = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * p), one);
      const __m256i h1 = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * p + 1), one);
      c[2 * p].q = _mm256_or_si256(_mm256_and_si256(q, m4), _mm256_slli_epi16(h0, 4));
      c[2 * p + 1].q =
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), _mm256_slli_epi16(h1, 4));
    }
    for (int j = 0; j < 8; ++j) {
      std::uint8_t sc, mn;
      scale_min_k4(j, b.scales, sc, mn);
      c[j].scale[0] = c[j].scale[1] = d * sc;
      c[j].min[0] = c[j].min[1] = -dmin * mn;
    }
  }
};

// 32-element run j (0..7) of a Q2_K/Q3_K block's 2-bit field: bits 2 * (j % 4)
// of bytes 32 * (j / 4) .. + 31.
inline __m256i crumbs(const std::uint8_t* qs, int j) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * (j / 4)));
  return _mm256_and_si256(_mm256_srli_epi16(v, 2 * (j % 4)), _mm256_set1_epi8(3));
}

// Q2_K: x = d * (sc & 15) * q - dmin * (sc >> 4) per 16-element sub-block.
// The 4 steps of a 16-element unit fit int16: 4 * 2 * 3 * 127 < 2^15.
struct DecQ2_K {
  static constexpr int kUnit = 16, kActBlock = 256, kOffset = 0, kSteps = 4;
  static constexpr bool kSigned = false, kMin = true;
  static constexpr int kChunksPerGroup = 8;
  static constexpr std::size_t kGroupBytes = sizeof(BlockQ2_K);
  static void decode(const std::byte* g, Chunk* c) {
    const auto& b = *reinterpret_cast<const BlockQ2_K*>(g);
    const float d = h2f(b.d), dmin = h2f(b.dmin);
    for (int j = 0; j < 8; ++j) {
      c[j].q = crumbs(b.qs, j);
      for (int h = 0; h < 2; ++h) {
        const std::uint8_t sc = b.scales[2 * j + h];
        c[j].scale[h] = d * static_cast<float>(sc & 0xF);
        c[j].min[h] = -dmin * static_cast<float>(sc >> 4);
      }
    }
  }
};

// Q3_K: the unsigned 3-bit q = 2-bit field | bit j of hmask[l] << 2 (0..7),
// x = d * (sc - 32) * (q - 4) per 16-element sub-block; 4 * 2 * 7 * 127 < 2^15.
struct DecQ3_K {
  static constexpr int kUnit = 16, kActBlock = 256, kOffset = 4, kSteps = 4;
  static constexpr bool kSigned = false, kMin = false;
  static constexpr int kChunksPerGroup = 8;
  static constexpr std::size_t kGroupBytes = sizeof(BlockQ3_K);
  static void decode(const std::byte* g, Chunk* c) {
    const auto& b = *reinterpret_cast<const BlockQ3_K*>(g);
    const float d = h2f(b.d);
    const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.hmask));
    for (int j = 0; j < 8; ++j) {
      const __m256i hb = _mm256_and_si256(_mm256_srli_epi16(hm, j), _mm256_set1_epi8(1));
      c[j].q = _mm256_or_si256(crumbs(b.qs, j), _mm256_slli_epi16(hb, 2));
      for (int h = 0; h < 2; ++h) {
        c[j].scale[h] = d * static_cast<float>(scale_q3_k(2 * j + h, b.scales) - 32);
      }
    }
  }
};

// Whether a decoder's activations are Q8_1 (their blocks carry s = d * sum).
template <class D>
constexpr bool q8_1_act() {
  if constexpr (requires { D::kQ8_1; }) return D::kQ8_1;
  return false;
}

// ---------------------------------------------------------------- panels

template <class D>
constexpr std::size_t unit_bytes() {
  return static_cast<std::size_t>(D::kUnit) * kRows + 64 * (D::kMin ? 2 : 1);
}

template <class D>
std::size_t panel_bytes(std::int64_t n) {
  return static_cast<std::size_t>(n / D::kUnit) * unit_bytes<D>();
}

template <class D>
void pack(std::int64_t n, const void* w, std::size_t row_stride, int n_rows, void* panel) {
  constexpr int U = D::kUnit, G = D::kChunksPerGroup;
  constexpr std::size_t ub = unit_bytes<D>();
  auto* out = static_cast<std::byte*>(panel);
  const std::int64_t n_groups = n / (32 * G);
  for (int r0 = 0; r0 < kRows; r0 += 4) {
    for (std::int64_t gi = 0; gi < n_groups; ++gi) {
      Chunk c[4][G];
      for (int i = 0; i < 4; ++i) {
        const int r = r0 + i;
        if (r < n_rows) {
          D::decode(static_cast<const std::byte*>(w) + r * row_stride + gi * D::kGroupBytes, c[i]);
        } else {
          for (int k = 0; k < G; ++k) c[i][k] = Chunk{_mm256_setzero_si256(), {0, 0}, {0, 0}};
        }
      }
      for (int k = 0; k < G; ++k) {
        const std::int64_t e0 = (gi * G + k) * 32;  // first element of this chunk
        // 4x4 transpose of dwords within each 128-bit lane: tr[j] low lane =
        // the 4 rows' bytes 4j..4j+3, high lane = bytes 16 + 4j..
        const __m256i a = _mm256_unpacklo_epi32(c[0][k].q, c[1][k].q);
        const __m256i b = _mm256_unpackhi_epi32(c[0][k].q, c[1][k].q);
        const __m256i cc = _mm256_unpacklo_epi32(c[2][k].q, c[3][k].q);
        const __m256i dd = _mm256_unpackhi_epi32(c[2][k].q, c[3][k].q);
        const __m256i tr[4] = {_mm256_unpacklo_epi64(a, cc), _mm256_unpackhi_epi64(a, cc),
                               _mm256_unpacklo_epi64(b, dd), _mm256_unpackhi_epi64(b, dd)};
        for (int j = 0; j < 8; ++j) {
          const std::int64_t e = e0 + 4 * j;
          std::byte* dst = out + (e / U) * ub + ((e % U) / 4) * 64 + 4 * r0;
          const __m128i v =
              j < 4 ? _mm256_castsi256_si128(tr[j]) : _mm256_extracti128_si256(tr[j - 4], 1);
          _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), v);
        }
        for (int i = 0; i < 4; ++i) {
          for (int h = 0; h < 2; ++h) {
            const std::int64_t u = (e0 + 16 * h) / U;
            std::byte* base = out + u * ub + U * kRows;
            std::memcpy(base + 4 * (r0 + i), &c[i][k].scale[h], 4);
            if constexpr (D::kMin) std::memcpy(base + 64 + 4 * (r0 + i), &c[i][k].min[h], 4);
            if (U == 32) break;  // one unit, one scale for both halves
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------- activations

// Byte offsets of the parts of one token's prepared activations.
template <class D>
struct ActLayout {
  std::size_t d, corr, dsum, total;
  explicit ActLayout(std::int64_t n) {
    d = static_cast<std::size_t>(n);
    corr = d + static_cast<std::size_t>(n / D::kActBlock) * 4;
    dsum = corr + (D::kOffset ? static_cast<std::size_t>(n / D::kUnit) * 4 : 0);
    total = round64(dsum + (D::kMin ? static_cast<std::size_t>(n / D::kUnit) * 4 : 0));
  }
};

template <class D>
std::size_t act_bytes(std::int64_t n) {
  return ActLayout<D>(n).total;
}

template <class D>
void prepare(std::int64_t n, const void* act, void* dst) {
  const ActLayout<D> L(n);
  auto* base = static_cast<std::byte*>(dst);
  auto* q = reinterpret_cast<std::int8_t*>(base);
  auto* d = reinterpret_cast<float*>(base + L.d);
  auto* corr = reinterpret_cast<std::int32_t*>(base + L.corr);
  auto* dsum = reinterpret_cast<float*>(base + L.dsum);
  if constexpr (q8_1_act<D>()) {
    static_assert(D::kOffset == 0 && D::kUnit == 32);
    const auto* y = static_cast<const BlockQ8_1*>(act);
    for (std::int64_t i = 0; i < n / 32; ++i) {
      std::memcpy(q + 32 * i, y[i].qs, 32);
      d[i] = h2f(y[i].d);
      dsum[i] = h2f(y[i].s);
    }
  } else if constexpr (D::kActBlock == 32) {
    const auto* y = static_cast<const BlockQ8_0*>(act);
    for (std::int64_t i = 0; i < n / 32; ++i) {
      std::memcpy(q + 32 * i, y[i].qs, 32);
      d[i] = h2f(y[i].d);
      if constexpr (D::kOffset != 0) {
        int s = 0;
        for (int j = 0; j < 32; ++j) s += y[i].qs[j];
        corr[i] = -D::kOffset * s;
      }
    }
  } else {
    const auto* y = static_cast<const BlockQ8_K*>(act);
    for (std::int64_t i = 0; i < n / 256; ++i) {
      std::memcpy(q + 256 * i, y[i].qs, 256);
      d[i] = y[i].d;
      for (int j = 0; j < 16; j += D::kUnit / 16) {
        const int s = D::kUnit == 16 ? y[i].bsums[j] : y[i].bsums[j] + y[i].bsums[j + 1];
        const std::int64_t u = (256 * i + 16 * j) / D::kUnit;
        if constexpr (D::kOffset != 0) corr[u] = -D::kOffset * s;
        if constexpr (D::kMin) dsum[u] = y[i].d * static_cast<float>(s);
      }
    }
  }
}

// ---------------------------------------------------------------- micro-kernel

inline __m256i bcast4(const std::int8_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// The first n_valid lanes of each accumulator to out + t * ldy.
inline void store_rows(const __m256* acc, int nt, int n_valid, float* out, std::size_t ldy) {
  const __m256i mask =
      _mm256_cmpgt_epi32(_mm256_set1_epi32(n_valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  for (int t = 0; t < nt; ++t) _mm256_maskstore_ps(out + t * ldy, mask, acc[t]);
}

// Where tile() reads the weights: step k (elements 4k..4k+3 of each row) of
// unit u for rows 8h..8h+7, as the panel holds it, and the unit's scales (and
// mins) of those rows.
template <class D>
struct PanelSource {  // a panel of pack()
  const std::byte* panel;
  const std::byte* unit(std::int64_t u) const { return panel + u * unit_bytes<D>(); }
  __m256i step(std::int64_t u, int k, int h) const {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(unit(u) + 64 * k + 32 * h));
  }
  __m256 scale(std::int64_t u, int h) const {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(unit(u) + D::kUnit * kRows + 32 * h));
  }
  __m256 min(std::int64_t u, int h) const {
    return _mm256_loadu_ps(
        reinterpret_cast<const float*>(unit(u) + D::kUnit * kRows + 64 + 32 * h));
  }
  void prefetch(std::int64_t) const {}  // packed into the thread's L2 just before
};

// interleave.h's groups of 16 rows of a 32-element type, read in place: a
// block's 16 fp16 scales (Q4_1, Q5_1: and mins), then 4-byte steps of the 16
// rows' values. A 4-bit step holds two of the panel's (low nibbles: elements
// 4m..4m+3; high: 16 + 4m..), to which Q5_0 and Q5_1 add their fifth bits and
// through which IQ4_NL and MXFP4 look up their codebooks (signed, as
// DecCodebook's panel).
// Decode streams them from DRAM, hence the prefetch (prefetch.h).
template <TensorType T>
struct GroupSource {
  static constexpr std::size_t kBlock = interleave::block_bytes(T);
  const std::byte* group;
  __m256i step(std::int64_t u, int k, int h) const {
    const std::byte* blk = group + u * kBlock;
    const std::byte* values = blk + interleave::b32_values(T) + 32 * h;
    if constexpr (T == TensorType::Q8_0)
      return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(values + 64 * k));
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(values + 64 * (k & 3)));
    __m256i q = _mm256_and_si256(k < 4 ? v : _mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0F));
    if constexpr (interleave::b32_has_fifth(T)) {
      // Byte i of a row's word holds element 4s + i's fifth bit at bit s (no
      // bit of the next byte reaches bit 4 in either shift).
      const __m256i word = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(blk + interleave::b32_high(T) + 32 * h));
      const __m256i at4 = k <= 4 ? _mm256_slli_epi16(word, 4 - k) : _mm256_srli_epi16(word, k - 4);
      q = _mm256_or_si256(q, _mm256_and_si256(at4, _mm256_set1_epi8(0x10)));
    }
    if constexpr (interleave::b32_has_codebook(T)) {
      q = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadu_si128(
                                  reinterpret_cast<const __m128i*>(interleave::b32_codebook(T)))),
                              q);
    }
    return q;
  }
  __m256 scale(std::int64_t u, int h) const {
    if constexpr (T == TensorType::MXFP4) {
      // The exponents e as quant::mxfp4_scale's 2^(e - 128) (e < 2: subnormal).
      const __m256i e = _mm256_cvtepu8_epi32(
          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(group + u * kBlock + 8 * h)));
      const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
      const __m256i tiny = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
      const __m256i below2 = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
      return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, tiny, below2));
    }
    return _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(group + u * kBlock + 16 * h)));
  }
  __m256 min(std::int64_t u, int h) const {
    return _mm256_cvtph_ps(_mm_loadu_si128(
        reinterpret_cast<const __m128i*>(group + u * kBlock + interleave::kB32Min + 16 * h)));
  }
  void prefetch(std::int64_t u) const {
    prefetch_ahead<kPrefetchAheadAvx2>(group + u * kBlock, kBlock);
  }
};
using GroupQ4_0 = GroupSource<TensorType::Q4_0>;
using GroupQ4_1 = GroupSource<TensorType::Q4_1>;
using GroupQ5_0 = GroupSource<TensorType::Q5_0>;
using GroupQ5_1 = GroupSource<TensorType::Q5_1>;
using GroupQ8_0 = GroupSource<TensorType::Q8_0>;
using GroupIQ4_NL = GroupSource<TensorType::IQ4_NL>;
using GroupMXFP4 = GroupSource<TensorType::MXFP4>;

// 8 bytes at p as the 32-bit lanes of a vector.
inline __m256i widen8(const std::uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}
// Rows 8h..8h+7 of 16 fp16 values at p, as f32.
inline __m256 half8(const std::byte* p, int h) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * h)));
}

// Q4_K and Q5_K groups (interleave.h), read in place; unit u is sub-block
// u % 8 of super-block u / 8. scale() and min() are DecQ4_K's (DecQ5_K's)
// d * sc and -dmin * mn, the same f32 products, so a panel packed from a
// group is the same panel.
template <TensorType T>
struct GroupK4 {
  static constexpr std::size_t kBlock = interleave::block_bytes(T);
  const std::byte* group;
  const std::byte* block(std::int64_t u) const { return group + (u / 8) * kBlock; }
  const std::uint8_t* scales(std::int64_t u, int h) const {
    return reinterpret_cast<const std::uint8_t*>(block(u) + interleave::kQ4KScales) + 16 * (u % 8) +
           8 * h;
  }
  __m256i step(std::int64_t u, int k, int h) const {
    const int j = static_cast<int>(u % 8);
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
        block(u) + interleave::k4_values(T) + 64 * (8 * (j / 2) + k) + 32 * h));
    // Odd sub-blocks are the high nibbles: a shift by 4 (j odd) or 0.
    const __m128i shift = _mm_cvtsi32_si128(4 * (j & 1));
    const __m256i q = _mm256_and_si256(_mm256_srl_epi16(v, shift), _mm256_set1_epi8(0x0F));
    if constexpr (T == TensorType::Q4_K) return q;
    // Q5_K: bit j of each qh byte is the element's fifth bit (a 16-bit shift
    // brings no bit of the next byte down to bit 0, j < 8).
    const __m256i qh = _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(block(u) + interleave::kQ5KHigh + 64 * k + 32 * h));
    const __m256i bit =
        _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(j)), _mm256_set1_epi8(1));
    return _mm256_or_si256(q, _mm256_slli_epi16(bit, 4));
  }
  __m256 scale(std::int64_t u, int h) const {
    const __m256i sc = _mm256_and_si256(widen8(scales(u, h)), _mm256_set1_epi32(63));
    return _mm256_mul_ps(half8(block(u), h), _mm256_cvtepi32_ps(sc));
  }
  __m256 min(std::int64_t u, int h) const {
    const auto* low = reinterpret_cast<const std::uint8_t*>(block(u) + interleave::kQ4KMinLow);
    const __m256i lo = _mm256_and_si256(_mm256_srli_epi32(widen8(low + 8 * (u % 8)), 4 * h),
                                        _mm256_set1_epi32(15));
    const __m256i hi = _mm256_slli_epi32(_mm256_srli_epi32(widen8(scales(u, h)), 6), 4);
    const __m256 dmin = half8(block(u) + interleave::kQ4KDmin, h);
    const __m256 mn = _mm256_cvtepi32_ps(_mm256_or_si256(lo, hi));
    return _mm256_xor_ps(_mm256_mul_ps(dmin, mn), _mm256_set1_ps(-0.0f));
  }
  void prefetch(std::int64_t u) const {
    prefetch_ahead<kPrefetchAheadAvx2>(group + u * (kBlock / 8), kBlock / 8);
  }
};
using GroupQ4_K = GroupK4<TensorType::Q4_K>;
using GroupQ5_K = GroupK4<TensorType::Q5_K>;

// Unit u's signed 6-bit scales (stored - 32) of rows 8h..8h+7 in a Q3_K or
// IQ4_XS group block: low nibbles at `low` + 8u, top bits in the word at
// `high` + 4u (row r at bit 2r).
inline __m256i scales6(const std::uint8_t* base, std::size_t low, std::size_t high, std::int64_t u,
                       int h) {
  const __m256i lo =
      _mm256_and_si256(_mm256_srli_epi32(widen8(base + low + 8 * u), 4 * h), _mm256_set1_epi32(15));
  std::int32_t word;
  std::memcpy(&word, base + high + 4 * u, 4);
  const __m256i shifts =
      _mm256_add_epi32(_mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14), _mm256_set1_epi32(16 * h));
  const __m256i hi =
      _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(word), shifts), _mm256_set1_epi32(3));
  return _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
}

// Q2_K and Q3_K groups (interleave.h), read in place; unit u is 16-element
// unit u % 16 of super-block u / 16. scale() and min() are DecQ2_K's /
// DecQ3_K's f32 products.
template <TensorType T>
struct GroupK2 {
  static constexpr std::size_t kBlock = interleave::block_bytes(T);
  static constexpr std::size_t kValues =
      T == TensorType::Q2_K ? interleave::kQ2KValues : interleave::kQ3KValues;
  const std::byte* group;
  const std::byte* block(std::int64_t u) const { return group + (u / 16) * kBlock; }
  __m256i step(std::int64_t u, int k, int h) const {
    const std::int64_t uu = u % 16;
    const __m256i v =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block(u) + kValues + 64 * uu + 32 * h));
    const __m256i q = _mm256_and_si256(_mm256_srli_epi16(v, 2 * k), _mm256_set1_epi8(3));
    if constexpr (T == TensorType::Q2_K) return q;
    // Q3_K: bit uu / 2 of the hmask bytes of step 4 (uu % 2) + k is 4 more.
    const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
        block(u) + interleave::kQ3KMask + 64 * (4 * (uu % 2) + k) + 32 * h));
    const __m256i bit = _mm256_and_si256(
        _mm256_srl_epi16(hm, _mm_cvtsi32_si128(static_cast<int>(uu / 2))), _mm256_set1_epi8(1));
    return _mm256_or_si256(q, _mm256_slli_epi16(bit, 2));
  }
  __m256 scale(std::int64_t u, int h) const {
    const std::int64_t uu = u % 16;
    const auto* base = reinterpret_cast<const std::uint8_t*>(block(u));
    __m256i sc;
    if constexpr (T == TensorType::Q2_K) {
      sc = _mm256_and_si256(widen8(base + interleave::kQ2KScales + 16 * uu + 8 * h),
                            _mm256_set1_epi32(15));
    } else {
      sc = scales6(base, interleave::kQ3KScaleLow, interleave::kQ3KScaleHigh, uu, h);
    }
    return _mm256_mul_ps(half8(block(u), h), _mm256_cvtepi32_ps(sc));
  }
  __m256 min(std::int64_t u, int h) const {
    const auto* scales =
        reinterpret_cast<const std::uint8_t*>(block(u) + interleave::kQ2KScales) + 16 * (u % 16);
    const __m256 mn = _mm256_cvtepi32_ps(_mm256_srli_epi32(widen8(scales + 8 * h), 4));
    const __m256 dmin = half8(block(u) + interleave::kQ2KDmin, h);
    return _mm256_xor_ps(_mm256_mul_ps(dmin, mn), _mm256_set1_ps(-0.0f));
  }
  void prefetch(std::int64_t u) const {
    prefetch_ahead<kPrefetchAheadAvx2>(group + u * (kBlock / 16), kBlock / 16);
  }
};
using GroupQ2_K = GroupK2<TensorType::Q2_K>;
using GroupQ3_K = GroupK2<TensorType::Q3_K>;

// IQ4_XS groups (interleave.h), read in place; unit u is sub-block u % 8 of
// super-block u / 8, its nibbles laid out as Q4_0's and looked up in the
// codebook (signed values, as DecIQ4_XS's). scale() is DecIQ4_XS's.
struct GroupIQ4_XS {
  static constexpr std::size_t kBlock = interleave::block_bytes(TensorType::IQ4_XS);
  const std::byte* group;
  const std::byte* block(std::int64_t u) const { return group + (u / 8) * kBlock; }
  __m256i step(std::int64_t u, int k, int h) const {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
        block(u) + interleave::kXSValues + 64 * (4 * (u % 8) + (k & 3)) + 32 * h));
    const __m256i idx =
        _mm256_and_si256(k < 4 ? v : _mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0F));
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4Values)));
    return _mm256_shuffle_epi8(table, idx);
  }
  __m256 scale(std::int64_t u, int h) const {
    const __m256i sc = scales6(reinterpret_cast<const std::uint8_t*>(block(u)),
                               interleave::kXSScaleLow, interleave::kXSScaleHigh, u % 8, h);
    return _mm256_mul_ps(half8(block(u), h), _mm256_cvtepi32_ps(sc));
  }
  void prefetch(std::int64_t u) const {
    prefetch_ahead<kPrefetchAheadAvx2>(group + u * (kBlock / 8), kBlock / 8);
  }
};

// Q6_K groups (interleave.h), read in place; unit u is 16-element unit u % 16
// of super-block u / 16. scale() is DecQ6_K's d * sc.
struct GroupQ6_K {
  static constexpr std::size_t kBlock = interleave::block_bytes(TensorType::Q6_K);
  const std::byte* group;
  const std::byte* block(std::int64_t u) const { return group + (u / 16) * kBlock; }
  __m256i step(std::int64_t u, int k, int h) const {
    const std::byte* unit =
        block(u) + interleave::kQ6KValues + interleave::kQ6KUnit * (u % 16) + 32 * h;
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(unit + 64 * (k & 1)));
    const __m256i hi =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(unit + interleave::kQ6KHigh));
    // Step k's crumb, at bits 2k, moved to bits 4-5.
    const __m256i h4 = k < 2 ? _mm256_slli_epi16(hi, 4 - 2 * k) : _mm256_srli_epi16(hi, 2 * k - 4);
    return _mm256_or_si256(
        _mm256_and_si256(k < 2 ? lo : _mm256_srli_epi16(lo, 4), _mm256_set1_epi8(0x0F)),
        _mm256_and_si256(h4, _mm256_set1_epi8(0x30)));
  }
  __m256 scale(std::int64_t u, int h) const {
    const __m256i sc = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(
        block(u) + interleave::kQ6KScales + 16 * (u % 16) + 8 * h)));
    return _mm256_mul_ps(half8(block(u), h), _mm256_cvtepi32_ps(sc));
  }
  void prefetch(std::int64_t u) const {
    prefetch_ahead<kPrefetchAheadAvx2>(group + u * (kBlock / 16), kBlock / 16);
  }
};

// H halves of 8 rows x NT tokens: out[t * ldy + r] for the n_valid rows
// present (8 per half at most), weights from `src`. Live registers: H * NT f32
// accumulators, int32 unit sums and int16 partial sums, the H weight vectors,
// ones and one broadcast; the halves share each broadcast.
template <class D, int H, int NT, class Src>
void tile(std::int64_t n, const Src& src, const std::byte* act, std::size_t as, int n_valid,
          float* out, std::size_t ldy) {
  constexpr int U = D::kUnit, SB = D::kActBlock, S = D::kSteps;
  const ActLayout<D> L(n);
  const std::int8_t* aq[NT];
  const float* ad[NT];
  const std::int32_t* acorr[NT];
  const float* adsum[NT];
  __m256 facc[H][NT];
  for (int t = 0; t < NT; ++t) {
    const std::byte* a = act + t * as;
    aq[t] = reinterpret_cast<const std::int8_t*>(a);
    ad[t] = reinterpret_cast<const float*>(a + L.d);
    acorr[t] = reinterpret_cast<const std::int32_t*>(a + L.corr);
    adsum[t] = reinterpret_cast<const float*>(a + L.dsum);
    for (int h = 0; h < H; ++h) facc[h][t] = _mm256_setzero_ps();
  }
  const __m256i ones = _mm256_set1_epi16(1);
  for (std::int64_t u = 0; u < n / U; ++u) {
    src.prefetch(u);
    __m256i iacc[H][NT] = {};  // (adding to zero folds away)
    for (int k0 = 0; k0 < U / 4; k0 += S) {
      __m256i s16[H][NT];
#pragma GCC unroll 16
      for (int k = k0; k < k0 + S; ++k) {
        __m256i wv[H], wu[H];
        for (int h = 0; h < H; ++h) {
          wv[h] = src.step(u, k, h);
          wu[h] = D::kSigned ? _mm256_sign_epi8(wv[h], wv[h]) : wv[h];  // |w| for signed weights
        }
        for (int t = 0; t < NT; ++t) {
          const __m256i a = bcast4(aq[t] + u * U + 4 * k);
          for (int h = 0; h < H; ++h) {
            const __m256i p =
                _mm256_maddubs_epi16(wu[h], D::kSigned ? _mm256_sign_epi8(a, wv[h]) : a);
            s16[h][t] = k == k0 ? p : _mm256_add_epi16(s16[h][t], p);
          }
        }
        // The S steps' int16 sums stay in registers step by step: unrolled
        // without this, GCC ran every step's maddubs first and spilled them.
        // (Unrolling the k0 loop too did the same to Q8_0's int32 sums.)
        if constexpr (S > 1)
          for (int h = 0; h < H; ++h)
            for (int t = 0; t < NT; ++t) asm("" : "+x"(s16[h][t]));
      }
      for (int h = 0; h < H; ++h) {
        for (int t = 0; t < NT; ++t) {
          const __m256i w32 = _mm256_madd_epi16(s16[h][t], ones);
          iacc[h][t] = _mm256_add_epi32(iacc[h][t], w32);
        }
      }
    }
    for (int h = 0; h < H; ++h) {
      const __m256 sc = src.scale(u, h);
      for (int t = 0; t < NT; ++t) {
        __m256i i = iacc[h][t];
        if constexpr (D::kOffset != 0) i = _mm256_add_epi32(i, _mm256_set1_epi32(acorr[t][u]));
        const __m256 s = _mm256_mul_ps(sc, _mm256_set1_ps(ad[t][u * U / SB]));
        facc[h][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i), s, facc[h][t]);
      }
      if constexpr (D::kMin) {
        const __m256 mn = src.min(u, h);
        for (int t = 0; t < NT; ++t)
          facc[h][t] = _mm256_fmadd_ps(mn, _mm256_set1_ps(adsum[t][u]), facc[h][t]);
      }
    }
  }
  for (int h = 0; h < H && h * kHalf < n_valid; ++h)
    store_rows(facc[h], NT, n_valid - h * kHalf < kHalf ? n_valid - h * kHalf : kHalf,
               out + h * kHalf, ldy);
}

// Runs Tile<NT>::go for every full group of Max tokens, then once for the rest.
template <template <int> class Tile, int Max, class... Args>
void over_tokens(std::int64_t n_tok, std::size_t as, std::size_t ldy, const std::byte* act,
                 float* out, Args... args) {
  std::int64_t t = 0;
  for (; t + Max <= n_tok; t += Max) Tile<Max>::go(act + t * as, out + t * ldy, args...);
  const int rest = static_cast<int>(n_tok - t);
  if (rest == 0) return;
  [&]<int... I>(std::integer_sequence<int, I...>) {
    ((rest == I + 1 ? Tile<I + 1>::go(act + t * as, out + t * ldy, args...) : void()), ...);
  }
  (std::make_integer_sequence<int, Max - 1>{});
}

// Both halves of the panel per pass, as the decode kernels below: each
// activation broadcast then feeds two maddubs, not one. With NT = 4 the f32
// accumulators no longer fit beside the rest and are spilled, but they are
// touched once per unit; the broadcasts were on every step.
template <class D>
struct IntTile {
  template <int NT>
  struct T {
    static void go(const std::byte* act, float* out, std::int64_t n, const std::byte* panel,
                   std::size_t as, int n_valid, std::size_t ldy) {
      tile<D, 2, NT>(n, PanelSource<D>{panel}, act, as, n_valid, out, ldy);
    }
  };
};

template <class D>
void run(std::int64_t n, const void* panel, const void* act, std::int64_t n_tok, int n_rows,
         float* out, std::size_t ldy) {
  const auto* p = static_cast<const std::byte*>(panel);
  const auto* a = static_cast<const std::byte*>(act);
  const std::size_t as = act_bytes<D>(n);
  over_tokens<IntTile<D>::template T, kIntTokens>(n_tok, as, ldy, a, out, n, p, as, n_rows, ldy);
}

// Decode on interleaved weights (dot.h GroupFn): both halves of the group
// share each activation broadcast; two tokens per pass keep the accumulators
// in registers.
constexpr int kGroupTokens = 2;

template <class D, class Src>
struct GroupTile {
  template <int NT>
  struct T {
    static void go(const std::byte* act, float* out, std::int64_t n, const std::byte* group,
                   std::size_t as, std::size_t ldy) {
      tile<D, 2, NT>(n, Src{group}, act, as, kRows, out, ldy);
    }
  };
};

template <class D, class Src>
void group_dot(std::int64_t n, const void* group, const void* act, std::size_t as, int n_act,
               float* out, std::size_t os) {
  over_tokens<GroupTile<D, Src>::template T, kGroupTokens>(
      n_act, as, os, static_cast<const std::byte*>(act), out, n,
      static_cast<const std::byte*>(group), as, os);
}

// One interleaved group -> the panel pack() makes of its 16 rows (GemmFns::pack16).
template <class D, class Src>
void pack_group(std::int64_t n, const void* group, void* panel) {
  const Src src{static_cast<const std::byte*>(group)};
  for (std::int64_t u = 0; u < n / D::kUnit; ++u) {
    std::byte* pu = static_cast<std::byte*>(panel) + u * unit_bytes<D>();
    for (int h = 0; h < 2; ++h) {
      for (int k = 0; k < D::kUnit / 4; ++k)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(pu + 64 * k + 32 * h), src.step(u, k, h));
      float* scales = reinterpret_cast<float*>(pu + D::kUnit * kRows);
      _mm256_storeu_ps(scales + 8 * h, src.scale(u, h));
      if constexpr (D::kMin) _mm256_storeu_ps(scales + 16 + 8 * h, src.min(u, h));
    }
  }
}

// ---------------------------------------------------------------- float weights

// F32 / F16 / BF16 weights: the panel is the 16 rows converted to f32 and
// transposed, f32 p[n][16] with the elements in the chain order below;
// activations stay f32 (same order). Two FMAs per element and token cover 16
// rows, with the token's value broadcast from memory.
// one(): element k of a row; eight(): elements [k, k + 8) as f32.
struct CvtF32 {
  static constexpr std::size_t kBytes = 4;
  static float one(const void* w, std::int64_t k) { return static_cast<const float*>(w)[k]; }
  static __m256 eight(const void* w, std::int64_t k) {
    return _mm256_loadu_ps(static_cast<const float*>(w) + k);
  }
};
struct CvtF16 {
  static constexpr std::size_t kBytes = 2;
  static float one(const void* w, std::int64_t k) {
    return h2f(static_cast<const std::uint16_t*>(w)[k]);
  }
  static __m256 eight(const void* w, std::int64_t k) {
    return _mm256_cvtph_ps(_mm_loadu_si128(
        reinterpret_cast<const __m128i*>(static_cast<const std::uint16_t*>(w) + k)));
  }
};
struct CvtBF16 {
  static constexpr std::size_t kBytes = 2;
  static float one(const void* w, std::int64_t k) {
    const std::uint32_t b = static_cast<std::uint32_t>(static_cast<const std::uint16_t*>(w)[k])
                            << 16;
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }
  static __m256 eight(const void* w, std::int64_t k) {
    const __m128i h =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const std::uint16_t*>(w) + k));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
};

// In-register transpose of an 8 x 8 block: x[r] holds row r's 8 elements, on
// return x[k] holds element k of the 8 rows.
[[gnu::always_inline]] inline void transpose8(__m256 x[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(x[i], x[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(x[i], x[i + 1]);
  }
  // u[4h + j]: rows 4h..4h+3, elements j and j + 4 (one per 128-bit lane).
  for (int h = 0; h < 2; ++h) {
    u[4 * h] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0x44);
    u[4 * h + 1] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0xee);
    u[4 * h + 2] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0x44);
    u[4 * h + 3] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0xee);
  }
  for (int j = 0; j < 4; ++j) {
    x[j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x20);
    x[j + 4] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x31);
  }
}

// The float GEMM adds in float_dot's order (dot_avx2.cpp), so that a token's
// row is the same bits from either: per (row, token), chain j < 16 takes the
// elements k = j mod 16 below n16 = 16 floor(n / 16), chain j < 8 then element
// n16 + j when n - n16 >= 8, the chains meet as float_dot's registers do
// (j with j + 8, then hsum's tree), and the last n mod 8 elements follow one
// by one. Panel and activations hold the elements below n16 chain-major
// (position (k mod 16) (n16 / 16) + k / 16) so each chain reads contiguously.
std::size_t float_act_bytes(std::int64_t n) { return round64(static_cast<std::size_t>(n) * 4); }
std::size_t float_panel_bytes(std::int64_t n) { return static_cast<std::size_t>(n) * 4 * kRows; }

void float_prepare(std::int64_t n, const void* act, void* dst) {
  const auto* a = static_cast<const float*>(act);
  auto* d = static_cast<float*>(dst);
  const std::int64_t n16 = n / 16 * 16, m = n16 / 16;
  for (std::int64_t j = 0; j < 16; ++j)
    for (std::int64_t i = 0; i < m; ++i) d[j * m + i] = a[16 * i + j];
  std::memcpy(d + n16, a + n16, static_cast<std::size_t>(n - n16) * 4);
}

static_assert(kRows == 16, "float_pack fills 16 rows as two 8 x 8 halves");

template <class C>
void float_pack(std::int64_t n, const void* w, std::size_t row_stride, int n_rows, void* panel) {
  auto* p = static_cast<float*>(panel);
  const void* rows[kRows];
  for (int r = 0; r < n_rows; ++r) rows[r] = static_cast<const std::byte*>(w) + r * row_stride;
  const std::int64_t n16 = n / 16 * 16, m = n16 / 16;
  auto at = [&](std::int64_t k) { return k < n16 ? (k & 15) * m + (k >> 4) : k; };
  std::int64_t k = 0;
  for (; k + 8 <= n; k += 8) {  // 8 x 8 blocks through registers, two per 16 rows
    prefetch_rows_ahead(rows, n_rows, static_cast<std::size_t>(k) * C::kBytes);
    for (int h = 0; h < kRows; h += 8) {
      __m256 x[8];
      for (int r = 0; r < 8; ++r)
        x[r] = h + r < n_rows ? C::eight(rows[h + r], k) : _mm256_setzero_ps();
      transpose8(x);
      for (int j = 0; j < 8; ++j) _mm256_storeu_ps(p + at(k + j) * kRows + h, x[j]);
    }
  }
  for (; k < n; ++k) {
    for (int r = 0; r < n_rows; ++r) p[k * kRows + r] = C::one(rows[r], k);
    for (int r = n_rows; r < kRows; ++r) p[k * kRows + r] = 0.0f;
  }
}

template <int NT>
struct FloatTile {
  static void go(const std::byte* act, float* out, std::int64_t n, const float* p, std::size_t as,
                 int n_rows, std::size_t ldy) {
    const float* a[NT];
    for (int t = 0; t < NT; ++t) a[t] = reinterpret_cast<const float*>(act + t * as);
    const std::int64_t n16 = n / 16 * 16, m = n16 / 16, n8 = n / 8 * 8;
    // One chain at a time over NT tokens: 2 NT accumulators, the chain's two
    // panel vectors and a broadcast fit the 16 registers, so each step's
    // multiplicands come from 2 + NT loads (chains j and j + 8 side by side
    // needed one register more than there are, and reloaded a panel vector
    // per token).
    const auto chain = [&](int c, __m256(&acc)[2][NT]) {
      for (int t = 0; t < NT; ++t) acc[0][t] = acc[1][t] = _mm256_setzero_ps();
      const float* pc = p + c * m * kRows;
      for (std::int64_t i = 0; i < m; ++i) {
        const __m256 w0 = _mm256_loadu_ps(pc + i * kRows), w1 = _mm256_loadu_ps(pc + i * kRows + 8);
        for (int t = 0; t < NT; ++t) {
          const __m256 x = _mm256_broadcast_ss(a[t] + c * m + i);
          acc[0][t] = _mm256_fmadd_ps(w0, x, acc[0][t]);
          acc[1][t] = _mm256_fmadd_ps(w1, x, acc[1][t]);
        }
      }
    };
    // v[j] = chain j + chain j + 8 (float_dot adds its two registers first),
    // rows in lanes.
    __m256 v[8][2][NT];
    for (int j = 0; j < 8; ++j) {
      __m256 lo[2][NT], hi[2][NT];
      chain(j, lo);
      if (n8 > n16) {  // float_dot's 8-wide tail: the last element of chain j
        const float* pt = p + (n16 + j) * kRows;
        for (int t = 0; t < NT; ++t) {
          const __m256 x = _mm256_broadcast_ss(a[t] + n16 + j);
          lo[0][t] = _mm256_fmadd_ps(_mm256_loadu_ps(pt), x, lo[0][t]);
          lo[1][t] = _mm256_fmadd_ps(_mm256_loadu_ps(pt + 8), x, lo[1][t]);
        }
      }
      chain(j + 8, hi);
      for (int h = 0; h < 2; ++h)
        for (int t = 0; t < NT; ++t) v[j][h][t] = _mm256_add_ps(lo[h][t], hi[h][t]);
    }
    __m256 sum[2][NT];
    for (int h = 0; h < 2; ++h)
      for (int t = 0; t < NT; ++t) {
        const __m256 s0 = _mm256_add_ps(v[0][h][t], v[4][h][t]);
        const __m256 s1 = _mm256_add_ps(v[1][h][t], v[5][h][t]);
        const __m256 s2 = _mm256_add_ps(v[2][h][t], v[6][h][t]);
        const __m256 s3 = _mm256_add_ps(v[3][h][t], v[7][h][t]);
        __m256 x = _mm256_add_ps(_mm256_add_ps(s0, s2), _mm256_add_ps(s1, s3));
        for (std::int64_t k = n8; k < n; ++k)
          x = _mm256_fmadd_ps(_mm256_loadu_ps(p + k * kRows + 8 * h), _mm256_broadcast_ss(a[t] + k),
                              x);
        sum[h][t] = x;
      }
    store_rows(sum[0], NT, n_rows < kHalf ? n_rows : kHalf, out, ldy);
    if (n_rows > kHalf) store_rows(sum[1], NT, n_rows - kHalf, out + kHalf, ldy);
  }
};

void float_run(std::int64_t n, const void* panel, const void* act, std::int64_t n_tok, int n_rows,
               float* out, std::size_t ldy) {
  const std::size_t as = float_act_bytes(n);
  over_tokens<FloatTile, kFloatTokens>(n_tok, as, ldy, static_cast<const std::byte*>(act), out, n,
                                       static_cast<const float*>(panel), as, n_rows, ldy);
}

}  // namespace

// Below these token counts packing a panel costs more than the GEMM saves over
// the 4-token AVX2 dot kernels (bench_kernels, SEAM_CPU=avx2; docs/performance.md).
constexpr int kIntMinTokens = 12;
constexpr int kFloatMinTokens = 12;
// Q4_0's and Q8_0's dot kernels do the least work per weight: in whole models,
// weights streaming from DRAM, they stay ahead of the GEMM longer (`seam bench
// -p P -n 0 -t 2`, 1B shape, SEAM_CPU=avx2 on Zen 4, the nearer stand-in for
// an AVX2-only Zen 3). Q8_0 up to 32 tokens (pp24 98 against 107 tok/s, pp32
// 107 against 108); Q4_0, since its GEMM shares each broadcast between the
// panel's halves (stop 56), up to 16 (three rounds, dot kernels against GEMM:
// pp12 155-163 against 148-153, pp16 159-172 against 147-170, pp24 169-176
// against 177-194).
constexpr int kQ4_0MinTokens = 16;
constexpr int kQ8_0MinTokens = 32;

namespace {
// The int8 GEMM of decoder D; pack16 where D's weights can be interleaved.
template <class D>
constexpr GemmFns int_gemm(void (*pack16)(std::int64_t, const void*, void*) = nullptr,
                           int min_tokens = kIntMinTokens) {
  return {min_tokens, act_bytes<D>, panel_bytes<D>, prepare<D>, pack<D>, run<D>, 0, pack16};
}
}  // namespace

// Constant-initialized: no start-up code runs in this unit.
constinit const GemmFns gemm_q4_0 =
    int_gemm<DecQ4_0>(pack_group<DecQ4_0, GroupQ4_0>, kQ4_0MinTokens);
constinit const GemmFns gemm_q4_1 = int_gemm<DecQ4_1>(pack_group<DecQ4_1, GroupQ4_1>);
constinit const GemmFns gemm_q5_1 = int_gemm<DecQ5_1>(pack_group<DecQ5_1, GroupQ5_1>);
constinit const GemmFns gemm_mxfp4 = int_gemm<DecMXFP4>(pack_group<DecMXFP4, GroupMXFP4>);
constinit const GemmFns gemm_iq4_nl = int_gemm<DecIQ4_NL>(pack_group<DecIQ4_NL, GroupIQ4_NL>);
constinit const GemmFns gemm_iq4_xs = int_gemm<DecIQ4_XS>(pack_group<DecIQ4_XS, GroupIQ4_XS>);
constinit const GemmFns gemm_q2_k = int_gemm<DecQ2_K>(pack_group<DecQ2_K, GroupQ2_K>);
constinit const GemmFns gemm_q3_k = int_gemm<DecQ3_K>(pack_group<DecQ3_K, GroupQ3_K>);
constinit const GemmFns gemm_q5_k = int_gemm<DecQ5_K>(pack_group<DecQ5_K, GroupQ5_K>);
constinit const GemmFns gemm_q5_0 = int_gemm<DecQ5_0>(pack_group<DecQ5_0, GroupQ5_0>);
constinit const GemmFns gemm_q8_0 =
    int_gemm<DecQ8_0>(pack_group<DecQ8_0, GroupQ8_0>, kQ8_0MinTokens);
constinit const GemmFns gemm_q4_k = int_gemm<DecQ4_K>(pack_group<DecQ4_K, GroupQ4_K>);
constinit const GemmFns gemm_q6_k = int_gemm<DecQ6_K>(pack_group<DecQ6_K, GroupQ6_K>);
constinit const GemmFns gemm_f32 = {kFloatMinTokens, float_act_bytes,    float_panel_bytes,
                                    float_prepare,   float_pack<CvtF32>, float_run};
constinit const GemmFns gemm_f16 = {kFloatMinTokens, float_act_bytes,    float_panel_bytes,
                                    float_prepare,   float_pack<CvtF16>, float_run};
constinit const GemmFns gemm_bf16 = {kFloatMinTokens, float_act_bytes,     float_panel_bytes,
                                     float_prepare,   float_pack<CvtBF16>, float_run};

// Decode on interleaved weights: the GEMM's prepared activations.
namespace {
template <class D, class Src>
constexpr RowFns group_rows() {
  return {act_bytes<D>, prepare<D>, nullptr, nullptr, group_dot<D, Src>};
}
}  // namespace
constinit const RowFns rows_q4_0_16 = group_rows<DecQ4_0, GroupQ4_0>();
constinit const RowFns rows_q4_1_16 = group_rows<DecQ4_1, GroupQ4_1>();
constinit const RowFns rows_q5_0_16 = group_rows<DecQ5_0, GroupQ5_0>();
constinit const RowFns rows_q5_1_16 = group_rows<DecQ5_1, GroupQ5_1>();
constinit const RowFns rows_iq4_nl_16 = group_rows<DecIQ4_NL, GroupIQ4_NL>();
constinit const RowFns rows_mxfp4_16 = group_rows<DecMXFP4, GroupMXFP4>();
constinit const RowFns rows_q8_0_16 = group_rows<DecQ8_0, GroupQ8_0>();
constinit const RowFns rows_q2_k_16 = group_rows<DecQ2_K, GroupQ2_K>();
constinit const RowFns rows_q3_k_16 = group_rows<DecQ3_K, GroupQ3_K>();
constinit const RowFns rows_q4_k_16 = group_rows<DecQ4_K, GroupQ4_K>();
constinit const RowFns rows_q5_k_16 = group_rows<DecQ5_K, GroupQ5_K>();
constinit const RowFns rows_q6_k_16 = group_rows<DecQ6_K, GroupQ6_K>();
constinit const RowFns rows_iq4_xs_16 = group_rows<DecIQ4_XS, GroupIQ4_XS>();

}  // namespace seam::dot::avx2
