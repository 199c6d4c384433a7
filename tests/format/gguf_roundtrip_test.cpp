// Writer -> reader round trips: every value type, nested arrays, every tensor
// type's geometry, alignment, typed getters, and the writer's own refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "seam/error.h"

namespace seam {
namespace {

std::vector<std::byte> fill(std::size_t n, unsigned salt) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 7 + salt * 29 + 3) & 0xff);
  return v;
}

// `name` in the test scratch folder, which is made if missing.
std::string scratch_path(const std::string& name) {
  std::filesystem::create_directories(SEAM_SCRATCH_DIR);
  return (std::filesystem::path(SEAM_SCRATCH_DIR) / name).string();
}

std::vector<std::pair<std::string, GgufValue>> every_value() {
  const double nan_bits = std::bit_cast<double>(0x7ff8000000000123ull);
  return {
      {"v.u8", GgufValue::u8(255)},
      {"v.i8", GgufValue::i8(-128)},
      {"v.u16", GgufValue::u16(65535)},
      {"v.i16", GgufValue::i16(-32768)},
      {"v.u32", GgufValue::u32(0xffffffffu)},
      {"v.i32", GgufValue::i32(std::numeric_limits<std::int32_t>::min())},
      {"v.u64", GgufValue::u64(std::numeric_limits<std::uint64_t>::max())},
      {"v.i64", GgufValue::i64(std::numeric_limits<std::int64_t>::min())},
      {"v.f32", GgufValue::f32(-0.1f)},
      {"v.f32.inf", GgufValue::f32(std::numeric_limits<float>::infinity())},
      {"v.f64", GgufValue::f64(1e300)},
      {"v.f64.nan", GgufValue::f64(nan_bits)},
      {"v.true", GgufValue::boolean(true)},
      {"v.false", GgufValue::boolean(false)},
      {"v.str", GgufValue::str("h\xc3\xa9llo\n")},
      {"v.str.empty", GgufValue::str("")},
      {"v.str.nul", GgufValue::str(std::string("a\0b", 3))},
      {"a.u8", GgufValue::array(GgufValueType::UINT8, {GgufValue::u8(1), GgufValue::u8(2)})},
      {"a.i8", GgufValue::array(GgufValueType::INT8, {GgufValue::i8(-1)})},
      {"a.u16", GgufValue::array(GgufValueType::UINT16, {GgufValue::u16(7)})},
      {"a.i16", GgufValue::array(GgufValueType::INT16, {GgufValue::i16(-7)})},
      {"a.u32", GgufValue::array(GgufValueType::UINT32, {GgufValue::u32(9), GgufValue::u32(10)})},
      {"a.i32", GgufValue::i32s({-1, 0, 1})},
      {"a.u64", GgufValue::array(GgufValueType::UINT64, {GgufValue::u64(1ull << 40)})},
      {"a.i64", GgufValue::array(GgufValueType::INT64, {GgufValue::i64(-(1ll << 40))})},
      {"a.f32", GgufValue::f32s({0.25f, -3.5f})},
      {"a.f64", GgufValue::array(GgufValueType::FLOAT64, {GgufValue::f64(0.1)})},
      {"a.bool", GgufValue::array(GgufValueType::BOOL,
                                  {GgufValue::boolean(true), GgufValue::boolean(false)})},
      {"a.str", GgufValue::strings({"x", "", "yz"})},
      {"a.empty", GgufValue::array(GgufValueType::STRING, {})},
      {"a.nested",
       GgufValue::array(GgufValueType::ARRAY, {GgufValue::strings({"p", "q"}),
                                               GgufValue::strings({}), GgufValue::strings({"r"})})},
      {"a.nested3",
       GgufValue::array(GgufValueType::ARRAY,
                        {GgufValue::array(GgufValueType::ARRAY, {GgufValue::i32s({4, 5})}),
                         GgufValue::array(GgufValueType::ARRAY, {})})},
  };
}

