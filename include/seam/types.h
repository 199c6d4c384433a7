// Basic vocabulary types shared by every seam API.
#pragma once

#include <cstdint>

namespace seam {

using Token = std::int32_t;

// How to turn a token back into text.
enum class Detok {
  Text,   // render special/control tokens as their text (e.g. "<|im_end|>")
  Plain,  // suppress special/control tokens (render them as "")
};

}  // namespace seam
