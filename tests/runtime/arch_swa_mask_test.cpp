// Sliding-window masks of the KV cache: a row at position p of sequence s sees
// exactly the cells of s with positions in (p - window, p].
#include <gtest/gtest.h>

#include <vector>

#include "runtime/kv_cache.h"

namespace seam {
namespace {

// Positions each batch row may see, in mask order.
std::vector<std::vector<std::int32_t>> visible(const KvCache& kv, std::span<const Decode> batch,
                                               const std::vector<std::uint32_t>& cell_pos,
                                               std::uint32_t window) {
  std::vector<std::uint32_t> begin, end, cells;
  kv.build_mask(batch, begin, end, cells, window);
  std::vector<std::vector<std::int32_t>> out(batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    for (std::uint32_t j = begin[i]; j < end[i]; ++j)
      out[i].push_back(static_cast<std::int32_t>(cell_pos[cells[j]]));
  }
  return out;
}

TEST(SlidingWindowMask, SeesPositionsInsideTheWindowOfItsOwnSequence) {
  KvCache kv(32, 2, 1, 4);
  std::vector<Decode> prompt;
  for (std::int32_t p = 0; p < 10; ++p) prompt.push_back({Token(3 + p), p, 0, true});
  std::vector<std::uint32_t> cell_pos(32, 999);
  std::vector<std::uint32_t> cells;
  kv.allocate(prompt, cells);
  for (std::size_t i = 0; i < cells.size(); ++i) cell_pos[cells[i]] = prompt[i].pos;
  kv.copy_seq(0, 1);
  kv.truncate_seq(1, 4);  // seq 1 shares positions 0..3 and then goes its own way
  const std::vector<Decode> next = {{50, 4, 1, true}, {51, 5, 1, true}};
  std::vector<std::uint32_t> more;
  kv.allocate(next, more);
  for (std::size_t i = 0; i < more.size(); ++i) cell_pos[more[i]] = next[i].pos;

  const std::vector<Decode> rows = {{0, 9, 0, true}, {0, 0, 0, true}, {0, 5, 1, true}};
  using V = std::vector<std::int32_t>;
  auto full = visible(kv, rows, cell_pos, 0);
  EXPECT_EQ(full[0], (V{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(full[1], (V{0}));
  EXPECT_EQ(full[2], (V{0, 1, 2, 3, 4, 5}));
  auto w3 = visible(kv, rows, cell_pos, 3);
  EXPECT_EQ(w3[0], (V{7, 8, 9}));
  EXPECT_EQ(w3[1], (V{0}));
  EXPECT_EQ(w3[2], (V{3, 4, 5}));
  auto w1 = visible(kv, rows, cell_pos, 1);  // only itself
  EXPECT_EQ(w1[0], (V{9}));
  EXPECT_EQ(w1[2], (V{5}));
  auto wide = visible(kv, rows, cell_pos, 4096);  // wider than the history: all of it
  EXPECT_EQ(wide, full);
  // Each sequence's cells are listed once, from the first any of its rows
  // sees: without a window seq 0's 10 and seq 1's 6 (the 4 it shares with
  // seq 0 among them); with a window of 3, seq 0's from position 0 (its row
  // at 0) and seq 1's from 3; a row alone with a window, only its window.
  std::vector<std::uint32_t> begin, end, listed;
  for (const auto& [window, n] : {std::pair{0u, 16u}, std::pair{3u, 13u}, std::pair{0u, 16u}}) {
    kv.build_mask(rows, begin, end, listed, window);
    EXPECT_EQ(listed.size(), n) << window;
  }
  const std::vector<Decode> last = {{0, 9, 0, true}};
  kv.build_mask(last, begin, end, listed, 3);
  EXPECT_EQ(listed.size(), 3u);
}

}  // namespace
}  // namespace seam
