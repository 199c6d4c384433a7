#include "generate/utf8.h"

#include <cstddef>

namespace seam {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// Length of the character led by `c` (1..4), or 0 for a byte no valid
// character starts with (continuation bytes, C0/C1 overlong leads, F5..FF).
std::size_t char_length(unsigned char c) {
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) return 3;
  if (c >= 0xF0 && c <= 0xF4) return 4;
  return 0;
}

// Whether byte `b` may follow at offset `i` (1..3) of a character led by
// `lead`: the second byte is narrowed to exclude overlong forms, UTF-16
// surrogates and code points above U+10FFFF.
bool continuation_ok(unsigned char lead, std::size_t i, unsigned char b) {
  unsigned char lo = 0x80, hi = 0xBF;
  if (i == 1) {
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  }
  return b >= lo && b <= hi;
}

}  // namespace

void utf8_take_complete(std::string& bytes, std::string& out, bool final) {
  std::size_t i = 0;
  const std::size_t n = bytes.size();
  while (i < n) {
    const auto lead = static_cast<unsigned char>(bytes[i]);
    const std::size_t len = char_length(lead);
    if (len == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    std::size_t got = 1;
    while (got < len && i + got < n &&
           continuation_ok(lead, got, static_cast<unsigned char>(bytes[i + got])))
      ++got;
    if (got == len) {
      out.append(bytes, i, len);
      i += len;
    } else if (i + got == n && !final) {
      break;  // a valid beginning; its remaining bytes may still arrive
    } else {
      out += kReplacement;  // broken sequence: replace it and resync at the bad byte
      i += got;
    }
  }
  bytes.erase(0, i);
}

bool utf8_valid(std::string_view s) {
  std::string bytes(s), out;
  utf8_take_complete(bytes, out, true);
  return out == s;
}

}  // namespace seam
