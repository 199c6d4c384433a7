// Safetensors fuzzing, two targets. `safetensors`: one input is a whole file
// (u64 header length, JSON header, byte buffer) parsed from memory; a parsed
// file must keep every tensor's bytes inside the input and sized by its shape
// and dtype. `safetensors_index`: one input is a model.safetensors.index.json,
// read from a scratch folder that holds two small shards; a set that opens
// must find every tensor it lists. Header-only so the libFuzzer binaries, the
// standalone driver and the gtest in tests/format share one definition.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "fixtures.h"
#include "format/safetensors.h"
#include "seam/error.h"

namespace seam::fuzz {

[[noreturn]] inline void safetensors_invariant_failed(const char* what) {
  std::fprintf(stderr, "safetensors fuzz: invariant violated: %s\n", what);
  std::abort();
}

inline void st_check(bool ok, const char* what) {
  if (!ok) safetensors_invariant_failed(what);
}

inline std::uint64_t st_element_bytes(TensorType t) { return t == TensorType::F32 ? 4 : 2; }

// Runs one file. Throws only seam::Error; aborts when a parsed file breaks an invariant.
inline void safetensors_one_input(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  const SafetensorsFile f = SafetensorsFile::parse(bytes, "fuzz.safetensors");
  const std::byte* end = bytes.data() + bytes.size();
  const SafetensorsTensor* prev = nullptr;
  for (const SafetensorsTensor& t : f.tensors()) {
    st_check(f.find(t.name) == &t, "find() returns the tensor");
    st_check(t.type == TensorType::F32 || t.type == TensorType::F16 || t.type == TensorType::BF16,
             "dtype is F32, F16 or BF16");
    st_check(t.data.size() == t.n_elements() * st_element_bytes(t.type), "bytes = elements * size");
    st_check(t.data.empty() || (t.data.data() >= bytes.data() + 8 && t.data.data() <= end &&
                                t.data.size() <= static_cast<std::size_t>(end - t.data.data())),
             "data inside the file, after the header length");
    if (prev) st_check(prev->name < t.name, "tensors sorted by unique name");
    prev = &t;
  }
}

// A file from a JSON header and `data_bytes` of patterned data.
inline std::string safetensors_file(const std::string& header, std::size_t data_bytes) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  out += header;
  for (std::size_t i = 0; i < data_bytes; ++i) out += static_cast<char>(i * 7 + 1);
  return out;
}

// Small valid files: every dtype, metadata, a scalar, an empty tensor, and the
// tensor names a llama checkpoint uses. The campaign adds tools/hf.py's files.
inline std::vector<std::string> safetensors_seeds() {
  return {
      safetensors_file(R"({"__metadata__":{"format":"pt"},)"
                       R"("b":{"dtype":"F16","shape":[2,3],"data_offsets":[24,36]},)"
                       R"("a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
                       R"("c":{"dtype":"BF16","shape":[4],"data_offsets":[36,44]},)"
                       R"("s":{"dtype":"F32","shape":[],"data_offsets":[44,48]},)"
                       R"("z":{"dtype":"F32","shape":[0,5],"data_offsets":[48,48]}})",
                       48),
      safetensors_file(
          R"({"model.embed_tokens.weight":{"dtype":"BF16","shape":[8,4],"data_offsets":[0,64]},)"
          R"("model.layers.0.self_attn.q_proj.weight":{"dtype":"BF16","shape":[4,4],)"
          R"("data_offsets":[64,96]},"model.norm.weight":{"dtype":"F32","shape":[4],)"
          R"("data_offsets":[96,112]},"lm_head.weight":{"dtype":"F16","shape":[8,4],)"
          R"("data_offsets":[112,176]}})",
          176),
      safetensors_file(
          R"({"__metadata__":{},"x":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", 8),
      safetensors_file("{}", 0),
  };
}

// The index target: two shards written once into a scratch folder; each input
// becomes its model.safetensors.index.json.
class SafetensorsIndexTarget {
 public:
  SafetensorsIndexTarget() : dir_("st-index") {
    write_file(dir_.path() / "model-00001-of-00002.safetensors",
               safetensors_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8));
    write_file(dir_.path() / "model-00002-of-00002.safetensors",
               safetensors_file(R"({"b":{"dtype":"F16","shape":[3],"data_offsets":[0,6]},)"
                                R"("c":{"dtype":"BF16","shape":[1],"data_offsets":[6,8]}})",
                                8));
  }

  // Throws only seam::Error; aborts when an opened set breaks an invariant.
  void run(const std::uint8_t* data, std::size_t size) {
    write_file(dir_.path() / "model.safetensors.index.json",
               {reinterpret_cast<const char*>(data), size});
    const SafetensorsSet set = SafetensorsSet::open_dir(dir_.path().string());
    st_check(set.n_files() >= 1 && set.n_files() <= 2, "one or two shards");
    for (const SafetensorsTensor* t : set.tensors())
      st_check(set.find(t->name) == t, "find() returns each listed tensor");
  }

 private:
  ScratchDir dir_;
};

inline std::vector<std::string> safetensors_index_seeds() {
  return {
      R"({"metadata":{"total_size":22},"weight_map":{"a":"model-00001-of-00002.safetensors",)"
      R"("b":"model-00002-of-00002.safetensors","c":"model-00002-of-00002.safetensors"}})",
      R"({"weight_map":{"b":"model-00002-of-00002.safetensors"}})",
      R"({"weight_map":{"a":"../model-00001-of-00002.safetensors"}})",
      R"({"metadata":{"total_size":"x"},"weight_map":{"a":"model-00002-of-00002.safetensors"}})",
  };
}

}  // namespace seam::fuzz
