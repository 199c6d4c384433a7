#include "runtime/kv_cache.h"

#include <cstdint>
#include <cstring>
#include <utility>

#include "compute/ops.h"

namespace seam {

KvCache::KvCache(std::uint32_t n_cells, std::uint32_t n_seq_max, std::vector<std::uint32_t> widths,
                 KvType type)
    : widths_(std::move(widths)),
      type_(type),
      cells_(n_cells),
      seqs_(n_seq_max),
      k_(widths_.size()),
      v_(widths_.size()) {
  free_.reserve(n_cells);
  // Pop from the back hands out low cell indices first.
  for (std::uint32_t c = n_cells; c-- > 0;) free_.push_back(c);
  for (std::size_t l = 0; l < widths_.size(); ++l) {
    const std::size_t n = static_cast<std::size_t>(n_cells) * widths_[l] * kv_type_size(type);
    k_[l].assign(n, std::byte{0});  // zero in both types
    v_[l].assign(n, std::byte{0});
  }
}

void KvCache::store(std::uint32_t layer, std::uint32_t cell, const float* k, const float* v) {
  const std::uint32_t w = widths_[layer];
  const std::size_t row = static_cast<std::size_t>(cell) * w;
  if (type_ == KvType::F32) {
    std::memcpy(reinterpret_cast<float*>(k_[layer].data()) + row, k, w * sizeof(float));
    std::memcpy(reinterpret_cast<float*>(v_[layer].data()) + row, v, w * sizeof(float));
  } else {
    ops::f32_to_f16_row(k, reinterpret_cast<std::uint16_t*>(k_[layer].data()) + row, w);
    ops::f32_to_f16_row(v, reinterpret_cast<std::uint16_t*>(v_[layer].data()) + row, w);
  }
}

std::vector<std::uint32_t> KvCache::allocate(std::span<const Decode> batch) {
  std::vector<std::uint32_t> out;
  out.reserve(batch.size());
  for (const Decode& d : batch) {
    const std::uint32_t c = free_.back();
    free_.pop_back();
    cells_[c].pos = d.pos;
    cells_[c].token = d.token;
    cells_[c].seqs.reset();
    cells_[c].seqs.set(d.seq);
    seqs_[d.seq][d.pos] = c;
    out.push_back(c);
  }
  return out;
}

void KvCache::build_mask(std::span<const Decode> batch, std::vector<std::uint32_t>& offsets,
                         std::vector<std::uint32_t>& cells, std::uint32_t window) const {
  offsets.clear();
  cells.clear();
  offsets.push_back(0);
  for (const Decode& d : batch) {
    const auto& m = seqs_[d.seq];
    // First visible position: d.pos - window + 1 (in 64 bits: no overflow).
    const std::int64_t first = window > 0 ? std::int64_t{d.pos} - window + 1 : INT64_MIN;
    auto it = first > INT32_MIN ? m.lower_bound(static_cast<std::int32_t>(first)) : m.begin();
    for (; it != m.end() && it->first <= d.pos; ++it) cells.push_back(it->second);
    offsets.push_back(static_cast<std::uint32_t>(cells.size()));
  }
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
  seqs_[dst] = seqs_[src];
}

void KvCache::truncate_seq(std::uint32_t seq, std::int32_t pos) {
  auto& m = seqs_[seq];
  for (auto it = m.lower_bound(pos); it != m.end();) {
    release(it->second, seq);
    it = m.erase(it);
  }
}

}  // namespace seam
