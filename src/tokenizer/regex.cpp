#include "tokenizer/regex.h"

#include <string>

#include "seam/error.h"

namespace seam {

Regex::Regex(const char* pattern) {
  int err = 0;
  PCRE2_SIZE at = 0;
  code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern), PCRE2_ZERO_TERMINATED,
                        PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &err, &at, nullptr);
  if (code_ == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw Error(Errc::Internal,
                std::string("[tokenizer] pre-tokenizer regex does not compile at ") +
                    std::to_string(at) + ": " + reinterpret_cast<char*>(msg));
  }
  // JIT is an optimization only; without it pcre2_match interprets.
  pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);
}

bool Regex::next(std::string_view subject, std::size_t start, pcre2_match_data* md, std::size_t& b,
                 std::size_t& e) const {
  const auto* s = reinterpret_cast<PCRE2_SPTR>(subject.data());
  int rc = pcre2_match(code_, s, subject.size(), start, PCRE2_NO_UTF_CHECK, md, nullptr);
  if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
    // Very long runs can exhaust the JIT's stack; the interpreter uses the heap.
    rc = pcre2_match(code_, s, subject.size(), start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md,
                     nullptr);
  }
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(rc, msg, sizeof msg);
    throw Error(Errc::InvalidArgument, std::string("[tokenizer] pre-tokenizer failed on this "
                                                   "text: ") +
                                           reinterpret_cast<char*>(msg));
  }
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
  b = ov[0];
  e = ov[1];
  return true;
}

}  // namespace seam
