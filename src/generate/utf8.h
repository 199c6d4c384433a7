// Helpers for streaming text that may end inside a UTF-8 character.
#pragma once

#include <cstddef>
#include <string_view>

namespace seam {

// Length of the longest prefix of `s` that does not end inside a UTF-8
// character: a trailing lead byte whose continuation bytes have not arrived
// yet is held back. Invalid bytes are passed through (they can never complete).
std::size_t utf8_complete_prefix(std::string_view s);

}  // namespace seam
