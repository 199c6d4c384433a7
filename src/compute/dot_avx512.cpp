// AVX-512 (F/BW/VL/VNNI) prefill GEMM for Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, Q2_K, Q3_K,
// Q4_K, Q5_K, Q6_K and IQ4_XS weights (int8, below) and for F32, F16 and BF16 weights (f32
// FMA, at the end).
// Compiled with the AVX-512 flags (CMakeLists.txt); see dot.h on keeping this
// unit's code out of baseline callers.
//
// One vpdpbusd multiplies 4 unsigned bytes by 4 signed bytes in each of 16
// int32 lanes and adds them. Lane r holds weight row r of a 16-row panel; the
// 4 activation bytes of a token are broadcast to all lanes. Activations are
// stored biased (a + 128, unsigned), so each lane gets sum (a + 128) * w; the
// panel's per-unit correction -128 * sum w, loaded as the accumulator's start,
// removes the bias. Integer sums stay exact (|sum| < 2^31 for any unit: at most
// 32 * 255 * 128 per unit); scales are applied in f32 per unit, so results
// differ from the scalar reference only in f32 rounding.
//
// A weight unit is the run of elements one scale covers (32 for Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0, Q4_K, Q5_K, IQ4_XS; 16 for Q2_K, Q3_K, Q6_K). Panel layout per unit: int8
// w[U/4][16 rows][4], int32 corr[16], f32 scale[16], then for the types with a min
// (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K) f32 min[16] (m, or -dmin * m for the K-quants).
// Prepared activations per token: u8 q[n] (a + 128), f32 d[n / SB] (one per
// activation block, SB = 32 for Q8_0/Q8_1, 256 for Q8_K), then for Q8_K f32
// sum[n / SU] (sums of the int8 activations over SU = 32 elements, 16 for Q2_K,
// for the mins) and for Q8_1 f32 s[n / 32] (the block's stored d * sum).
// GCC 12's AVX-512 headers self-initialize their "undefined" vectors
// (__m512 __Y = __Y), which -W(maybe-)uninitialized reports once inlined here.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstddef>
#include <cstring>
#include <type_traits>

#include "compute/dot.h"
#include "compute/group_k_avx512.h"
#include "compute/interleave.h"
#include "compute/prefetch.h"
#include "compute/quant_blocks.h"

namespace seam::dot::avx512 {
namespace {

using namespace seam::quant;

constexpr int kRows = kPanelRows;
constexpr int kMaxTokens = 8;  // tokens per micro-kernel call: 8 int + 8 f32 accumulators

inline float h2f(std::uint16_t h) { return _cvtsh_ss(h); }

std::size_t round64(std::size_t b) { return (b + 63) / 64 * 64; }

// ---------------------------------------------------------------- weight decoders

// 32 consecutive weights of one row as int8, with the scale (and min) of each
// 16-element half; for 32-element units both halves carry the same values.
struct Chunk {
  __m256i q;
  float scale[2];
  float min[2];
};

// The 32-element types, Q4_K and Q6_K pack by gathers (pack_gather*, below):
// theirs are only the panel and activation shapes, no row decoder.
// The 32-element types (Block, quant_blocks.h): x = (q - 8) * d (Q4_0),
// (q - 16) * d with the fifth bits of qh (Q5_0), q * d (Q8_0), d * q + m on
// Q8_1 activations (Q4_1, Q5_1), table[q] * d (IQ4_NL: kIQ4Values; MXFP4:
// kMXFP4Values, its E2M1 values kept doubled, integers, and d = 2^(e - 128)
// its E8M0 scale halved). (The Q4_K_M mix stores tensors whose rows are not a
// multiple of 256 as Q5_0.)
template <TensorType T, class B>
struct Dec32 {
  using Block = B;
  static constexpr TensorType kType = T;
  static constexpr int kUnit = 32, kActBlock = 32;
  static constexpr bool kMin = interleave::b32_has_min(T), kQ8_1 = kMin;
};
using DecQ4_0 = Dec32<TensorType::Q4_0, BlockQ4_0>;
using DecQ4_1 = Dec32<TensorType::Q4_1, BlockQ4_1>;
using DecQ5_0 = Dec32<TensorType::Q5_0, BlockQ5_0>;
using DecQ5_1 = Dec32<TensorType::Q5_1, BlockQ5_1>;
using DecQ8_0 = Dec32<TensorType::Q8_0, BlockQ8_0>;
using DecIQ4_NL = Dec32<TensorType::IQ4_NL, BlockIQ4_NL>;
using DecMXFP4 = Dec32<TensorType::MXFP4, BlockMXFP4>;

// Q4_K: x = d * sc * q - dmin * mn per 32-element sub-block.
struct DecQ4_K {
  static constexpr int kUnit = 32, kActBlock = 256;
  static constexpr bool kMin = true;
};

// Q5_K: Q4_K's nibbles plus bit j of qh[l] as bit 4 of sub-block j's element l.
struct DecQ5_K {
  static constexpr int kUnit = 32, kActBlock = 256;
  static constexpr bool kMin = true;
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

// IQ4_XS: IQ4_NL's codebook in 32-element sub-blocks with 6-bit signed scales.
struct DecIQ4_XS {
  static constexpr int kUnit = 32, kActBlock = 256;
  static constexpr bool kMin = false;
  static constexpr int kChunksPerGroup = 8;
  static constexpr std::size_t kGroupBytes = sizeof(BlockIQ4_XS);
  static void decode(const std::byte* g, Chunk* c) {
    const auto& b = *reinterpret_cast<const BlockIQ4_XS*>(g);
    const float d = h2f(b.d);
    const __m128i m = _mm_set1_epi8(0x0F);
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4Values)));
    for (int j = 0; j < 8; ++j) {
      const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 16 * j));
      const __m256i idx =
          _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m), _mm_and_si128(q, m));
      c[j].q = _mm256_shuffle_epi8(table, idx);
      c[j].scale[0] = c[j].scale[1] = d * static_cast<float>(iq4_xs_scale(b, j));
      c[j].min[0] = c[j].min[1] = 0.0f;
    }
  }
};

// Q6_K: x = d * sc * (q - 32) per 16-element sub-block.
struct DecQ6_K {
  static constexpr int kUnit = 16, kActBlock = 256;
  static constexpr bool kMin = false;
};

// 32-element run j (0..7) of a Q2_K/Q3_K block's 2-bit field: bits 2 * (j % 4)
// of bytes 32 * (j / 4) .. + 31.
inline __m256i crumbs(const std::uint8_t* qs, int j) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * (j / 4)));
  return _mm256_and_si256(_mm256_srli_epi16(v, 2 * (j % 4)), _mm256_set1_epi8(3));
}

