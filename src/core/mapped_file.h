// A whole file's bytes, read-only: a memory map of it, or a copy in memory.
#pragma once

#include <cstddef>
#include <span>
#include <string>

namespace seam {

// kMapped: pages come from the page cache as they are touched (cheap to open,
// shared between processes). kInMemory: the file is read into anonymous
// memory, 2 MiB-aligned and marked for transparent huge pages, so a decode
// that streams every weight once per token walks a few hundred TLB entries
// instead of one per 4 KiB page (1B Q4_0 decode: +28-39%, docs/performance.md).
// kInMemory maps instead when the file is larger than the memory available.
enum class Residency { kMapped, kInMemory };

// Whether Residency::kInMemory would read a file of `size` bytes into memory
// (less than the memory available now) rather than map it.
bool fits_in_memory(std::size_t size);

class MappedFile {
 public:
  // Throws Error(Io) with the OS reason on failure. An empty file gives an
  // empty span.
  static MappedFile open(const std::string& path, Residency residency = Residency::kMapped);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }
  bool in_memory() const { return in_memory_; }
  // A copy in memory is read-only like a mapping, except while its owner
  // rewrites it in place (the loader puts weights in its kernels' layout):
  // true when the protection changed, false (nothing done) for a mapping.
  bool set_writable(bool writable);
  // The reader is done with `range` (within bytes()): a mapping's pages over it
  // leave this process's resident set. The page cache keeps them, so a later
  // read costs a page fault, not a disk read. Nothing for a copy in memory,
  // whose pages are the only copy.
  void release(std::span<const std::byte> range) const;

 private:
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::string path_;
  bool in_memory_ = false;
};

}  // namespace seam
