// GGUF v2/v3 reader. Every length, count and offset in the file is treated as
// hostile: it is checked against the bytes that remain before anything is read
// or reserved, so a corrupt file costs at most a bounded multiple of its own
// size in memory and always ends in Error(BadFormat) naming the problem.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <utility>

#include "format/gguf.h"
#include "seam/error.h"

namespace seam {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader maps little-endian files directly");

std::uint64_t GgufTensor::n_elements() const {
  std::uint64_t n = 1;
  for (std::uint64_t d : ne) n *= d;
  return n;
}

namespace {

constexpr std::uint64_t kMaxDims = 4;
constexpr std::uint64_t kMaxDim =
    static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());

// Smallest encoding of one metadata entry: u64 key length, one key byte,
// u32 value type, one value byte.
constexpr std::uint64_t kMinKvBytes = 8 + 1 + 4 + 1;
// Smallest tensor info: u64 name length, one name byte, u32 n_dims, one u64
// dim, u32 type, u64 offset.
constexpr std::uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;

bool known_value_type(std::uint32_t t) {
  return t <= static_cast<std::uint32_t>(GgufValueType::FLOAT64);
}

// Bytes the smallest encoded element of type `t` occupies inside an array.
std::uint64_t min_encoded_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::UINT8:
    case GgufValueType::INT8:
    case GgufValueType::BOOL:
      return 1;
    case GgufValueType::UINT16:
    case GgufValueType::INT16:
      return 2;
    case GgufValueType::UINT32:
    case GgufValueType::INT32:
    case GgufValueType::FLOAT32:
      return 4;
    case GgufValueType::UINT64:
    case GgufValueType::INT64:
    case GgufValueType::FLOAT64:
    case GgufValueType::STRING:
      return 8;  // the length prefix
    case GgufValueType::ARRAY:
      return 12;  // element type + count
  }
  return 1;
}

class Reader {
 public:
  Reader(std::span<const std::byte> bytes, const std::string& source)
      : bytes_(bytes), source_(source) {}

  [[noreturn]] void fail(const std::string& msg) const {
    throw Error(Errc::BadFormat, "gguf '" + source_ + "': " + msg);
  }

  std::uint64_t pos() const { return pos_; }
  std::uint64_t size() const { return bytes_.size(); }
  std::uint64_t remaining() const { return bytes_.size() - pos_; }

  void need(std::uint64_t n, std::string_view what) const {
    if (n > remaining()) {
      fail("file is truncated: " + std::string(what) + " needs " + std::to_string(n) +
           " bytes at offset " + std::to_string(pos_) + " but only " + std::to_string(remaining()) +
           " remain (re-download or re-convert the file)");
    }
  }

  template <class T>
  T read(std::string_view what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(std::string_view what) {
    const auto len = read<std::uint64_t>(what);
    if (len > remaining()) {
      fail(std::string(what) + " claims a length of " + std::to_string(len) + " bytes at offset " +
           std::to_string(pos_ - 8) + " but only " + std::to_string(remaining()) +
           " bytes remain in the file");
    }
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_),
                  static_cast<std::size_t>(len));
    pos_ += len;
    return s;
  }

 private:
  std::span<const std::byte> bytes_;
  const std::string& source_;
  std::uint64_t pos_ = 0;
};

GgufValue read_value(Reader& r, GgufValueType t, int depth, const std::string& key);

GgufValueType read_value_type(Reader& r, const std::string& key, std::string_view role) {
  const auto raw = r.read<std::uint32_t>(role);
  if (!known_value_type(raw)) {
    r.fail("metadata key '" + key + "' has unknown " + std::string(role) + " " +
           std::to_string(raw) + " (valid types are 0..12)");
  }
  return static_cast<GgufValueType>(raw);
}