// Q2_K: x = d * (sc & 15) * q - dmin * (sc >> 4) per 16-element sub-block.
struct DecQ2_K {
  static constexpr int kUnit = 16, kActBlock = 256;
  static constexpr bool kMin = true;
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

// Q3_K: the 2-bit field plus bit j of hmask[l] as bit 2 of run j's element l,
// minus 4; x = d * (sc - 32) * q per 16-element sub-block.
struct DecQ3_K {
  static constexpr int kUnit = 16, kActBlock = 256;
  static constexpr bool kMin = false;
  static constexpr int kChunksPerGroup = 8;
  static constexpr std::size_t kGroupBytes = sizeof(BlockQ3_K);
  static void decode(const std::byte* g, Chunk* c) {
    const auto& b = *reinterpret_cast<const BlockQ3_K*>(g);
    const float d = h2f(b.d);
    const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.hmask));
    for (int j = 0; j < 8; ++j) {
      const __m256i hb = _mm256_and_si256(_mm256_srli_epi16(hm, j), _mm256_set1_epi8(1));
      c[j].q = _mm256_sub_epi8(_mm256_or_si256(crumbs(b.qs, j), _mm256_slli_epi16(hb, 2)),
                               _mm256_set1_epi8(4));
      for (int h = 0; h < 2; ++h) {
        c[j].scale[h] = d * static_cast<float>(scale_q3_k(2 * j + h, b.scales) - 32);
        c[j].min[h] = 0.0f;
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

// Elements per activation sum for the mins: the unit for Q2_K's 16-element
// mins, 32 otherwise (Q4_K, Q5_K; the AMX kernels read this layout too).
template <class D>
constexpr int sum_unit() {
  return D::kMin && D::kUnit == 16 ? 16 : 32;
}

// ---------------------------------------------------------------- panels

template <class D>
constexpr std::size_t unit_bytes() {
  return static_cast<std::size_t>(D::kUnit) * kRows + 64 * (D::kMin ? 3 : 2);
}

template <class D>
std::size_t panel_bytes(std::int64_t n) {
  return static_cast<std::size_t>(n / D::kUnit) * unit_bytes<D>();
}

// Sums of the int8 values of each 16-element half of a chunk.
inline void half_sums(__m256i q, int s[2]) {
  // sad of (q + 128) against 0: four sums of 8 bytes, each biased by 8 * 128.
  const __m256i sad =
      _mm256_sad_epu8(_mm256_xor_si256(q, _mm256_set1_epi8(-128)), _mm256_setzero_si256());
  alignas(32) std::int64_t v[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(v), sad);
  s[0] = static_cast<int>(v[0] + v[1]) - 16 * 128;
  s[1] = static_cast<int>(v[2] + v[3]) - 16 * 128;
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
          int s[2];
          half_sums(c[i][k].q, s);
          for (int h = 0; h < 2; ++h) {
            const std::int64_t u = (e0 + 16 * h) / U;
            std::byte* base = out + u * ub + U * kRows;
            // A 32-element unit sums both halves; its scale is the same in both.
            std::int32_t corr = -128 * (U == 32 ? s[0] + s[1] : s[h]);
            std::memcpy(base + 4 * (r0 + i), &corr, 4);
            std::memcpy(base + 64 + 4 * (r0 + i), &c[i][k].scale[h], 4);
            if constexpr (D::kMin) std::memcpy(base + 128 + 4 * (r0 + i), &c[i][k].min[h], 4);
            if (U == 32) break;
          }
        }
      }
    }
  }
}

// Panels without decoding rows one by one (the 32-element types, Q4_K, Q6_K): a dword gather
// at the same offset of the 16 rows' blocks is already one 4-element group of
// the panel ([group][row][4 bytes]); a dword of nibbles gives two groups. The
// sums for the kOff correction come from vpdpbusd against ones, the scales
// from gathers of the blocks' fp16 fields. The same bytes as pack<D> (the
// generic decode-and-transpose, ~3x slower: a sixth of a 16-token GEMM).
struct PanelGather {
  __mmask16 live;        // the panel's rows that exist
  __mmask64 live_bytes;  // their 4 bytes in a group
  __m512i rows;          // byte offset of each row
  std::byte* out;

  PanelGather(std::size_t row_stride, int n_rows, void* panel)
      : out(static_cast<std::byte*>(panel)) {
    const int n_live = n_rows < kRows ? n_rows : kRows;
    live = static_cast<__mmask16>((1u << n_live) - 1);
    std::uint64_t bytes = 0;
    for (int r = 0; r < n_live; ++r) bytes |= 0xFull << (4 * r);
    live_bytes = _cvtu64_mask64(bytes);
    rows =
        _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                           _mm512_set1_epi32(static_cast<int>(row_stride)));
  }
  // The dword at `p` of row 0's block, and the same offset of every live row (0 elsewhere).
  __m512i dword(const std::byte* p) const {
    return _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, rows, p, 1);
  }
  // A group of unit `u` (unit_bytes ub), summed into `sum` for the correction.
  static void put(std::byte* u, int group, __m512i q, __m512i& sum) {
    _mm512_storeu_si512(u + 64 * group, q);
    sum = _mm512_dpbusd_epi32(sum, _mm512_set1_epi8(1), q);
  }
  // -128 * sum (the kOff correction of unsigned activations), after the
  // `unit` elements' groups; the scales follow it.
  static void put_correction(std::byte* u, int unit, __m512i sum) {
    _mm512_storeu_si512(u + unit * kRows,
                        _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sum, 7)));
  }
};

inline __m512 f16_lanes(__m512i low16) { return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(low16)); }

// The file's fifth bits (qh, bit e: element e): 4 bits (one step's elements)
// -> bit 4 of each of the step's 4 bytes, looked up in 16 int32 lanes.
constexpr auto kFifthBits = [] {
  struct {
    alignas(64) std::int32_t v[16];
  } t{};
  for (int x = 0; x < 16; ++x)
    for (int i = 0; i < 4; ++i)
      if (x >> i & 1) t.v[x] |= 0x10 << (8 * i);
  return t;
}();

