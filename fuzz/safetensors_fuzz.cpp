// libFuzzer entry point for safetensors files (see safetensors_fuzz.h).
#include "fuzz/safetensors_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    seam::fuzz::safetensors_one_input(data, size);
  } catch (const seam::Error&) {
    // A refused file is a correct outcome.
  }
  return 0;
}

std::vector<std::string> seam_fuzz_seeds() { return seam::fuzz::safetensors_seeds(); }
