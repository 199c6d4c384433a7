// From a parsed GGUF header to a validated model description: admission
// (header only) and binding of typed weight views.
#pragma once

#include <cstdint>
#include <string>

#include "compute/cpu_level.h"
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

// Whether every matrix product of the model, its weights laid out as
// bind_weights would at `level` (interleaved only where the file is read into
// memory), gives a token's row the same bits whatever shares its call
// (compute/matmul.h batch_invariant). Reads no matrix.
bool batch_invariant(const GgufFile& file, const ModelSpec& spec, CpuLevel level, bool in_memory);

// Bytes of weights one decoded token reads (ModelInfo::decode_bytes): every
// tensor the model binds once, but one row of an embedding it only looks up
// and n_expert_used of each expert tensor's experts.
std::uint64_t decode_bytes(const GgufFile& file, const ModelSpec& spec);

}  // namespace seam
