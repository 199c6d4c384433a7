// GGUF quantization block layouts, byte for byte as ggml stores them
// (ggml-common.h). Half-precision fields are raw IEEE binary16 bits.
// Every struct is standard-layout with no padding; sizes are asserted.
#pragma once

#include <cstdint>
#include <cstring>

namespace seam::quant {

inline constexpr int kQK4_0 = 32;
inline constexpr int kQK4_1 = 32;
inline constexpr int kQK5_0 = 32;
inline constexpr int kQK5_1 = 32;
inline constexpr int kQK8_0 = 32;
inline constexpr int kQK8_1 = 32;
inline constexpr int kQK_K = 256;  // K-quant super-block
inline constexpr int kKScaleSize = 12;

// x = (q - 8) * d, q a nibble; qs[j] low nibble = x[j], high nibble = x[j + 16].
struct BlockQ4_0 {
  std::uint16_t d;
  std::uint8_t qs[kQK4_0 / 2];
};

// x = q * d + m.
struct BlockQ4_1 {
  std::uint16_t d;
  std::uint16_t m;
  std::uint8_t qs[kQK4_1 / 2];
};

// 5-bit q: low nibble as Q4_0, bit 4 of element j is bit j of qh (little endian); x = (q - 16) * d.
struct BlockQ5_0 {
  std::uint16_t d;
  std::uint8_t qh[4];
  std::uint8_t qs[kQK5_0 / 2];
};

// x = q * d + m, q as in Q5_0.
struct BlockQ5_1 {
  std::uint16_t d;
  std::uint16_t m;
  std::uint8_t qh[4];
  std::uint8_t qs[kQK5_1 / 2];
};

// x = q * d.
struct BlockQ8_0 {
  std::uint16_t d;
  std::int8_t qs[kQK8_0];
};

// Activation type for Q4_1/Q5_1: s = d * sum(qs), so the weight's m term costs one multiply.
struct BlockQ8_1 {
  std::uint16_t d;
  std::uint16_t s;
  std::int8_t qs[kQK8_1];
};

// 16 sub-blocks of 16; scales[j] = (4-bit min << 4) | 4-bit scale; 2-bit q packed four per byte:
// qs[32*h + l] holds element 128*h + 32*k + l in bits 2k..2k+1 (l < 32).
// x = d * sc * q - dmin * mn.
struct BlockQ2_K {
  std::uint8_t scales[kQK_K / 16];
  std::uint8_t qs[kQK_K / 4];
  std::uint16_t d;
  std::uint16_t dmin;
};

// 16 sub-blocks of 16; 3-bit q = low 2 bits (packed as Q2_K) + high bit in hmask
// (element 32*k + l -> bit k of hmask[l]); a cleared high bit means q - 4.
// 6-bit signed scales (minus 32) packed into 12 bytes. x = d * (sc - 32) * q.
struct BlockQ3_K {
  std::uint8_t hmask[kQK_K / 8];
  std::uint8_t qs[kQK_K / 4];
  std::uint8_t scales[kKScaleSize];
  std::uint16_t d;
};

// 8 sub-blocks of 32 with 6-bit scale and min packed into 12 bytes;
// qs[32*p + l] low nibble = element 64*p + l, high nibble = element 64*p + 32 + l.
// x = d * sc * q - dmin * mn.
struct BlockQ4_K {
  std::uint16_t d;
  std::uint16_t dmin;
  std::uint8_t scales[kKScaleSize];
  std::uint8_t qs[kQK_K / 2];
};

// As Q4_K plus a fifth bit: element 32*k + l takes bit k of qh[l].
struct BlockQ5_K {
  std::uint16_t d;
  std::uint16_t dmin;
  std::uint8_t scales[kKScaleSize];
  std::uint8_t qh[kQK_K / 8];
  std::uint8_t qs[kQK_K / 2];
};

// 16 sub-blocks of 16 with int8 scales; 6-bit q (low 4 in ql, high 2 in qh), x = d * sc * (q - 32).
struct BlockQ6_K {
  std::uint8_t ql[kQK_K / 2];
  std::uint8_t qh[kQK_K / 4];
  std::int8_t scales[kQK_K / 16];
  std::uint16_t d;
};

// Non-linear 4-bit types: each nibble indexes kIQ4Values, a fixed codebook
// denser near zero, where trained weights cluster.
inline constexpr std::int8_t kIQ4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                               1,    13,   25,  38,  53,  69,  89,  113};