// The values, scales, mins and fifth bits of block b of a panel's 16 rows, 4
// bytes per row at a time: gathered from rows in the file's layout, or loaded
// from a group of interleaved rows (interleave.h), which holds them side by
// side already. fifth_step(fifth_word(b), k): 0x10 in the bytes of step k
// (elements 4k..4k+3) whose fifth bit is set.
template <class Block>
struct RowsSource {
  PanelGather g;
  const std::byte* w;
  const std::byte* block(std::int64_t b) const { return w + b * sizeof(Block); }
  __m512i values(std::int64_t b, int m) const {
    return g.dword(block(b) + offsetof(Block, qs) + 4 * m);
  }
  __m512 scales(std::int64_t b) const {
    if constexpr (std::is_same_v<Block, BlockMXFP4>)
      return group_k::mxfp4_scales(_mm512_and_si512(g.dword(block(b)), _mm512_set1_epi32(0xFF)));
    return f16_lanes(g.dword(block(b)));
  }
  __m512 mins(std::int64_t b) const { return f16_lanes(g.dword(block(b) + offsetof(Block, m))); }
  __m512i fifth_word(std::int64_t b) const { return g.dword(block(b) + offsetof(Block, qh)); }
  static __m512i fifth_step(__m512i word, int k) {
    return _mm512_permutexvar_epi32(
        _mm512_and_si512(_mm512_srli_epi32(word, 4 * k), _mm512_set1_epi32(0xF)),
        _mm512_load_si512(kFifthBits.v));
  }
  __mmask64 live_bytes() const { return g.live_bytes; }
};
template <TensorType T>
struct GroupSource {
  static constexpr std::size_t kBlock = interleave::block_bytes(T);
  const std::byte* w;
  __m512i values(std::int64_t b, int m) const {
    return _mm512_loadu_si512(w + b * kBlock + interleave::b32_values(T) + 64 * m);
  }
  __m512 scales(std::int64_t b) const { return group_k::b32_scales<T>(w + b * kBlock); }
  __m512 mins(std::int64_t b) const { return group_k::b32_mins(w + b * kBlock); }
  __m512i fifth_word(std::int64_t b) const {
    return _mm512_loadu_si512(w + b * kBlock + interleave::b32_high(T));
  }
  // Byte i of a row's word holds element 4s + i's fifth bit at bit s (no bit
  // of the next byte reaches bit 4 in either shift).
  static __m512i fifth_step(__m512i word, int k) {
    const __m512i at4 = k <= 4 ? _mm512_slli_epi16(word, 4 - k) : _mm512_srli_epi16(word, k - 4);
    return _mm512_and_si512(at4, _mm512_set1_epi8(0x10));
  }
  static __mmask64 live_bytes() { return ~__mmask64{0}; }
};

template <class D, class Source>
void pack_dwords(std::int64_t n, const Source& src, void* panel) {
  constexpr TensorType T = D::kType;
  constexpr bool kQ8 = T == TensorType::Q8_0;
  constexpr bool kTable = interleave::b32_has_codebook(T);
  constexpr bool kFifth = interleave::b32_has_fifth(T);
  constexpr int kOff = T == TensorType::Q4_0 ? 8 : T == TensorType::Q5_0 ? 16 : 0;
  constexpr std::size_t ub = unit_bytes<D>();
  static_assert(D::kUnit == 32 && D::kActBlock == 32);
  const __m512i m4 = _mm512_set1_epi8(0x0F), off = _mm512_set1_epi8(kOff);
  __m512i table = _mm512_setzero_si512();
  if constexpr (kTable) table = group_k::b32_codebook_lanes<T>();
  // The values of one step's bytes as the panel holds them (dead rows 0).
  auto finish = [&](__m512i q) {
    if constexpr (kTable) return _mm512_maskz_shuffle_epi8(src.live_bytes(), table, q);
    if constexpr (kOff != 0) return _mm512_maskz_sub_epi8(src.live_bytes(), q, off);
    return q;
  };
  for (std::int64_t b = 0; b < n / 32; ++b) {
    std::byte* u = static_cast<std::byte*>(panel) + b * ub;
    __m512i sum = _mm512_setzero_si512();
    __m512i fifth = _mm512_setzero_si512();
    if constexpr (kFifth) fifth = src.fifth_word(b);
    for (int m = 0; m < (kQ8 ? 8 : 4); ++m) {
      const __m512i v = src.values(b, m);
      if constexpr (kQ8) {
        PanelGather::put(u, m, v, sum);
      } else {
        __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
        if constexpr (kFifth) {
          lo = _mm512_or_si512(lo, Source::fifth_step(fifth, m));
          hi = _mm512_or_si512(hi, Source::fifth_step(fifth, m + 4));
        }
        PanelGather::put(u, m, finish(lo), sum);
        PanelGather::put(u, m + 4, finish(hi), sum);
      }
    }
    PanelGather::put_correction(u, 32, sum);
    _mm512_storeu_ps(u + 32 * kRows + 64, src.scales(b));
    if constexpr (D::kMin) _mm512_storeu_ps(u + 32 * kRows + 128, src.mins(b));
  }
}

template <class D>
void pack_gather(std::int64_t n, const void* w, std::size_t row_stride, int n_rows, void* panel) {
  const RowsSource<typename D::Block> src{PanelGather(row_stride, n_rows, panel),
                                          static_cast<const std::byte*>(w)};
  pack_dwords<D>(n, src, panel);
}

// pack_gather's panel from a group of 16 interleaved rows.
template <class D>
void pack16(std::int64_t n, const void* group, void* panel) {
  pack_dwords<D>(n, GroupSource<D::kType>{static_cast<const std::byte*>(group)}, panel);
}

// One Q4_K super-block of a panel's 16 rows -> its 8 units: the nibbles of
// sub-blocks 2p (low) and 2p + 1 (high) from step m of Src, and the f32
// products d * sc and -dmin * mn. Src reads the rows in the file's layout
// (Q4KGathered) or a group of interleaved rows (K4Group), row r in lane r;
// K4Group<Q5_K> adds each value's fifth bit (Q5_K's panel is Q4_K's with 5-bit
// values).
template <class Src>
void pack_q4_k_block(const Src& src, std::byte* u0) {
  constexpr std::size_t ub = unit_bytes<DecQ4_K>();
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const __m512 d = src.d(), neg_dmin = _mm512_sub_ps(_mm512_setzero_ps(), src.dmin());
  for (int j = 0; j < 8; ++j) {
    __m512i sc, mn;
    src.scale_min(j, sc, mn);
    std::byte* base = u0 + j * ub + 32 * kRows;
    _mm512_storeu_ps(base + 64, _mm512_mul_ps(d, _mm512_cvtepi32_ps(sc)));
    _mm512_storeu_ps(base + 128, _mm512_mul_ps(neg_dmin, _mm512_cvtepi32_ps(mn)));
  }
  for (int p = 0; p < 4; ++p) {
    std::byte* lo_u = u0 + 2 * p * ub;
    std::byte* hi_u = lo_u + ub;
    __m512i lo_sum = _mm512_setzero_si512(), hi_sum = _mm512_setzero_si512();
    for (int m = 0; m < 8; ++m) {
      const __m512i v = src.step(p, m);
      __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
      if constexpr (Src::kFifth) src.add_fifth(p, m, lo, hi);
      PanelGather::put(lo_u, m, lo, lo_sum);
      PanelGather::put(hi_u, m, hi, hi_sum);
    }
    PanelGather::put_correction(lo_u, 32, lo_sum);
    PanelGather::put_correction(hi_u, 32, hi_sum);
  }
}

