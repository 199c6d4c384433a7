#include "runtime/kv_cache.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

namespace seam {

KvCache::KvCache(std::uint32_t n_cells, std::uint32_t n_seq_max, std::vector<std::uint32_t> widths,
                 KvType type)
    : widths_(std::move(widths)),
      type_(type),
      cells_(n_cells),
      seqs_(n_seq_max),
      mask_seq_start_(n_seq_max, kNotListed),
      mask_seq_from_(n_seq_max, kNotListed),
      k_(widths_.size()),
      v_(widths_.size()) {
  free_.reserve(n_cells);
  // Pop from the back hands out low cell indices first.
  for (std::uint32_t c = n_cells; c-- > 0;) free_.push_back(c);
  for (std::size_t l = 0; l < widths_.size(); ++l) {
    const std::size_t n = static_cast<std::size_t>(n_cells) * kv_row_bytes(type, widths_[l]);
    // Zero in both types, and resident only as far as cells are written.
    k_[l].resize(n);
    v_[l].resize(n);
  }
}

void KvCache::allocate(std::span<const Decode> batch, std::vector<std::uint32_t>& out) {
  out.clear();
  for (const Decode& d : batch) {
    const std::uint32_t c = free_.back();
    free_.pop_back();
    cells_[c].pos = d.pos;
    cells_[c].token = d.token;
    cells_[c].seqs.reset();
    cells_[c].seqs.set(d.seq);
    SeqCells& sc = seqs_[d.seq];
    if (sc.capacity() < cells_.size()) sc.reserve(cells_.size());
    sc.emplace_back(d.pos, c);
    out.push_back(c);
  }
}

void KvCache::build_mask(std::span<const Decode> batch, std::vector<std::uint32_t>& begin,
                         std::vector<std::uint32_t>& end, std::vector<std::uint32_t>& cells,
                         std::uint32_t window) const {
  begin.clear();
  end.clear();
  cells.clear();
  // Each row's slice as indices into its sequence's cells, and the first
  // cell any row of that sequence sees: a window's rows need only the cells
  // from there on, not the whole history.
  for (const Decode& d : batch) {
    const auto& m = seqs_[d.seq];
    // First visible position: d.pos - window + 1 (in 64 bits: no overflow).
    const std::int64_t first = window > 0 ? std::int64_t{d.pos} - window + 1 : INT64_MIN;
    auto lo = m.begin();
    if (first > INT32_MIN) {
      lo = std::lower_bound(m.begin(), m.end(), static_cast<std::int32_t>(first),
                            [](const auto& e, std::int32_t p) { return e.first < p; });
    }
    const auto hi = std::upper_bound(lo, m.end(), d.pos,
                                     [](std::int32_t p, const auto& e) { return p < e.first; });
    begin.push_back(static_cast<std::uint32_t>(lo - m.begin()));
    end.push_back(static_cast<std::uint32_t>(hi - m.begin()));
    mask_seq_from_[d.seq] = std::min(mask_seq_from_[d.seq], begin.back());
  }
  // Each sequence's cells from there, once, at its first row; the slices
  // moved to where they landed.
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const auto& m = seqs_[batch[i].seq];
    const std::uint32_t from = mask_seq_from_[batch[i].seq];
    std::uint32_t& at = mask_seq_start_[batch[i].seq];
    if (at == kNotListed) {
      at = static_cast<std::uint32_t>(cells.size());
      for (auto e = m.begin() + from; e != m.end(); ++e) cells.push_back(e->second);
    }
    begin[i] = at + begin[i] - from;
    end[i] = at + end[i] - from;
  }
  for (const Decode& d : batch) mask_seq_start_[d.seq] = mask_seq_from_[d.seq] = kNotListed;
}

void KvCache::release(std::uint32_t cell, std::uint32_t seq) {
  Cell& c = cells_[cell];
  c.seqs.reset(seq);
  if (c.seqs.none()) {
    c.pos = -1;
    c.token = -1;
    free_.push_back(cell);
  }
}

void KvCache::clear_seq(std::uint32_t seq) {
  for (const auto& [pos, cell] : seqs_[seq]) release(cell, seq);
  seqs_[seq].clear();
}

void KvCache::copy_seq(std::uint32_t src, std::uint32_t dst) {
  if (src == dst) return;
  clear_seq(dst);
  for (const auto& [pos, cell] : seqs_[src]) cells_[cell].seqs.set(dst);
  if (seqs_[dst].capacity() < cells_.size()) seqs_[dst].reserve(cells_.size());
  seqs_[dst] = seqs_[src];
}

void KvCache::truncate_seq(std::uint32_t seq, std::int32_t pos) {
  auto& m = seqs_[seq];
  const auto first = std::lower_bound(m.begin(), m.end(), pos,
                                      [](const auto& e, std::int32_t p) { return e.first < p; });
  for (auto it = first; it != m.end(); ++it) release(it->second, seq);
  m.erase(first, m.end());
}

std::uint32_t KvCache::shift_cells_needed(std::uint32_t seq, std::int32_t p0,
                                          std::int32_t p1) const {
  std::uint32_t shared = 0, freed = 0;
  for (const auto& [pos, cell] : seqs_[seq]) {
    const bool alone = cells_[cell].seqs.count() == 1;
    if (pos >= p0 && pos < p1) freed += alone ? 1 : 0;
    if (pos >= p1) shared += alone ? 0 : 1;
  }
  return shared > freed ? shared - freed : 0;
}

std::vector<std::uint32_t> KvCache::shift_positions(std::uint32_t seq, std::int32_t p0,
                                                    std::int32_t p1) {
  auto& m = seqs_[seq];  // sorted by position
  const auto by_pos = [](const auto& e, std::int32_t p) { return e.first < p; };
  const auto first = std::lower_bound(m.begin(), m.end(), p0, by_pos);
  const auto last = std::lower_bound(first, m.end(), p1, by_pos);
  for (auto it = first; it != last; ++it) release(it->second, seq);
  const auto kept = m.erase(first, last);
  const std::int32_t delta = p1 - p0;
  std::vector<std::uint32_t> moved;
  // Every position from p1 on moves down by delta; they stay above those
  // before p0, so the list stays sorted.
  for (auto it = kept; it != m.end(); ++it) {
    std::uint32_t c = it->second;
    if (cells_[c].seqs.count() > 1) {
      // Copy on write: the other sequences keep the cell at its old position.
      const std::uint32_t copy = free_.back();
      free_.pop_back();
      for (std::size_t l = 0; l < k_.size(); ++l) {
        const std::size_t row_bytes = kv_row_bytes(type_, widths_[l]);
        if (row_bytes == 0) continue;  // a layer reading another layer's cache owns no rows
        std::memcpy(k_[l].data() + copy * row_bytes, k_[l].data() + c * row_bytes, row_bytes);
        std::memcpy(v_[l].data() + copy * row_bytes, v_[l].data() + c * row_bytes, row_bytes);
      }
      cells_[copy].token = cells_[c].token;
      cells_[copy].seqs.reset();
      cells_[copy].seqs.set(seq);
      cells_[c].seqs.reset(seq);
      c = copy;
    }
    it->first -= delta;
    it->second = c;
    cells_[c].pos = it->first;
    moved.push_back(c);
  }
  return moved;
}

}  // namespace seam
