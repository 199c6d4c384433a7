// Q4_0 weights stored 16 rows at a time (WeightView::interleaved16): the layout
// from which the AVX-512 decode kernel reads 16 rows' values with one 64-byte
// load and their scales with one more, where the file's row-major layout needs
// a stream per row and a gather for the scales (one-row Q4_0 decode ran at a
// quarter of this layout's rate on cached weights, too close to DRAM's to keep
// up with it). GEMM panels are the same interleave, so they pack with loads.
//
// A group of 16 rows, block by block (block b of every row, 288 bytes, the
// same bytes as the 16 rows' blocks): the 16 fp16 scales d (32 bytes), then for
// m = 0..3 the bytes qs[4m..4m+3] of rows 0..15 (64 bytes each).
#pragma once

#include <cstddef>
#include <cstdint>

namespace seam::interleave {

inline constexpr int kRows = 16;
inline constexpr std::size_t kBlockBytes = 288;  // 16 rows' 18-byte Q4_0 blocks

// 16 Q4_0 rows of n elements, `row_stride` bytes apart at `rows` -> one group at `dst`.
void pack_q4_0(std::int64_t n, const std::byte* rows, std::size_t row_stride, std::byte* dst);

// One group -> its 16 rows in the file's layout, row_size(Q4_0, n) bytes apart.
void unpack_q4_0(std::int64_t n, const std::byte* group, std::byte* rows);

// Rewrites n_out rows (a multiple of 16) of n elements in place, group by group.
void pack_q4_0_in_place(std::int64_t n, std::int64_t n_out, std::byte* data);

}  // namespace seam::interleave
