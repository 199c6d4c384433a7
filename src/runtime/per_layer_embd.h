// Gemma 4's Per-Layer Embeddings (PLE): besides the residual stream, every
// layer gets a small input of its own (n_embd_ple wide) made once per token
// from two halves, and adds a gated projection of it after its FFN. Every step
// is a ComputeBackend op, so an accelerator backend runs them too.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "compute/backend.h"
#include "core/zeroed_vector.h"
#include "model/loader.h"

namespace seam {

// Buffers for up to n_batch tokens (empty when the model has no PLE).
struct PleScratch {
  PleScratch(const ModelSpec& spec, std::uint32_t n_batch);
  ZeroedVector<float> tok;   // [n_batch][n_layer * n_embd_ple], then [n_layer][n_batch][n_embd_ple]
  ZeroedVector<float> proj;  // [n_batch][n_layer * n_embd_ple]
  ZeroedVector<float> gate;  // [n_batch][n_embd_ple]
};

// The per-layer inputs of a batch of n_tokens tokens, from their ids and the
// scaled embeddings x [n_tokens][n_embd] (before any layer):
//   ple = (per_layer_token_embd[tok] * sqrt(P)
//          + rms_norm_P(per_layer_model_proj x / sqrt(n_embd)) * per_layer_proj_norm) / sqrt(2),
// the norm taken over each layer's P-wide slice. Leaves them in s.tok laid out
// [n_layer][n_tokens][P], so each layer reads one contiguous block.
void ple_inputs(const ModelSpec& spec, const ModelWeights& w, ComputeBackend& be,
                std::span<const std::int32_t> tokens, const float* x, PleScratch& s);

// Layer l's PLE step on the residual stream x [n_tokens][n_embd]:
//   x += post_norm(proj (gelu_tanh(inp_gate x) * ple[l])); h [n_tokens][n_embd] is scratch.
void ple_layer(const ModelSpec& spec, const LayerWeights& L, ComputeBackend& be, std::uint32_t l,
               std::int64_t n_tokens, float* x, float* h, PleScratch& s);

}  // namespace seam
