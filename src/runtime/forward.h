// The one forward pass: every architecture is options on it (model/hparams.h).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "compute/backend.h"
#include "core/zeroed_vector.h"
#include "model/loader.h"
#include "runtime/delta_net_layer.h"
#include "runtime/kv_cache.h"
#include "runtime/per_layer_embd.h"
#include "runtime/recurrent_state.h"

namespace seam {

// The K/V width each layer's cache holds: its own for a KV-owning attention
// layer, 0 for one that shares another's or has no attention.
std::vector<std::uint32_t> kv_widths(const ModelSpec& spec);

// What the recurrent store holds per sequence: one conv window and one
// delta-rule state per gated-delta-net layer (n_layer 0 for a pure attention model).
RecurrentShape recurrent_shape(const ModelSpec& spec);

// A dense FFN runs this many of a batch's rows at a time (forward.cpp, ffn_block).
inline constexpr std::int64_t kFfnRows = 128;

// Activation buffers for up to n_batch tokens, allocated once per session and
// sized by the widest layer (model/layers.h); the FFN's for one pass of it
// (kFfnRows for a dense FFN, the whole batch for a MoE layer).
// Zeroed vectors: a page becomes resident when a batch first reaches it, so a
// session that decodes one token at a time holds little of them.
struct ForwardScratch {
  ForwardScratch(const ModelSpec& spec, std::uint32_t n_batch);
  // The views below point into `phases`: no copies.
  ForwardScratch(const ForwardScratch&) = delete;
  ForwardScratch& operator=(const ForwardScratch&) = delete;

  ZeroedVector<float> x;  // [n_batch][n_embd] residual stream
  ZeroedVector<float> h;  // [n_batch][n_embd] normed input / block output
  // A layer's attention rows are dead once its output is in h, and its FFN
  // reads only x and h: the two phases' buffers share one region (8B, 512
  // tokens: the FFN's 14 MiB instead of 26 for both).
  ZeroedVector<float> phases;
  // Attention phase.
  float* q = nullptr;       // [n_batch][max q width] queries, then out (not gated_q)
  float* k = nullptr;       // [n_batch][max kv width]
  float* v = nullptr;       // [n_batch][max kv width]
  float* q_gate = nullptr;  // [n_batch][max q width] (gated_q)
  float* q_raw = nullptr;   // [n_batch][n_head][2 hd] gated_q [q | gate], then q
  // FFN phase.
  float* gate = nullptr;  // [FFN rows][max ff width]
  float* up = nullptr;    // [FFN rows][max ff width]

  ZeroedVector<float> router;              // [FFN rows][max n_expert] router logits
  ZeroedVector<std::int32_t> expert_ids;   // [FFN rows][max n_expert_used]
  ZeroedVector<float> expert_w;            // [FFN rows][max n_expert_used]
  ZeroedVector<float> shexp;               // [FFN rows][n_embd] shared expert output
  ZeroedVector<float> shexp_gate;          // [FFN rows] its gate
  ZeroedVector<float> experts_out;         // [FFN rows][n_embd] routed experts' sum
  ZeroedVector<float> router_in;           // [FFN rows][n_embd] (n_ff_dense: the router's input)
  ZeroedVector<float> rows;                // [n_out][n_embd] rows that want logits
  std::optional<DeltaNetScratch> delta;    // gated-delta-net layers
  std::vector<SeqRun> runs;                // the batch's rows by sequence (recurrent models)
  ZeroedVector<std::int32_t> tokens, pos;  // [n_batch]
  ZeroedVector<float> q_temp;              // [n_batch] attention temperature (attn_temp_scale)
  // One causal mask per distinct window among the layers (0 = no window).
  struct Mask {
    std::uint32_t window = 0;
    std::vector<std::uint32_t> begin, end, cells;
  };
  std::vector<Mask> masks;
  PleScratch ple;  // Per-Layer Embeddings (gemma4); empty without
};

// Runs `batch` (at most n_batch tokens whose cells are already allocated in
// `kv`) through the model, folding its tokens into the recurrent state `rec`
// (shaped by recurrent_shape; validated so each sequence's positions follow on
// from rec's). Writes the logits of the rows whose Decode asks for them, in
// batch order, to `logits` ([n_out][n_vocab]).
void forward(const ModelSpec& spec, const ModelWeights& w, ComputeBackend& be, KvCache& kv,
             RecurrentStore& rec, std::span<const Decode> batch,
             std::span<const std::uint32_t> cells, ForwardScratch& s, float* logits);

}  // namespace seam
