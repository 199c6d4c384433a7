#include "runtime/recurrent_state.h"

#include <algorithm>
#include <cstring>

namespace seam {

std::vector<SeqRun> seq_runs(std::span<const Decode> batch) {
  std::vector<SeqRun> runs;
  std::vector<std::int32_t> run_of;  // seq -> index in runs, or -1
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const Decode& d = batch[i];
    if (d.seq >= run_of.size()) run_of.resize(d.seq + 1, -1);
    if (run_of[d.seq] < 0) {
      run_of[d.seq] = static_cast<std::int32_t>(runs.size());
      runs.push_back({d.seq, d.pos, {}});
    }
    runs[static_cast<std::size_t>(run_of[d.seq])].rows.push_back(static_cast<std::uint32_t>(i));
  }
  return runs;
}

RecurrentStore::RecurrentStore(std::uint32_t n_seq_max, const RecurrentShape& shape)
    : shape_(shape),
      live_(static_cast<std::size_t>(n_seq_max) * shape.n_layer *
                (shape.conv_floats + shape.state_floats),
            0.0f),
      pos_(n_seq_max, 0),
      at_boundary_(n_seq_max, false),
      snap_(n_seq_max),
      staged_(n_seq_max) {}

float* RecurrentStore::conv(std::uint32_t layer, std::uint32_t seq) {
  return live(seq) + layer * layer_floats();
}

float* RecurrentStore::state(std::uint32_t layer, std::uint32_t seq) {
  return live(seq) + layer * layer_floats() + shape_.conv_floats;
}

const RecurrentStore::Snapshot* RecurrentStore::find(std::uint32_t seq, std::int32_t pos) const {
  for (const Snapshot& s : snap_[seq]) {
    if (s.pos == pos) return &s;
  }
  return nullptr;
}

// A full ring replaces its shortest prefix: later turns of a conversation
// extend the longer ones.
std::vector<RecurrentStore::Snapshot>::iterator RecurrentStore::shortest(
    std::vector<Snapshot>& ring) {
  return std::min_element(ring.begin(), ring.end(),
                          [](const Snapshot& a, const Snapshot& b) { return a.pos < b.pos; });
}

RecurrentStore::Snapshot& RecurrentStore::slot_for(std::uint32_t seq, std::int32_t pos) {
  std::vector<Snapshot>& ring = snap_[seq];
  Snapshot* slot = nullptr;
  for (Snapshot& s : ring) {
    if (s.pos == pos) slot = &s;  // the same prefix again: refresh it
  }
  if (!slot && ring.size() < kSnapshotsPerSeq) slot = &ring.emplace_back();
  if (!slot) {
    slot = &*shortest(ring);
  }
  slot->pos = pos;
  return *slot;
}

void RecurrentStore::save(std::uint32_t seq, std::int32_t pos, const float* data) {
  slot_for(seq, pos).data.assign(data, data + shape_.n_layer * layer_floats());
}

void RecurrentStore::begin_update(std::uint32_t seq, std::int32_t first_pos, std::size_t n_tokens) {
  if (empty()) return;
  const bool keep = at_boundary_[seq] || n_tokens > 1;
  if (keep && pos_[seq] > 0 && !find(seq, pos_[seq])) save(seq, pos_[seq], live(seq));
  at_boundary_[seq] = n_tokens > 1;
  staged_[seq].pos = -1;
  if (n_tokens < 2) return;
  // The staged copy will become a snapshot at commit, replacing the one at
  // its position or, in a full ring, the shortest. That slot leaves the ring
  // now and lends its buffer to the stage, so a call holds no state copy
  // beyond the live state and kSnapshotsPerSeq (18.8 MiB each for the hybrid
  // benchmark shape); commit moves the buffer back.
  std::vector<Snapshot>& ring = snap_[seq];
  const std::int32_t stage_pos = first_pos + static_cast<std::int32_t>(n_tokens) - 1;
  auto victim =
      std::find_if(ring.begin(), ring.end(), [&](const Snapshot& s) { return s.pos == stage_pos; });
  if (victim == ring.end() && ring.size() == kSnapshotsPerSeq) {
    victim = shortest(ring);
  }
  if (victim == ring.end()) return;
  staged_[seq].data = std::move(victim->data);
  ring.erase(victim);
}

