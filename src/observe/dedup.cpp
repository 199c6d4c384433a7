#include "observe/dedup.h"

#include <algorithm>
#include <vector>

namespace seam::observe {

std::set<std::string> word_bigrams(std::string_view text) {
  std::vector<std::string> words;
  std::string w;
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c >= 0x80) {
      w += ch;
    } else if (c >= 'A' && c <= 'Z') {
      w += static_cast<char>(c - 'A' + 'a');
    } else if (!w.empty()) {
      words.push_back(std::move(w));
      w.clear();
    }
  }
  if (!w.empty()) words.push_back(std::move(w));
  std::set<std::string> out;
  if (words.size() == 1) out.insert(words[0]);
  for (std::size_t i = 0; i + 1 < words.size(); ++i) out.insert(words[i] + ' ' + words[i + 1]);
  return out;
}

double overlap(const std::set<std::string>& a, const std::set<std::string>& b) {
  if (a.empty() || b.empty()) return 0.0;
  std::size_t common = 0;
  for (const std::string& s : a) common += b.count(s);
  return static_cast<double>(common) / static_cast<double>(std::min(a.size(), b.size()));
}

}  // namespace seam::observe