GgufValue read_array(Reader& r, int depth, const std::string& key) {
  if (depth >= kGgufMaxArrayDepth) {
    r.fail("metadata key '" + key + "' nests arrays deeper than " +
           std::to_string(kGgufMaxArrayDepth) + " levels");
  }
  const GgufValueType elem = read_value_type(r, key, "array element type");
  const auto count = r.read<std::uint64_t>("array length");
  // Bound the count by what the remaining bytes could possibly encode before
  // reserving anything.
  if (count > r.remaining() / min_encoded_size(elem)) {
    r.fail("metadata key '" + key + "' claims an array of " + std::to_string(count) + " " +
           std::string(gguf_value_type_name(elem)) + " elements, more than the " +
           std::to_string(r.remaining()) + " remaining bytes can hold");
  }
  GgufArray arr;
  arr.elem_type = elem;
  arr.items.reserve(static_cast<std::size_t>(count));
  for (std::uint64_t i = 0; i < count; ++i)
    arr.items.push_back(read_value(r, elem, depth + 1, key));
  GgufValue out;
  out.type = GgufValueType::ARRAY;
  out.v = std::move(arr);
  return out;
}

GgufValue read_value(Reader& r, GgufValueType t, int depth, const std::string& key) {
  switch (t) {
    case GgufValueType::UINT8:
      return GgufValue::u8(r.read<std::uint8_t>("UINT8 value"));
    case GgufValueType::INT8:
      return GgufValue::i8(r.read<std::int8_t>("INT8 value"));
    case GgufValueType::UINT16:
      return GgufValue::u16(r.read<std::uint16_t>("UINT16 value"));
    case GgufValueType::INT16:
      return GgufValue::i16(r.read<std::int16_t>("INT16 value"));
    case GgufValueType::UINT32:
      return GgufValue::u32(r.read<std::uint32_t>("UINT32 value"));
    case GgufValueType::INT32:
      return GgufValue::i32(r.read<std::int32_t>("INT32 value"));
    case GgufValueType::FLOAT32:
      return GgufValue::f32(r.read<float>("FLOAT32 value"));
    case GgufValueType::UINT64:
      return GgufValue::u64(r.read<std::uint64_t>("UINT64 value"));
    case GgufValueType::INT64:
      return GgufValue::i64(r.read<std::int64_t>("INT64 value"));
    case GgufValueType::FLOAT64:
      return GgufValue::f64(r.read<double>("FLOAT64 value"));
    case GgufValueType::BOOL: {
      const auto b = r.read<std::uint8_t>("BOOL value");
      if (b > 1) {
        r.fail("metadata key '" + key + "' has BOOL byte " + std::to_string(b) + " at offset " +
               std::to_string(r.pos() - 1) + " (must be 0 or 1)");
      }
      return GgufValue::boolean(b == 1);
    }
    case GgufValueType::STRING:
      return GgufValue::str(r.read_string("string value"));
    case GgufValueType::ARRAY:
      return read_array(r, depth, key);
  }
  r.fail("metadata key '" + key + "' has an unknown value type");
}

// Rounds x up to a multiple of the power of two `align`; nullopt on overflow.
std::optional<std::uint64_t> align_up(std::uint64_t x, std::uint64_t align) {
  const std::uint64_t rem = x & (align - 1);
  if (rem == 0) return x;
  const std::uint64_t pad = align - rem;
  if (x > std::numeric_limits<std::uint64_t>::max() - pad) return std::nullopt;
  return x + pad;
}