void RecurrentStore::stage(std::uint32_t layer, std::uint32_t seq, std::int32_t pos) {
  Snapshot& s = staged_[seq];
  s.data.resize(shape_.n_layer * layer_floats());
  s.pos = pos;
  std::memcpy(s.data.data() + layer * layer_floats(), live(seq) + layer * layer_floats(),
              layer_floats() * sizeof(float));
}

void RecurrentStore::commit(std::uint32_t seq, std::int32_t next_pos) {
  if (empty()) return;
  Snapshot& s = staged_[seq];
  if (s.pos > 0) slot_for(seq, s.pos).data = std::move(s.data);
  s.pos = -1;
  pos_[seq] = next_pos;
}

void RecurrentStore::begin_batch(std::span<const SeqRun> runs) {
  for (const SeqRun& r : runs) begin_update(r.seq, r.first_pos, r.rows.size());
}

void RecurrentStore::fold_layer(std::span<const SeqRun> runs, std::uint32_t layer,
                                FunctionRef<void(const SeqRun&, std::size_t, std::size_t)> fold) {
  for (const SeqRun& r : runs) {
    const std::size_t n = r.rows.size();
    if (n >= 2) {
      fold(r, 0, n - 1);
      stage(layer, r.seq, r.first_pos + static_cast<std::int32_t>(n) - 1);
      fold(r, n - 1, 1);
    } else if (n == 1) {
      fold(r, 0, 1);
    }
  }
}

void RecurrentStore::commit_batch(std::span<const SeqRun> runs) {
  for (const SeqRun& r : runs)
    commit(r.seq, r.first_pos + static_cast<std::int32_t>(r.rows.size()));
}

void RecurrentStore::clear_seq(std::uint32_t seq) {
  if (empty()) return;
  std::fill_n(live(seq), shape_.n_layer * layer_floats(), 0.0f);
  pos_[seq] = 0;
  at_boundary_[seq] = false;
  snap_[seq].clear();
  staged_[seq].pos = -1;
}

void RecurrentStore::copy_seq(std::uint32_t src, std::uint32_t dst) {
  if (empty() || src == dst) return;
  std::memcpy(live(dst), live(src), shape_.n_layer * layer_floats() * sizeof(float));
  pos_[dst] = pos_[src];
  at_boundary_[dst] = at_boundary_[src];
  snap_[dst] = snap_[src];
  staged_[dst].pos = -1;
}

std::int32_t RecurrentStore::usable_prefix(std::uint32_t seq, std::int32_t n) const {
  if (empty() || pos_[seq] == n) return n;
  std::int32_t best = 0;
  for (const Snapshot& s : snap_[seq]) {
    if (s.pos <= n) best = std::max(best, s.pos);
  }
  return best;
}

void RecurrentStore::rewind(std::uint32_t seq, std::int32_t p) {
  if (empty() || pos_[seq] == p) {
    // The live state already covers p; snapshots beyond it describe tokens
    // that are gone.
  } else if (const Snapshot* s = p > 0 ? find(seq, p) : nullptr) {
    std::memcpy(live(seq), s->data.data(), s->data.size() * sizeof(float));
  } else {
    p = 0;  // no state for p (the caller skipped usable_prefix): start over
    std::fill_n(live(seq), shape_.n_layer * layer_floats(), 0.0f);
  }
  if (empty()) return;
  pos_[seq] = p;
  at_boundary_[seq] = true;
  std::erase_if(snap_[seq], [p](const Snapshot& s) { return s.pos > p; });
}

std::vector<std::int32_t> RecurrentStore::snapshot_positions(std::uint32_t seq) const {
  std::vector<std::int32_t> out;
  for (const Snapshot& s : snap_[seq]) out.push_back(s.pos);
  std::sort(out.begin(), out.end());
  return out;
}

std::size_t RecurrentStore::resident_floats() const {
  std::size_t n = live_.capacity();
  for (const Snapshot& s : staged_) n += s.data.capacity();
  for (const std::vector<Snapshot>& ring : snap_) {
    for (const Snapshot& s : ring) n += s.data.capacity();
  }
  return n;
}

}  // namespace seam
