// A readable description of a model file for `seam inspect`.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "seam/model.h"

namespace seam {

struct InspectReport {
  std::uint32_t gguf_version = 0;
  // Metadata keys with their values rendered as text (long arrays abbreviated).
  std::vector<std::pair<std::string, std::string>> metadata{};
  struct Tensor {
    std::string name;
    std::string type;
    std::vector<std::uint64_t> shape;  // row length first
    std::uint64_t bytes = 0;
  };
  std::vector<Tensor> tensors{};
  std::string type_summary{};  // e.g. "Q4_K x25, Q6_K x5, F32 x9"
  std::uint64_t n_params = 0;
  std::uint64_t tensor_bytes = 0;
  // The per-layer structure, one line per group of identical layers, e.g.
  // "0-22/2: attention, 64 heads (8 KV) of 64, rope neox 64 yarn, window 128,
  // experts 4 of 32 x 2880". Layers are listed as ranges, "a-b/s" meaning every
  // s-th from a to b. Empty when the architecture's metadata could not be read.
  std::vector<std::string> layers{};
  Admission admission{};
};

// Reads the header of a GGUF file. Throws Error(Io/BadFormat) only when the
// file itself cannot be parsed; a model this build cannot run is reported in
// `admission`.
InspectReport inspect_file(const std::string& path);

}  // namespace seam
