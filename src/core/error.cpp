#include "seam/error.h"

namespace seam {

std::string_view errc_name(Errc code) {
  switch (code) {
    case Errc::InvalidArgument:
      return "invalid argument";
    case Errc::Io:
      return "i/o error";
    case Errc::BadFormat:
      return "bad format";
    case Errc::Unsupported:
      return "unsupported";
    case Errc::ContextFull:
      return "context full";
    case Errc::SessionCorrupted:
      return "session corrupted";
    case Errc::BackendFailure:
      return "backend failure";
    case Errc::Cancelled:
      return "cancelled";
    case Errc::Template:
      return "template error";
    case Errc::Internal:
      return "internal error";
  }
  return "unknown error";
}

}  // namespace seam