// Q4_K rows in the file's layout: 32 gathers per super-block give both nibble
// halves of its four sub-block pairs; the 12 scale bytes come in three more
// and are unpacked as scale_min_k4 does, every row in its lane.
struct Q4KGathered {
  static constexpr bool kFifth = false;
  const PanelGather& g;
  const std::byte* blk;
  __m512i sc3[3];
  __m512i dd;  // d | dmin << 16
  Q4KGathered(const PanelGather& gather, const std::byte* block) : g(gather), blk(block) {
    for (int k = 0; k < 3; ++k) sc3[k] = g.dword(blk + offsetof(BlockQ4_K, scales) + 4 * k);
    dd = g.dword(blk);
  }
  __m512 d() const { return f16_lanes(dd); }
  __m512 dmin() const { return f16_lanes(_mm512_srli_epi32(dd, 16)); }
  __m512i byte(int k, int mask) const {
    return _mm512_and_si512(_mm512_srli_epi32(sc3[k / 4], 8 * (k % 4)), _mm512_set1_epi32(mask));
  }
  __m512i top2(int k) const {  // bits 6..7 of byte k, as bits 4..5
    return _mm512_slli_epi32(_mm512_srli_epi32(byte(k, 0xFF), 6), 4);
  }
  void scale_min(int j, __m512i& sc, __m512i& mn) const {
    sc = j < 4 ? byte(j, 63) : _mm512_or_si512(byte(j + 4, 0xF), top2(j - 4));
    mn =
        j < 4 ? byte(j + 4, 63) : _mm512_or_si512(_mm512_srli_epi32(byte(j + 4, 0xFF), 4), top2(j));
  }
  __m512i step(int p, int m) const {
    return g.dword(blk + offsetof(BlockQ4_K, qs) + 32 * p + 4 * m);
  }
};

// A Q4_K or Q5_K group block (interleave.h): the same values by loads, and
// Q5_K's fifth bits.
template <TensorType T>
struct K4Group {
  static constexpr bool kFifth = T == TensorType::Q5_K;
  const std::byte* blk;
  __m512 d() const { return group_k::half16(blk); }
  __m512 dmin() const { return group_k::half16(blk + interleave::kQ4KDmin); }
  void scale_min(int j, __m512i& sc, __m512i& mn) const { group_k::q4_k_scale_min(blk, j, sc, mn); }
  __m512i step(int p, int m) const {
    return _mm512_loadu_si512(blk + interleave::k4_values(T) + 64 * (8 * p + m));
  }
  void add_fifth(int p, int m, __m512i& lo, __m512i& hi) const {
    group_k::q5_k_add_fifth(blk, p, m, lo, hi);
  }
};

void pack_gather_q4_k(std::int64_t n, const void* w, std::size_t row_stride, int n_rows,
                      void* panel) {
  const PanelGather g(row_stride, n_rows, panel);
  for (std::int64_t sb = 0; sb < n / kQK_K; ++sb) {
    const std::byte* blk = static_cast<const std::byte*>(w) + sb * sizeof(BlockQ4_K);
    pack_q4_k_block(Q4KGathered(g, blk), g.out + sb * 8 * unit_bytes<DecQ4_K>());
  }
}

// pack_gather_q4_k's panel from a Q4_K group.
void pack16_q4_k(std::int64_t n, const void* group, void* panel) {
  for (std::int64_t sb = 0; sb < n / kQK_K; ++sb) {
    const std::byte* blk =
        static_cast<const std::byte*>(group) + sb * interleave::block_bytes(TensorType::Q4_K);
    pack_q4_k_block(K4Group<TensorType::Q4_K>{blk},
                    static_cast<std::byte*>(panel) + sb * 8 * unit_bytes<DecQ4_K>());
  }
}

// pack<DecQ5_K>'s panel from a Q5_K group.
void pack16_q5_k(std::int64_t n, const void* group, void* panel) {
  static_assert(unit_bytes<DecQ5_K>() == unit_bytes<DecQ4_K>());
  for (std::int64_t sb = 0; sb < n / kQK_K; ++sb) {
    const std::byte* blk =
        static_cast<const std::byte*>(group) + sb * interleave::block_bytes(TensorType::Q5_K);
    pack_q4_k_block(K4Group<TensorType::Q5_K>{blk},
                    static_cast<std::byte*>(panel) + sb * 8 * unit_bytes<DecQ5_K>());
  }
}

// pack<DecQ2_K>'s / pack<DecQ3_K>'s / pack_gather_q6_k's panel from a Q2_K /
// Q3_K / Q6_K group: the values less their offset, the scales, Q2_K's mins.
template <TensorType T>
void pack16_k16(std::int64_t n, const void* group, void* panel) {
  using D = std::conditional_t<T == TensorType::Q2_K, DecQ2_K,
                               std::conditional_t<T == TensorType::Q3_K, DecQ3_K, DecQ6_K>>;
  constexpr std::size_t ub = unit_bytes<D>();
  const __m512i offset = _mm512_set1_epi8(group_k::k16_offset<T>());
  for (std::int64_t sb = 0; sb < n / kQK_K; ++sb) {
    const std::byte* blk = static_cast<const std::byte*>(group) + sb * interleave::block_bytes(T);
    const __m512 d = group_k::half16(blk), neg_dmin = group_k::k16_neg_dmin<T>(blk);
    for (int u = 0; u < 16; ++u) {
      std::byte* pu = static_cast<std::byte*>(panel) + (sb * 16 + u) * ub;
      __m512i q[4];
      __m512 sc, mn;
      group_k::k16_unit<T>(blk, u, d, neg_dmin, q, sc, mn);
      __m512i sum = _mm512_setzero_si512();
      for (int s = 0; s < 4; ++s) PanelGather::put(pu, s, _mm512_sub_epi8(q[s], offset), sum);
      PanelGather::put_correction(pu, 16, sum);
      _mm512_storeu_ps(pu + 16 * kRows + 64, sc);
      if constexpr (D::kMin) _mm512_storeu_ps(pu + 16 * kRows + 128, mn);
    }
  }
}

