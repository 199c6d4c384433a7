// Turning a stream of token bytes into whole, valid UTF-8 characters.
#pragma once

#include <string>
#include <string_view>

namespace seam {

// Moves every whole character at the front of `bytes` to the end of `out`,
// leaving in `bytes` only a trailing sequence that is a valid beginning of a
// character still waiting for its continuation bytes. Bytes that can never
// become a valid character (stray continuation bytes, overlong forms,
// surrogates, > U+10FFFF) are replaced by U+FFFD, one per bad byte run start.
// With `final`, a trailing unfinished sequence becomes U+FFFD as well.
void utf8_take_complete(std::string& bytes, std::string& out, bool final = false);

// True when `s` is entirely valid UTF-8.
bool utf8_valid(std::string_view s);

}  // namespace seam
