// Per-sequence state of the recurrent layers (gated delta net), beside the KV
// cache (DESIGN.md §1): for each recurrent layer and sequence, the short
// convolution's window and the delta rule's state matrix.
//
// A recurrent state is a fold over every token of its sequence, so unlike KV
// cells it cannot be cut back to a shorter prefix. The store keeps a few
// snapshots per sequence instead, each the whole state (every layer) after
// exactly `pos` tokens; Session::begin_prompt rewinds to one of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/function_ref.h"
#include "seam/session.h"

namespace seam {

// Floats per recurrent layer and sequence.
struct RecurrentShape {
  std::uint32_t n_layer = 0;     // recurrent layers (0: a pure attention model)
  std::size_t conv_floats = 0;   // [width-1][n_channels] raw inputs before the conv
  std::size_t state_floats = 0;  // [n_head_v][dv][dk] delta-rule state
};

// The rows of a batch that belong to one sequence, in batch order (so with
// consecutive positions first_pos, first_pos + 1, ...).
struct SeqRun {
  std::uint32_t seq = 0;
  std::int32_t first_pos = 0;
  std::vector<std::uint32_t> rows;
};
std::vector<SeqRun> seq_runs(std::span<const Decode> batch);

class RecurrentStore {
 public:
  // Snapshots kept per sequence: the end of the last decode calls and one
  // token before each (what begin_prompt needs when a prompt repeats).
  static constexpr std::size_t kSnapshotsPerSeq = 4;

  RecurrentStore(std::uint32_t n_seq_max, const RecurrentShape& shape);

  bool empty() const { return shape_.n_layer == 0; }
  const RecurrentShape& shape() const { return shape_; }
  // Live state of `layer` (0 .. n_layer-1, counting recurrent layers only) for `seq`.
  float* conv(std::uint32_t layer, std::uint32_t seq);   // [conv_floats]
  float* state(std::uint32_t layer, std::uint32_t seq);  // [state_floats]
  // Tokens folded into the live state of `seq` (its next position).
  std::int32_t seq_pos(std::uint32_t seq) const { return pos_[seq]; }

  // The forward pass, for each sequence of a batch:
  //   begin_update(seq, first, n)  before any layer folds its n tokens
  //                                (positions first .. first+n-1);
  //   stage(layer, seq, p)         for every layer, the state after p tokens
  //                                (one before the last of the batch);
  //   commit(seq, next_pos)        once every layer has folded its tokens.
  // begin_update keeps the live state as a snapshot (the end of the previous
  // call) where a prompt starts or ends, i.e. unless this call and the one
  // before each fold one token: token-by-token generation would copy the
  // whole state every token (18 MiB for Qwen3.5-0.8B's shape, 8.6% of its
  // decode samples). commit turns the staged copies into a snapshot.
  void begin_update(std::uint32_t seq, std::int32_t first_pos, std::size_t n_tokens);
  void stage(std::uint32_t layer, std::uint32_t seq, std::int32_t pos);
  void commit(std::uint32_t seq, std::int32_t next_pos);

  // The protocol above for a whole batch: begin_batch before the first
  // recurrent layer; for each recurrent layer, fold_layer calls
  // fold(run, first, n) on consecutive rows run.rows[first .. first+n) of each
  // run (all but the last row, then the last, staging the state between);
  // commit_batch after the last layer.
  void begin_batch(std::span<const SeqRun> runs);
  void fold_layer(std::span<const SeqRun> runs, std::uint32_t layer,
                  FunctionRef<void(const SeqRun&, std::size_t, std::size_t)> fold);
  void commit_batch(std::span<const SeqRun> runs);

  // Zeroes the live state of `seq` and drops its snapshots.
  void clear_seq(std::uint32_t seq);
  // `dst` gets a copy of `src`'s live state and snapshots.
  void copy_seq(std::uint32_t src, std::uint32_t dst);
  // The longest prefix of at most n tokens that `seq` can be rewound to: n
  // when the live state or a snapshot covers exactly n, else the largest
  // snapshot below n, else 0.
  std::int32_t usable_prefix(std::uint32_t seq, std::int32_t n) const;
  // Makes the live state cover exactly p = usable_prefix(seq, p) tokens and
  // drops the snapshots beyond p (they describe tokens being discarded).
  void rewind(std::uint32_t seq, std::int32_t p);
  // Positions of the snapshots of `seq`, ascending.
  std::vector<std::int32_t> snapshot_positions(std::uint32_t seq) const;
  // Floats the store holds (live state, staged copies, snapshots), by capacity.
  std::size_t resident_floats() const;

 private:
  struct Snapshot {
    std::int32_t pos = -1;    // -1: unused
    std::vector<float> data;  // every layer: [conv_floats][state_floats] ...
  };
  std::size_t layer_floats() const { return shape_.conv_floats + shape_.state_floats; }
  float* live(std::uint32_t seq) { return live_.data() + seq * shape_.n_layer * layer_floats(); }
  static std::vector<Snapshot>::iterator shortest(std::vector<Snapshot>& ring);
  // The snapshot slot of `seq` for `pos` (its own, a free one, or the
  // shortest prefix's), with its position set.
  Snapshot& slot_for(std::uint32_t seq, std::int32_t pos);
  void save(std::uint32_t seq, std::int32_t pos, const float* data);
  const Snapshot* find(std::uint32_t seq, std::int32_t pos) const;

  RecurrentShape shape_;
  std::vector<float> live_;        // [n_seq][n_layer][conv_floats + state_floats]
  std::vector<std::int32_t> pos_;  // [n_seq]
  // [n_seq] whether the live state's position is worth a snapshot: the end of
  // a call of several tokens, or a position rewound to.
  std::vector<bool> at_boundary_;
  std::vector<std::vector<Snapshot>> snap_;  // [n_seq][kSnapshotsPerSeq]
  std::vector<Snapshot> staged_;             // [n_seq]
};

}  // namespace seam