// pack<DecIQ4_XS>'s panel from an IQ4_XS group.
void pack16_iq4_xs(std::int64_t n, const void* group, void* panel) {
  constexpr std::size_t ub = unit_bytes<DecIQ4_XS>();
  for (std::int64_t sb = 0; sb < n / kQK_K; ++sb) {
    const std::byte* blk =
        static_cast<const std::byte*>(group) + sb * interleave::block_bytes(TensorType::IQ4_XS);
    const __m512 d = group_k::half16(blk);
    for (int j = 0; j < 8; ++j) {
      std::byte* pu = static_cast<std::byte*>(panel) + (sb * 8 + j) * ub;
      __m512i lo[4], hi[4];
      group_k::iq4_xs_unit(blk, j, false, lo, hi);
      __m512i sum = _mm512_setzero_si512();
      for (int m = 0; m < 4; ++m) {
        PanelGather::put(pu, m, lo[m], sum);
        PanelGather::put(pu, 4 + m, hi[m], sum);
      }
      PanelGather::put_correction(pu, 32, sum);
      _mm512_storeu_ps(
          pu + 32 * kRows + 64,
          _mm512_mul_ps(d, _mm512_cvtepi32_ps(group_k::scales6(blk, interleave::kXSScaleLow,
                                                               interleave::kXSScaleHigh, j))));
    }
  }
}

// Q6_K: per half super-block, 24 gathers (ql twice, qh once per 4-byte
// step) give the four 32-element chunks' groups (lo | hi << 4, minus 32), each
// chunk two 16-element units; the 16 int8 scales come in four more. d is the
// block's last two bytes: read with the two scale bytes before it, so no
// gather reaches past the block.
void pack_gather_q6_k(std::int64_t n, const void* w, std::size_t row_stride, int n_rows,
                      void* panel) {
  constexpr std::size_t ub = unit_bytes<DecQ6_K>();
  const PanelGather g(row_stride, n_rows, panel);
  const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(3), k32 = _mm512_set1_epi8(32);
  for (std::int64_t sb = 0; sb < n / kQK_K; ++sb) {
    const std::byte* blk = static_cast<const std::byte*>(w) + sb * sizeof(BlockQ6_K);
    std::byte* u0 = g.out + sb * 16 * ub;  // 16-element unit k is u0 + k * ub
    const __m512 d = f16_lanes(_mm512_srli_epi32(g.dword(blk + offsetof(BlockQ6_K, d) - 2), 16));
    for (int q = 0; q < 4; ++q) {
      const __m512i sc = g.dword(blk + offsetof(BlockQ6_K, scales) + 4 * q);
      for (int b = 0; b < 4; ++b) {  // sign-extended byte b of each lane
        const __m512i v = _mm512_srai_epi32(_mm512_slli_epi32(sc, 24 - 8 * b), 24);
        _mm512_storeu_ps(u0 + (4 * q + b) * ub + 16 * kRows + 64,
                         _mm512_mul_ps(d, _mm512_cvtepi32_ps(v)));
      }
    }
    for (int h = 0; h < 2; ++h) {
      __m512i sum[8];  // units 8h .. 8h + 7
      for (__m512i& x : sum) x = _mm512_setzero_si512();
      for (int m = 0; m < 8; ++m) {
        const __m512i l0 = g.dword(blk + offsetof(BlockQ6_K, ql) + 64 * h + 4 * m);
        const __m512i l1 = g.dword(blk + offsetof(BlockQ6_K, ql) + 64 * h + 32 + 4 * m);
        const __m512i qh = g.dword(blk + offsetof(BlockQ6_K, qh) + 32 * h + 4 * m);
        const __m512i lo[4] = {_mm512_and_si512(l0, m4), _mm512_and_si512(l1, m4),
                               _mm512_and_si512(_mm512_srli_epi16(l0, 4), m4),
                               _mm512_and_si512(_mm512_srli_epi16(l1, 4), m4)};
        for (int gq = 0; gq < 4; ++gq) {
          const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(qh, 2 * gq), m2);
          const __m512i v = _mm512_maskz_sub_epi8(
              g.live_bytes, _mm512_or_si512(lo[gq], _mm512_slli_epi16(hi, 4)), k32);
          const int unit = 2 * gq + m / 4;  // of this half's 8
          PanelGather::put(u0 + (8 * h + unit) * ub, m % 4, v, sum[unit]);
        }
      }
      for (int k = 0; k < 8; ++k) PanelGather::put_correction(u0 + (8 * h + k) * ub, 16, sum[k]);
    }
  }
}

// ---------------------------------------------------------------- activations

template <class D>
std::size_t act_bytes(std::int64_t n) {
  const std::size_t sums = D::kActBlock == 256 ? static_cast<std::size_t>(n / sum_unit<D>()) * 4
                           : q8_1_act<D>()     ? static_cast<std::size_t>(n / 32) * 4
                                               : 0;
  return round64(static_cast<std::size_t>(n) + static_cast<std::size_t>(n / D::kActBlock) * 4 +
                 sums);
}

template <class D>
void prepare(std::int64_t n, const void* act, void* dst) {
  auto* q = static_cast<std::uint8_t*>(dst);
  auto* d = reinterpret_cast<float*>(q + n);
  const __m256i bias = _mm256_set1_epi8(-128);
  if constexpr (q8_1_act<D>()) {
    const auto* y = static_cast<const BlockQ8_1*>(act);
    float* s = d + n / 32;
    for (std::int64_t i = 0; i < n / 32; ++i) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * i), _mm256_xor_si256(v, bias));
      d[i] = h2f(y[i].d);
      s[i] = h2f(y[i].s);
    }
  } else if constexpr (D::kActBlock == 32) {
    const auto* y = static_cast<const BlockQ8_0*>(act);
    for (std::int64_t i = 0; i < n / 32; ++i) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * i), _mm256_xor_si256(v, bias));
      d[i] = h2f(y[i].d);
    }
  } else {
    constexpr int SU = sum_unit<D>();
    const auto* y = static_cast<const BlockQ8_K*>(act);
    float* sums = d + n / 256;
    for (std::int64_t i = 0; i < n / 256; ++i) {
      for (int j = 0; j < 8; ++j) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs + 32 * j));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 256 * i + 32 * j),
                            _mm256_xor_si256(v, bias));
      }
      for (int j = 0; j < 256 / SU; ++j) {
        sums[256 / SU * i + j] = static_cast<float>(
            SU == 16 ? y[i].bsums[j] : y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
      }
      d[i] = y[i].d;
    }
  }
}

