#include "generate/utf8.h"

namespace seam {

std::size_t utf8_complete_prefix(std::string_view s) {
  const std::size_t n = s.size();
  // A character is at most 4 bytes, so only the last 3 can be an unfinished one.
  for (std::size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    std::size_t need = 0;
    if ((c & 0xE0) == 0xC0)
      need = 2;
    else if ((c & 0xF0) == 0xE0)
      need = 3;
    else if ((c & 0xF8) == 0xF0)
      need = 4;
    return need > back ? n - back : n;
  }
  return n;
}

}  // namespace seam
