// libFuzzer entry point for the GGUF reader. A refused file (seam::Error) is
// the expected outcome for most inputs; anything else escaping, or a crash,
// is a bug.
#include "fuzz/gguf_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    seam::fuzz::gguf_one_input(data, size);
  } catch (const seam::Error&) {
  }
  return 0;
}

std::vector<std::string> seam_fuzz_seeds() {
  std::vector<std::string> out;
  for (const auto& s : seam::fuzz::gguf_seeds())
    out.emplace_back(reinterpret_cast<const char*>(s.data()), s.size());
  return out;
}
