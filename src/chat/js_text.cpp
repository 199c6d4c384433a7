#include "chat/js_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "chat/js_case_tables.h"

namespace seam::chat::js {

char32_t next_code_point(std::string_view s, std::size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  int len = 0;
  char32_t cp = 0;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2;
    cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3;
    cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4;
    cp = b0 & 0x07;
  } else {
    ++i;
    return 0xFFFD;
  }
  if (i + len > s.size()) {
    ++i;
    return 0xFFFD;
  }
  for (int k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) {
      ++i;
      return 0xFFFD;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  i += len;
  return cp;
}

bool is_space(char32_t cp) {
  switch (cp) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
    case 0xFEFF:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

std::size_t space_at(std::string_view s, std::size_t i) {
  if (i >= s.size()) return 0;
  std::size_t j = i;
  const char32_t cp = next_code_point(s, j);
  return is_space(cp) ? j - i : 0;
}

std::size_t space_before(std::string_view s, std::size_t end) {
  if (end == 0) return 0;
  // Back up over continuation bytes to the start of the last code point.
  std::size_t start = end - 1;
  int steps = 0;
  while (start > 0 && steps < 3 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) {
    --start;
    ++steps;
  }
  std::size_t j = start;
  const char32_t cp = next_code_point(s, j);
  if (j != end) return 0;
  return is_space(cp) ? end - start : 0;
}

std::string_view trim_start(std::string_view s) {
  std::size_t i = 0;
  while (std::size_t n = space_at(s, i)) i += n;
  return s.substr(i);
}

std::string_view trim_end(std::string_view s) {
  std::size_t end = s.size();
  while (std::size_t n = space_before(s, end)) end -= n;
  return s.substr(0, end);
}

std::string_view trim(std::string_view s) { return trim_end(trim_start(s)); }

std::size_t utf16_length(std::string_view s) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size();) n += next_code_point(s, i) >= 0x10000 ? 2 : 1;
  return n;
}

std::vector<std::string> code_points(std::string_view s) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t start = i;
    next_code_point(s, i);
    out.emplace_back(s.substr(start, i - start));
  }
  return out;
}

namespace {

// One code point's simple (1:1) mapping through the generated runs.
char32_t map_runs(const CaseRun* runs, std::size_t n, char32_t c) {
  const CaseRun* end = runs + n;
  const CaseRun* it =
      std::upper_bound(runs, end, c, [](char32_t v, const CaseRun& r) { return v < r.first; });
  if (it == runs) return c;
  --it;
  if (c > it->last || (c - it->first) % it->stride != 0) return c;
  return static_cast<char32_t>(static_cast<std::int32_t>(c) + it->delta);
}

char32_t lower_simple(char32_t c) {
  if (c < 0x80) return c >= 'A' && c <= 'Z' ? c + 32 : c;
  return map_runs(kLowerRuns, kLowerRunCount, c);
}

char32_t upper_simple(char32_t c) {
  if (c < 0x80) return c >= 'a' && c <= 'z' ? c - 32 : c;
  return map_runs(kUpperRuns, kUpperRunCount, c);
}

const char* upper_special(char32_t c) {
  const SpecialUpper* end = kUpperSpecial + kUpperSpecialCount;
  const SpecialUpper* it = std::lower_bound(
      kUpperSpecial, end, c, [](const SpecialUpper& e, char32_t v) { return e.cp < v; });
  return it != end && it->cp == c ? it->utf8 : nullptr;
}

bool is_word_byte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace

std::string to_upper(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const char32_t cp = next_code_point(s, i);
    if (const char* full = cp >= 0xDF ? upper_special(cp) : nullptr) {
      out += full;  // a 1:n mapping (SpecialCasing), e.g. ß -> SS
    } else {
      append_utf8(out, upper_simple(cp));
    }
  }
  return out;
}

std::string to_lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t start = i;
    const char32_t cp = next_code_point(s, i);
    if (cp == 0x3A3) {
      // Final_Sigma: a capital sigma preceded by a cased letter and not followed by one.
      auto is_cased = [](char32_t c) { return lower_simple(c) != c || upper_simple(c) != c; };
      bool after_letter = false;
      if (start > 0) {
        std::size_t b = start - 1;
        int steps = 0;
        while (b > 0 && steps < 3 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80)
          --b, ++steps;
        after_letter = is_cased(next_code_point(s, b));
      }
      bool before_letter = false;
      if (i < s.size()) {
        std::size_t j = i;
        before_letter = is_cased(next_code_point(s, j));
      }
      append_utf8(out, after_letter && !before_letter ? 0x3C2 : 0x3C3);
    } else if (cp == 0x130) {
      out += "i\xCC\x87";  // İ lowercases to i + COMBINING DOT ABOVE
    } else {
      append_utf8(out, lower_simple(cp));
    }
  }
  return out;
}

