// libFuzzer entry point for the server's request parsing (see server_request_fuzz.h).
#include "fuzz/server_request_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static seam::fuzz::ServerRequestTarget target;
  try {
    target.run(data, size);
  } catch (const seam::server::ApiError&) {
    // A refused body is a correct outcome.
  } catch (const seam::Error&) {
  }
  return 0;
}

std::vector<std::string> seam_fuzz_seeds() { return seam::fuzz::server_request_seeds(); }