TEST(GgufRoundTrip, EveryValueType) {
  GgufWriter w;
  const auto kv = every_value();
  for (const auto& [k, v] : kv) w.set(k, v);
  const auto bytes = w.to_bytes();
  const GgufFile g = GgufFile::parse(bytes);
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.alignment(), 32u);
  EXPECT_TRUE(g.tensors().empty());
  EXPECT_EQ(g.data_offset() % 32, 0u);
  EXPECT_EQ(g.data_offset(), bytes.size());  // header padded even without tensors
  ASSERT_EQ(g.metadata().size(), kv.size());
  for (std::size_t i = 0; i < kv.size(); ++i) {
    EXPECT_EQ(g.metadata()[i].first, kv[i].first);  // insertion order kept
    EXPECT_TRUE(g.metadata()[i].second == kv[i].second) << kv[i].first;
  }
  // A value differing only in type or in the last bit must not compare equal.
  EXPECT_FALSE(GgufValue::u32(1) == GgufValue::u64(1));
  EXPECT_FALSE(GgufValue::f32s({1.0f}) == GgufValue::f32s({std::nextafter(1.0f, 2.0f)}));
  const GgufArray* nested = g.get_array("a.nested3");
  ASSERT_NE(nested, nullptr);
  const auto& inner = std::get<GgufArray>(nested->items[0].v);
  EXPECT_EQ(std::get<GgufArray>(inner.items[0].v).items[1].v, (GgufValue::i32(5).v));
}

