// GGUF v2/v3 reader (over a read-only mmap) and writer.
//
// Layout (little endian): magic "GGUF", u32 version, u64 tensor_count,
// u64 kv_count, kv pairs, tensor infos, padding to `general.alignment`
// (default 32), tensor data. Every read is bounds-checked: a hostile file gets
// Error(BadFormat) naming the problem, never an out-of-bounds read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/mapped_file.h"
#include "format/tensor_type.h"

namespace seam {

enum class GgufValueType : std::uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};
std::string_view gguf_value_type_name(GgufValueType t);

inline constexpr std::uint64_t kGgufDefaultAlignment = 32;
// Deepest accepted nesting of arrays (an array of arrays has depth 2); deeper
// input is refused so a hostile file cannot exhaust the stack.
inline constexpr int kGgufMaxArrayDepth = 8;

struct GgufValue;
struct GgufArray {
  GgufValueType elem_type = GgufValueType::UINT8;
  std::vector<GgufValue> items;

  bool operator==(const GgufArray& other) const;
};

// One metadata value; `type` says which alternative of `v` is set:
// unsigned ints -> uint64_t, signed ints -> int64_t, floats -> double,
// BOOL -> bool, STRING -> std::string, ARRAY -> GgufArray.
struct GgufValue {
  GgufValueType type = GgufValueType::UINT8;
  std::variant<std::uint64_t, std::int64_t, double, bool, std::string, GgufArray> v;

  static GgufValue u8(std::uint8_t x);
  static GgufValue i8(std::int8_t x);
  static GgufValue u16(std::uint16_t x);
  static GgufValue i16(std::int16_t x);
  static GgufValue u32(std::uint32_t x);
  static GgufValue i32(std::int32_t x);
  static GgufValue u64(std::uint64_t x);
  static GgufValue i64(std::int64_t x);
  static GgufValue f32(float x);
  static GgufValue f64(double x);
  static GgufValue boolean(bool x);
  static GgufValue str(std::string s);
  static GgufValue array(GgufValueType elem, std::vector<GgufValue> items);
  static GgufValue strings(const std::vector<std::string>& items);
  static GgufValue f32s(const std::vector<float>& items);
  static GgufValue i32s(const std::vector<std::int32_t>& items);

  // Same type and same value; floats compare by bit pattern (so a NaN read
  // back equals the NaN written).
  bool operator==(const GgufValue& other) const;
};

struct GgufTensor {
  std::string name;
  std::vector<std::uint64_t> ne;  // dims, fastest-varying first (ne[0] = row length)
  TensorType type = TensorType::F32;
  std::uint64_t offset = 0;  // relative to the data section
  std::uint64_t nbytes = 0;
  const std::byte* data = nullptr;  // points into the mapped file

  std::uint64_t n_elements() const;
  std::uint64_t n_rows() const { return ne.empty() ? 0 : n_elements() / ne[0]; }
};

class GgufFile {
 public:
  // Maps and parses a file. Throws Error(Io) or Error(BadFormat).
  static GgufFile open(const std::string& path, Residency residency = Residency::kMapped);
  // Parses bytes owned by the caller (they must outlive the GgufFile).
  static GgufFile parse(std::span<const std::byte> bytes, std::string source_name = "<memory>");
  // Assembles a file from metadata and tensors whose `data` point into memory
  // kept alive by `keepalive` (converted copies) or into `mappings` (the files
  // they come from, which release_pages() may act on); used to present other
  // checkpoint formats through this interface. Tensor `offset` is ignored.
  // Throws Error(BadFormat) for duplicate keys or tensor names, or a tensor whose
  // nbytes does not match its type and shape.
  static GgufFile assemble(std::string source_name,
                           std::vector<std::pair<std::string, GgufValue>> metadata,
                           std::vector<GgufTensor> tensors,
                           std::vector<std::shared_ptr<const void>> keepalive,
                           std::vector<std::shared_ptr<const MappedFile>> mappings = {});

