// Hostile GGUF input: every truncation of a valid file, and each header field
// corrupted in turn, must end in seam::Error(BadFormat) with a message naming
// the problem, never a crash, an out-of-bounds read or a huge allocation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "format/gguf.h"
#include "seam/error.h"

namespace seam {
namespace {

using Bytes = std::vector<std::byte>;

Bytes fill(std::size_t n, unsigned salt) {
  Bytes v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 13 + salt) & 0xff);
  return v;
}

// A small valid file: several value types, arrays (one nested), three tensors.
// The last tensor's size is a multiple of the alignment, so the file ends
// exactly where its data does and every shorter prefix is invalid.
Bytes small_file() {
  GgufWriter w;
  w.set("general.architecture", GgufValue::str("llama"));
  w.set("general.alignment", GgufValue::u32(32));
  w.set("k.u8", GgufValue::u8(7));
  w.set("k.i64", GgufValue::i64(-5));
  w.set("k.f32", GgufValue::f32(0.5f));
  w.set("k.bool", GgufValue::boolean(true));
  w.set("k.strs", GgufValue::strings({"alpha", "beta"}));
  w.set("k.nested", GgufValue::array(GgufValueType::ARRAY, {GgufValue::i32s({1, 2, 3})}));
  w.set("dup.key.a", GgufValue::u32(1));
  w.set("dup.key.b", GgufValue::u32(2));
  w.add_tensor("tensor.a", {8, 2}, TensorType::F32, fill(64, 1));
  w.add_tensor("tensor.b", {32}, TensorType::Q8_0, fill(34, 2));
  w.add_tensor("tensor.c", {16, 2}, TensorType::F16, fill(64, 3));
  return w.to_bytes();
}

// Position just past the first occurrence of `needle` (a key or a name).
std::size_t after(const Bytes& b, std::string_view needle) {
  const auto* first = reinterpret_cast<const char*>(b.data());
  const std::string_view hay(first, b.size());
  const auto at = hay.find(needle);
  if (at == std::string_view::npos) throw std::runtime_error("needle not found");
  return at + needle.size();
}

template <class T>
Bytes patched(Bytes b, std::size_t at, T value) {
  std::memcpy(b.data() + at, &value, sizeof value);
  return b;
}

// Offsets inside a tensor info, given the position after its name.
struct InfoAt {
  std::size_t n_dims, dims, type, offset;
};
InfoAt info_at(const Bytes& b, std::string_view name) {
  const std::size_t p = after(b, name);
  std::uint32_t n;
  std::memcpy(&n, b.data() + p, 4);
  return {p, p + 4, p + 4 + 8 * n, p + 8 + 8 * n};
}

std::string error_of(const Bytes& b) {
  try {
    (void)GgufFile::parse(b, "hostile.gguf");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::BadFormat) << e.what();
    return e.what();
  }
  return "";
}

#define EXPECT_REFUSED(bytes, needle)                                                   \
  do {                                                                                  \
    const std::string msg_ = error_of(bytes);                                           \
    EXPECT_FALSE(msg_.empty()) << "accepted, expected an error mentioning: " << needle; \
    EXPECT_NE(msg_.find(needle), std::string::npos) << msg_;                            \
  } while (0)

TEST(GgufHostile, SmallFileIsValid) {
  const Bytes b = small_file();
  const GgufFile g = GgufFile::parse(b);
  ASSERT_EQ(g.tensors().size(), 3u);
  const GgufTensor& last = g.tensors().back();
  EXPECT_EQ(g.data_offset() + last.offset + last.nbytes, b.size());
}

