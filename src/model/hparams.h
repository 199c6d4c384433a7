// Hyperparameters and recipe options of a decoder-only transformer: the data
// that makes one forward pass serve every architecture (DESIGN.md §2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compute/backend.h"

namespace seam {

struct Hparams {
  std::uint32_t n_vocab = 0;
  std::uint32_t n_ctx_train = 0;
  std::uint32_t n_embd = 0;
  std::uint32_t n_layer = 0;
  std::uint32_t n_head = 0;
  std::uint32_t n_head_kv = 0;
  std::uint32_t head_dim = 0;  // per-head q/k/v width (n_embd / n_head unless the file says)
  std::uint32_t n_ff = 0;
  float norm_eps = 1e-5f;
  float rope_base = 10000.0f;
  std::uint32_t n_rot = 0;  // rotated dims per head
};

// Options of the one forward pass; each architecture file sets its own.
struct Recipe {
  bool rope_neox = false;   // rotate (i, i+n_rot/2) pairs instead of (2i, 2i+1)
  bool qkv_bias = false;    // blk.N.attn_{q,k,v}.bias
  bool qk_norm = false;     // per-head RMSNorm of q and k before RoPE
  bool post_norms = false;  // extra norms after attention and FFN (gemma2/3)
  float embd_scale = 0.0f;  // if > 0: embeddings are multiplied by it
  Activation ffn_act = Activation::Silu;
  float attn_softcap = 0.0f;   // 0 = off
  float final_softcap = 0.0f;  // 0 = off
  float attn_scale = 0.0f;     // 0 = 1/sqrt(head_dim)
};

}  // namespace seam
