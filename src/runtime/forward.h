// The one forward pass: every architecture is options on it (model/hparams.h).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "compute/backend.h"
#include "model/loader.h"
#include "runtime/kv_cache.h"

namespace seam {

// Activation buffers for up to n_batch tokens, allocated once per session.
struct ForwardScratch {
  ForwardScratch(const Hparams& hp, std::uint32_t n_batch);
  std::vector<float> x;                   // [n_batch][n_embd] residual stream
  std::vector<float> h;                   // [n_batch][n_embd] normed input / block output
  std::vector<float> q;                   // [n_batch][n_head * head_dim]
  std::vector<float> k;                   // [n_batch][n_head_kv * head_dim]
  std::vector<float> v;                   // [n_batch][n_head_kv * head_dim]
  std::vector<float> attn;                // [n_batch][n_head * head_dim]
  std::vector<float> gate;                // [n_batch][n_ff]
  std::vector<float> up;                  // [n_batch][n_ff]
  std::vector<float> rows;                // [n_out][n_embd] rows that want logits
  std::vector<std::int32_t> tokens, pos;  // [n_batch]
  std::vector<std::uint32_t> mask_offsets, mask_cells;          // full causal mask
  std::vector<std::uint32_t> swa_mask_offsets, swa_mask_cells;  // sliding-window layers
};

// Runs `batch` (at most n_batch tokens whose cells are already allocated in
// `kv`) through the model. Writes the logits of the rows whose Decode asks for
// them, in batch order, to `logits` ([n_out][n_vocab]).
void forward(const ModelSpec& spec, const ModelWeights& w, ComputeBackend& be, KvCache& kv,
             std::span<const Decode> batch, std::span<const std::uint32_t> cells, ForwardScratch& s,
             float* logits);

}  // namespace seam