// ---------------------------------------------------------------- micro-kernel

inline __m512i bcast4(const std::uint8_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// 16 panel rows x NT tokens: out[t * ldy + r] for r < n_rows.
template <class D, int NT>
void tile(std::int64_t n, const std::byte* panel, const std::byte* act, std::size_t as, int n_rows,
          float* out, std::size_t ldy) {
  constexpr int U = D::kUnit, SB = D::kActBlock, G = SB / U;
  constexpr std::size_t ub = unit_bytes<D>();
  const std::uint8_t* aq[NT];
  const float* ad[NT];
  const float* asum[NT];
  __m512 facc[NT];
  for (int t = 0; t < NT; ++t) {
    aq[t] = reinterpret_cast<const std::uint8_t*>(act + t * as);
    ad[t] = reinterpret_cast<const float*>(aq[t] + n);
    asum[t] = ad[t] + n / SB;  // per sum_unit elements, or per Q8_1 block
    facc[t] = _mm512_setzero_ps();
  }
  for (std::int64_t sb = 0; sb < n / SB; ++sb) {
    __m512 tacc[NT];
    for (int t = 0; t < NT; ++t) tacc[t] = _mm512_setzero_ps();
    for (int g = 0; g < G; ++g) {
      const std::int64_t u = sb * G + g;
      const std::byte* pu = panel + u * ub;
      const __m512i corr = _mm512_loadu_si512(pu + U * kRows);
      __m512i iacc[NT];
      for (int t = 0; t < NT; ++t) iacc[t] = corr;
      for (int k = 0; k < U / 4; ++k) {
        const __m512i wv = _mm512_loadu_si512(pu + 64 * k);
        for (int t = 0; t < NT; ++t) {
          iacc[t] = _mm512_dpbusd_epi32(iacc[t], bcast4(aq[t] + u * U + 4 * k), wv);
        }
      }
      const __m512 sc = _mm512_loadu_ps(pu + U * kRows + 64);
      for (int t = 0; t < NT; ++t)
        tacc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(iacc[t]), sc, tacc[t]);
      if constexpr (D::kMin && !q8_1_act<D>()) {
        // The activation sums cover U elements (a Q8_K block's d comes after).
        const __m512 mn = _mm512_loadu_ps(pu + U * kRows + 128);
        for (int t = 0; t < NT; ++t) {
          tacc[t] = _mm512_fmadd_ps(mn, _mm512_set1_ps(asum[t][u]), tacc[t]);
        }
      }
    }
    for (int t = 0; t < NT; ++t) {
      facc[t] = _mm512_fmadd_ps(tacc[t], _mm512_set1_ps(ad[t][sb]), facc[t]);
    }
    if constexpr (q8_1_act<D>()) {
      // One unit per Q8_1 block: the min meets the block's s = d * sum(a) as is.
      const __m512 mn = _mm512_loadu_ps(panel + sb * ub + U * kRows + 128);
      for (int t = 0; t < NT; ++t) {
        facc[t] = _mm512_fmadd_ps(mn, _mm512_set1_ps(asum[t][sb]), facc[t]);
      }
    }
  }
  const __mmask16 mask = static_cast<__mmask16>((1u << n_rows) - 1);
  for (int t = 0; t < NT; ++t) _mm512_mask_storeu_ps(out + t * ldy, mask, facc[t]);
}

template <class D>
void run(std::int64_t n, const void* panel, const void* act, std::int64_t n_tok, int n_rows,
         float* out, std::size_t ldy) {
  const auto* p = static_cast<const std::byte*>(panel);
  const auto* a = static_cast<const std::byte*>(act);
  const std::size_t as = act_bytes<D>(n);
  std::int64_t t = 0;
  for (; t + kMaxTokens <= n_tok; t += kMaxTokens) {
    tile<D, kMaxTokens>(n, p, a + t * as, as, n_rows, out + t * ldy, ldy);
  }
  switch (n_tok - t) {
    case 0:
      break;
    case 1:
      tile<D, 1>(n, p, a + t * as, as, n_rows, out + t * ldy, ldy);
      break;
    case 2:
      tile<D, 2>(n, p, a + t * as, as, n_rows, out + t * ldy, ldy);
      break;
    case 3:
      tile<D, 3>(n, p, a + t * as, as, n_rows, out + t * ldy, ldy);
      break;
    case 4:
      tile<D, 4>(n, p, a + t * as, as, n_rows, out + t * ldy, ldy);
      break;
    case 5:
      tile<D, 5>(n, p, a + t * as, as, n_rows, out + t * ldy, ldy);
      break;
    case 6:
      tile<D, 6>(n, p, a + t * as, as, n_rows, out + t * ldy, ldy);
      break;
    default:
      tile<D, 7>(n, p, a + t * as, as, n_rows, out + t * ldy, ldy);
      break;
  }
}

// ---------------------------------------------------------------- float weights

// F32 / F16 / BF16 weights: the panel is the 16 rows converted to f32 and
// transposed, f32 p[n][16] with the elements in chain_pos order (as the
// activations, prepared as f32 in that order). One FMA per element and
// token covers 16 rows, with the token's value broadcast from memory, so a
// panel in L2 meets every token without re-reading activation vectors per row.
// one(): element k of a row; sixteen(): elements [k, k + 16) as f32.
struct CvtF32 {
  static constexpr std::size_t kBytes = 4;
  static float one(const void* w, std::int64_t k) { return static_cast<const float*>(w)[k]; }
  static __m512 sixteen(const void* w, std::int64_t k) {
    return _mm512_loadu_ps(static_cast<const float*>(w) + k);
  }
};
struct CvtF16 {
  static constexpr std::size_t kBytes = 2;
  static float one(const void* w, std::int64_t k) {
    return h2f(static_cast<const std::uint16_t*>(w)[k]);
  }
  static __m512 sixteen(const void* w, std::int64_t k) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(static_cast<const std::uint16_t*>(w) + k)));
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
  static __m512 sixteen(const void* w, std::int64_t k) {
    const __m256i h = _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(static_cast<const std::uint16_t*>(w) + k));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
};

