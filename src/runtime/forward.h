// The one forward pass: every architecture is options on it (model/hparams.h).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "compute/backend.h"
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

// Activation buffers for up to n_batch tokens, allocated once per session and
// sized by the widest layer (model/layers.h).
struct ForwardScratch {
  ForwardScratch(const ModelSpec& spec, std::uint32_t n_batch);
  std::vector<float> x;                   // [n_batch][n_embd] residual stream
  std::vector<float> h;                   // [n_batch][n_embd] normed input / block output
  std::vector<float> q;                   // [n_batch][max q width]
  std::vector<float> k;                   // [n_batch][max kv width]
  std::vector<float> v;                   // [n_batch][max kv width]
  std::vector<float> attn;                // [n_batch][max q width]
  std::vector<float> gate;                // [n_batch][max ff width] (MoE: [n_used][n_ff] per row)
  std::vector<float> up;                  // [n_batch][max ff width]
  std::vector<float> router;              // [n_batch][max n_expert] router logits
  std::vector<std::int32_t> expert_ids;   // [n_batch][max n_expert_used]
  std::vector<float> expert_w;            // [n_batch][max n_expert_used]
  std::vector<float> q_gate;              // [n_batch][max q width] (gated_q)
  std::vector<float> q_raw;               // [n_batch][n_head][2 head_dim] (gated_q: [q | gate])
  std::vector<float> shexp;               // [n_batch][n_embd] shared expert output
  std::vector<float> shexp_gate;          // [n_batch] its gate
  std::vector<float> router_in;           // [n_batch][n_embd] (n_ff_dense: the router's input)
  std::vector<float> rows;                // [n_out][n_embd] rows that want logits
  std::optional<DeltaNetScratch> delta;   // gated-delta-net layers
  std::vector<SeqRun> runs;               // the batch's rows by sequence (recurrent models)
  std::vector<std::int32_t> tokens, pos;  // [n_batch]
  std::vector<float> q_temp;              // [n_batch] attention temperature (attn_temp_scale)
  // One causal mask per distinct window among the layers (0 = no window).
  struct Mask {
    std::uint32_t window = 0;
    std::vector<std::uint32_t> offsets, cells;
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
