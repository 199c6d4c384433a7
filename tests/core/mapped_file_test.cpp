// MappedFile: both residencies give the file's exact bytes, read-only.
#include "core/mapped_file.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
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
