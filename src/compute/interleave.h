// The 32-element block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4),
// the K-quants (Q2_K to Q6_K) and IQ4_XS stored 16 rows at a time
// (WeightView::interleaved16): the layout from which the decode kernels read
// 16 rows' values with one 64-byte load (AVX2: two 32-byte loads, one per 8
// rows) and their scales with one more, where the file's row-major layout
// needs a stream per row and a gather for the scales (one-row Q4_0 decode ran
// at a quarter of this layout's rate on cached weights, too close to DRAM's to
// keep up with it). GEMM panels are the same interleave, so they pack with
// loads; and since the AVX2 level decodes and multiplies in batches with one
// micro-kernel on this layout, a token's row is the same bits alone or beside
// others (docs/server.md, "Batch invariance").
// The AVX-512 level interleaves every one of these types too (decode:
// group32_avx512.cpp, group_k_avx512.cpp; one row per int32 lane of
// vpdpbusd); the others keep the file's layout (dot.h, Kernels::rows16_at).
//
// A group of 16 rows, block by block (block b of every row: exactly the bytes
// of the 16 rows' blocks, so a group is rewritten in place). "Steps" are 4
// consecutive elements; a step's bytes for rows 0..15 are 64 bytes, row r at 4r.
//  - The 32-element types: the 16 fp16 scales d (32 bytes; MXFP4: the 16
//    exponent bytes e, 16 bytes); Q4_1 and Q5_1: the
//    16 fp16 mins m (32 bytes); Q5_0 and Q5_1: the fifth bits (64 bytes, row r's
//    word at 4r, byte i bit s: element 4s + i's, so that a step's 4 bytes of a
//    row find their bits at one bit position); then for each 4-byte step m of
//    the block's values (Q8_0: 8, the others 4) the bytes qs[4m..4m+3] of the
//    rows (b32_values).
//  - Q4_K (per 256-element super-block, 2304 bytes): d[16], dmin[16] (fp16);
//    sc[8][16]: sub-block j's 6-bit scale | the top 2 bits of its min << 6;
//    mn[8][8]: the low nibble of the min, row r in byte r % 8 at bit 4 (r / 8);
//    then the nibbles: for each pair p of sub-blocks and m < 8, bytes
//    qs[32p + 4m..+3] of the rows (low nibbles: sub-block 2p, high: 2p + 1).
//  - Q5_K (2816 bytes): Q4_K's d, dmin, sc and mn; then for m < 8 the bytes
//    qh[4m..4m+3] of the rows (bit j: the fifth bit of sub-block j's element
//    4m + i); then Q4_K's nibbles. The fifth bits come before the values
//    because the first values need them: a block is read front to back.
//  - Q2_K (1344 bytes): d[16], dmin[16] (fp16); scales[16 units][16] (the
//    file's bytes: scale | min << 4); then per 16-element unit u the 2-bit
//    values [16][4] (byte i: element 16u + 4s + i at bit 2s, s < 4).
//  - Q3_K (1760 bytes): d[16] (fp16); the 6-bit scales' low nibbles [16 units]
//    [8] (row r in byte r % 8 at bit 4 (r / 8)) and top bits [16 units] (one
//    32-bit word, row r at bit 2r); hmask [8][16][4] (bytes hmask[4m..4m+3] of
//    the rows); then the 2-bit values as Q2_K's.
//  - IQ4_XS (2176 bytes): d[16] (fp16); the 6-bit scales as Q3_K's (low nibbles
//    [8 sub-blocks][8], top bits [8] one word each); then per sub-block j the
//    nibbles as Q4_0's: for m < 4 the bytes qs[16j + 4m..+3] of the rows.
//  - Q6_K (per super-block, 3360 bytes): d[16] (fp16); scales[16 units][16]
//    (int8); then per 16-element unit u: lo[2][16][4] (byte i of step m: the
//    low 4 bits of element 16u + 4m + i | those of element 16u + 4(m + 2) + i
//    << 4) and hi[16][4] (byte i: bits 4-5 of element 16u + 4s + i at bit 2s,
//    s < 4).
#pragma once

#include <cstddef>
#include <cstdint>

#include "compute/quant_blocks.h"
#include "format/tensor_type.h"

