// libFuzzer entry point for tool-call parsing (see tool_call_fuzz.h).
#include "fuzz/tool_call_fuzz.h"

#include "seam/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    seam::fuzz::tool_call_one_input(data, size);
  } catch (const seam::Error&) {
    // A refusal is a correct outcome.
  }
  return 0;
}

std::vector<std::string> seam_fuzz_seeds() { return seam::fuzz::tool_call_seeds(); }
