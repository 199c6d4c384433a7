// Incremental tokenization of a text that arrives in pieces.
//
// The tokens of a prefix of a text are not always a prefix of the text's
// tokens: the end of the buffer may still merge with what comes next
// ("wor" + "ld"). StreamTokenizer re-tokenizes only the uncommitted tail,
// preceded by a few committed tokens of context (so the tokenizer's view of
// word starts and SentencePiece's dummy-prefix space are the same as for the
// whole text), and commits a token only once a whitespace boundary lies
// after it, and even then not the last kHold tokens before that boundary.
// Memory is bounded by the context kept and the uncommitted tail.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "seam/model.h"

namespace seam::observe {

struct StreamToken {
  Token id = 0;
  std::uint64_t offset = 0;  // in the input
  std::string bytes;         // the input bytes it covers
};

class StreamTokenizer {
 public:
  explicit StreamTokenizer(const Model& model);

  // Appends text; returns the tokens committed by it.
  std::vector<StreamToken> feed(std::string_view text);
  // End of input: commits everything left.
  std::vector<StreamToken> finish();

  std::uint64_t bytes_in() const { return consumed_ + pending_.size(); }

 private:
  std::vector<StreamToken> commit(bool all);

  const Model& model_;
  bool dummy_prefix_ = false;        // the tokenizer puts a space in front of the text
  std::uint64_t consumed_ = 0;       // input bytes committed
  std::string pending_;              // input bytes after the last committed token
  std::deque<StreamToken> context_;  // the last committed tokens (left context)
};

}  // namespace seam::observe