// IQ4_NL: Q4_0's layout (low nibbles elements 0..15, high 16..31) through the codebook.
struct BlockIQ4_NL {
  std::uint16_t d;
  std::uint8_t qs[16];
};

// IQ4_XS: 8 sub-blocks of 32 (IQ4_NL's nibble layout each), each with a 6-bit
// scale ls, signed as ls - 32: low 4 bits in scales_l (two per byte, even
// sub-block low), high 2 bits in scales_h (two per sub-block, sub-block 0 lowest).
struct BlockIQ4_XS {
  std::uint16_t d;
  std::uint16_t scales_h;
  std::uint8_t scales_l[kQK_K / 64];
  std::uint8_t qs[kQK_K / 2];
};

// MXFP4 (OCP microscaling, gpt-oss experts): one E8M0 exponent byte e and
// 16 bytes of E2M1 codes in IQ4_NL's nibble layout. Like ggml, the E2M1
// values are kept doubled (integers, kMXFP4Values) and the scale halved:
// x = kMXFP4Values[code] * 2^(e - 128).
inline constexpr std::int8_t kMXFP4Values[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                                                 0, -1, -2, -3, -4, -6, -8, -12};
struct BlockMXFP4 {
  std::uint8_t e;
  std::uint8_t qs[16];
};

// The helpers below are `static`: the per-CPU-level kernel units (dot.h) include
// this header with their own -m flags, and an inline (weak) copy compiled there
// could be the one the linker keeps for baseline code.

// Sub-block ib's signed scale of an IQ4_XS block.
static inline int iq4_xs_scale(const BlockIQ4_XS& b, int ib) {
  const int lo = (b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF;
  const int hi = (b.scales_h >> (2 * ib)) & 3;
  return (lo | (hi << 4)) - 32;
}

// 2^(e - 128) exactly, as a float: e < 2 gives the subnormals 2^-128, 2^-127.
static inline float mxfp4_scale(std::uint8_t e) {
  const std::uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<std::uint32_t>(e - 1) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Activation type for the K-quants: f32 scale, bsums[j] = sum of qs[16j .. 16j+16).
struct BlockQ8_K {
  float d;
  std::int8_t qs[kQK_K];
  std::int16_t bsums[kQK_K / 16];
};

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockMXFP4) == 17);

// Sub-block j (0..7) of a Q4_K/Q5_K 12-byte scale field: 6-bit scale and 6-bit min.
// Bytes 0..3 hold scales 0..3 (low 6 bits) and the top 2 bits of scales 4..7;
// bytes 4..7 the same for mins; bytes 8..11 the low nibbles of scale/min 4..7.
static inline void scale_min_k4(int j, const std::uint8_t* q, std::uint8_t& sc, std::uint8_t& mn) {
  if (j < 4) {
    sc = q[j] & 63;
    mn = q[j + 4] & 63;
  } else {
    sc = static_cast<std::uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    mn = static_cast<std::uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// The inverse: 8 six-bit scales and mins -> the 12-byte field scale_min_k4 reads.
static inline void set_scale_min_k4(const std::uint8_t* sc, const std::uint8_t* mn,
                                    std::uint8_t* q) {
  for (int j = 0; j < 4; ++j) {
    q[j] = static_cast<std::uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    q[j + 4] = static_cast<std::uint8_t>((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
    q[j + 8] = static_cast<std::uint8_t>((sc[j + 4] & 0xF) | ((mn[j + 4] & 0xF) << 4));
  }
}

// Sub-block j (0..15) of a Q3_K scale field, unsigned 6-bit (subtract 32 for the signed scale):
// low 4 bits from nibble j of bytes 0..7, high 2 bits from bytes 8..11.
static inline int scale_q3_k(int j, const std::uint8_t* s) {
  const int lo = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
  const int hi = (s[8 + (j & 3)] >> (2 * (j >> 2))) & 3;
  return lo | (hi << 4);
}

}  // namespace seam::quant
