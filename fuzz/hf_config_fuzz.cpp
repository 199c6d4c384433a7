// libFuzzer entry point for Hugging Face config import (see hf_fuzz.h); the
// fixtures are in $SEAM_FUZZ_HF_DIR.
#include "fuzz/hf_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static seam::fuzz::HfConfigTarget target(seam::fuzz::hf_fixture_root_from_env());
  try {
    target.run(data, size);
  } catch (const seam::Error&) {
    // A refused file is a correct outcome.
  }
  return 0;
}

std::vector<std::string> seam_fuzz_seeds() {
  return seam::fuzz::hf_config_seeds(seam::fuzz::hf_fixture_root_from_env());
}
