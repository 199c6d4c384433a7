// Where `seam run` finds the bundled model when no -m is given.
#pragma once

#include <string>

namespace seam::cli {

inline constexpr const char* kDefaultModelName = "seam-kjv.gguf";

// The first of: $SEAM_MODEL; next to the binary; <prefix>/share/seam/ beside
// it; the source tree's models/ folder. Throws a seam::Error saying where it
// looked when none exists.
std::string default_model_path();

}  // namespace seam::cli