  std::uint32_t version() const { return version_; }
  std::uint64_t alignment() const { return alignment_; }
  std::uint64_t data_offset() const { return data_offset_; }  // absolute start of tensor data
  const std::string& source() const { return source_; }

  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const GgufValue* find(std::string_view key) const;
  // Frees the metadata once its reader has taken what it needs (a loaded model
  // keeps only the tensors): a 128k-token vocabulary's arrays are 18-25 MiB as
  // values. Afterwards the file has no metadata; the tensors stay.
  void release_metadata();

  // Typed getters: nullopt when absent; Error(BadFormat) naming the key when the
  // stored type cannot represent the requested one (any integer type converts to
  // any other in range; floats accept any numeric type).
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<std::int64_t> get_int(std::string_view key) const;
  std::optional<std::uint64_t> get_uint(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  const GgufArray* get_array(std::string_view key) const;

  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  // Where the tensor bytes are this file's own copy in memory
  // (Residency::kInMemory honoured), loading may rewrite them in place
  // between set_tensors_writable(true) and (false); false: a mapping, or
  // bytes the caller owns, which stay as they are.
  bool set_tensors_writable(bool writable) const { return file_ && file_->set_writable(writable); }
  const GgufTensor* find_tensor(std::string_view name) const;
  // A reader that goes through the tensors once (the quantizer) is done with
  // `t`: where its bytes are a file mapping's, their pages leave the resident
  // set (MappedFile::release); bytes in memory stay.
  void release_pages(const GgufTensor& t) const;

 private:
  std::shared_ptr<MappedFile> file_;  // empty for parse()
  std::string source_;
  std::uint32_t version_ = 0;
  std::uint64_t alignment_ = 32;
  std::uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::map<std::string, std::size_t, std::less<>> kv_index_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, std::size_t, std::less<>> tensor_index_;
  std::vector<std::shared_ptr<const void>> keepalive_;       // assemble(): converted copies
  std::vector<std::shared_ptr<const MappedFile>> mappings_;  // assemble(): the files among them
};

// Builds a GGUF v3 file in memory or on disk. Tensors are written in the order
// added, each aligned to `general.alignment` (default 32).
class GgufWriter {
 public:
  void set(std::string key, GgufValue value);  // replaces an existing key
  // `data` must hold exactly row_bytes(type, ne[0]) * (rows) bytes; it is copied.
  void add_tensor(std::string name, std::vector<std::uint64_t> ne, TensorType type,
                  std::span<const std::byte> data);
  // A tensor whose bytes are made only when write() or to_bytes() reaches it:
  // `fill` gets a buffer of exactly row_bytes(type, ne[0]) * rows bytes to
  // fill. A writer of such tensors holds one tensor's data at a time, not the
  // file's (a quantizer's output may be larger than memory). What fill throws
  // passes through, and write() then leaves no file behind.
  using TensorFill = std::function<void(std::span<std::byte>)>;
  void add_deferred_tensor(std::string name, std::vector<std::uint64_t> ne, TensorType type,
                           TensorFill fill);
  std::vector<std::byte> to_bytes() const;
  void write(const std::string& path) const;  // Error(Io) on failure

 private:
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::uint64_t alignment_ = kGgufDefaultAlignment;  // from general.alignment
  struct Pending {
    std::string name;
    std::vector<std::uint64_t> ne;
    TensorType type;
    std::uint64_t size;           // bytes of data
    std::vector<std::byte> data;  // empty where fill makes them
    TensorFill fill;
  };
  // Checks a tensor's name and shape against the file's rules and the tensors
  // already added; returns its size in bytes.
  std::uint64_t checked_size(const std::string& name, const std::vector<std::uint64_t>& ne,
                             TensorType type) const;
  std::vector<Pending> tensors_;
};

}  // namespace seam
