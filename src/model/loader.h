// From a parsed GGUF header to a validated model description: admission
// (header only) and binding of typed weight views.
#pragma once

#include <string>

#include "format/gguf.h"
#include "model/hparams.h"
#include "model/weights.h"

namespace seam {

// Admission: reads only metadata and the tensor table. Throws Error(Unsupported)
// for an unknown architecture or a tensor type this build cannot decode, and
// Error(BadFormat) for missing or mis-shaped tensors or inconsistent
// hyperparameters — each message names the exact reason.
ModelSpec admit_model(const GgufFile& file);

// Binds every tensor of an admitted model; 1-D tensors are copied to f32.
ModelWeights bind_weights(const GgufFile& file, const ModelSpec& spec);

}  // namespace seam