TEST(GgufRoundTrip, TypedGetters) {
  GgufWriter w;
  for (const auto& [k, v] : every_value()) w.set(k, v);
  const auto bytes = w.to_bytes();
  const GgufFile g = GgufFile::parse(bytes, "getters.gguf");

  EXPECT_EQ(g.get_uint("v.u8"), 255u);
  EXPECT_EQ(g.get_int("v.u8"), 255);
  EXPECT_EQ(g.get_int("v.i8"), -128);
  EXPECT_EQ(g.get_int("v.i64"), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(g.get_uint("v.u64"), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(g.get_uint("v.u32"), 0xffffffffu);
  EXPECT_EQ(g.get_float("v.f32"), static_cast<double>(-0.1f));
  EXPECT_EQ(g.get_float("v.i16"), -32768.0);  // floats accept any numeric type
  EXPECT_EQ(g.get_float("v.u16"), 65535.0);
  EXPECT_EQ(g.get_bool("v.true"), true);
  EXPECT_EQ(g.get_bool("v.false"), false);
  EXPECT_EQ(g.get_string("v.str"), "h\xc3\xa9llo\n");
  EXPECT_EQ(g.get_string("v.str.nul")->size(), 3u);
  ASSERT_NE(g.get_array("a.str"), nullptr);
  EXPECT_EQ(g.get_array("a.str")->elem_type, GgufValueType::STRING);
  EXPECT_EQ(g.get_array("a.str")->items.size(), 3u);

  // Absent keys.
  EXPECT_FALSE(g.get_string("nope").has_value());
  EXPECT_FALSE(g.get_int("nope").has_value());
  EXPECT_FALSE(g.get_uint("nope").has_value());
  EXPECT_FALSE(g.get_float("nope").has_value());
  EXPECT_FALSE(g.get_bool("nope").has_value());
  EXPECT_EQ(g.get_array("nope"), nullptr);
  EXPECT_EQ(g.find("nope"), nullptr);

  // Wrong types and out-of-range conversions name the key.
  auto expect_bad = [](auto&& fn, const std::string& needle) {
    try {
      fn();
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::BadFormat);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_bad([&] { (void)g.get_string("v.u8"); }, "'v.u8' holds UINT8");
  expect_bad([&] { (void)g.get_int("v.str"); }, "'v.str' holds STRING");
  expect_bad([&] { (void)g.get_int("v.u64"); }, "v.u64");
  expect_bad([&] { (void)g.get_uint("v.i8"); }, "v.i8");
  expect_bad([&] { (void)g.get_int("v.f32"); }, "v.f32");
  expect_bad([&] { (void)g.get_int("v.true"); }, "v.true");
  expect_bad([&] { (void)g.get_float("v.true"); }, "v.true");
  expect_bad([&] { (void)g.get_float("a.f32"); }, "a.f32");
  expect_bad([&] { (void)g.get_bool("v.u8"); }, "v.u8");
  expect_bad([&] { (void)g.get_array("v.str"); }, "v.str");
  expect_bad([&] { (void)g.get_string("a.str"); }, "getters.gguf");
}

TEST(GgufRoundTrip, EveryTensorTypeGeometry) {
  GgufWriter w;
  struct Made {
    std::string name;
    std::vector<std::uint64_t> ne;
    TensorType type;
    std::vector<std::byte> data;
  };
  std::vector<Made> made;
  unsigned salt = 0;
  for (std::uint32_t id = 0; id < 64; ++id) {
    const auto info = tensor_type_info(id);
    if (!info) continue;
    const auto type = static_cast<TensorType>(id);
    // Two shapes per type: one row of three blocks, and a 4-D tensor.
    const std::vector<std::vector<std::uint64_t>> shapes = {{3ull * info->block_size},
                                                            {info->block_size, 2, 3, 1}};
    for (const auto& ne : shapes) {
      std::uint64_t rows = 1;
      for (std::size_t i = 1; i < ne.size(); ++i) rows *= ne[i];
      Made m{std::string(info->name) + "." + std::to_string(ne.size()), ne, type,
             fill(static_cast<std::size_t>(*row_bytes(type, ne[0]) * rows), ++salt)};
      w.add_tensor(m.name, m.ne, m.type, m.data);
      made.push_back(std::move(m));
    }
  }
  const auto bytes = w.to_bytes();
  const GgufFile g = GgufFile::parse(bytes);
  ASSERT_EQ(g.tensors().size(), made.size());
  std::uint64_t expect_offset = 0;
  for (std::size_t i = 0; i < made.size(); ++i) {
    const GgufTensor& t = g.tensors()[i];
    SCOPED_TRACE(made[i].name);
    EXPECT_EQ(t.name, made[i].name);
    EXPECT_EQ(t.ne, made[i].ne);
    EXPECT_EQ(t.type, made[i].type);
    EXPECT_EQ(t.nbytes, made[i].data.size());
    EXPECT_EQ(t.n_elements(), made[i].ne[0] * (made[i].ne.size() == 1 ? 1 : 6));
    EXPECT_EQ(t.n_rows(), made[i].ne.size() == 1 ? 1u : 6u);
    // Offsets are packed with padding to the alignment, as the ecosystem writes them.
    EXPECT_EQ(t.offset, expect_offset);
    expect_offset += (t.nbytes + 31) / 32 * 32;
    EXPECT_EQ(t.data, bytes.data() + g.data_offset() + t.offset);
    EXPECT_EQ(std::memcmp(t.data, made[i].data.data(), t.nbytes), 0);
    EXPECT_EQ(g.find_tensor(t.name), &t);
  }
  EXPECT_EQ(bytes.size(), g.data_offset() + expect_offset);
  // Padding is zeros.
  const GgufTensor& last = g.tensors().back();
  for (std::size_t i = g.data_offset() + last.offset + last.nbytes; i < bytes.size(); ++i) {
    EXPECT_EQ(bytes[i], std::byte{0});
  }
  EXPECT_EQ(g.find_tensor("missing"), nullptr);
}

TEST(GgufRoundTrip, CustomAlignment) {
  for (std::uint64_t align : {1ull, 8ull, 64ull, 4096ull}) {
    GgufWriter w;
    w.set("general.alignment", GgufValue::u32(static_cast<std::uint32_t>(align)));
    w.add_tensor("a", {3}, TensorType::F32, fill(12, 1));
    w.add_tensor("b", {5}, TensorType::I8, fill(5, 2));
    w.add_tensor("c", {32}, TensorType::Q4_0, fill(18, 3));
    const auto bytes = w.to_bytes();
    const GgufFile g = GgufFile::parse(bytes);
    EXPECT_EQ(g.alignment(), align);
    EXPECT_EQ(g.data_offset() % align, 0u);
    for (const auto& t : g.tensors()) EXPECT_EQ(t.offset % align, 0u) << t.name;
    EXPECT_EQ(g.tensors()[1].offset, (12 + align - 1) / align * align);
    EXPECT_EQ(std::memcmp(g.find_tensor("c")->data, fill(18, 3).data(), 18), 0);
  }
}

TEST(GgufRoundTrip, SetReplacesInPlace) {
  GgufWriter w;
  w.set("a", GgufValue::u32(1));
  w.set("b", GgufValue::u32(2));
  w.set("a", GgufValue::str("one"));
  const auto bytes = w.to_bytes();
  const GgufFile g = GgufFile::parse(bytes);
  ASSERT_EQ(g.metadata().size(), 2u);
  EXPECT_EQ(g.metadata()[0].first, "a");
  EXPECT_EQ(g.get_string("a"), "one");
}

TEST(GgufRoundTrip, WriteAndOpenFile) {
  const std::string path = scratch_path("gguf_roundtrip.gguf");
  GgufWriter w;
  w.set("general.name", GgufValue::str("disk"));
  w.add_tensor("w", {64, 2}, TensorType::Q8_0, fill(2 * 2 * 34, 9));
  w.write(path);
  const GgufFile g = GgufFile::open(path);
  EXPECT_EQ(g.source(), path);
  EXPECT_EQ(g.get_string("general.name"), "disk");
  EXPECT_EQ(std::memcmp(g.find_tensor("w")->data, fill(136, 9).data(), 136), 0);
  EXPECT_EQ(std::filesystem::file_size(path), w.to_bytes().size());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::filesystem::remove(path);

  try {
    w.write(scratch_path("no-such-dir/x.gguf"));
    ADD_FAILURE() << "writing into a missing directory must fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::Io);
  }
  try {
    (void)GgufFile::open(scratch_path("no-such-file.gguf"));
    ADD_FAILURE() << "opening a missing file must fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::Io);
  }
}

// A one-pass reader (the quantizer) lets each tensor's mapped pages go; no
// tensor byte changes, whether the file is mapped or copied into memory.
TEST(GgufRoundTrip, ReleasingPagesKeepsTheTensors) {
  const std::string path = scratch_path("gguf_release.gguf");
  GgufWriter w;
  w.set("general.name", GgufValue::str("release"));
  w.add_tensor("small", {5}, TensorType::F32, fill(20, 4));
  w.add_tensor("big", {64, 300}, TensorType::Q8_0, fill(300 * 2 * 34, 5));  // several pages
  w.write(path);
  for (const Residency r : {Residency::kMapped, Residency::kInMemory}) {
    const GgufFile g = GgufFile::open(path, r);
    ASSERT_EQ(g.tensors().size(), 2u);
    for (const GgufTensor& t : g.tensors()) g.release_pages(t);
    EXPECT_EQ(std::memcmp(g.find_tensor("small")->data, fill(20, 4).data(), 20), 0);
    EXPECT_EQ(std::memcmp(g.find_tensor("big")->data, fill(300 * 2 * 34, 5).data(), 300 * 2 * 34),
              0);
  }
  std::filesystem::remove(path);
}

// A loaded model keeps its file for the tensors alone: the metadata goes,
// every tensor stays as it was.
TEST(GgufRoundTrip, ReleasingTheMetadataKeepsTheTensors) {
  GgufWriter w;
  w.set("general.name", GgufValue::str("release"));
  w.set("tokenizer.ggml.tokens", GgufValue::strings({"a", "b", "c"}));
  w.add_tensor("w", {64, 2}, TensorType::Q8_0, fill(2 * 2 * 34, 6));
  const auto bytes = w.to_bytes();
  GgufFile g = GgufFile::parse(bytes);
  ASSERT_EQ(g.metadata().size(), 2u);
  g.release_metadata();
  EXPECT_TRUE(g.metadata().empty());
  EXPECT_EQ(g.find("general.name"), nullptr);
  EXPECT_EQ(g.get_string("general.name"), std::nullopt);
  EXPECT_EQ(g.get_array("tokenizer.ggml.tokens"), nullptr);
  ASSERT_NE(g.find_tensor("w"), nullptr);
  EXPECT_EQ(std::memcmp(g.find_tensor("w")->data, fill(136, 6).data(), 136), 0);
}

// Tensors made only when the writer reaches them (the quantizer's output, one
// tensor in memory at a time) give the bytes of the same tensors added whole;
// a fill that fails leaves the file that was there untouched and no other.
TEST(GgufRoundTrip, DeferredTensorsGiveTheSameBytesAndFailCleanly) {
  GgufWriter whole, deferred;
  for (GgufWriter* w : {&whole, &deferred}) w->set("general.name", GgufValue::str("later"));
  whole.add_tensor("a", {64, 3}, TensorType::Q8_0, fill(3 * 2 * 34, 1));
  whole.add_tensor("b", {5}, TensorType::F32, fill(20, 2));
  whole.add_tensor("c", {7, 3}, TensorType::F16, fill(42, 3));  // 42 bytes: padded
  std::vector<std::string> made;
  auto from = [&made](std::string name, std::size_t n, unsigned salt) {
    return [&made, name, n, salt](std::span<std::byte> dst) {
      EXPECT_EQ(dst.size(), n) << name;
      const auto src = fill(n, salt);
      std::memcpy(dst.data(), src.data(), std::min(n, dst.size()));
      made.push_back(name);
    };
  };
  deferred.add_deferred_tensor("a", {64, 3}, TensorType::Q8_0, from("a", 3 * 2 * 34, 1));
  deferred.add_tensor("b", {5}, TensorType::F32, fill(20, 2));
  deferred.add_deferred_tensor("c", {7, 3}, TensorType::F16, from("c", 42, 3));
  EXPECT_TRUE(made.empty()) << "nothing is made before the writer reaches it";
  EXPECT_EQ(deferred.to_bytes(), whole.to_bytes());
  EXPECT_EQ(made, (std::vector<std::string>{"a", "c"}));

  const std::string path = scratch_path("gguf_deferred.gguf");
  deferred.write(path);
  const auto bytes = whole.to_bytes();
  ASSERT_EQ(std::filesystem::file_size(path), bytes.size());
  const GgufFile g = GgufFile::open(path);
  EXPECT_EQ(std::memcmp(g.find_tensor("c")->data, fill(42, 3).data(), 42), 0);

  GgufWriter failing;
  failing.add_tensor("ok", {4}, TensorType::F32, fill(16, 0));
  failing.add_deferred_tensor("bad", {4}, TensorType::F32, [](std::span<std::byte>) {
    throw Error(Errc::Io, "the source went away");
  });
  try {
    failing.write(path);
    ADD_FAILURE() << "a failing fill must fail the write";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::Io);
    EXPECT_NE(std::string(e.what()).find("went away"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  EXPECT_EQ(std::filesystem::file_size(path), bytes.size()) << "the earlier file was touched";
  std::filesystem::remove(path);

  try {
    failing.add_deferred_tensor("none", {4}, TensorType::F32, {});
    ADD_FAILURE() << "a deferred tensor without a fill must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::InvalidArgument);
  }
  try {
    failing.add_deferred_tensor("ok", {4}, TensorType::F32, [](std::span<std::byte>) {});
    ADD_FAILURE() << "a name added twice must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::InvalidArgument);
  }
}

TEST(GgufWriterRefuses, BadTensorsAndValues) {
  auto expect_invalid = [](auto&& fn, const std::string& needle) {
    try {
      fn();
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  GgufWriter w;
  w.add_tensor("ok", {4}, TensorType::F32, fill(16, 0));
  expect_invalid([&] { w.add_tensor("ok", {4}, TensorType::F32, fill(16, 0)); }, "twice");
  expect_invalid([&] { w.add_tensor("", {4}, TensorType::F32, fill(16, 0)); }, "empty");
  expect_invalid([&] { w.add_tensor("d0", {}, TensorType::F32, {}); }, "dimensions");
  expect_invalid(
      [&] {
        w.add_tensor("d5", {1, 1, 1, 1, 1}, TensorType::F32, fill(4, 0));
      },
      "dimensions");
  expect_invalid([&] { w.add_tensor("z", {4, 0}, TensorType::F32, {}); }, "invalid dimension");
  expect_invalid([&] { w.add_tensor("blk", {16}, TensorType::Q4_0, fill(9, 0)); }, "block size");
  expect_invalid([&] { w.add_tensor("size", {4}, TensorType::F32, fill(15, 0)); }, "15");
  expect_invalid([&] { w.add_tensor("type", {4}, static_cast<TensorType>(5), fill(16, 0)); },
                 "unknown type");
  expect_invalid(
      [&] {
        w.add_tensor("big", {1ull << 40, 1ull << 40}, TensorType::F32, {});
      },
      "too many");

  expect_invalid([&] { w.set("", GgufValue::u8(1)); }, "empty");
  expect_invalid([&] { w.set("general.alignment", GgufValue::u32(48)); }, "power of two");
  expect_invalid([&] { w.set("general.alignment", GgufValue::str("32")); }, "power of two");
  GgufValue bad_u8 = GgufValue::u8(0);
  bad_u8.v = std::uint64_t{256};
  expect_invalid([&] { w.set("k", bad_u8); }, "does not fit UINT8");
  GgufValue bad_i16 = GgufValue::i16(0);
  bad_i16.v = std::int64_t{-40000};
  expect_invalid([&] { w.set("k", bad_i16); }, "does not fit INT16");
  GgufValue mismatch = GgufValue::str("x");
  mismatch.v = std::uint64_t{1};
  expect_invalid([&] { w.set("k", mismatch); }, "declared type STRING");
  expect_invalid([&] { w.set("k", GgufValue::array(GgufValueType::INT32, {GgufValue::u32(1)})); },
                 "holds a UINT32 element");
  GgufValue deep = GgufValue::i32s({1});
  for (int i = 0; i < kGgufMaxArrayDepth; ++i)
    deep = GgufValue::array(GgufValueType::ARRAY, {deep});
  expect_invalid([&] { w.set("k", deep); }, "nest");
  expect_invalid(
      [&] {
        w.set("k", GgufValue::f64(1e300));
        w.set("k2", [] {
          GgufValue f = GgufValue::f32(0);
          f.v = 1e300;
          return f;
        }());
      },
      "FLOAT32");
}

}  // namespace
}  // namespace seam
