// Unicode case mappings exactly as the reference's JavaScript engine applies
// them (String.prototype.toUpperCase / toLowerCase, no locale), generated into
// js_case_tables.cpp so that `|upper`, `|lower` and `.capitalize()` agree with
// @huggingface/jinja on every script, not just Latin.
#pragma once

#include <cstddef>
#include <cstdint>

namespace seam::chat::js {

// Code points first..last, every `stride`-th one, map to cp + delta.
struct CaseRun {
  char32_t first, last;
  std::int32_t delta;
  std::uint8_t stride;
};
// Upper-casing that yields several code points (ß -> SS, ﬁ -> FI, ...), UTF-8.
struct SpecialUpper {
  char32_t cp;
  const char* utf8;
};

extern const CaseRun kUpperRuns[];  // sorted by first, disjoint
extern const std::size_t kUpperRunCount;
extern const CaseRun kLowerRuns[];
extern const std::size_t kLowerRunCount;
extern const SpecialUpper kUpperSpecial[];  // sorted by cp
extern const std::size_t kUpperSpecialCount;

}  // namespace seam::chat::js
