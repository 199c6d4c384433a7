#include "compute/interleave.h"

#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "compute/quant.h"
#include "seam/error.h"

namespace seam::interleave {

namespace {

using quant::BlockIQ4_XS;
using quant::BlockQ2_K;
using quant::BlockQ3_K;
using quant::BlockQ4_K;
using quant::BlockQ5_K;
using quant::BlockQ6_K;

// Bytes of one row's block.
std::size_t row_block(TensorType type) { return block_bytes(type) / kRows; }

// The 32-element types (Block): d (MXFP4: e), Q4_1's and Q5_1's m, Q5_0's and Q5_1's
// fifth bits, then the values in 4-byte steps.

// The file's qh (bit e: element e) <-> the group's word (byte i bit s: element
// 4s + i): nibble s of qh is bit s of the word's four bytes. A 4x8 bit
// transpose per block row, so a nibble at a time (loading a 0.5B model's
// Q5_0 rows is millions of these).
std::uint32_t fifth_to_steps(std::uint32_t qh) {
  std::uint32_t w = 0;
  for (int s = 0; s < 8; ++s) {
    const std::uint32_t nib = qh >> (4 * s) & 0xFu;
    // Bit i of the nibble -> bit 8i: spread by a multiply (no carries: the
    // partial products land 7 bits apart), then keep bits 0, 8, 16, 24.
    w |= ((nib * 0x00204081u) & 0x01010101u) << s;
  }
  return w;
}
std::uint32_t steps_to_fifth(std::uint32_t w) {
  std::uint32_t qh = 0;
  for (int s = 0; s < 8; ++s) {
    // Bit s of bytes 0..3 -> bits 24..27 by a multiply (the partial products
    // of bits 0, 8, 16, 24 meet those places alone), then down to nibble s.
    const std::uint32_t x = w >> s & 0x01010101u;
    qh |= ((x * 0x01020408u) >> 24 & 0xFu) << (4 * s);
  }
  return qh;
}

template <TensorType type, class Block>
void pack_b32(const std::byte* const* blk, std::byte* out) {
  constexpr std::size_t values = b32_values(type), steps = sizeof(Block::qs) / 4;
  for (int r = 0; r < kRows; ++r) {
    const auto* b = reinterpret_cast<const Block*>(blk[r]);
    if constexpr (type == TensorType::MXFP4)  // its scale: the exponent byte e
      std::memcpy(out + r, &b->e, 1);
    else
      std::memcpy(out + 2 * r, &b->d, 2);
    if constexpr (b32_has_min(type)) std::memcpy(out + kB32Min + 2 * r, &b->m, 2);
    if constexpr (b32_has_fifth(type)) {
      std::uint32_t qh;
      std::memcpy(&qh, b->qh, 4);
      const std::uint32_t w = fifth_to_steps(qh);
      std::memcpy(out + b32_high(type) + 4 * r, &w, 4);
    }
    for (std::size_t m = 0; m < steps; ++m)
      std::memcpy(out + values + 64 * m + 4 * r, b->qs + 4 * m, 4);
  }
}
// The unpack functions skip the rows whose pointer is null.
template <TensorType type, class Block>
void unpack_b32(const std::byte* in, std::byte* const* blk) {
  constexpr std::size_t values = b32_values(type), steps = sizeof(Block::qs) / 4;
  for (int r = 0; r < kRows; ++r) {
    if (!blk[r]) continue;
    auto* b = reinterpret_cast<Block*>(blk[r]);
    if constexpr (type == TensorType::MXFP4)
      std::memcpy(&b->e, in + r, 1);
    else
      std::memcpy(&b->d, in + 2 * r, 2);
    if constexpr (b32_has_min(type)) std::memcpy(&b->m, in + kB32Min + 2 * r, 2);
    if constexpr (b32_has_fifth(type)) {
      std::uint32_t w;
      std::memcpy(&w, in + b32_high(type) + 4 * r, 4);
      const std::uint32_t qh = steps_to_fifth(w);
      std::memcpy(b->qh, &qh, 4);
    }
    for (std::size_t m = 0; m < steps; ++m)
      std::memcpy(b->qs + 4 * m, in + values + 64 * m + 4 * r, 4);
  }
}

// Q4_K and Q5_K (Block): the header, Q5_K's fifth bits, and the nibbles.
template <class Block>
constexpr std::size_t k4_values_of = k4_values(std::is_same_v<Block, BlockQ5_K> ? TensorType::Q5_K
                                                                                : TensorType::Q4_K);

template <class Block>
void pack_k4(const std::byte* const* blk, std::byte* out) {
  constexpr std::size_t values = k4_values_of<Block>;
  auto* u8 = reinterpret_cast<std::uint8_t*>(out);
  std::memset(u8 + kQ4KMinLow, 0, 64);
  for (int r = 0; r < kRows; ++r) {
    const auto* b = reinterpret_cast<const Block*>(blk[r]);
    std::memcpy(out + 2 * r, &b->d, 2);
    std::memcpy(out + kQ4KDmin + 2 * r, &b->dmin, 2);
    for (int j = 0; j < 8; ++j) {
      std::uint8_t sc, mn;
      quant::scale_min_k4(j, b->scales, sc, mn);
      u8[kQ4KScales + 16 * j + r] = static_cast<std::uint8_t>(sc | (mn >> 4) << 6);
      u8[kQ4KMinLow + 8 * j + r % 8] |= static_cast<std::uint8_t>((mn & 0xF) << (4 * (r / 8)));
    }
    for (int p = 0; p < 4; ++p)
      for (int m = 0; m < 8; ++m)
        std::memcpy(out + values + 64 * (8 * p + m) + 4 * r, b->qs + 32 * p + 4 * m, 4);
    if constexpr (std::is_same_v<Block, BlockQ5_K>)
      for (int m = 0; m < 8; ++m) std::memcpy(out + kQ5KHigh + 64 * m + 4 * r, b->qh + 4 * m, 4);
  }
}
template <class Block>
void unpack_k4(const std::byte* in, std::byte* const* blk) {
  constexpr std::size_t values = k4_values_of<Block>;
  const auto* u8 = reinterpret_cast<const std::uint8_t*>(in);
  for (int r = 0; r < kRows; ++r) {
    if (!blk[r]) continue;
    auto* b = reinterpret_cast<Block*>(blk[r]);
    std::memcpy(&b->d, in + 2 * r, 2);
    std::memcpy(&b->dmin, in + kQ4KDmin + 2 * r, 2);
    std::uint8_t sc[8], mn[8];
    for (int j = 0; j < 8; ++j) {
      const std::uint8_t s = u8[kQ4KScales + 16 * j + r];
      sc[j] = s & 63;
      mn[j] = static_cast<std::uint8_t>(((u8[kQ4KMinLow + 8 * j + r % 8] >> (4 * (r / 8))) & 0xF) |
                                        (s >> 6) << 4);
    }
    quant::set_scale_min_k4(sc, mn, b->scales);
    for (int p = 0; p < 4; ++p)
      for (int m = 0; m < 8; ++m)
        std::memcpy(b->qs + 32 * p + 4 * m, in + values + 64 * (8 * p + m) + 4 * r, 4);
    if constexpr (std::is_same_v<Block, BlockQ5_K>)
      for (int m = 0; m < 8; ++m) std::memcpy(b->qh + 4 * m, in + kQ5KHigh + 64 * m + 4 * r, 4);
  }
}

// 4 bytes as one word (the layouts move values 4 bytes of a row at a time).
std::uint32_t load4(const std::uint8_t* p) {
  std::uint32_t w;
  std::memcpy(&w, p, 4);
  return w;
}
void store4(std::uint8_t* p, std::uint32_t w) { std::memcpy(p, &w, 4); }
void or4(std::uint8_t* p, std::uint32_t w) { store4(p, load4(p) | w); }

// Q2_K / Q3_K 2-bit values. In the file, byte 32 (e / 128) + e % 32 of qs holds
// element e at bit 2 ((e / 32) % 4); in a group, unit u's byte i of step s
// (element 16u + 4s + i) sits in row r's word at values + 64u + 4r, bit 2s. So
// unit u's step s is the file's word at 32 (u / 8) + 16 (u % 2) + 4s, shifted
// by 2 ((u / 2) % 4).
std::size_t crumb_word(int u, int s) { return 32 * (u / 8) + 16 * (u % 2) + 4 * s; }
int crumb_shift(int u) { return 2 * (u / 2 % 4); }

void pack_crumbs(const std::uint8_t* qs, int r, std::size_t values, std::uint8_t* out) {
  for (int u = 0; u < 16; ++u) {
    std::uint32_t w = 0;
    for (int s = 0; s < 4; ++s)
      w |= ((load4(qs + crumb_word(u, s)) >> crumb_shift(u)) & 0x03030303u) << (2 * s);
    store4(out + values + 64 * u + 4 * r, w);
  }
}
void unpack_crumbs(const std::uint8_t* in, int r, std::size_t values, std::uint8_t* qs) {
  std::memset(qs, 0, quant::kQK_K / 4);
  for (int u = 0; u < 16; ++u) {
    const std::uint32_t w = load4(in + values + 64 * u + 4 * r);
    for (int s = 0; s < 4; ++s)
      or4(qs + crumb_word(u, s), ((w >> (2 * s)) & 0x03030303u) << crumb_shift(u));
  }
}

void pack_q2_k(const std::byte* const* blk, std::byte* out) {
  auto* u8 = reinterpret_cast<std::uint8_t*>(out);
  for (int r = 0; r < kRows; ++r) {
    const auto* b = reinterpret_cast<const BlockQ2_K*>(blk[r]);
    std::memcpy(out + 2 * r, &b->d, 2);
    std::memcpy(out + kQ2KDmin + 2 * r, &b->dmin, 2);
    for (int u = 0; u < 16; ++u) u8[kQ2KScales + 16 * u + r] = b->scales[u];
    pack_crumbs(b->qs, r, kQ2KValues, u8);
  }
}
void unpack_q2_k(const std::byte* in, std::byte* const* blk) {
  const auto* u8 = reinterpret_cast<const std::uint8_t*>(in);
  for (int r = 0; r < kRows; ++r) {
    if (!blk[r]) continue;
    auto* b = reinterpret_cast<BlockQ2_K*>(blk[r]);
    std::memcpy(&b->d, in + 2 * r, 2);
    std::memcpy(&b->dmin, in + kQ2KDmin + 2 * r, 2);
    for (int u = 0; u < 16; ++u) b->scales[u] = u8[kQ2KScales + 16 * u + r];
    unpack_crumbs(u8, r, kQ2KValues, b->qs);
  }
}

// A 6-bit scale of unit u, row r, as Q3_K and IQ4_XS groups keep it: the low
// nibble at `low` + 8u (row r % 8, bit 4 (r / 8)), the top 2 bits in the
// word at `high` + 4u (bit 2r).
void put_scale6(std::uint8_t* g, std::size_t low, std::size_t high, int u, int r, int sc) {
  g[low + 8 * u + r % 8] |= static_cast<std::uint8_t>((sc & 0xF) << (4 * (r / 8)));
  g[high + 4 * u + r / 4] |= static_cast<std::uint8_t>((sc >> 4) << (2 * (r % 4)));
}
int get_scale6(const std::uint8_t* g, std::size_t low, std::size_t high, int u, int r) {
  return ((g[low + 8 * u + r % 8] >> (4 * (r / 8))) & 0xF) |
         ((g[high + 4 * u + r / 4] >> (2 * (r % 4))) & 3) << 4;
}

void pack_q3_k(const std::byte* const* blk, std::byte* out) {
  auto* u8 = reinterpret_cast<std::uint8_t*>(out);
  std::memset(u8 + kQ3KScaleLow, 0, kQ3KMask - kQ3KScaleLow);
  for (int r = 0; r < kRows; ++r) {
    const auto* b = reinterpret_cast<const BlockQ3_K*>(blk[r]);
    std::memcpy(out + 2 * r, &b->d, 2);
    for (int u = 0; u < 16; ++u)
      put_scale6(u8, kQ3KScaleLow, kQ3KScaleHigh, u, r, quant::scale_q3_k(u, b->scales));
    for (int m = 0; m < 8; ++m) std::memcpy(out + kQ3KMask + 64 * m + 4 * r, b->hmask + 4 * m, 4);
    pack_crumbs(b->qs, r, kQ3KValues, u8);
  }
}
void unpack_q3_k(const std::byte* in, std::byte* const* blk) {
  const auto* u8 = reinterpret_cast<const std::uint8_t*>(in);
  for (int r = 0; r < kRows; ++r) {
    if (!blk[r]) continue;
    auto* b = reinterpret_cast<BlockQ3_K*>(blk[r]);
    std::memcpy(&b->d, in + 2 * r, 2);
    std::memset(b->scales, 0, sizeof b->scales);
    for (int u = 0; u < 16; ++u) {
      const int sc = get_scale6(u8, kQ3KScaleLow, kQ3KScaleHigh, u, r);
      // scale_q3_k's places: the low nibble in byte u % 8, the top bits in byte 8 + u % 4.
      b->scales[u % 8] = static_cast<std::uint8_t>(b->scales[u % 8] | (sc & 0xF) << (4 * (u / 8)));
      b->scales[8 + u % 4] =
          static_cast<std::uint8_t>(b->scales[8 + u % 4] | (sc >> 4) << (2 * (u / 4)));
    }
    for (int m = 0; m < 8; ++m) std::memcpy(b->hmask + 4 * m, in + kQ3KMask + 64 * m + 4 * r, 4);
    unpack_crumbs(u8, r, kQ3KValues, b->qs);
  }
}

// IQ4_XS: scale j is (scales_l nibble j | scales_h bits 2j..2j+1 << 4), 6 bits.
void pack_iq4_xs(const std::byte* const* blk, std::byte* out) {
  auto* u8 = reinterpret_cast<std::uint8_t*>(out);
  std::memset(u8 + kXSScaleLow, 0, kXSValues - kXSScaleLow);
  for (int r = 0; r < kRows; ++r) {
    const auto* b = reinterpret_cast<const BlockIQ4_XS*>(blk[r]);
    std::memcpy(out + 2 * r, &b->d, 2);
    for (int j = 0; j < 8; ++j)
      put_scale6(u8, kXSScaleLow, kXSScaleHigh, j, r, quant::iq4_xs_scale(*b, j) + 32);
    for (int j = 0; j < 8; ++j)
      for (int m = 0; m < 4; ++m)
        std::memcpy(out + kXSValues + 64 * (4 * j + m) + 4 * r, b->qs + 16 * j + 4 * m, 4);
  }
}
void unpack_iq4_xs(const std::byte* in, std::byte* const* blk) {
  const auto* u8 = reinterpret_cast<const std::uint8_t*>(in);
  for (int r = 0; r < kRows; ++r) {
    if (!blk[r]) continue;
    auto* b = reinterpret_cast<BlockIQ4_XS*>(blk[r]);
    std::memcpy(&b->d, in + 2 * r, 2);
    std::memset(b->scales_l, 0, sizeof b->scales_l);
    b->scales_h = 0;
    for (int j = 0; j < 8; ++j) {
      const int sc = get_scale6(u8, kXSScaleLow, kXSScaleHigh, j, r);
      b->scales_l[j / 2] =
          static_cast<std::uint8_t>(b->scales_l[j / 2] | (sc & 0xF) << (4 * (j % 2)));
      b->scales_h = static_cast<std::uint16_t>(b->scales_h | (sc >> 4) << (2 * j));
    }
    for (int j = 0; j < 8; ++j)
      for (int m = 0; m < 4; ++m)
        std::memcpy(b->qs + 16 * j + 4 * m, in + kXSValues + 64 * (4 * j + m) + 4 * r, 4);
  }
}

// Q6_K. In the file (quant_blocks.h) element e = 128 half + 32 g + l has its
// low 4 bits in ql[64 half + 32 (g % 2) + l] (the high nibble when g >= 2) and
// its top 2 bits in qh[32 half + l] at bit 2g. Unit u (elements 16u..16u+15)
// has half = u / 8, g = (u % 8) / 2, l = 16 (u % 2) + 4s + i for step s.
struct Q6Unit {
  std::size_t ql, qh;
  int ql_shift, qh_shift;
  explicit Q6Unit(int u) {
    const int half = u / 8, g = u % 8 / 2;
    ql = 64 * half + 32 * (g % 2) + 16 * (u % 2);
    ql_shift = g >= 2 ? 4 : 0;
    qh = 32 * half + 16 * (u % 2);
    qh_shift = 2 * g;
  }
};

void pack_q6_k(const std::byte* const* blk, std::byte* out) {
  auto* u8 = reinterpret_cast<std::uint8_t*>(out);
  for (int r = 0; r < kRows; ++r) {
    const auto* b = reinterpret_cast<const BlockQ6_K*>(blk[r]);
    std::memcpy(out + 2 * r, &b->d, 2);
    for (int u = 0; u < 16; ++u) std::memcpy(out + kQ6KScales + 16 * u + r, &b->scales[u], 1);
    for (int u = 0; u < 16; ++u) {
      const Q6Unit f(u);
      std::uint8_t* unit = u8 + kQ6KValues + kQ6KUnit * u + 4 * r;
      std::uint32_t lo[4], hi = 0;
      for (int s = 0; s < 4; ++s) {
        lo[s] = (load4(b->ql + f.ql + 4 * s) >> f.ql_shift) & 0x0F0F0F0Fu;
        hi |= ((load4(b->qh + f.qh + 4 * s) >> f.qh_shift) & 0x03030303u) << (2 * s);
      }
      for (int m = 0; m < 2; ++m) store4(unit + 64 * m, lo[m] | lo[m + 2] << 4);
      store4(unit + kQ6KHigh, hi);
    }
  }
}
void unpack_q6_k(const std::byte* in, std::byte* const* blk) {
  const auto* u8 = reinterpret_cast<const std::uint8_t*>(in);
  for (int r = 0; r < kRows; ++r) {
    if (!blk[r]) continue;
    auto* b = reinterpret_cast<BlockQ6_K*>(blk[r]);
    std::memcpy(&b->d, in + 2 * r, 2);
    for (int u = 0; u < 16; ++u) std::memcpy(&b->scales[u], in + kQ6KScales + 16 * u + r, 1);
    std::memset(b->ql, 0, sizeof b->ql);
    std::memset(b->qh, 0, sizeof b->qh);
    for (int u = 0; u < 16; ++u) {
      const Q6Unit f(u);
      const std::uint8_t* unit = u8 + kQ6KValues + kQ6KUnit * u + 4 * r;
      const std::uint32_t hi = load4(unit + kQ6KHigh);
      for (int s = 0; s < 4; ++s) {
        const std::uint32_t lo = (load4(unit + 64 * (s % 2)) >> (4 * (s / 2))) & 0x0F0F0F0Fu;
        or4(b->ql + f.ql + 4 * s, lo << f.ql_shift);
        or4(b->qh + f.qh + 4 * s, ((hi >> (2 * s)) & 0x03030303u) << f.qh_shift);
      }
    }
  }
}

// One type's group block <-> its 16 rows' blocks.
struct Codec {
  void (*pack)(const std::byte* const* blk, std::byte* out);
  void (*unpack)(const std::byte* in, std::byte* const* blk);  // skips null rows
};
template <TensorType type, class Block>
Codec codec_b32() {
  return {pack_b32<type, Block>, unpack_b32<type, Block>};
}
Codec codec(TensorType type) {
  switch (type) {
    case TensorType::Q4_0:
      return codec_b32<TensorType::Q4_0, quant::BlockQ4_0>();
    case TensorType::Q4_1:
      return codec_b32<TensorType::Q4_1, quant::BlockQ4_1>();
    case TensorType::Q5_0:
      return codec_b32<TensorType::Q5_0, quant::BlockQ5_0>();
    case TensorType::Q5_1:
      return codec_b32<TensorType::Q5_1, quant::BlockQ5_1>();
    case TensorType::Q8_0:
      return codec_b32<TensorType::Q8_0, quant::BlockQ8_0>();
    case TensorType::IQ4_NL:
      return codec_b32<TensorType::IQ4_NL, quant::BlockIQ4_NL>();
    case TensorType::MXFP4:
      return codec_b32<TensorType::MXFP4, quant::BlockMXFP4>();
    case TensorType::Q2_K:
      return {pack_q2_k, unpack_q2_k};
    case TensorType::Q3_K:
      return {pack_q3_k, unpack_q3_k};
    case TensorType::Q4_K:
      return {pack_k4<BlockQ4_K>, unpack_k4<BlockQ4_K>};
    case TensorType::Q5_K:
      return {pack_k4<BlockQ5_K>, unpack_k4<BlockQ5_K>};
    case TensorType::Q6_K:
      return {pack_q6_k, unpack_q6_k};
    case TensorType::IQ4_XS:
      return {pack_iq4_xs, unpack_iq4_xs};
    default:
      throw Error(Errc::Internal,
                  std::string("no interleaved layout for ") + quant::type_name(type));
  }
}

}  // namespace

void pack(TensorType type, std::int64_t n, const std::byte* rows, std::size_t row_stride,
          std::byte* dst) {
  const std::size_t rb = row_block(type);
  const auto pack_block = codec(type).pack;
  for (std::int64_t b = 0; b < n / block_elements(type); ++b) {
    const std::byte* blk[kRows];
    for (int r = 0; r < kRows; ++r)
      blk[r] = rows + r * row_stride + static_cast<std::size_t>(b) * rb;
    std::byte* out = dst + static_cast<std::size_t>(b) * block_bytes(type);
    pack_block(blk, out);
  }
}

namespace {
// Rows `only` (or all 16 where only < 0) of a group, row_size apart from `rows`.
void unpack_rows(TensorType type, std::int64_t n, const std::byte* group, std::byte* rows,
                 int only) {
  const std::size_t rb = row_block(type), nb = static_cast<std::size_t>(n / block_elements(type));
  const auto unpack_block = codec(type).unpack;
  for (std::size_t b = 0; b < nb; ++b) {
    std::byte* blk[kRows] = {};
    for (int r = 0; r < kRows; ++r)
      if (only < 0 || r == only) blk[r] = rows + (only < 0 ? r : 0) * nb * rb + b * rb;
    const std::byte* in = group + b * block_bytes(type);
    unpack_block(in, blk);
  }
}
}  // namespace

void unpack(TensorType type, std::int64_t n, const std::byte* group, std::byte* rows) {
  unpack_rows(type, n, group, rows, -1);
}

void unpack_row(TensorType type, std::int64_t n, const std::byte* group, int r, std::byte* row) {
  unpack_rows(type, n, group, row, r);
}

void pack_in_place(TensorType type, std::int64_t n, std::int64_t n_out, std::byte* data) {
  const std::size_t group = static_cast<std::size_t>(n / block_elements(type)) * block_bytes(type);
  std::vector<std::byte> rows(group);
  for (std::int64_t g = 0; g < n_out / kRows; ++g) {
    std::byte* at = data + static_cast<std::size_t>(g) * group;
    std::memcpy(rows.data(), at, group);
    pack(type, n, rows.data(), group / kRows, at);
  }
}

}  // namespace seam::interleave