std::string title_case(std::string_view s) {
  std::string out(s);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto c = static_cast<unsigned char>(out[i]);
    if (is_word_byte(c) && (i == 0 || !is_word_byte(static_cast<unsigned char>(out[i - 1]))) &&
        c >= 'a' && c <= 'z')
      out[i] = static_cast<char>(c - 32);
  }
  return out;
}

std::string capitalize(std::string_view s) {
  if (s.empty()) return {};
  std::size_t i = 0;
  const char32_t first = next_code_point(s, i);
  // charAt(0) is one UTF-16 unit: an astral first character is half a
  // surrogate pair there, which has no case, so it stays as it is.
  if (first > 0xFFFF) return std::string(s);
  return to_upper(s.substr(0, i)) + std::string(s.substr(i));
}

std::string number_to_string(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  if (d == 0) return "0";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<std::size_t>(res.ptr - buf));
  std::string out;
  if (sci.front() == '-') {
    out += '-';
    sci.remove_prefix(1);
  }
  const std::size_t epos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, epos))
    if (c != '.') digits += c;
  const int exp = std::atoi(std::string(sci.substr(epos + 1)).c_str());
  const int k = static_cast<int>(digits.size());
  const int n = exp + 1;  // position of the decimal point relative to the digits
  if (k <= n && n <= 21) {
    out += digits;
    out.append(static_cast<std::size_t>(n - k), '0');
  } else if (0 < n && n <= 21) {
    out += digits.substr(0, static_cast<std::size_t>(n));
    out += '.';
    out += digits.substr(static_cast<std::size_t>(n));
  } else if (-6 < n && n <= 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-n), '0');
    out += digits;
  } else {
    out += digits[0];
    if (k > 1) {
      out += '.';
      out += digits.substr(1);
    }
    out += 'e';
    out += (n - 1 >= 0) ? '+' : '-';
    out += std::to_string(std::abs(n - 1));
  }
  return out;
}

bool parse_int(std::string_view s, double& out) {
  s = trim_start(s);
  std::size_t i = 0;
  bool neg = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  const std::size_t start = i;
  double v = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') v = v * 10 + (s[i++] - '0');
  if (i == start) return false;
  out = neg ? -v : v;
  return true;
}

bool parse_float(std::string_view s, double& out) {
  s = trim_start(s);
  std::size_t i = 0;
  bool neg = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  if (s.substr(i).substr(0, 8) == "Infinity") {
    out = neg ? -HUGE_VAL : HUGE_VAL;
    return true;
  }
  const std::size_t start = i;
  std::size_t int_digits = 0, frac_digits = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++int_digits;
  if (i < s.size() && s[i] == '.') {
    std::size_t j = i + 1;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j, ++frac_digits;
    if (int_digits + frac_digits > 0) i = j;
  }
  if (int_digits + frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    std::size_t j = i + 1;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    const std::size_t exp_start = j;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
    if (j > exp_start) i = j;
  }
  const std::string num(s.substr(start, i - start));
  const double v = std::strtod(num.c_str(), nullptr);
  out = neg ? -v : v;
  return true;
}

std::string json_quote(std::string_view s, bool ensure_ascii) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  char buf[16];
  auto esc_unit = [&](unsigned unit) {
    std::snprintf(buf, sizeof buf, "\\u%04x", unit);
    out += buf;
  };
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          if (c < 0x20 || (ensure_ascii && c == 0x7F)) {
            esc_unit(c);
          } else {
            out += static_cast<char>(c);
          }
      }
      continue;
    }
    const std::size_t start = i;
    const char32_t cp = next_code_point(s, i);
    if (!ensure_ascii) {
      out.append(s.substr(start, i - start));
    } else if (cp >= 0x10000) {
      const char32_t v = cp - 0x10000;
      esc_unit(0xD800 + (v >> 10));
      esc_unit(0xDC00 + (v & 0x3FF));
    } else {
      esc_unit(cp);
    }
  }
  out += '"';
  return out;
}

std::string replace(std::string_view s, std::string_view from, std::string_view to,
                    std::int64_t count) {
  if (count == 0) return std::string(s);
  std::int64_t remaining = count < 0 ? INT64_MAX : count;
  std::string out;
  if (from.empty()) {
    // An empty pattern matches at every code point boundary, both ends included.
    std::size_t i = 0;
    while (true) {
      if (remaining > 0) {
        out += to;
        --remaining;
      }
      if (i >= s.size()) break;
      const std::size_t start = i;
      next_code_point(s, i);
      out.append(s.substr(start, i - start));
    }
    return out;
  }
  std::size_t pos = 0;
  while (remaining > 0) {
    const std::size_t hit = s.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out += to;
    pos = hit + from.size();
    --remaining;
  }
  out.append(s.substr(pos));
  return out;
}

}  // namespace seam::chat::js
