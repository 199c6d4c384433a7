// UTF-8 helpers and the GPT-2 byte<->unicode alphabet, for the tokenizers.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/utf8.h"

namespace seam::unicode {

inline constexpr char32_t kReplacement = 0xFFFD;

// Decodes the code point at s[i]. Returns its length in bytes (1..4), or 0 when
// the bytes there are not a valid, shortest-form UTF-8 sequence (then cp is unset).
int decode_utf8(std::string_view s, std::size_t i, char32_t& cp);

using seam::append_utf8;  // core/utf8.h

// SentencePiece's space symbol U+2581 ('▁').
inline constexpr std::string_view kMetaspace = "\xE2\x96\x81";

// The byte a byte-fallback piece "<0xXX>" stands for, or -1 for any other text.
int byte_of_piece(std::string_view piece);

// `piece` with every U+2581 turned back into a space.
std::string metaspace_to_spaces(std::string_view piece);

// Copies `s`, replacing every byte that does not start a valid sequence with U+FFFD.
std::string sanitize_utf8(std::string_view s);
bool is_valid_utf8(std::string_view s);

// NFC normalization; `s` must be valid UTF-8.
std::string nfc(std::string_view s);

// GPT-2's reversible map from bytes to printable code points: printable Latin-1
// bytes map to themselves, the rest to U+0100 onwards, in byte order.
const std::array<char32_t, 256>& byte_to_unicode();
// The inverse; -1 for a code point that is not in the alphabet.
int unicode_to_byte(char32_t cp);

}  // namespace seam::unicode
