#include "runtime/seq_stores.h"

#include <limits>
#include <string>

#include "seam/error.h"

namespace seam {

void SeqStores::validate(std::span<const Decode> batch, std::uint32_t n_vocab) {
  if (batch.empty()) throw Error(Errc::InvalidArgument, "decode called with an empty batch");
  // last_pos_[seq] is this batch's last position of seq when seen_[seq] ==
  // batch_id_ (no clearing, no allocation per call).
  ++batch_id_;
  if (seen_.size() != kv_.n_seq_max()) {
    seen_.assign(kv_.n_seq_max(), 0);
    last_pos_.assign(kv_.n_seq_max(), 0);
  }
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const Decode& d = batch[i];
    const std::string where = "batch row " + std::to_string(i) + ": ";
    if (d.token < 0 || static_cast<std::uint32_t>(d.token) >= n_vocab) {
      throw Error(Errc::InvalidArgument, where + "token id " + std::to_string(d.token) +
                                             " is outside the vocabulary [0, " +
                                             std::to_string(n_vocab) + ")");
    }
    if (d.seq >= kv_.n_seq_max()) {
      throw Error(Errc::InvalidArgument, where + "sequence id " + std::to_string(d.seq) +
                                             " is out of range: this session has n_seq_max = " +
                                             std::to_string(kv_.n_seq_max()));
    }
    if (d.pos < 0) {
      throw Error(Errc::InvalidArgument, where + "negative position " + std::to_string(d.pos));
    }
    if (d.pos == std::numeric_limits<std::int32_t>::max()) {  // its next position would overflow
      throw Error(Errc::InvalidArgument, where + "position " + std::to_string(d.pos) +
                                             " is past the last a sequence can use (" +
                                             std::to_string(d.pos - 1) + ")");
    }
    if (seen_[d.seq] != batch_id_) {
      seen_[d.seq] = batch_id_;
      last_pos_[d.seq] = kv_.seq_next_pos(d.seq) - 1;
    }
    std::int32_t& last = last_pos_[d.seq];
    if (d.pos <= last) {
      throw Error(Errc::InvalidArgument,
                  where + "position " + std::to_string(d.pos) + " of sequence " +
                      std::to_string(d.seq) + " does not follow position " + std::to_string(last) +
                      "; positions must increase (use clear_seq or begin_prompt to rewind)");
    }
    if (!rec_.empty() && d.pos != last + 1) {
      throw Error(Errc::InvalidArgument,
                  where + "position " + std::to_string(d.pos) + " of sequence " +
                      std::to_string(d.seq) + " leaves a gap after position " +
                      std::to_string(last) +
                      ": this model has recurrent layers, whose state folds every token in "
                      "order; decode position " +
                      std::to_string(last + 1) + " next");
    }
    last = d.pos;
  }
  if (batch.size() > kv_.free_cells()) {
    throw Error(Errc::ContextFull, "context full: the batch needs " + std::to_string(batch.size()) +
                                       " KV cells but only " + std::to_string(kv_.free_cells()) +
                                       " of " + std::to_string(kv_.n_cells()) +
                                       " are free; clear finished sequences or use a larger n_ctx");
  }
}

void SeqStores::clear_seq(std::uint32_t seq) {
  kv_.clear_seq(seq);
  rec_.clear_seq(seq);
}

void SeqStores::copy_seq(std::uint32_t src, std::uint32_t dst) {
  kv_.copy_seq(src, dst);
  rec_.copy_seq(src, dst);
}

std::size_t SeqStores::begin_prompt(std::uint32_t seq, std::span<const Token> tokens) {
  std::size_t n = 0;
  for (const auto& [pos, cell] : kv_.seq_cells(seq)) {
    if (n >= tokens.size() || pos != static_cast<std::int32_t>(n) ||
        kv_.cell_token(cell) != tokens[n]) {
      break;
    }
    ++n;
  }
  // The last prompt token is always decoded again: its logits are not cached.
  if (n == tokens.size()) n = tokens.empty() ? 0 : tokens.size() - 1;
  // Recurrent layers can keep only a prefix some state was saved for.
  if (!rec_.empty()) {
    n = static_cast<std::size_t>(rec_.usable_prefix(seq, static_cast<std::int32_t>(n)));
    rec_.rewind(seq, static_cast<std::int32_t>(n));
  }
  kv_.truncate_seq(seq, static_cast<std::int32_t>(n));
  return n;
}

}  // namespace seam
