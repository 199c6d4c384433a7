// libFuzzer entry point for tokenization (see tokenize_fuzz.h).
#include "fuzz/tokenize_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static seam::fuzz::TokenizerSet set;
  try {
    seam::fuzz::tokenize_one_input(set, data, size);
  } catch (const seam::Error&) {
    // A refused tokenizer or text is a correct outcome (the replay test checks
    // that every tokenizer of the set builds).
  }
  return 0;
}

std::vector<std::string> seam_fuzz_seeds() {
  return seam::fuzz::tokenize_seeds(seam::fuzz::TokenizerSet().size());
}
