// Safetensors reader (over a read-only mmap), single files and sharded sets.
//
// Layout: u64 little-endian N, then N bytes of JSON header, then the byte
// buffer. The header maps tensor names to {"dtype", "shape", "data_offsets":
// [begin, end]} with offsets relative to the byte buffer; the optional
// "__metadata__" entry maps strings to strings. Every field is validated
// before any tensor byte is touched: a hostile file gets Error(BadFormat)
// naming the problem, never an out-of-bounds read. Only F32, F16 and BF16 are
// loadable; other dtypes are refused by name with Error(Unsupported).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/mapped_file.h"
#include "format/tensor_type.h"

namespace seam {

// Largest JSON header accepted; the reference implementation uses the same
// bound so a corrupt length cannot make us parse gigabytes of garbage.
inline constexpr std::uint64_t kSafetensorsMaxHeader = 100ull << 20;
// Deepest JSON nesting accepted in a header (a valid one needs 3).
inline constexpr int kSafetensorsMaxDepth = 16;

struct SafetensorsTensor {
  std::string name;
  TensorType type = TensorType::F32;  // F32, F16 or BF16
  std::vector<std::uint64_t> shape;   // as stored: slowest-varying first
  std::span<const std::byte> data;    // inside the mapping, exactly n_elements * size
  std::uint64_t n_elements() const;
};

class SafetensorsFile {
 public:
  // Maps and parses a file. Throws Error(Io), Error(BadFormat) or Error(Unsupported).
  static SafetensorsFile open(const std::string& path, Residency residency = Residency::kMapped);
  // Parses bytes owned by the caller (they must outlive the result).
  static SafetensorsFile parse(std::span<const std::byte> bytes,
                               std::string source_name = "<memory>");

  const std::string& source() const { return source_; }
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  const SafetensorsTensor* find(std::string_view name) const;
  const std::map<std::string, std::string, std::less<>>& metadata() const { return metadata_; }
  // Keeps the mapping alive for views handed out beyond this object's life;
  // empty for parse().
  std::shared_ptr<const MappedFile> mapping() const { return file_; }

 private:
  std::shared_ptr<const MappedFile> file_;
  std::string source_;
  std::vector<SafetensorsTensor> tensors_;  // sorted by name
  std::map<std::string, std::string, std::less<>> metadata_;
};

// The weights of a checkpoint directory: model.safetensors, or the shards
// listed by model.safetensors.index.json ("weight_map": tensor -> file name).
// A tensor the index names must be in the shard it names; shard names must be
// plain file names inside the directory.
class SafetensorsSet {
 public:
  static SafetensorsSet open_dir(const std::string& dir, Residency residency = Residency::kMapped);

  const SafetensorsTensor* find(std::string_view name) const;
  // Every tensor, in name order.
  std::vector<const SafetensorsTensor*> tensors() const;
  std::vector<std::shared_ptr<const MappedFile>> mappings() const;
  std::size_t n_files() const { return files_.size(); }

 private:
  std::vector<SafetensorsFile> files_;
  std::map<std::string, const SafetensorsTensor*, std::less<>> index_;
};

}  // namespace seam
