// seam::Session — KV state for up to n_seq_max sequences over one Model, and
// the batched decode that advances them.
//
// Failure contract: every Error(InvalidArgument) or Error(ContextFull) thrown
// by a Session is raised before anything changes, so the session stays usable.
// A failure inside a forward pass (Error(BackendFailure)) leaves the KV cache
// half-written: the session is then corrupted and every later call throws
// Error(SessionCorrupted) until it is destroyed and recreated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "seam/types.h"

namespace seam {

// One token to run through the model: `token` of sequence `seq` at position
// `pos`; `logits` asks for this row's next-token logits.
struct Decode {
  Token token = 0;
  std::int32_t pos = 0;
  std::uint32_t seq = 0;
  bool logits = false;
};

// How the KV cache stores keys and values. F16 (the default) halves the cache's
// memory and the bytes attention reads per token; each element is rounded to
// 11 significant bits (relative error <= 2^-11), which moves logits by far less
// than weight quantization does. F32 keeps them exactly as computed. Q8_0
// stores each 32 elements as int8 with one F16 scale (34 bytes per 32: 0.53x
// of F16), an error of at most half a step, max|x| / 254, per element; it
// needs a head size that is a multiple of 32 (session() refuses it otherwise).
enum class CacheType : std::uint8_t { F32, F16, Q8_0 };

struct SessionConfig {
  std::uint32_t n_ctx = 4096;   // KV cells shared by all sequences
  std::uint32_t n_batch = 512;  // most tokens per forward pass; larger decodes are split
  std::uint32_t n_seq_max = 1;  // sequence ids are 0 .. n_seq_max-1 (at most 256)
  CacheType cache_type = CacheType::F16;
};

class Session {
 public:
  virtual ~Session() = default;

  // Runs every Decode through the model in one call (split internally into
  // chunks of n_batch). Any mix of sequences is allowed; within a sequence
  // positions must increase, and each position must be beyond what the
  // sequence already holds. A token of sequence s attends to the cached
  // positions of s that are <= its own.
  // A sequence's logits do not depend on the other rows of the call (batch
  // invariance) for the kernels docs/server.md lists; elsewhere they may move
  // by rounding.
  // Errors (session unchanged): empty batch, token outside the vocabulary,
  // seq >= n_seq_max, negative or non-increasing positions (ContextFull when
  // fewer free cells than tokens).
  virtual void decode(std::span<const Decode> batch) = 0;

  // Next-token logits (n_vocab floats) of row `ith` of the last decode call;
  // Error(InvalidArgument) if that row did not ask for logits. Valid until the
  // next decode.
  virtual std::span<const float> logits(std::size_t ith) const = 0;

  // Removes sequence `seq` from the cache; cells no other sequence holds are freed.
  virtual void clear_seq(std::uint32_t seq) = 0;
  // Forks: `dst` (cleared first) shares every cell of `src` without copying K/V.
  virtual void copy_seq(std::uint32_t src, std::uint32_t dst) = 0;
  // Prefix reuse: keeps the longest cached prefix of `tokens` for `seq`, drops
  // the rest of that sequence, and returns the prefix length. It returns at
  // most tokens.size() - 1 so that the caller always decodes at least the last
  // token (whose logits it needs): decode tokens[n..] at positions n.. next.
  virtual std::size_t begin_prompt(std::uint32_t seq, std::span<const Token> tokens) = 0;

  // Context shift without a new prefill: removes the positions [p0, p1) of
  // sequence `seq` and moves each of its later positions down by p1 - p0
  // (llama.cpp's seq_rm then seq_add). Their cached keys are rotated by the
  // position delta with the model's own RoPE (YaRN, LongRoPE and per-layer
  // bases included; the attention factor is not applied a second time) and
  // their values are kept, so the next token goes at seq_next_pos(seq).
  // What the moved tokens hold: a key is exactly the one a prefill at the new
  // position would compute from the same layer input, within float32 rounding
  // of the rotation (an F16 cache rounds it once more, relative error 2^-11).
  // In the first layer that input is the token alone; in later layers it was
  // computed while the dropped tokens were in context, and the moved tokens
  // keep what they saw of them. So the logits after a shift equal a cold
  // prefill of the kept tokens at their new positions when nothing was
  // dropped (p0 == p1, or no position of `seq` in [p0, p1)) or the model has
  // one layer; otherwise they are the usual context-shift approximation. A
  // model with attention temperature (Llama 4, Mistral 3: queries scaled by
  // their absolute position) is exact only with one layer: the kept tokens'
  // later layers saw queries scaled for their old positions.
  // Sliding-window layers stay exact: their masks depend on position
  // differences, which a shift keeps. Cells `seq` shares with other sequences
  // (copy_seq) are copied first, so the others see no change.
  // Errors (session unchanged): Error(InvalidArgument) for seq >= n_seq_max,
  // p0 < 0 or p1 < p0; Error(ContextFull) when the shared cells to copy need
  // more free cells than there are; Error(Unsupported) for a model whose keys
  // carry no rotary position (nothing to rotate: the caller prefills again).
  virtual void drop_positions(std::uint32_t seq, std::int32_t p0, std::int32_t p1);

  virtual std::uint32_t n_ctx() const = 0;
  virtual std::uint32_t n_seq_max() const = 0;
  virtual std::uint32_t free_cells() const = 0;
  // Number of positions sequence `seq` holds, and its next position (last + 1, or 0).
  virtual std::uint32_t seq_length(std::uint32_t seq) const = 0;
  virtual std::int32_t seq_next_pos(std::uint32_t seq) const = 0;
  virtual bool corrupted() const = 0;
};

}  // namespace seam
