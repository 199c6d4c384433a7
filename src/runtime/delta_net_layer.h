// The mixer of a gated-delta-net layer (Qwen3.5 / Qwen3-Next), run over a
// batch of any mix of sequences; each sequence's state lives in the
// RecurrentStore. With h the normed input of a token:
//   m = Wqkv h; z = Wgate h; beta = sigmoid(Wbeta h); g = a * softplus(Walpha h + dt_bias)
//   u = silu(causal_conv(m)) split into q, k [n_head_k][S] and v [n_head_v][S]
//   q = l2(q) / sqrt(S), k = l2(k); o = gated delta rule (q, k, v, g, beta) per v-head
//   out = Wout (rms_norm(o) * norm * silu(z)) per head
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "compute/backend.h"
#include "core/zeroed_vector.h"
#include "model/delta_net.h"
#include "runtime/recurrent_state.h"

namespace seam {

// Buffers for up to n_batch tokens, allocated once per session.
struct DeltaNetScratch {
  DeltaNetScratch(const DeltaNetParams& p, std::uint32_t n_batch);
  // [n_batch][conv_channels]: the projections, the conv's outputs [q | k | v]
  // (in place), the rule's outputs over v, and those compacted to [n_batch][v_width]
  ZeroedVector<float> m;
  ZeroedVector<float> z;     // [n_batch][v_width] the output gate
  ZeroedVector<float> b, a;  // [n_batch][n_head_v] beta, g (ba: [n_batch][2 n_head_v] first)
  ZeroedVector<float> x;     // [n_batch][conv_channels] one sequence's rows, gathered
  ZeroedVector<float> gb;    // [n_batch][2][n_head_v] their g and beta, gathered
};

// out [T][n_embd] = the mixer of h [T][n_embd] for the rows of `batch`
// (grouped into `runs`), folding each sequence's tokens into recurrent layer
// `rl` of `store` (the caller brackets the layers with begin_batch/commit_batch).
void delta_net_layer(const DeltaNetParams& p, const DeltaNetWeights& w, float eps,
                     ComputeBackend& be, RecurrentStore& store, std::uint32_t rl,
                     std::span<const SeqRun> runs, const float* h, std::int64_t n_tokens,
                     DeltaNetScratch& s, float* out);

}  // namespace seam
