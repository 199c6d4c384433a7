// The buffers of attention_tiled (compute/attention.h), kept by the backend
// and reused from call to call: no allocation per token once warm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace seam {

// One work item of attention_tiled: kv heads [g_lo, g_hi) of a tile over
// its segments [seg_lo, seg_hi).
struct AttentionItem {
  std::uint32_t tile, g_lo, g_hi, seg_lo, seg_hi;
};

struct AttentionScratch {
  std::vector<std::uint32_t> tile_begin;   // [n_tiles + 1] first row of each tile
  std::vector<std::uint32_t> union_begin;  // [n_tiles + 1] offsets into union_cells
  std::vector<std::uint32_t> union_cells;  // per tile: the cells its rows see
  std::vector<std::uint32_t> row_hi;       // [n_tokens] row's cells: its union's first row_hi
  std::vector<AttentionItem> items;
  std::vector<float> partial;   // [n_tokens][n_head][segments][head_dim + 2]: m, l, acc
  std::vector<float> fold_acc;  // [head_dim] a row's running acc while partials are folded
};

// Cells per chunk and rows per tile. A row's cells are cut into segments of
// kAttnSegment from its first cell, each run from a fresh online-softmax state
// and folded left to right (attention.cpp): the unit several threads can share
// for one row, the same whatever the batch. 512 cells rather than 256: each
// restart costs a new running maximum and a fold (pp512 after 4,096 cells, 1
// thread, Zen 5: 135M Q4_0 386 -> 408 tok/s, 1B Q4_K_M 121 -> 129), while a
// decode at that depth still has 8 segments to share (tg32, 2 threads: 135M
// 142 -> 147, 1B 45 -> 42, within the noise). 32 rows rather than 16: each
// chunk's converted K and V serve twice the queries (pp512 after 4,096 cells,
// 1 thread, Zen 5: 135M Q4_0 +4%, 1B Q4_K_M +6%; 64 gave no more).
inline constexpr int kAttnChunk = 32;
inline constexpr int kAttnTileRows = 32;
inline constexpr std::size_t kAttnSegment = 512;
static_assert(kAttnSegment % kAttnChunk == 0);

}  // namespace seam