TEST(GgufHostile, TruncatedAtEveryByte) {
  const Bytes b = small_file();
  std::size_t refused = 0;
  for (std::size_t n = 0; n < b.size(); ++n) {
    // A fresh allocation of exactly n bytes, so ASan flags any read past it.
    Bytes prefix(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
    prefix.shrink_to_fit();
    try {
      (void)GgufFile::parse(prefix, "truncated.gguf");
      ADD_FAILURE() << "prefix of " << n << " bytes was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::BadFormat);
      EXPECT_NE(std::string(e.what()).find("truncated.gguf"), std::string::npos);
      ++refused;
    }
  }
  EXPECT_EQ(refused, b.size());
  EXPECT_REFUSED(Bytes(b.begin(), b.begin() + 20), "truncated");
  EXPECT_REFUSED(Bytes(b.begin(), b.end() - 1), "tensor 'tensor.c'");
}

TEST(GgufHostile, MagicAndVersion) {
  const Bytes b = small_file();
  EXPECT_REFUSED(Bytes{}, "too short");
  EXPECT_REFUSED(patched(b, 0, std::uint32_t{0x47475546}), "not a GGUF file");  // "FUGG"
  EXPECT_REFUSED(patched(b, 0, std::uint8_t{'g'}), "magic bytes are 67 47 55 46");
  EXPECT_REFUSED(patched(b, 4, std::uint32_t{1}), "version 1 is obsolete");
  EXPECT_REFUSED(patched(b, 4, std::uint32_t{0}), "unsupported GGUF version 0");
  EXPECT_REFUSED(patched(b, 4, std::uint32_t{4}), "unsupported GGUF version 4");
  EXPECT_REFUSED(patched(b, 4, std::uint32_t{0x03000000}), "big-endian");
  // Version 2 has the same layout as 3 and is read.
  const Bytes v2_bytes = patched(b, 4, std::uint32_t{2});  // outlives the GgufFile
  const GgufFile v2 = GgufFile::parse(v2_bytes);
  EXPECT_EQ(v2.version(), 2u);
  EXPECT_EQ(v2.tensors().size(), 3u);
}

TEST(GgufHostile, Counts) {
  const Bytes b = small_file();
  EXPECT_REFUSED(patched(b, 8, ~std::uint64_t{0}), "tensors, more than");
  EXPECT_REFUSED(patched(b, 8, std::uint64_t{1} << 40), "tensors, more than");
  EXPECT_REFUSED(patched(b, 16, ~std::uint64_t{0}), "metadata entries, more than");
  EXPECT_REFUSED(patched(b, 16, std::uint64_t{1} << 40), "metadata entries, more than");
  // Plausible but wrong counts: the parse runs into the next section.
  EXPECT_FALSE(error_of(patched(b, 16, std::uint64_t{11})).empty());
  EXPECT_FALSE(error_of(patched(b, 8, std::uint64_t{4})).empty());
  EXPECT_FALSE(error_of(patched(b, 16, std::uint64_t{9})).empty());
}

TEST(GgufHostile, StringAndArrayLengths) {
  const Bytes b = small_file();
  // The first key's length prefix sits right after the header.
  EXPECT_REFUSED(patched(b, 24, ~std::uint64_t{0}), "metadata key claims a length of");
  EXPECT_REFUSED(patched(b, 24, std::uint64_t{1} << 62), "metadata key claims a length of");
  // general.architecture's string value: type u32, then u64 length.
  const std::size_t arch = after(b, "general.architecture");
  EXPECT_REFUSED(patched(b, arch + 4, std::uint64_t{1} << 50), "string value claims a length");
  // k.strs: u32 type ARRAY, u32 elem type, u64 count.
  const std::size_t strs = after(b, "k.strs");
  EXPECT_REFUSED(patched(b, strs + 8, std::uint64_t{1} << 60), "'k.strs' claims an array of");
  EXPECT_REFUSED(patched(b, strs + 8, ~std::uint64_t{0}), "'k.strs' claims an array of");
  // An inner string length past the end.
  EXPECT_REFUSED(patched(b, strs + 16, ~std::uint64_t{0} - 3), "string value claims a length");
  EXPECT_REFUSED(patched(b, strs + 4, std::uint32_t{13}), "unknown array element type 13");
  const std::size_t nested = after(b, "k.nested");
  EXPECT_REFUSED(patched(b, nested + 8, std::uint64_t{1} << 59), "'k.nested' claims an array");
  // Tensor name length.
  const std::size_t name_a = after(b, "tensor.a") - 8 - 8;
  EXPECT_REFUSED(patched(b, name_a, ~std::uint64_t{0}), "tensor name claims a length");
}

TEST(GgufHostile, ValueTypesAndDuplicates) {
  const Bytes b = small_file();
  EXPECT_REFUSED(patched(b, after(b, "k.u8"), std::uint32_t{13}),
                 "'k.u8' has unknown value type 13");
  EXPECT_REFUSED(patched(b, after(b, "k.u8"), std::uint32_t{0xffffffff}), "unknown value type");
  EXPECT_REFUSED(patched(b, after(b, "k.bool") + 4, std::uint8_t{2}), "BOOL byte 2");
  EXPECT_REFUSED(patched(b, after(b, "dup.key.b") - 1, 'a'), "'dup.key.a' appears twice");
  EXPECT_REFUSED(patched(b, after(b, "tensor.b") - 1, 'a'), "tensor 'tensor.a' appears twice");
  EXPECT_REFUSED(patched(b, 24, std::uint64_t{0}), "empty key");
}

TEST(GgufHostile, NestingDepth) {
  auto nested = [](int depth) {
    GgufValue v = GgufValue::i32s({1});
    for (int i = 1; i < depth; ++i) v = GgufValue::array(GgufValueType::ARRAY, {v});
    return v;
  };
  GgufWriter ok;
  ok.set("deep", nested(kGgufMaxArrayDepth));
  const Bytes okb = ok.to_bytes();
  EXPECT_TRUE(GgufFile::parse(okb).find("deep") != nullptr);
  // One level deeper, built by hand (the writer refuses it): an extra
  // ARRAY-of-ARRAY wrapper spliced in before the existing array.
  Bytes deep(okb.begin(), okb.end());
  const std::size_t type_at = after(deep, "deep");
  const std::uint32_t arr = 9;
  const std::uint64_t one = 1;
  Bytes wrapper(12);
  std::memcpy(wrapper.data(), &arr, 4);
  std::memcpy(wrapper.data() + 4, &one, 8);
  deep.insert(deep.begin() + static_cast<std::ptrdiff_t>(type_at + 4), wrapper.begin(),
              wrapper.end());
  EXPECT_REFUSED(deep, "nests arrays deeper than 8");
}

TEST(GgufHostile, TensorDims) {
  const Bytes b = small_file();
  const InfoAt a = info_at(b, "tensor.a");
  EXPECT_REFUSED(patched(b, a.n_dims, std::uint32_t{0}), "'tensor.a' has 0 dimensions");
  EXPECT_REFUSED(patched(b, a.n_dims, std::uint32_t{5}), "'tensor.a' has 5 dimensions");
  EXPECT_REFUSED(patched(b, a.n_dims, ~std::uint32_t{0}), "dimensions (must be 1 to 4)");
  EXPECT_REFUSED(patched(b, a.dims, std::uint64_t{0}), "'tensor.a' has an invalid dimension 0");
  EXPECT_REFUSED(patched(b, a.dims + 8, std::uint64_t{0}), "invalid dimension 0");
  EXPECT_REFUSED(patched(b, a.dims, std::uint64_t{1} << 63), "invalid dimension");
  // 2^32 x 2^32 elements overflow int64.
  EXPECT_REFUSED(
      patched(patched(b, a.dims, std::uint64_t{1} << 32), a.dims + 8, std::uint64_t{1} << 32),
      "element count overflows");
  // 2^31 x 2^31 F32 elements fit int64, but not their 2^64 bytes.
  EXPECT_REFUSED(
      patched(patched(b, a.dims, std::uint64_t{1} << 31), a.dims + 8, std::uint64_t{1} << 31),
      "byte size that overflows");
  // Large but consistent dims: the data would run past the end of the file.
  EXPECT_REFUSED(patched(b, a.dims + 8, std::uint64_t{1} << 40), "but the file ends at");
}

TEST(GgufHostile, TensorTypes) {
  const Bytes b = small_file();
  const InfoAt a = info_at(b, "tensor.a");
  for (std::uint32_t id : {4u, 5u, 31u, 36u, 40u, 0xffffffffu}) {
    EXPECT_REFUSED(patched(b, a.type, id), "unknown tensor type id " + std::to_string(id));
  }
  // Row length 8 is not a whole number of Q4_0 blocks.
  EXPECT_REFUSED(patched(b, a.type, static_cast<std::uint32_t>(TensorType::Q4_0)),
                 "not a multiple of Q4_0's block size 32");
  // A defined type still loads whatever this build decodes: refusing it is admission's job.
  const InfoAt q = info_at(b, "tensor.b");
  const Bytes mxfp4 = patched(b, q.type, static_cast<std::uint32_t>(TensorType::MXFP4));
  const GgufFile g = GgufFile::parse(mxfp4);
  EXPECT_EQ(g.find_tensor("tensor.b")->type, TensorType::MXFP4);
  EXPECT_EQ(g.find_tensor("tensor.b")->nbytes, 17u);
}

TEST(GgufHostile, TensorOffsets) {
  const Bytes b = small_file();
  const InfoAt a = info_at(b, "tensor.a");
  const InfoAt c = info_at(b, "tensor.c");
  EXPECT_REFUSED(patched(b, c.offset, std::uint64_t{4}),
                 "data offset 4, not a multiple of the alignment 32");
  EXPECT_REFUSED(patched(b, c.offset, std::uint64_t{1} << 40), "'tensor.c'");
  EXPECT_REFUSED(patched(b, c.offset, std::uint64_t{1} << 40), "but the file ends at");
  EXPECT_REFUSED(patched(b, c.offset, ~std::uint64_t{31}), "but the file ends at");
  // tensor.c moved onto tensor.a's data.
  EXPECT_REFUSED(patched(b, c.offset, std::uint64_t{0}), "overlap");
  // tensor.a (64 bytes at 0) moved to 32: it overlaps its neighbour.
  EXPECT_REFUSED(patched(b, a.offset, std::uint64_t{32}), "overlap");
  // Gaps between tensors are allowed.
  Bytes gap = b;
  gap.resize(b.size() + 64);
  std::memmove(gap.data() + gap.size() - 64, b.data() + b.size() - 64, 64);
  std::uint64_t old;
  std::memcpy(&old, b.data() + c.offset, 8);
  const Bytes moved = patched(gap, c.offset, old + 64);  // outlives the GgufFile
  const GgufFile g = GgufFile::parse(moved);
  EXPECT_EQ(std::memcmp(g.find_tensor("tensor.c")->data, b.data() + b.size() - 64, 64), 0);
}

TEST(GgufHostile, Alignment) {
  const Bytes b = small_file();
  const std::size_t align = after(b, "general.alignment") + 4;
  EXPECT_REFUSED(patched(b, align, std::uint32_t{0}), "general.alignment is 0");
  EXPECT_REFUSED(patched(b, align, std::uint32_t{48}), "general.alignment is 48");
  EXPECT_REFUSED(patched(b, align, std::uint32_t{3}), "power of two");
  // A legal but enormous alignment: the existing offsets no longer fit it.
  EXPECT_REFUSED(patched(b, align, std::uint32_t{1} << 31),
                 "'tensor.b' has data offset 64, not a multiple of the alignment 2147483648");
  // With one tensor at offset 0, the data section itself moves past the end.
  GgufWriter w;
  w.set("general.alignment", GgufValue::u32(32));
  w.add_tensor("only", {8}, TensorType::F32, fill(32, 4));
  const Bytes one = w.to_bytes();
  EXPECT_REFUSED(patched(one, after(one, "general.alignment") + 4, std::uint32_t{1} << 31),
                 "tensor 'only' [8] F32 needs 32 bytes at data offset 0 (absolute 2147483648");
  // Stored as a float instead of an integer.
  EXPECT_REFUSED(
      patched(b, align - 4, std::uint32_t{static_cast<std::uint32_t>(GgufValueType::FLOAT32)}),
      "general.alignment has type FLOAT32");
}

}  // namespace
}  // namespace seam
