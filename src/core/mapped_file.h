// Read-only memory map of a whole file.
#pragma once

#include <cstddef>
#include <span>
#include <string>

namespace seam {

class MappedFile {
 public:
  // Maps `path` read-only; throws Error(Io) with the OS reason on failure.
  // An empty file maps to an empty span.
  static MappedFile open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::string path_;
};

}  // namespace seam
