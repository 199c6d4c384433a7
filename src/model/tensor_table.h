// One table of the tensors a model needs. Each row names a tensor, the shape
// its LayerSpec implies, whether it may be absent, and where it binds; the same
// rows validate the file at admission (header only) and bind the weights at
// load, so the two cannot disagree.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "format/gguf.h"
#include "model/hparams.h"
#include "model/weights.h"

namespace seam {

struct TensorRow {
  std::string name;
  std::vector<std::uint64_t> ne;  // expected shape, row length first
  bool required = true;
  // Where the tensor goes; exactly one of these is set.
  const float** vec = nullptr;   // any shape, copied to f32 (F32/F16/BF16 only)
  WeightView* matrix = nullptr;  // 2-D, kept in the file's format
  // A 3-D [n_in, n_out, n_expert] tensor: each expert's consecutive row
  // ranges of the given lengths, in order (one range: the whole expert).
  std::vector<std::pair<ExpertsView*, std::int64_t>> expert_parts;
  // A fused 2-D tensor: consecutive row ranges of the given lengths, in order.
  std::vector<std::pair<WeightView*, std::int64_t>> parts;
};

class TensorTable {
 public:
  void vec(std::string name, std::vector<std::uint64_t> ne, bool required, const float** dst);
  void matrix(std::string name, std::uint64_t n_in, std::uint64_t n_out, bool required,
              WeightView* dst);
  void fused(std::string name, std::uint64_t n_in,
             std::vector<std::pair<WeightView*, std::int64_t>> parts, bool required);
  void experts(std::string name, std::uint64_t n_in, std::uint64_t n_out, std::uint64_t n_expert,
               bool required, ExpertsView* dst);
  void fused_experts(std::string name, std::uint64_t n_in,
                     std::vector<std::pair<ExpertsView*, std::int64_t>> parts,
                     std::uint64_t n_expert, bool required);
  const std::vector<TensorRow>& rows() const { return rows_; }

 private:
  std::vector<TensorRow> rows_;
};

// The rows every decoder-only model shares (embeddings, output, RoPE factors)
// and, per layer, the attention block and the dense or MoE FFN as the recipe
// and LayerSpec say; destinations point into `w`, whose `layers` must already
// hold n_layer entries. Architectures add theirs through ArchSpec::tensors.
void standard_rows(const ModelSpec& spec, ModelWeights& w, TensorTable& table);

// Checks every row against the file: presence when required, shape, a type
// this build decodes. With `bind`, also fills the destinations (1-D copies go
// to w.owned). Throws Error(BadFormat) for a missing or mis-shaped tensor and
// Error(Unsupported) for a type this build cannot decode, naming the tensor.
void apply_table(const GgufFile& file, const TensorTable& table, ModelWeights& w, bool bind);

}  // namespace seam