// In-register transpose of a 16 x 16 block: x[r] holds row r's 16 elements,
// on return x[k] holds element k of the 16 rows. Four rounds of 16 shuffles:
// pairs of rows, then quads (as doubles), then 128-bit lanes twice.
void transpose16(__m512 x[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(x[i], x[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(x[i], x[i + 1]);
  }
  // u[4q + j]: rows 4q..4q+3, elements j, j + 4, j + 8, j + 12 (one per lane).
  __m512 u[16];
  for (int q = 0; q < 4; ++q) {
    const __m512d a = _mm512_castps_pd(t[4 * q]), b = _mm512_castps_pd(t[4 * q + 1]);
    const __m512d c = _mm512_castps_pd(t[4 * q + 2]), d = _mm512_castps_pd(t[4 * q + 3]);
    u[4 * q] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    u[4 * q + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    u[4 * q + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    u[4 * q + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int j = 0; j < 4; ++j) {
    // Lanes (rows 0-3 | 4-7) and (8-11 | 12-15) of elements j and j + 8, then j + 4 and j + 12.
    const __m512 v0 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x88);
    const __m512 v1 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xdd);
    const __m512 v2 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x88);
    const __m512 v3 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xdd);
    x[j] = _mm512_shuffle_f32x4(v0, v2, 0x88);
    x[j + 8] = _mm512_shuffle_f32x4(v0, v2, 0xdd);
    x[j + 4] = _mm512_shuffle_f32x4(v1, v3, 0x88);
    x[j + 12] = _mm512_shuffle_f32x4(v1, v3, 0xdd);
  }
}

std::size_t float_act_bytes(std::int64_t n) { return round64(static_cast<std::size_t>(n) * 4); }
std::size_t float_panel_bytes(std::int64_t n) { return static_cast<std::size_t>(n) * 4 * kRows; }

// Panels and prepared activations hold element k at chain_pos(k): below n32 =
// n - n % 32 chain-major (float_tile's chain pairs j and j + 16, j < 16, each
// pair's elements in turn: j, j + 16, j + 32, j + 48, ...), so that each of
// float_tile's passes reads its panel lines and activations in sequence; the
// tail past n32 where it is.
inline std::int64_t chain_pos(std::int64_t k, std::int64_t n32) {
  if (k >= n32) return k;
  return (k % 16) * (n32 / 16) + k / 16;
}

void float_prepare(std::int64_t n, const void* act, void* dst) {
  const auto* a = static_cast<const float*>(act);
  auto* d = static_cast<float*>(dst);
  const std::int64_t n32 = n - n % 32, len = n32 / 16;
  // Eight 32-element blocks m at a time are 16 vectors (halves h of each);
  // transposed, vector j is pair j's chain_pos 2 m + h for the eight: one store.
  std::int64_t m = 0;
  for (; m + 8 <= n32 / 32; m += 8) {
    __m512 x[16];
    for (int v = 0; v < 16; ++v) x[v] = _mm512_loadu_ps(a + 32 * m + 16 * v);
    transpose16(x);
    for (int j = 0; j < 16; ++j) _mm512_storeu_ps(d + j * len + 2 * m, x[j]);
  }
  for (std::int64_t k = 32 * m; k < n; ++k) d[chain_pos(k, n32)] = a[k];
}

static_assert(kRows == 16, "float_pack transposes 16 x 16 blocks");

template <class C>
void float_pack(std::int64_t n, const void* w, std::size_t row_stride, int n_rows, void* panel) {
  // Element-major so that the stores run sequentially through the panel.
  auto* p = static_cast<float*>(panel);
  const void* rows[kRows];
  for (int r = 0; r < n_rows; ++r) rows[r] = static_cast<const std::byte*>(w) + r * row_stride;
  const std::int64_t n32 = n - n % 32;
  std::int64_t k = 0;
  for (; k + 16 <= n; k += 16) {  // 16 x 16 blocks through registers
    prefetch_rows_ahead(rows, n_rows, static_cast<std::size_t>(k) * C::kBytes);
    __m512 x[16];
    for (int r = 0; r < kRows; ++r)
      x[r] = r < n_rows ? C::sixteen(rows[r], k) : _mm512_setzero_ps();
    transpose16(x);
    for (int j = 0; j < 16; ++j) _mm512_storeu_ps(p + chain_pos(k + j, n32) * kRows, x[j]);
  }
  for (; k < n; ++k) {  // past n32: in place
    for (int r = 0; r < n_rows; ++r) p[k * kRows + r] = C::one(rows[r], k);
    for (int r = n_rows; r < kRows; ++r) p[k * kRows + r] = 0.0f;
  }
}

// Each (row, token) in the row kernel's order (dot_rows_avx512.cpp
// float_block), so that a token's row is the same bits decoded alone or in a
// prefill batch (docs/server.md, "Batch invariance"): chain j < 32 adds the
// elements k = j (mod 32) below n32 = n - n % 32 in turn, then chain j < 16
// the tail's elements n32 + j and n32 + 16 + j; s_j = c_j + c_{j+16}; the 16
// s_j meet in add_lanes' tree (halves, quarters, then pairs). Here
// the 16 panel rows are the lanes, so chains j and j + 16 of NT tokens run side
// by side through their panel lines and activations (chain_pos: in sequence),
// and the tree is vector adds.
template <int NT>
void float_tile(std::int64_t n, const float* p, const std::byte* act, std::size_t as, int n_rows,
                float* out, std::size_t ldy) {
  const float* a[NT];
  for (int t = 0; t < NT; ++t) a[t] = reinterpret_cast<const float*>(act + t * as);
  const std::int64_t n32 = n - n % 32;
  __m512 s[16][NT];
  for (int j = 0; j < 16; ++j) {
    __m512 lo[NT], hi[NT];
    for (int t = 0; t < NT; ++t) lo[t] = hi[t] = _mm512_setzero_ps();
    // Elements j + 32 m and j + 16 + 32 m at chain_pos i and i + 1.
    for (std::int64_t i = j * (n32 / 16); i < (j + 1) * (n32 / 16); i += 2) {
      const __m512 w0 = _mm512_loadu_ps(p + i * kRows), w1 = _mm512_loadu_ps(p + (i + 1) * kRows);
      for (int t = 0; t < NT; ++t) {
        lo[t] = _mm512_fmadd_ps(w0, _mm512_set1_ps(a[t][i]), lo[t]);
        hi[t] = _mm512_fmadd_ps(w1, _mm512_set1_ps(a[t][i + 1]), hi[t]);
      }
    }
    // The row kernel's masked tail adds 0 * 0 in the lanes past n: a chain
    // from +0 is never -0, so skipping those changes no bit.
    for (std::int64_t k = n32 + j; k < n; k += 16) {
      const __m512 w0 = _mm512_loadu_ps(p + k * kRows);
      for (int t = 0; t < NT; ++t) lo[t] = _mm512_fmadd_ps(w0, _mm512_set1_ps(a[t][k]), lo[t]);
    }
    for (int t = 0; t < NT; ++t) s[j][t] = _mm512_add_ps(lo[t], hi[t]);
  }
  const __mmask16 mask = static_cast<__mmask16>((1u << n_rows) - 1);
  for (int t = 0; t < NT; ++t) {
    __m512 h[8];
    for (int i = 0; i < 8; ++i) h[i] = _mm512_add_ps(s[i][t], s[i + 8][t]);
    for (int i = 0; i < 4; ++i) h[i] = _mm512_add_ps(h[i], h[i + 4]);
    const __m512 r = _mm512_add_ps(_mm512_add_ps(h[0], h[2]), _mm512_add_ps(h[1], h[3]));
    _mm512_mask_storeu_ps(out + t * ldy, mask, r);
  }
}

void float_run(std::int64_t n, const void* panel, const void* act, std::int64_t n_tok, int n_rows,
               float* out, std::size_t ldy) {
  const auto* p = static_cast<const float*>(panel);
  const auto* a = static_cast<const std::byte*>(act);
  const std::size_t as = float_act_bytes(n);
  std::int64_t t = 0;
  for (; t + kMaxTokens <= n_tok; t += kMaxTokens) {
    float_tile<kMaxTokens>(n, p, a + t * as, as, n_rows, out + t * ldy, ldy);
  }
  switch (n_tok - t) {
    case 0:
      break;
    case 1:
      float_tile<1>(n, p, a + t * as, as, n_rows, out + t * ldy, ldy);
      break;
    case 2:
      float_tile<2>(n, p, a + t * as, as, n_rows, out + t * ldy, ldy);
      break;
    case 3:
      float_tile<3>(n, p, a + t * as, as, n_rows, out + t * ldy, ldy);
      break;
    case 4:
      float_tile<4>(n, p, a + t * as, as, n_rows, out + t * ldy, ldy);
      break;
    case 5:
      float_tile<5>(n, p, a + t * as, as, n_rows, out + t * ldy, ldy);
      break;
    case 6:
      float_tile<6>(n, p, a + t * as, as, n_rows, out + t * ldy, ldy);
      break;
    default:
      float_tile<7>(n, p, a + t * as, as, n_rows, out + t * ldy, ldy);
      break;
  }
}

// The int8 GEMM of decoder D with its panel packers.
template <class D>
constexpr GemmFns int_gemm(int min_tokens, decltype(GemmFns::pack) pack,
                           decltype(GemmFns::pack16) pack16) {
  return {min_tokens, act_bytes<D>, panel_bytes<D>, prepare<D>, pack, run<D>, 0, pack16};
}
// The 32-element types: panels by gathers from rows, or from groups.
template <class D>
constexpr GemmFns gemm32(int min_tokens) {
  return int_gemm<D>(min_tokens, pack_gather<D>, pack16<D>);
}

}  // namespace

