#include "compute/interleave.h"

#include <cstring>
#include <vector>

namespace seam::interleave {

namespace {

// Bytes of one row's block, and of its values (after the 2-byte d).
std::size_t row_block(TensorType type) { return block_bytes(type) / kRows; }
std::size_t value_bytes(TensorType type) { return row_block(type) - 2; }

}  // namespace

void pack(TensorType type, std::int64_t n, const std::byte* rows, std::size_t row_stride,
          std::byte* dst) {
  const std::size_t rb = row_block(type), steps = value_bytes(type) / 4;
  for (std::int64_t b = 0; b < n / 32; ++b) {
    std::byte* out = dst + static_cast<std::size_t>(b) * block_bytes(type);
    for (int r = 0; r < kRows; ++r) {
      const std::byte* blk = rows + r * row_stride + static_cast<std::size_t>(b) * rb;
      std::memcpy(out + 2 * r, blk, 2);
      for (std::size_t m = 0; m < steps; ++m)
        std::memcpy(out + 32 + 64 * m + 4 * r, blk + 2 + 4 * m, 4);
    }
  }
}

void unpack(TensorType type, std::int64_t n, const std::byte* group, std::byte* rows) {
  const std::size_t rb = row_block(type), steps = value_bytes(type) / 4;
  const std::size_t row = static_cast<std::size_t>(n / 32) * rb;
  for (std::int64_t b = 0; b < n / 32; ++b) {
    const std::byte* in = group + static_cast<std::size_t>(b) * block_bytes(type);
    for (int r = 0; r < kRows; ++r) {
      std::byte* blk = rows + r * row + static_cast<std::size_t>(b) * rb;
      std::memcpy(blk, in + 2 * r, 2);
      for (std::size_t m = 0; m < steps; ++m)
        std::memcpy(blk + 2 + 4 * m, in + 32 + 64 * m + 4 * r, 4);
    }
  }
}

void pack_in_place(TensorType type, std::int64_t n, std::int64_t n_out, std::byte* data) {
  const std::size_t group = static_cast<std::size_t>(n / 32) * block_bytes(type);
  std::vector<std::byte> rows(group);
  for (std::int64_t g = 0; g < n_out / kRows; ++g) {
    std::byte* at = data + static_cast<std::size_t>(g) * group;
    std::memcpy(rows.data(), at, group);
    pack(type, n, rows.data(), group / kRows, at);
  }
}

}  // namespace seam::interleave
