// libFuzzer entry point for safetensors shard indexes (see safetensors_fuzz.h).
#include "fuzz/safetensors_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static seam::fuzz::SafetensorsIndexTarget target;
  try {
    target.run(data, size);
  } catch (const seam::Error&) {
    // A refused index is a correct outcome.
  }
  return 0;
}

std::vector<std::string> seam_fuzz_seeds() { return seam::fuzz::safetensors_index_seeds(); }
