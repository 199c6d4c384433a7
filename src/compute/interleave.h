// Q4_0 and Q8_0 weights stored 16 rows at a time (WeightView::interleaved16):
// the layout from which the AVX-512 decode kernels read 16 rows' values with
// one 64-byte load and their scales with one more (AVX2: two 32-byte loads,
// one per 8 rows), where the file's row-major
// layout needs a stream per row and a gather for the scales (one-row Q4_0
// decode ran at a quarter of this layout's rate on cached weights, too close
// to DRAM's to keep up with it). GEMM panels are the same interleave, so they
// pack with loads.
//
// A group of 16 rows, block by block (block b of every row: the same bytes as
// the 16 rows' blocks): the 16 fp16 scales d (32 bytes), then for each 4-byte
// step m of the block's values (Q4_0: 4, Q8_0: 8) the bytes qs[4m..4m+3] of
// rows 0..15 (64 bytes each).
#pragma once

#include <cstddef>
#include <cstdint>

#include "compute/quant_blocks.h"
#include "format/tensor_type.h"

namespace seam::interleave {

inline constexpr int kRows = 16;

// Whether rows of `type` have this layout (its blocks are an fp16 d and values).
constexpr bool has_layout(TensorType type) {
  return type == TensorType::Q4_0 || type == TensorType::Q8_0;
}
// Bytes of one block of 16 rows.
constexpr std::size_t block_bytes(TensorType type) {
  return kRows * (type == TensorType::Q4_0 ? sizeof(quant::BlockQ4_0) : sizeof(quant::BlockQ8_0));
}

// 16 rows of n elements, `row_stride` bytes apart at `rows` -> one group at `dst`.
void pack(TensorType type, std::int64_t n, const std::byte* rows, std::size_t row_stride,
          std::byte* dst);

// One group -> its 16 rows in the file's layout, row_size(type, n) bytes apart.
void unpack(TensorType type, std::int64_t n, const std::byte* group, std::byte* rows);

// Rewrites n_out rows (a multiple of 16) of n elements in place, group by group.
void pack_in_place(TensorType type, std::int64_t n, std::int64_t n_out, std::byte* data);

}  // namespace seam::interleave