std::string dims_string(const std::vector<std::uint64_t>& ne) {
  std::string s = "[";
  for (std::size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

}  // namespace

GgufFile GgufFile::open(const std::string& path, Residency residency) {
  auto file = std::make_shared<MappedFile>(MappedFile::open(path, residency));
  GgufFile g = parse(file->bytes(), path);
  g.file_ = std::move(file);
  return g;
}

GgufFile GgufFile::parse(std::span<const std::byte> bytes, std::string source_name) {
  GgufFile g;
  g.source_ = std::move(source_name);
  Reader r(bytes, g.source_);

  // --- header ---
  if (bytes.size() < 4) {
    r.fail("file is " + std::to_string(bytes.size()) + " bytes, too short to be GGUF");
  }
  if (std::memcmp(bytes.data(), "GGUF", 4) != 0) {
    char shown[32];
    const auto b = [&](int i) { return static_cast<unsigned>(bytes[i]); };
    std::snprintf(shown, sizeof shown, "%02x %02x %02x %02x", b(0), b(1), b(2), b(3));
    r.fail(std::string("not a GGUF file: magic bytes are ") + shown +
           ", expected 47 47 55 46 (\"GGUF\")");
  }
  r.read<std::uint32_t>("magic");
  g.version_ = r.read<std::uint32_t>("version");
  if (g.version_ == 1) {
    r.fail(
        "GGUF version 1 is obsolete and not supported; re-convert the model with a current "
        "converter (versions 2 and 3 are read)");
  }
  if (g.version_ != 2 && g.version_ != 3) {
    const std::uint32_t swapped = __builtin_bswap32(g.version_);
    if (swapped >= 1 && swapped <= 3) {
      r.fail("file is a big-endian GGUF (version " + std::to_string(swapped) +
             "); only little-endian files are supported");
    }
    r.fail("unsupported GGUF version " + std::to_string(g.version_) +
           " (this build reads versions 2 and 3)");
  }
  const auto n_tensors = r.read<std::uint64_t>("tensor count");
  const auto n_kv = r.read<std::uint64_t>("metadata count");
  if (n_kv > r.remaining() / kMinKvBytes) {
    r.fail("header claims " + std::to_string(n_kv) + " metadata entries, more than the " +
           std::to_string(r.remaining()) + " remaining bytes can hold");
  }
  if (n_tensors > r.remaining() / kMinTensorInfoBytes) {
    r.fail("header claims " + std::to_string(n_tensors) + " tensors, more than the " +
           std::to_string(r.remaining()) + " remaining bytes can hold");
  }

  // --- metadata ---
  g.kv_.reserve(static_cast<std::size_t>(n_kv));
  for (std::uint64_t i = 0; i < n_kv; ++i) {
    std::string key = r.read_string("metadata key");
    if (key.empty()) r.fail("metadata entry #" + std::to_string(i) + " has an empty key");
    if (g.kv_index_.contains(key)) r.fail("metadata key '" + key + "' appears twice");
    const GgufValueType t = read_value_type(r, key, "value type");
    GgufValue value = read_value(r, t, 0, key);
    g.kv_index_.emplace(key, g.kv_.size());
    g.kv_.emplace_back(std::move(key), std::move(value));
  }

  if (const GgufValue* a = g.find("general.alignment")) {
    std::uint64_t align = 0;
    if (const auto* u = std::get_if<std::uint64_t>(&a->v)) {
      align = *u;
    } else if (const auto* s = std::get_if<std::int64_t>(&a->v); s && *s >= 0) {
      align = static_cast<std::uint64_t>(*s);
    } else if (s) {
      r.fail("general.alignment is " + std::to_string(*s) + "; it must be a nonzero power of two");
    } else {
      r.fail("general.alignment has type " + std::string(gguf_value_type_name(a->type)) +
             ", expected an unsigned integer");
    }
    if (align == 0 || !std::has_single_bit(align)) {
      r.fail("general.alignment is " + std::to_string(align) +
             "; it must be a nonzero power of two");
    }
    g.alignment_ = align;
  }

  // --- tensor infos ---
  if (n_tensors > r.remaining() / kMinTensorInfoBytes) {
    r.fail("header claims " + std::to_string(n_tensors) + " tensors, more than the " +
           std::to_string(r.remaining()) + " bytes after the metadata can hold");
  }
  g.tensors_.reserve(static_cast<std::size_t>(n_tensors));
  for (std::uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensor t;
    t.name = r.read_string("tensor name");
    if (t.name.empty()) r.fail("tensor #" + std::to_string(i) + " has an empty name");
    if (g.tensor_index_.contains(t.name)) r.fail("tensor '" + t.name + "' appears twice");
    const std::string what = "tensor '" + t.name + "'";
    const auto n_dims = r.read<std::uint32_t>("tensor dimension count");
    if (n_dims == 0 || n_dims > kMaxDims) {
      r.fail(what + " has " + std::to_string(n_dims) + " dimensions (must be 1 to 4)");
    }
    t.ne.resize(n_dims);
    std::uint64_t n_elements = 1;
    for (auto& d : t.ne) {
      d = r.read<std::uint64_t>("tensor dimension");
      if (d == 0 || d > kMaxDim) r.fail(what + " has an invalid dimension " + std::to_string(d));
      if (n_elements > kMaxDim / d) {
        r.fail(what + " has dimensions whose element count overflows");
      }
      n_elements *= d;
    }
    const auto type_id = r.read<std::uint32_t>("tensor type");
    const auto info = tensor_type_info(type_id);
    if (!info) r.fail(what + " has unknown tensor type id " + std::to_string(type_id));
    t.type = static_cast<TensorType>(type_id);
    t.offset = r.read<std::uint64_t>("tensor data offset");

    const auto rb = row_bytes(t.type, t.ne[0]);
    if (!rb) {
      r.fail(what + " has row length " + std::to_string(t.ne[0]) + ", not a multiple of " +
             std::string(info->name) + "'s block size " + std::to_string(info->block_size));
    }
    const std::uint64_t rows = n_elements / t.ne[0];
    if (*rb != 0 && rows > std::numeric_limits<std::uint64_t>::max() / *rb) {
      r.fail(what + " has a byte size that overflows");
    }
    t.nbytes = *rb * rows;
    if (t.offset % g.alignment_ != 0) {
      r.fail(what + " has data offset " + std::to_string(t.offset) +
             ", not a multiple of the alignment " + std::to_string(g.alignment_));
    }
    g.tensor_index_.emplace(t.name, g.tensors_.size());
    g.tensors_.push_back(std::move(t));
  }

  // --- data section ---
  const auto data_offset = align_up(r.pos(), g.alignment_);
  if (!data_offset) r.fail("general.alignment pushes the data section past any file size");
  g.data_offset_ = *data_offset;
  const std::uint64_t file_size = bytes.size();
  for (auto& t : g.tensors_) {
    const std::uint64_t avail = file_size > g.data_offset_ ? file_size - g.data_offset_ : 0;
    if (t.offset > avail || t.nbytes > avail - t.offset) {
      r.fail("tensor '" + t.name + "' " + dims_string(t.ne) + " " +
             std::string(type_info(t.type).name) + " needs " + std::to_string(t.nbytes) +
             " bytes at data offset " + std::to_string(t.offset) + " (absolute " +
             std::to_string(g.data_offset_) + " + " + std::to_string(t.offset) +
             ") but the file ends at " + std::to_string(file_size) +
             " (truncated? re-download the file)");
    }
    t.data = bytes.data() + g.data_offset_ + t.offset;
  }
  std::vector<std::size_t> order(g.tensors_.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return g.tensors_[a].offset < g.tensors_[b].offset;
  });
  for (std::size_t i = 1; i < order.size(); ++i) {
    const GgufTensor& prev = g.tensors_[order[i - 1]];
    const GgufTensor& cur = g.tensors_[order[i]];
    if (prev.offset + prev.nbytes > cur.offset) {
      r.fail("tensors '" + prev.name + "' (data offset " + std::to_string(prev.offset) + ", " +
             std::to_string(prev.nbytes) + " bytes) and '" + cur.name + "' (data offset " +
             std::to_string(cur.offset) + ") overlap");
    }
  }
  return g;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

void GgufFile::release_metadata() {
  std::vector<std::pair<std::string, GgufValue>>().swap(kv_);  // clear() would keep the capacity
  kv_index_.clear();
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

void GgufFile::release_pages(const GgufTensor& t) const {
  // A tensor lies in one mapping; release() clips the range to each, so the
  // others are left alone.
  const std::span<const std::byte> range{t.data, t.nbytes};
  if (file_) file_->release(range);
  for (const auto& m : mappings_) m->release(range);
}

namespace {

[[noreturn]] void wrong_type(const std::string& source, std::string_view key, const GgufValue& v,
                             std::string_view wanted) {
  throw Error(Errc::BadFormat, "gguf '" + source + "': metadata key '" + std::string(key) +
                                   "' holds " + std::string(gguf_value_type_name(v.type)) +
                                   ", expected " + std::string(wanted));
}

[[noreturn]] void out_of_range(const std::string& source, std::string_view key,
                               const std::string& value, std::string_view wanted) {
  throw Error(Errc::BadFormat, "gguf '" + source + "': metadata key '" + std::string(key) +
                                   "' holds " + value + ", which does not fit " +
                                   std::string(wanted));
}

bool is_unsigned(GgufValueType t) {
  return t == GgufValueType::UINT8 || t == GgufValueType::UINT16 || t == GgufValueType::UINT32 ||
         t == GgufValueType::UINT64;
}
bool is_signed(GgufValueType t) {
  return t == GgufValueType::INT8 || t == GgufValueType::INT16 || t == GgufValueType::INT32 ||
         t == GgufValueType::INT64;
}
bool is_float(GgufValueType t) {
  return t == GgufValueType::FLOAT32 || t == GgufValueType::FLOAT64;
}

}  // namespace

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  const auto* s = std::get_if<std::string>(&v->v);
  if (v->type != GgufValueType::STRING || !s) wrong_type(source_, key, *v, "a string");
  return *s;
}

std::optional<std::int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (is_signed(v->type)) {
    if (const auto* s = std::get_if<std::int64_t>(&v->v)) return *s;
  } else if (is_unsigned(v->type)) {
    if (const auto* u = std::get_if<std::uint64_t>(&v->v)) {
      if (*u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        out_of_range(source_, key, std::to_string(*u), "a signed 64-bit integer");
      }
      return static_cast<std::int64_t>(*u);
    }
  }
  wrong_type(source_, key, *v, "an integer");
}

