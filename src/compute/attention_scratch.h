// The buffers of attention_tiled (compute/attention.h), kept by the backend
// and reused from call to call: no allocation per token once warm.
#pragma once

#include <cstdint>
#include <vector>

namespace seam {

struct AttentionScratch {
  std::vector<std::uint32_t> tile_begin;      // [n_tiles + 1] first row of each tile
  std::vector<std::uint32_t> union_begin;     // [n_tiles + 1] offsets into union_cells
  std::vector<std::uint32_t> union_cells;     // per tile: the cells its rows see
  std::vector<std::uint32_t> row_lo, row_hi;  // [n_tokens] row's range in its tile's union
  std::vector<float> partial;  // [n_tokens][n_head][n_split][head_dim + 2]: m, l, acc
};

// Cells per chunk and rows per tile.
inline constexpr int kAttnChunk = 32;
inline constexpr int kAttnTileRows = 16;

}  // namespace seam
