// Where `seam run` finds the bundled model when no -m is given.
#pragma once

#include <string>

namespace seam::cli {

inline constexpr const char* kDefaultModelName = "seam-kjv.gguf";

// $SEAM_MODEL when it is set (an error when it names nothing); else the first
// of: next to the binary; <prefix>/share/seam/ beside
// it; the source tree's models/ folder. Throws a seam::Error saying where it
// looked when none exists.
std::string default_model_path();

}  // namespace seam::cli
