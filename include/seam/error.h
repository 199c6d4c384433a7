// seam::Error — the one exception type every seam API throws.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace seam {

// What kind of failure happened; callers branch on this, users read the message.
enum class Errc {
  InvalidArgument,   // A caller passed something out of range or malformed.
  Io,                // A file could not be opened, mapped or written.
  BadFormat,         // A file's contents are corrupt, truncated or inconsistent.
  Unsupported,       // Valid input this build does not implement (arch, tensor type, ...).
  ContextFull,       // The KV cache has no room for the batch; the session is unchanged.
  SessionCorrupted,  // A forward pass failed earlier; the session must be recreated.
  BackendFailure,    // A compute backend failed inside a forward pass.
  Cancelled,         // The operation was cancelled by the caller.
  Template,          // A chat template failed to parse or raised an exception.
  Internal,          // A bug in seam: please report it.
};

std::string_view errc_name(Errc code);

class Error : public std::runtime_error {
 public:
  Error(Errc code, const std::string& message) : std::runtime_error(message), code_(code) {}
  Errc code() const noexcept { return code_; }

 private:
  Errc code_;
};

}  // namespace seam
