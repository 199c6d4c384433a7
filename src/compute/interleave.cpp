#include "compute/interleave.h"

#include <cstring>
#include <vector>

#include "compute/quant_blocks.h"

namespace seam::interleave {

using quant::BlockQ4_0;
static_assert(kBlockBytes == kRows * sizeof(BlockQ4_0));

void pack_q4_0(std::int64_t n, const std::byte* rows, std::size_t row_stride, std::byte* dst) {
  for (std::int64_t b = 0; b < n / 32; ++b) {
    std::byte* out = dst + b * kBlockBytes;
    for (int r = 0; r < kRows; ++r) {
      const auto* blk = reinterpret_cast<const BlockQ4_0*>(rows + r * row_stride) + b;
      std::memcpy(out + 2 * r, &blk->d, 2);
      for (int m = 0; m < 4; ++m) std::memcpy(out + 32 + 64 * m + 4 * r, blk->qs + 4 * m, 4);
    }
  }
}

void unpack_q4_0(std::int64_t n, const std::byte* group, std::byte* rows) {
  const std::int64_t nb = n / 32;
  for (std::int64_t b = 0; b < nb; ++b) {
    const std::byte* in = group + b * kBlockBytes;
    for (int r = 0; r < kRows; ++r) {
      auto* blk = reinterpret_cast<BlockQ4_0*>(rows) + r * nb + b;
      std::memcpy(&blk->d, in + 2 * r, 2);
      for (int m = 0; m < 4; ++m) std::memcpy(blk->qs + 4 * m, in + 32 + 64 * m + 4 * r, 4);
    }
  }
}

void pack_q4_0_in_place(std::int64_t n, std::int64_t n_out, std::byte* data) {
  const std::size_t group = static_cast<std::size_t>(n / 32) * kBlockBytes;
  std::vector<std::byte> rows(group);
  for (std::int64_t g = 0; g < n_out / kRows; ++g) {
    std::byte* at = data + static_cast<std::size_t>(g) * group;
    std::memcpy(rows.data(), at, group);
    pack_q4_0(n, rows.data(), group / kRows, at);
  }
}

}  // namespace seam::interleave
