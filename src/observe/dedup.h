// Near-duplicate interjections: word-bigram overlap.
#pragma once

#include <set>
#include <string>
#include <string_view>

namespace seam::observe {

// Lower-cased word bigrams of `text` (words: runs of letters, digits and
// bytes >= 0x80); a text of one word gives that word alone.
std::set<std::string> word_bigrams(std::string_view text);

// |a ∩ b| / min(|a|, |b|); 0 when either is empty.
double overlap(const std::set<std::string>& a, const std::set<std::string>& b);

}  // namespace seam::observe