// Below these token counts a matmul runs the decode kernels on the interleaved
// weights, several tokens per pass, rather than pack panels for the GEMM.
// Measured in whole models, weights streaming from DRAM (`seam bench -p P -n 0
// -t 2`, 1B shape, docs/performance.md), the GEMMs catch up at 32 tokens on Zen 4
// and 48 on Zen 5 (Q6_K pp32 226 against 231 tok/s and 376 against 438, pp48 249
// against 234 and 449 against 433); those of Q4_0, Q4_1 and Q4_K, whose decode
// kernels do the least work per weight, between 48 and 64 on both (Q4_0 pp48 266
// against 278 and 500 against 496, pp64 274 against 249 and 543 against 536).
// Microbenchmarks of one 4096 x 4096 matrix, its weights in L3, had put these
// at 4 to 12 tokens, where the GEMM halved a 4-token prefill.
constexpr int kIntMinTokens = 40;
constexpr int kQ4MinTokens = 56;
constexpr int kFloatMinTokens = 12;

// Constant-initialized: no start-up code runs in this unit.
constinit const GemmFns gemm_q4_0 = gemm32<DecQ4_0>(kQ4MinTokens);
constinit const GemmFns gemm_q4_1 = gemm32<DecQ4_1>(kQ4MinTokens);
constinit const GemmFns gemm_q5_0 = gemm32<DecQ5_0>(kIntMinTokens);
constinit const GemmFns gemm_q5_1 = gemm32<DecQ5_1>(kIntMinTokens);
constinit const GemmFns gemm_q8_0 = gemm32<DecQ8_0>(kIntMinTokens);
constinit const GemmFns gemm_iq4_nl = gemm32<DecIQ4_NL>(kIntMinTokens);
constinit const GemmFns gemm_mxfp4 = gemm32<DecMXFP4>(kIntMinTokens);
constinit const GemmFns gemm_q2_k =
    int_gemm<DecQ2_K>(kIntMinTokens, pack<DecQ2_K>, pack16_k16<TensorType::Q2_K>);
constinit const GemmFns gemm_q3_k =
    int_gemm<DecQ3_K>(kIntMinTokens, pack<DecQ3_K>, pack16_k16<TensorType::Q3_K>);
constinit const GemmFns gemm_q4_k = int_gemm<DecQ4_K>(kQ4MinTokens, pack_gather_q4_k, pack16_q4_k);
constinit const GemmFns gemm_q5_k = int_gemm<DecQ5_K>(kIntMinTokens, pack<DecQ5_K>, pack16_q5_k);
constinit const GemmFns gemm_iq4_xs =
    int_gemm<DecIQ4_XS>(kIntMinTokens, pack<DecIQ4_XS>, pack16_iq4_xs);
constinit const GemmFns gemm_q6_k =
    int_gemm<DecQ6_K>(kIntMinTokens, pack_gather_q6_k, pack16_k16<TensorType::Q6_K>);
constinit const GemmFns gemm_f32 = {kFloatMinTokens, float_act_bytes,    float_panel_bytes,
                                    float_prepare,   float_pack<CvtF32>, float_run};
constinit const GemmFns gemm_f16 = {kFloatMinTokens, float_act_bytes,    float_panel_bytes,
                                    float_prepare,   float_pack<CvtF16>, float_run};
constinit const GemmFns gemm_bf16 = {kFloatMinTokens, float_act_bytes,     float_panel_bytes,
                                     float_prepare,   float_pack<CvtBF16>, float_run};

}  // namespace seam::dot::avx512