std::optional<std::uint64_t> GgufFile::get_uint(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (is_unsigned(v->type)) {
    if (const auto* u = std::get_if<std::uint64_t>(&v->v)) return *u;
  } else if (is_signed(v->type)) {
    if (const auto* s = std::get_if<std::int64_t>(&v->v)) {
      if (*s < 0) out_of_range(source_, key, std::to_string(*s), "an unsigned integer");
      return static_cast<std::uint64_t>(*s);
    }
  }
  wrong_type(source_, key, *v, "an unsigned integer");
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (is_float(v->type)) {
    if (const auto* d = std::get_if<double>(&v->v)) return *d;
  } else if (is_unsigned(v->type)) {
    if (const auto* u = std::get_if<std::uint64_t>(&v->v)) return static_cast<double>(*u);
  } else if (is_signed(v->type)) {
    if (const auto* s = std::get_if<std::int64_t>(&v->v)) return static_cast<double>(*s);
  }
  wrong_type(source_, key, *v, "a number");
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  const auto* b = std::get_if<bool>(&v->v);
  if (v->type != GgufValueType::BOOL || !b) wrong_type(source_, key, *v, "a bool");
  return *b;
}

const GgufArray* GgufFile::get_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return nullptr;
  const auto* a = std::get_if<GgufArray>(&v->v);
  if (v->type != GgufValueType::ARRAY || !a) wrong_type(source_, key, *v, "an array");
  return a;
}

}  // namespace seam
