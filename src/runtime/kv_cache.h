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
#include <span>
#include <utility>
#include <vector>

#include "compute/backend.h"
#include "core/zeroed_vector.h"
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
  // The same storage for the backend's store_kv op to write, and for
  // re-rotating moved keys.
  void* k_data(std::uint32_t layer) { return k_[layer].data(); }
  void* v_data(std::uint32_t layer) { return v_[layer].data(); }
  std::uint32_t kv_width(std::uint32_t layer) const { return widths_[layer]; }

  // (position, cell) pairs of a sequence, by ascending position.
  using SeqCells = std::vector<std::pair<std::int32_t, std::uint32_t>>;
  const SeqCells& seq_cells(std::uint32_t seq) const { return seqs_[seq]; }
  std::uint32_t seq_length(std::uint32_t seq) const {
    return static_cast<std::uint32_t>(seqs_[seq].size());
  }
  // Last position of `seq` + 1, or 0 when it is empty.
  std::int32_t seq_next_pos(std::uint32_t seq) const {
    return seqs_[seq].empty() ? 0 : seqs_[seq].back().first + 1;
  }
  Token cell_token(std::uint32_t cell) const { return cells_[cell].token; }

  // Takes one free cell per Decode (the caller checked there are enough and
  // that positions are new for their sequences) and records it; `cells` gets
  // them in batch order (its storage is reused: no allocation per token).
  void allocate(std::span<const Decode> batch, std::vector<std::uint32_t>& cells);

  // For each row of `batch`, the cells it may attend to, as AttentionMask
  // lays them out: each of the batch's sequences' cells once in `cells`, in
  // position order from the first any of its rows sees (a window's rows need
  // no more history), and row i sees cells[begin[i] .. end[i]), those of its
  // sequence with position <= its own and, when `window` > 0, > its own -
  // window (sliding-window attention). Call after allocate.
  void build_mask(std::span<const Decode> batch, std::vector<std::uint32_t>& begin,
                  std::vector<std::uint32_t>& end, std::vector<std::uint32_t>& cells,
                  std::uint32_t window = 0) const;

  void clear_seq(std::uint32_t seq);
  void copy_seq(std::uint32_t src, std::uint32_t dst);
  // Drops the positions >= pos from `seq`.
  void truncate_seq(std::uint32_t seq, std::int32_t pos);

  // Free cells shift_positions(seq, p0, p1) needs beyond the ones its drop frees:
  // every moved cell another sequence shares must be copied first.
  std::uint32_t shift_cells_needed(std::uint32_t seq, std::int32_t p0, std::int32_t p1) const;
  // Drops the positions [p0, p1) of `seq` and moves its positions >= p1 down by
  // p1 - p0. A moved cell that other sequences share is copied to a free cell
  // (K and V rows of every layer) and only the copy moves, so they keep theirs.
  // Returns the moved cells, each now held by `seq` alone; their keys still
  // carry the old rotation. The caller checked shift_cells_needed.
  std::vector<std::uint32_t> shift_positions(std::uint32_t seq, std::int32_t p0, std::int32_t p1);

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
  std::vector<std::uint32_t> free_;  // stack of free cell indices
  // Per sequence, sorted by position: positions only grow (Session::decode
  // checks), so a decode appends; each holds room for every cell once used,
  // so decoding allocates nothing per token.
  std::vector<SeqCells> seqs_;
  // build_mask's scratch (kNotListed between calls), per sequence: where its
  // cells start in `cells`, and the first of them any row of the batch sees.
  static constexpr std::uint32_t kNotListed = UINT32_MAX;
  mutable std::vector<std::uint32_t> mask_seq_start_, mask_seq_from_;
  std::vector<ZeroedVector<std::byte>> k_, v_;  // per layer: [n_cells][widths_[l]] of type_
};

}  // namespace seam
