// A compiled PCRE2 pattern with the options every pre-tokenizer regex needs: UTF, Unicode
// properties for \p{..}, \s, \d and \b (as Oniguruma, which the reference tokenizers use),
// JIT where available.
#pragma once

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstddef>
#include <string_view>

namespace seam {

class Regex {
 public:
  // Error(Internal) when the pattern does not compile: patterns are ours, not the user's.
  explicit Regex(const char* pattern);
  Regex(Regex&& o) noexcept : code_(o.code_) { o.code_ = nullptr; }
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  Regex& operator=(Regex&&) = delete;
  ~Regex() { pcre2_code_free(code_); }

  // Finds the next match in subject[start..]; false when none. The subject is
  // valid UTF-8 and `start` a character boundary.
  bool next(std::string_view subject, std::size_t start, pcre2_match_data* md, std::size_t& b,
            std::size_t& e) const;
  const pcre2_code* code() const { return code_; }

 private:
  pcre2_code* code_ = nullptr;
};

}  // namespace seam
