// libFuzzer entry point for chat templates (see template_fuzz.h).
#include "fuzz/template_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    seam::fuzz::template_one_input(data, size);
  } catch (const seam::Error&) {
    // A refused template is a correct outcome.
  }
  return 0;
}

std::vector<std::string> seam_fuzz_seeds() { return seam::fuzz::template_seeds(); }
