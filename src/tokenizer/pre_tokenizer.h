// The pre-tokenizers of byte-level BPE (tokenizer.ggml.pre): each family's Hugging Face
// regexes and flags, the names converters write for them, and the splitter that cuts
// normalized text into the pre-tokens merges then run on.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/regex.h"

namespace seam {

enum PreFlag : unsigned {
  kNfc = 1u << 0,           // NFC-normalize the text first
  kIgnoreMerges = 1u << 1,  // a pre-token that is a vocab entry is emitted whole
  kBosDefault = 1u << 2,    // add BOS unless tokenizer.ggml.add_bos_token says otherwise
  kBosAlways = 1u << 3,     // add BOS whatever the file says (llama.cpp's Gemma 4 rule)
  // SentencePiece-style BPE (Gemma 4, Sarvam): spaces become U+2581, merges
  // run on raw UTF-8 characters instead of GPT-2's byte alphabet, and
  // characters outside the vocab fall back to <0xXX> tokens.
  kMetaspace = 1u << 4,
  kNewlineRuns = 1u << 5,  // a run of newlines that is a vocab entry is emitted whole
};

struct Family {
  std::string_view name;
  std::array<const char*, 6> regexes;  // applied in order; the list ends at the first nullptr
  unsigned flags;
};

// The family `pre` names (aliases resolved). Error(Unsupported) otherwise, giving the reason for a
// name we know and refuse, else the supported names; `source` names the file in the message.
const Family& require_pre_family(std::string_view pre, const std::string& source);

// Every family this build implements, once each (aliases not listed): the
// tokenize fuzz target runs a byte-level vocabulary through each.
std::span<const Family> pre_families();

// The two digit-grouping patterns rescan the rest of a digit run from every
// position, which is quadratic in PCRE2 (minutes for a megabyte of digits).
// These give the same pieces in one pass over each maximal run of \d
// (decimal digits), cut from the right: SuperBPE cuts where the rest of the run
// is a positive multiple of three long; Tiny Aya matches the groups only when
// the run is followed by the end or a non-word character (Oniguruma's \b).
enum class DigitGroups { None, Cut, Match };

// Normalization and regex splitting of one family: text -> pre-tokens.
class PreTokenizer {
 public:
  explicit PreTokenizer(const Family& f);
  unsigned flags() const { return flags_; }

  // The text the pre-tokens are cut from: valid UTF-8, NFC and metaspace
  // applied as the family asks. Views `text` or `buf`.
  std::string_view normalize(std::string_view text, std::string& buf) const;

  // Pre-tokens of normalized text as (offset, length) pairs, in order.
  void split(std::string_view text, std::vector<std::pair<std::size_t, std::size_t>>& words) const;

 private:
  struct Step {
    std::optional<Regex> regex;  // absent for a digit-group step
    DigitGroups digits;
  };
  std::vector<Step> steps_;
  unsigned flags_;
};

}  // namespace seam
