#include "tokenizer/unicode.h"

#include <cstdlib>
#include <memory>

#include <utf8proc.h>

#include "seam/error.h"

namespace seam::unicode {

int decode_utf8(std::string_view s, std::size_t i, char32_t& cp) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const std::size_t left = s.size() - i;
  const unsigned c0 = b(0);
  if (c0 < 0x80) {
    cp = c0;
    return 1;
  }
  int len;
  char32_t min;
  if ((c0 & 0xE0) == 0xC0) {
    len = 2, cp = c0 & 0x1F, min = 0x80;
  } else if ((c0 & 0xF0) == 0xE0) {
    len = 3, cp = c0 & 0x0F, min = 0x800;
  } else if ((c0 & 0xF8) == 0xF0) {
    len = 4, cp = c0 & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (left < static_cast<std::size_t>(len)) return 0;
  for (int k = 1; k < len; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

int byte_of_piece(std::string_view s) {
  const auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  if (s.size() != 6 || s.substr(0, 3) != "<0x" || s[5] != '>') return -1;
  const int hi = hex(s[3]), lo = hex(s[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

bool is_valid_utf8(std::string_view s) {
  char32_t cp;
  for (std::size_t i = 0; i < s.size();) {
    const int n = decode_utf8(s, i, cp);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string sanitize_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  char32_t cp;
  for (std::size_t i = 0; i < s.size();) {
    const int n = decode_utf8(s, i, cp);
    if (n == 0) {
      append_utf8(out, kReplacement);
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string nfc(std::string_view s) {
  // Pure ASCII is already NFC; skip the allocation-heavy library call.
  bool ascii = true;
  for (char c : s) ascii &= static_cast<unsigned char>(c) < 0x80;
  if (ascii) return std::string(s);
  utf8proc_uint8_t* res = nullptr;
  const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                              static_cast<utf8proc_ssize_t>(s.size()), &res,
                              static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) {
    throw Error(Errc::InvalidArgument,
                std::string("[tokenizer] NFC normalization failed: ") + utf8proc_errmsg(n));
  }
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(res, &std::free);
  return std::string(reinterpret_cast<const char*>(res), static_cast<std::size_t>(n));
}

namespace {
struct ByteMaps {
  std::array<char32_t, 256> fwd{};
  std::array<std::int16_t, 256 + 68> inv{};  // code point -> byte, -1 where unused
  ByteMaps() {
    inv.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      fwd[b] = printable ? static_cast<char32_t>(b) : next++;
      inv[fwd[b]] = static_cast<std::int16_t>(b);
    }
  }
};
const ByteMaps& maps() {
  static const ByteMaps m;
  return m;
}
}  // namespace

const std::array<char32_t, 256>& byte_to_unicode() { return maps().fwd; }

int unicode_to_byte(char32_t cp) {
  const auto& inv = maps().inv;
  return cp < inv.size() ? inv[cp] : -1;
}

std::string metaspace_to_spaces(std::string_view piece) {
  std::string out;
  out.reserve(piece.size());
  for (std::size_t i = 0; i < piece.size();) {
    if (piece.compare(i, kMetaspace.size(), kMetaspace) == 0) {
      out += ' ';
      i += kMetaspace.size();
    } else {
      out += piece[i++];
    }
  }
  return out;
}

}  // namespace seam::unicode
