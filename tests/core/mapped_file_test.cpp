// MappedFile: both residencies give the file's exact bytes, read-only.
#include "core/mapped_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "seam/error.h"

namespace seam {
namespace {

std::string scratch_file(const std::string& name, const std::vector<std::uint8_t>& bytes) {
  std::filesystem::create_directories(SEAM_SCRATCH_DIR);
  const std::string path = std::string(SEAM_SCRATCH_DIR) + "/" + name;
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  return path;
}

// More than a huge page plus an odd tail, so the copy spans several pages and
// ends mid-page.
std::vector<std::uint8_t> pattern(std::size_t n) {
  std::vector<std::uint8_t> v(n);
  std::uint32_t x = 12345;
  for (auto& b : v) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<std::uint8_t>(x >> 24);
  }
  return v;
}

TEST(MappedFile, InMemoryHoldsTheSameBytesAsTheMap) {
  const auto bytes = pattern((std::size_t{5} << 20) + 4093);
  const std::string path = scratch_file("mapped_file_pattern.bin", bytes);
  const MappedFile mapped = MappedFile::open(path, Residency::kMapped);
  const MappedFile copied = MappedFile::open(path, Residency::kInMemory);
  EXPECT_FALSE(mapped.in_memory());
  EXPECT_TRUE(copied.in_memory());
  ASSERT_EQ(mapped.bytes().size(), bytes.size());
  ASSERT_EQ(copied.bytes().size(), bytes.size());
  EXPECT_EQ(0, std::memcmp(mapped.bytes().data(), bytes.data(), bytes.size()));
  EXPECT_EQ(0, std::memcmp(copied.bytes().data(), bytes.data(), bytes.size()));
  // Aligned for transparent huge pages.
  EXPECT_EQ(0u, reinterpret_cast<std::uintptr_t>(copied.bytes().data()) % (std::size_t{2} << 20));
}

TEST(MappedFile, AFileReadInSlicesHoldsItsBytes) {
  // Large enough to be read by one thread per core (32 MiB a slice at least),
  // with slices that end on huge pages and a last one that ends mid-page.
  const auto bytes = pattern((std::size_t{97} << 20) + 4093);
  const std::string path = scratch_file("mapped_file_sliced.bin", bytes);
  const MappedFile copied = MappedFile::open(path, Residency::kInMemory);
  std::filesystem::remove(path);
  ASSERT_TRUE(copied.in_memory());
  ASSERT_EQ(copied.bytes().size(), bytes.size());
  EXPECT_EQ(0, std::memcmp(copied.bytes().data(), bytes.data(), bytes.size()));
}

TEST(MappedFile, MovedCopyKeepsItsBytesAndResidency) {
  const auto bytes = pattern(10000);
  const std::string path = scratch_file("mapped_file_small.bin", bytes);
  MappedFile a = MappedFile::open(path, Residency::kInMemory);
  MappedFile b = std::move(a);
  EXPECT_TRUE(b.in_memory());
  EXPECT_FALSE(a.in_memory());  // NOLINT(bugprone-use-after-move): moved-from state is defined
  EXPECT_TRUE(a.bytes().empty());
  ASSERT_EQ(b.bytes().size(), bytes.size());
  EXPECT_EQ(0, std::memcmp(b.bytes().data(), bytes.data(), bytes.size()));
}

// Whether the page at `p` is in this process's page tables (/proc/self/pagemap
// bit 63, readable without privileges), or nullopt when pagemap cannot be read.
std::optional<bool> page_present(const void* p) {
  const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  std::uint64_t entry = 0;
  const auto at = static_cast<off_t>(reinterpret_cast<std::uintptr_t>(p) / page * sizeof entry);
  const bool ok = ::pread(fd, &entry, sizeof entry, at) == static_cast<ssize_t>(sizeof entry);
  ::close(fd);
  if (!ok) return std::nullopt;
  return (entry >> 63) != 0;
}

TEST(MappedFile, ReleasedPagesOfAMappingLeaveAndReadTheSameAgain) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const auto bytes = pattern(64 * page + 4093);
  const std::string path = scratch_file("mapped_file_release.bin", bytes);
  for (const Residency r : {Residency::kMapped, Residency::kInMemory}) {
    const MappedFile f = MappedFile::open(path, r);
    const std::byte* d = f.bytes().data();
    ASSERT_EQ(0, std::memcmp(d, bytes.data(), bytes.size()));  // every page touched
    const auto present = page_present(d);
    if (!present) GTEST_SKIP() << "/proc/self/pagemap cannot be read here";
    ASSERT_TRUE(*present);
    // A range that starts and ends mid-page: pages 10..20 all go (the ends are
    // shared with the neighbours, which lose nothing: the mapping is read-only).
    f.release(f.bytes().subspan(10 * page + 100, 10 * page + 5 - 100));
    for (std::size_t i = 9; i <= 21; ++i) {
      const bool in_range = i >= 10 && i <= 20;
      EXPECT_EQ(*page_present(d + i * page), !(in_range && !f.in_memory()))
          << "page " << i << (f.in_memory() ? " of the copy" : " of the mapping");
    }
    f.release(f.bytes().subspan(0, 0));       // nothing
    f.release(f.bytes().subspan(60 * page));  // to the end, past the last whole page
    EXPECT_EQ(0, std::memcmp(d, bytes.data(), bytes.size()));  // read again, unchanged
  }
}

TEST(MappedFile, EmptyFileIsAnEmptySpanEitherWay) {
  const std::string path = scratch_file("mapped_file_empty.bin", {});
  EXPECT_TRUE(MappedFile::open(path, Residency::kMapped).bytes().empty());
  EXPECT_TRUE(MappedFile::open(path, Residency::kInMemory).bytes().empty());
}

TEST(MappedFile, MissingFileAndDirectoryAreIoErrors) {
  for (const Residency r : {Residency::kMapped, Residency::kInMemory}) {
    try {
      MappedFile::open(std::string(SEAM_SCRATCH_DIR) + "/no-such-file.gguf", r);
      FAIL() << "opened a missing file";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::Io);
      EXPECT_NE(std::string(e.what()).find("no-such-file.gguf"), std::string::npos);
    }
    std::filesystem::create_directories(SEAM_SCRATCH_DIR);
    EXPECT_THROW(MappedFile::open(SEAM_SCRATCH_DIR, r), Error);
  }
}

}  // namespace
}  // namespace seam
