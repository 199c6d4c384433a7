// What the file-based fuzz targets need beyond their input: where ../shared is,
// and a private scratch folder per process (a Hugging Face directory is read
// from disk, so each input is written there before it is parsed).
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "seam/error.h"

namespace seam::fuzz {

// $SEAM_SHARED_DIR, else the build's ../shared.
inline std::string shared_dir() {
  if (const char* e = std::getenv("SEAM_SHARED_DIR"); e && *e) return e;
#ifdef SEAM_SHARED_DIR
  return SEAM_SHARED_DIR;
#else
  return "../shared";
#endif
}

// The file's bytes; Error(Io) naming it when it cannot be read.
inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(Errc::Io, "fuzz: cannot read '" + path + "'");
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

inline void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw Error(Errc::Io, "fuzz: cannot write '" + path.string() + "'");
}

// A folder of this process's own under $TMPDIR (else /dev/shm, else /tmp),
// removed when the object dies.
class ScratchDir {
 public:
  explicit ScratchDir(std::string_view tag) {
    // Not /tmp on disk: ext4 flushes a file rewritten by truncation on close
    // (auto_da_alloc), which made each input cost milliseconds.
    const char* tmp = std::getenv("TMPDIR");
    std::string base = tmp && *tmp                                 ? tmp
                       : std::filesystem::is_directory("/dev/shm") ? "/dev/shm"
                                                                   : "/tmp";
    std::string pattern = base + "/seam-fuzz-" + std::string(tag) + "-XXXXXX";
    if (!::mkdtemp(pattern.data())) throw Error(Errc::Io, "fuzz: cannot make " + pattern);
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Splits an input at its first NUL byte: (before, after); no NUL: (all, nullopt).
inline std::pair<std::string_view, std::optional<std::string_view>> split_at_nul(
    std::string_view in) {
  const std::size_t nul = in.find('\0');
  if (nul == std::string_view::npos) return {in, std::nullopt};
  return {in.substr(0, nul), in.substr(nul + 1)};
}

}  // namespace seam::fuzz
