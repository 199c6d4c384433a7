// Cell-based KV cache shared by all sequences of a session (DESIGN.md §1).
//
// A cell holds one (position, token) and the set of sequences that contain
// it; copy_seq shares cells instead of copying K/V, and a cell no sequence
// holds is free. K and V rows live per layer: [n_cells][kv_width(layer)]; a
// layer of width 0 keeps none (it shares another layer's or has no attention).
#pragma once

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "compute/backend.h"
#include "seam/session.h"

namespace seam {

inline constexpr std::uint32_t kMaxSequences = 256;

class KvCache {
 public:
  // widths: [n_layer] K (and V) floats per cell of each layer, 0 for none.
  KvCache(std::uint32_t n_cells, std::uint32_t n_seq_max, std::vector<std::uint32_t> widths,
          KvType type = KvType::F32);
  // Every one of n_layer layers with the same width.
  KvCache(std::uint32_t n_cells, std::uint32_t n_seq_max, std::uint32_t n_layer,
          std::uint32_t kv_width, KvType type = KvType::F32)
      : KvCache(n_cells, n_seq_max, std::vector<std::uint32_t>(n_layer, kv_width), type) {}

  std::uint32_t n_cells() const { return static_cast<std::uint32_t>(cells_.size()); }
  std::uint32_t n_seq_max() const { return static_cast<std::uint32_t>(seqs_.size()); }
  std::uint32_t free_cells() const { return static_cast<std::uint32_t>(free_.size()); }

  KvType type() const { return type_; }
  const void* k(std::uint32_t layer) const { return k_[layer].data(); }  // [n_cells][kv_width]
  const void* v(std::uint32_t layer) const { return v_[layer].data(); }
  // The same storage for the backend's store_kv op to write.
  void* k_data(std::uint32_t layer) { return k_[layer].data(); }
  void* v_data(std::uint32_t layer) { return v_[layer].data(); }
  std::uint32_t kv_width(std::uint32_t layer) const { return widths_[layer]; }
  // Stores one row of K and of V (kv_width(layer) floats each) in `cell` of
  // `layer`, converted to the cache's type.
  void store(std::uint32_t layer, std::uint32_t cell, const float* k, const float* v);

  // Positions held by a sequence, ascending, mapped to their cells.
  const std::map<std::int32_t, std::uint32_t>& seq_cells(std::uint32_t seq) const {
    return seqs_[seq];
  }
  std::uint32_t seq_length(std::uint32_t seq) const {
    return static_cast<std::uint32_t>(seqs_[seq].size());
  }
  // Last position of `seq` + 1, or 0 when it is empty.
  std::int32_t seq_next_pos(std::uint32_t seq) const {
    return seqs_[seq].empty() ? 0 : seqs_[seq].rbegin()->first + 1;
  }
  Token cell_token(std::uint32_t cell) const { return cells_[cell].token; }

  // Takes one free cell per Decode (the caller checked there are enough and
  // that positions are new for their sequences) and records it; returns the
  // cells in batch order.
  std::vector<std::uint32_t> allocate(std::span<const Decode> batch);

  // For each row of `batch`, the cells it may attend to: those of its
  // sequence with position <= its own and, when `window` > 0, > its own -
  // window (sliding-window attention). Call after allocate.
  void build_mask(std::span<const Decode> batch, std::vector<std::uint32_t>& offsets,
                  std::vector<std::uint32_t>& cells, std::uint32_t window = 0) const;

  void clear_seq(std::uint32_t seq);
  void copy_seq(std::uint32_t src, std::uint32_t dst);
  // Drops the positions >= pos from `seq`.
  void truncate_seq(std::uint32_t seq, std::int32_t pos);

 private:
  struct Cell {
    std::int32_t pos = -1;
    Token token = -1;
    std::bitset<kMaxSequences> seqs;
  };
  void release(std::uint32_t cell, std::uint32_t seq);

  std::vector<std::uint32_t> widths_;  // [n_layer]
  KvType type_;
  std::vector<Cell> cells_;
  std::vector<std::uint32_t> free_;                          // stack of free cell indices
  std::vector<std::map<std::int32_t, std::uint32_t>> seqs_;  // per sequence: pos -> cell
  std::vector<std::vector<std::byte>> k_, v_;  // per layer: [n_cells][widths_[l]] of type_
};

}  // namespace seam
