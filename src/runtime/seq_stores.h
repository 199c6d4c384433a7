// Every per-sequence store of a session - the KV cache of the attention
// layers and the recurrent state of the recurrent ones - and the Session
// operations that must keep them in step (include/seam/session.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "runtime/kv_cache.h"
#include "runtime/recurrent_state.h"
#include "seam/session.h"

namespace seam {

class SeqStores {
 public:
  SeqStores(KvCache kv, RecurrentStore rec) : kv_(std::move(kv)), rec_(std::move(rec)) {}

  KvCache& kv() { return kv_; }
  const KvCache& kv() const { return kv_; }
  RecurrentStore& rec() { return rec_; }
  const RecurrentStore& rec() const { return rec_; }

  // Throws Error(InvalidArgument / ContextFull) for a batch decode must refuse,
  // before anything changes. On a model with recurrent layers a sequence's
  // positions must also follow on without gaps (its state folds every token).
  void validate(std::span<const Decode> batch, std::uint32_t n_vocab);

  void clear_seq(std::uint32_t seq);
  void copy_seq(std::uint32_t src, std::uint32_t dst);
  // Session::begin_prompt: the longest cached prefix of `tokens` (at most
  // tokens.size() - 1) that every store can keep; the rest is dropped.
  std::size_t begin_prompt(std::uint32_t seq, std::span<const Token> tokens);

 private:
  KvCache kv_;
  RecurrentStore rec_;
  std::vector<std::uint64_t> seen_;     // [n_seq_max] validate(): batch that last saw seq
  std::vector<std::int32_t> last_pos_;  // [n_seq_max] validate(): its last position there
  std::uint64_t batch_id_ = 0;
};

}  // namespace seam