namespace seam::interleave {

inline constexpr int kRows = 16;

// Bytes of one block of 16 rows.
constexpr std::size_t block_bytes(TensorType type) {
  switch (type) {
    case TensorType::Q4_0:
      return kRows * sizeof(quant::BlockQ4_0);
    case TensorType::Q4_1:
      return kRows * sizeof(quant::BlockQ4_1);
    case TensorType::Q5_0:
      return kRows * sizeof(quant::BlockQ5_0);
    case TensorType::Q5_1:
      return kRows * sizeof(quant::BlockQ5_1);
    case TensorType::IQ4_NL:
      return kRows * sizeof(quant::BlockIQ4_NL);
    case TensorType::MXFP4:
      return kRows * sizeof(quant::BlockMXFP4);
    case TensorType::Q8_0:
      return kRows * sizeof(quant::BlockQ8_0);
    case TensorType::Q2_K:
      return kRows * sizeof(quant::BlockQ2_K);
    case TensorType::Q3_K:
      return kRows * sizeof(quant::BlockQ3_K);
    case TensorType::Q4_K:
      return kRows * sizeof(quant::BlockQ4_K);
    case TensorType::Q5_K:
      return kRows * sizeof(quant::BlockQ5_K);
    case TensorType::Q6_K:
      return kRows * sizeof(quant::BlockQ6_K);
    case TensorType::IQ4_XS:
      return kRows * sizeof(quant::BlockIQ4_XS);
    default:
      return 0;
  }
}

// Whether `type` is one of the layout's 32-element block types.
constexpr bool is_block32(TensorType type) {
  return type == TensorType::Q4_0 || type == TensorType::Q4_1 || type == TensorType::Q5_0 ||
         type == TensorType::Q5_1 || type == TensorType::Q8_0 || type == TensorType::IQ4_NL ||
         type == TensorType::MXFP4;
}

// Elements per block of a type with this layout: 32, or a K-quant super-block's
// 256 (IQ4_XS included).
constexpr std::int64_t block_elements(TensorType type) {
  return is_block32(type) ? 32 : quant::kQK_K;
}

// Whether rows of `type` have this layout.
constexpr bool has_layout(TensorType type) { return block_bytes(type) != 0; }

// What a 32-element type's group holds beyond its scales and values: mins
// (Q4_1, Q5_1), fifth bits (Q5_0, Q5_1); whether its 4-bit values index a
// codebook (IQ4_NL, MXFP4), and which (null for the others: a pointer that
// GCC's sanitizers do not let constant expressions compare, hence the bool).
constexpr bool b32_has_min(TensorType type) {
  return type == TensorType::Q4_1 || type == TensorType::Q5_1;
}
constexpr bool b32_has_fifth(TensorType type) {
  return type == TensorType::Q5_0 || type == TensorType::Q5_1;
}
constexpr bool b32_has_codebook(TensorType type) {
  return type == TensorType::IQ4_NL || type == TensorType::MXFP4;
}
constexpr const std::int8_t* b32_codebook(TensorType type) {
  return type == TensorType::IQ4_NL  ? quant::kIQ4Values
         : type == TensorType::MXFP4 ? quant::kMXFP4Values
                                     : nullptr;
}

// Byte offsets inside a 32-element group block: the mins, the fifth bits and
// the values.
inline constexpr std::size_t kB32Min = 32;
constexpr std::size_t b32_high(TensorType type) { return type == TensorType::Q5_1 ? 64 : 32; }
constexpr std::size_t b32_values(TensorType type) {
  return block_bytes(type) - (type == TensorType::Q8_0 ? 32 : 16) * kRows;
}

// Byte offsets inside a K-quant group block.
inline constexpr std::size_t kQ4KDmin = 32, kQ4KScales = 64, kQ4KMinLow = 192, kQ4KValues = 256;
inline constexpr std::size_t kQ5KHigh = 256, kQ5KValues = 768;
constexpr std::size_t k4_values(TensorType type) {
  return type == TensorType::Q5_K ? kQ5KValues : kQ4KValues;
}
// Q5_K's fifth bits (8 steps) and nibbles (32 steps, 64 bytes each) tile the
// rest of its block after Q4_K's header.
static_assert(kQ5KHigh == kQ4KValues && kQ5KValues == kQ5KHigh + 8 * 64 &&
              kQ5KValues + 32 * 64 == block_bytes(TensorType::Q5_K));
inline constexpr std::size_t kQ2KDmin = 32, kQ2KScales = 64, kQ2KValues = 320;
inline constexpr std::size_t kQ3KScaleLow = 32, kQ3KScaleHigh = 160, kQ3KMask = 224,
                             kQ3KValues = 736;
inline constexpr std::size_t kXSScaleLow = 32, kXSScaleHigh = 96, kXSValues = 128;
inline constexpr std::size_t kQ6KScales = 32, kQ6KValues = 288, kQ6KUnit = 192, kQ6KHigh = 128;

// 16 rows of n elements, `row_stride` bytes apart at `rows` -> one group at `dst`.
void pack(TensorType type, std::int64_t n, const std::byte* rows, std::size_t row_stride,
          std::byte* dst);

// One group -> its 16 rows in the file's layout, row_size(type, n) bytes apart.
void unpack(TensorType type, std::int64_t n, const std::byte* group, std::byte* rows);

// Row r of one group alone -> `row`, in the file's layout.
void unpack_row(TensorType type, std::int64_t n, const std::byte* group, int r, std::byte* row);

// Rewrites n_out rows (a multiple of 16) of n elements in place, group by group.
void pack_in_place(TensorType type, std::int64_t n, std::int64_t n_out, std::byte* data);

}  // namespace seam::interleave
