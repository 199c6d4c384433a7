// What a loaded Model holds; shared by the runtime's translation units.
#pragma once

#include <memory>

#include "compute/backend.h"
#include "format/gguf.h"
#include "model/loader.h"
#include "seam/model.h"
#include "tokenizer/tokenizer.h"

namespace seam {

struct Model::Impl {
  GgufFile file;  // owns the mapping the weight views point into
  ModelSpec spec;
  ModelWeights weights;
  std::unique_ptr<Tokenizer> tokenizer;
  ModelInfo info;
  LoadOptions options;
  bool vocab_only = false;
};

// The runtime's only way to a Model's internals (the public header keeps them opaque).
struct ModelAccess {
  static const Model::Impl& of(const Model& model) { return *model.impl_; }
};

// Admission of a parsed header: the model's recipe and tokenizer must both load.
Admission admission_verdict(const GgufFile& file);

// A session over `model` computing with `backend` (tests inject their own).
std::unique_ptr<Session> make_session(const Model& model, const SessionConfig& config,
                                      std::unique_ptr<ComputeBackend> backend);

}  // namespace seam
