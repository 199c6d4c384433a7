// Where the llama.cpp peer lives, for every test that cross-checks with it.
// ../shared/peers/setup-llamacpp.sh installs it into a `peer` folder beside
// shared/ (SEAM_PEER_DIR, set by tests/CMakeLists.txt to the same place);
// $LLAMACPP_PEER_DIR overrides both. CI installs it and sets
// SEAM_REQUIRE_PEER=1, under which a peer test that cannot find it fails
// instead of skipping: a cross-check that silently stops running proves nothing.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace seam::testing {

inline std::filesystem::path peer_dir() {
  const char* env = std::getenv("LLAMACPP_PEER_DIR");
  return env != nullptr && *env != '\0' ? std::filesystem::path(env)
                                        : std::filesystem::path(SEAM_PEER_DIR);
}

// bin/llamacpp-logits: greedy ids and raw logits after a prompt of token ids.
inline std::string peer_logits_tool() { return (peer_dir() / "bin" / "llamacpp-logits").string(); }

inline bool peer_required() {
  const char* env = std::getenv("SEAM_REQUIRE_PEER");
  return env != nullptr && std::string(env) == "1";
}

}  // namespace seam::testing

// In a test body: skip (or fail, under SEAM_REQUIRE_PEER=1) unless `peer_path`, a
// file or folder of the peer, exists.
#define SEAM_NEED_PEER(peer_path)                                                              \
  do {                                                                                         \
    const std::filesystem::path seam_peer_path_(peer_path);                                    \
    if (!std::filesystem::exists(seam_peer_path_)) {                                           \
      if (::seam::testing::peer_required()) {                                                  \
        FAIL() << "SEAM_REQUIRE_PEER=1 but the llama.cpp peer is missing: " << seam_peer_path_ \
               << " (install it with ../shared/peers/setup-llamacpp.sh or set "                \
                  "LLAMACPP_PEER_DIR)";                                                        \
      }                                                                                        \
      GTEST_SKIP() << "llama.cpp peer not installed (" << seam_peer_path_                      \
                   << "); run ../shared/peers/setup-llamacpp.sh or set LLAMACPP_PEER_DIR";     \
    }                                                                                          \
  } while (0)
