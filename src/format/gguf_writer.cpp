// GGUF v3 writer. The layout matches the ecosystem's writers byte for byte:
// header, metadata in insertion order, tensor infos, zero padding to the
// alignment, then each tensor's data followed by zero padding to the alignment
// (the last one too), with offsets counted from the start of the data section.
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "core/function_ref.h"
#include "format/gguf.h"
#include "seam/error.h"

namespace seam {

namespace {

[[noreturn]] void bad_arg(const std::string& msg) {
  throw Error(Errc::InvalidArgument, "gguf writer: " + msg);
}

// Refuses values the file format cannot encode as declared (a variant that
// disagrees with `type`, an integer out of its type's range, an array element
// of the wrong type), so the bytes written always read back as given.
// It runs once per array element (a vocabulary's hundreds of thousands), so a message
// is put together only when a value is refused.
void validate(const std::string& key, const GgufValue& v, int depth) {
  const auto where = [&] { return "metadata key '" + key + "'"; };
  const auto name = [&] { return std::string(gguf_value_type_name(v.type)); };
  auto range = [&](auto lo, auto hi, auto x) {
    if (x < lo || x > hi) {
      bad_arg(where() + ": value " + std::to_string(x) + " does not fit " + name());
    }
  };
  switch (v.type) {
    case GgufValueType::UINT8:
    case GgufValueType::UINT16:
    case GgufValueType::UINT32:
    case GgufValueType::UINT64: {
      const auto* u = std::get_if<std::uint64_t>(&v.v);
      if (!u) break;
      const std::uint64_t max = v.type == GgufValueType::UINT8    ? 0xffu
                                : v.type == GgufValueType::UINT16 ? 0xffffu
                                : v.type == GgufValueType::UINT32 ? 0xffffffffu
                                                                  : ~std::uint64_t{0};
      range(std::uint64_t{0}, max, *u);
      return;
    }
    case GgufValueType::INT8:
    case GgufValueType::INT16:
    case GgufValueType::INT32:
    case GgufValueType::INT64: {
      const auto* s = std::get_if<std::int64_t>(&v.v);
      if (!s) break;
      const int bits = v.type == GgufValueType::INT8    ? 8
                       : v.type == GgufValueType::INT16 ? 16
                       : v.type == GgufValueType::INT32 ? 32
                                                        : 64;
      const std::int64_t max = bits == 64 ? std::numeric_limits<std::int64_t>::max()
                                          : (std::int64_t{1} << (bits - 1)) - 1;
      range(-max - 1, max, *s);
      return;
    }
    case GgufValueType::FLOAT32: {
      const auto* d = std::get_if<double>(&v.v);
      if (!d) break;
      if (std::isfinite(*d) && std::fabs(*d) > std::numeric_limits<float>::max()) {
        bad_arg(where() + ": value " + std::to_string(*d) + " does not fit FLOAT32");
      }
      return;
    }
    case GgufValueType::FLOAT64:
      if (std::holds_alternative<double>(v.v)) return;
      break;
    case GgufValueType::BOOL:
      if (std::holds_alternative<bool>(v.v)) return;
      break;
    case GgufValueType::STRING:
      if (std::holds_alternative<std::string>(v.v)) return;
      break;
    case GgufValueType::ARRAY: {
      const auto* a = std::get_if<GgufArray>(&v.v);
      if (!a) break;
      if (depth >= kGgufMaxArrayDepth) {
        bad_arg(where() + ": arrays nest deeper than " + std::to_string(kGgufMaxArrayDepth) +
                " levels");
      }
      if (static_cast<std::uint32_t>(a->elem_type) >
          static_cast<std::uint32_t>(GgufValueType::FLOAT64)) {
        bad_arg(where() + ": array has an unknown element type");
      }
      for (const GgufValue& item : a->items) {
        if (item.type != a->elem_type) {
          bad_arg(where() + ": array of " + std::string(gguf_value_type_name(a->elem_type)) +
                  " holds a " + std::string(gguf_value_type_name(item.type)) + " element");
        }
        validate(key, item, depth + 1);
      }
      return;
    }
    default:
      bad_arg(where() + ": unknown value type " +
              std::to_string(static_cast<std::uint32_t>(v.type)));
  }
  bad_arg(where() + ": the stored value does not match its declared type " + name());
}

// Serializes through a sink so the same code fills a buffer or streams a file.
using Sink = FunctionRef<void(const void*, std::size_t)>;

template <class T>
void put(Sink out, T x) {
  out(&x, sizeof x);
}

void put_string(Sink out, const std::string& s) {
  put<std::uint64_t>(out, s.size());
  out(s.data(), s.size());
}

void put_zeros(Sink out, std::uint64_t n) {
  static constexpr char kZeros[256] = {};
  while (n > 0) {
    const std::size_t k = n < sizeof kZeros ? static_cast<std::size_t>(n) : sizeof kZeros;
    out(kZeros, k);
    n -= k;
  }
}

void put_value(Sink out, const GgufValue& v) {
  switch (v.type) {
    case GgufValueType::UINT8:
      put(out, static_cast<std::uint8_t>(std::get<std::uint64_t>(v.v)));
      break;
    case GgufValueType::UINT16:
      put(out, static_cast<std::uint16_t>(std::get<std::uint64_t>(v.v)));
      break;
    case GgufValueType::UINT32:
      put(out, static_cast<std::uint32_t>(std::get<std::uint64_t>(v.v)));
      break;
    case GgufValueType::UINT64:
      put(out, std::get<std::uint64_t>(v.v));
      break;
    case GgufValueType::INT8:
      put(out, static_cast<std::int8_t>(std::get<std::int64_t>(v.v)));
      break;
    case GgufValueType::INT16:
      put(out, static_cast<std::int16_t>(std::get<std::int64_t>(v.v)));
      break;
    case GgufValueType::INT32:
      put(out, static_cast<std::int32_t>(std::get<std::int64_t>(v.v)));
      break;
    case GgufValueType::INT64:
      put(out, std::get<std::int64_t>(v.v));
      break;
    case GgufValueType::FLOAT32:
      put(out, static_cast<float>(std::get<double>(v.v)));
      break;
    case GgufValueType::FLOAT64:
      put(out, std::get<double>(v.v));
      break;
    case GgufValueType::BOOL:
      put<std::uint8_t>(out, std::get<bool>(v.v) ? 1 : 0);
      break;
    case GgufValueType::STRING:
      put_string(out, std::get<std::string>(v.v));
      break;
    case GgufValueType::ARRAY: {
      const auto& a = std::get<GgufArray>(v.v);
      put(out, static_cast<std::uint32_t>(a.elem_type));
      put<std::uint64_t>(out, a.items.size());
      for (const GgufValue& item : a.items) put_value(out, item);
      break;
    }
  }
}

std::uint64_t padding(std::uint64_t n, std::uint64_t align) { return (align - n % align) % align; }

}  // namespace

void GgufWriter::set(std::string key, GgufValue value) {
  if (key.empty()) bad_arg("metadata keys must not be empty");
  validate(key, value, 0);
  if (key == "general.alignment") {
    const auto* u = std::get_if<std::uint64_t>(&value.v);
    const auto* i = std::get_if<std::int64_t>(&value.v);
    const std::uint64_t a = u ? *u : (i && *i > 0 ? static_cast<std::uint64_t>(*i) : 0);
    if (a == 0 || !std::has_single_bit(a)) {
      bad_arg("general.alignment must be an integer power of two");
    }
    alignment_ = a;
  }
  for (auto& [k, v] : kv_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  kv_.emplace_back(std::move(key), std::move(value));
}

std::uint64_t GgufWriter::checked_size(const std::string& name,
                                       const std::vector<std::uint64_t>& ne,
                                       TensorType type) const {
  const std::string what = "tensor '" + name + "'";
  if (name.empty()) bad_arg("tensor names must not be empty");
  for (const Pending& p : tensors_) {
    if (p.name == name) bad_arg(what + " was added twice");
  }
  if (ne.empty() || ne.size() > 4) {
    bad_arg(what + " has " + std::to_string(ne.size()) + " dimensions (must be 1 to 4)");
  }
  const auto info = tensor_type_info(static_cast<std::uint32_t>(type));
  if (!info)
    bad_arg(what + " has unknown type id " + std::to_string(static_cast<std::uint32_t>(type)));
  // Same limits as the reader: every dim and the element count fit int64.
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  std::uint64_t elements = 1;
  for (std::uint64_t d : ne) {
    if (d == 0 || d > kMax) bad_arg(what + " has an invalid dimension " + std::to_string(d));
    if (elements > kMax / d) bad_arg(what + " has too many elements");
    elements *= d;
  }
  const std::uint64_t rows = elements / ne[0];
  const auto rb = row_bytes(type, ne[0]);
  if (!rb) {
    bad_arg(what + " has row length " + std::to_string(ne[0]) + ", not a multiple of " +
            std::string(info->name) + "'s block size " + std::to_string(info->block_size));
  }
  if (rows > kMax / *rb) bad_arg(what + " has too many bytes of data");
  return *rb * rows;
}

void GgufWriter::add_tensor(std::string name, std::vector<std::uint64_t> ne, TensorType type,
                            std::span<const std::byte> data) {
  const std::uint64_t size = checked_size(name, ne, type);
  if (data.size() != size) {
    bad_arg("tensor '" + name + "' needs " + std::to_string(size) +
            " bytes of data but was given " + std::to_string(data.size()));
  }
  tensors_.push_back(
      Pending{std::move(name), std::move(ne), type, size, {data.begin(), data.end()}, {}});
}

void GgufWriter::add_deferred_tensor(std::string name, std::vector<std::uint64_t> ne,
                                     TensorType type, TensorFill fill) {
  if (!fill) bad_arg("tensor '" + name + "' has no function to make its data");
  const std::uint64_t size = checked_size(name, ne, type);
  tensors_.push_back(Pending{std::move(name), std::move(ne), type, size, {}, std::move(fill)});
}

namespace {

void serialize(const std::vector<std::pair<std::string, GgufValue>>& kv, const auto& tensors,
               std::uint64_t align, Sink out) {
  std::uint64_t written = 0;
  auto counted = [&](const void* p, std::size_t n) {
    out(p, n);
    written += n;
  };
  Sink sink(counted);

  sink("GGUF", 4);
  put<std::uint32_t>(sink, 3);
  put<std::uint64_t>(sink, tensors.size());
  put<std::uint64_t>(sink, kv.size());
  for (const auto& [k, v] : kv) {
    put_string(sink, k);
    put(sink, static_cast<std::uint32_t>(v.type));
    put_value(sink, v);
  }
  std::uint64_t offset = 0;
  for (const auto& t : tensors) {
    put_string(sink, t.name);
    put(sink, static_cast<std::uint32_t>(t.ne.size()));
    for (std::uint64_t d : t.ne) put(sink, d);
    put(sink, static_cast<std::uint32_t>(t.type));
    put(sink, offset);
    offset += t.size + padding(t.size, align);
  }
  put_zeros(sink, padding(written, align));
  std::vector<std::byte> made;  // one filled tensor at a time
  for (const auto& t : tensors) {
    if (t.fill) {
      made.resize(t.size);
      t.fill(made);
      sink(made.data(), made.size());
    } else {
      sink(t.data.data(), t.data.size());
    }
    put_zeros(sink, padding(t.size, align));
  }
}

}  // namespace

std::vector<std::byte> GgufWriter::to_bytes() const {
  std::vector<std::byte> buf;
  auto append = [&](const void* p, std::size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    buf.insert(buf.end(), b, b + n);
  };
  serialize(kv_, tensors_, alignment_, Sink(append));
  return buf;
}

void GgufWriter::write(const std::string& path) const {
  // Written beside the target and renamed over it, so a failed write never
  // leaves a truncated model where a good one was.
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw Error(Errc::Io, "cannot create '" + tmp + "': " + std::strerror(errno));
  bool ok = true;
  int write_errno = 0;
  auto to_file = [&](const void* p, std::size_t n) {
    if (ok && n > 0 && std::fwrite(p, 1, n, f) != n) {
      ok = false;
      write_errno = errno;
    }
  };
  try {
    serialize(kv_, tensors_, alignment_, Sink(to_file));
  } catch (...) {  // a tensor's fill failed
    std::fclose(f);
    std::remove(tmp.c_str());
    throw;
  }
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    write_errno = errno;
  }
  if (!ok) {
    std::remove(tmp.c_str());
    throw Error(Errc::Io, "cannot write '" + tmp + "': " + std::strerror(write_errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw Error(Errc::Io, "cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(err));
  }
}

}  // namespace seam
