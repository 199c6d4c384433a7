// Safetensors reader: well-formed files read back exactly; hostile headers and
// truncated files are refused with Error(BadFormat) (or Unsupported for valid
// dtypes we do not load), never an out-of-bounds read.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "format/safetensors.h"
#include "seam/error.h"

namespace seam {
namespace {

std::vector<std::byte> make_file(const std::string& header, std::size_t data_bytes,
                                 std::uint64_t claimed_len = UINT64_MAX) {
  const std::uint64_t n = claimed_len == UINT64_MAX ? header.size() : claimed_len;
  std::vector<std::byte> out(8 + header.size() + data_bytes);
  for (int i = 0; i < 8; ++i) out[i] = static_cast<std::byte>((n >> (8 * i)) & 0xFF);
  std::memcpy(out.data() + 8, header.data(), header.size());
  for (std::size_t i = 0; i < data_bytes; ++i) {
    out[8 + header.size() + i] = static_cast<std::byte>(i * 7 + 1);
  }
  return out;
}

// Expects `bytes` to be refused with `code` and a message containing `needle`.
void expect_refused(const std::vector<std::byte>& bytes, Errc code, const std::string& needle) {
  try {
    SafetensorsFile::parse(bytes, "hostile.safetensors");
    ADD_FAILURE() << "accepted; expected an error containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Safetensors, ReadsTensorsMetadataAndOffsets) {
  const std::string h = R"({"__metadata__":{"format":"pt"},)"
                        R"("b":{"dtype":"F16","shape":[2,3],"data_offsets":[24,36]},)"
                        R"("a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
                        R"("c":{"dtype":"BF16","shape":[4],"data_offsets":[36,44]},)"
                        R"("s":{"dtype":"F32","shape":[],"data_offsets":[44,48]},)"
                        R"("z":{"dtype":"F32","shape":[0,5],"data_offsets":[48,48]}})";
  const auto bytes = make_file(h, 48);
  const SafetensorsFile f = SafetensorsFile::parse(bytes);
  ASSERT_EQ(f.tensors().size(), 5u);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  const SafetensorsTensor* a = f.find("a");
  const SafetensorsTensor* b = f.find("b");
  const SafetensorsTensor* c = f.find("c");
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->type, TensorType::F32);
  EXPECT_EQ(b->type, TensorType::F16);
  EXPECT_EQ(c->type, TensorType::BF16);
  EXPECT_EQ(a->shape, (std::vector<std::uint64_t>{2, 3}));
  EXPECT_EQ(a->data.data(), bytes.data() + 8 + h.size());
  EXPECT_EQ(b->data.data(), bytes.data() + 8 + h.size() + 24);
  EXPECT_EQ(b->data.size(), 12u);
  EXPECT_EQ(c->n_elements(), 4u);
  EXPECT_EQ(f.find("s")->n_elements(), 1u);
  EXPECT_EQ(f.find("z")->data.size(), 0u);
  EXPECT_EQ(f.find("missing"), nullptr);
}

TEST(Safetensors, RefusesBadHeaderLengths) {
  expect_refused({}, Errc::BadFormat, "shorter than the 8-byte");
  expect_refused(std::vector<std::byte>(5), Errc::BadFormat, "shorter than the 8-byte");
  const std::string h = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  expect_refused(make_file(h, 4, h.size() + 5), Errc::BadFormat, "runs past the end");
  expect_refused(make_file(h, 4, 1ull << 40), Errc::BadFormat, "limit");
  expect_refused(make_file(h, 4, UINT64_MAX - 1), Errc::BadFormat, "limit");
  // A length that cuts the JSON short.
  expect_refused(make_file(h, 4, h.size() - 3), Errc::BadFormat, "not valid JSON");
}

TEST(Safetensors, RefusesMalformedJson) {
  expect_refused(make_file("{\"a\": ", 0), Errc::BadFormat, "not valid JSON");
  expect_refused(make_file("[1,2,3]", 0), Errc::BadFormat, "not a JSON object");
  expect_refused(make_file(std::string(100000, '[') + std::string(100000, ']'), 0), Errc::BadFormat,
                 "nested too deeply");
  expect_refused(make_file(R"({"a":5})", 0), Errc::BadFormat, "not described by an object");
  expect_refused(make_file(R"({"__metadata__":{"k":1}})", 0), Errc::BadFormat, "not a string");
  expect_refused(make_file(R"({"__metadata__":[]})", 0), Errc::BadFormat, "__metadata__");
}

TEST(Safetensors, RefusesLyingTensorEntries) {
  const auto one = [](const std::string& entry, std::size_t data = 64) {
    return make_file("{\"t\":" + entry + "}", data);
  };
  expect_refused(one(R"({"shape":[1],"data_offsets":[0,4]})"), Errc::BadFormat, "dtype");
  expect_refused(one(R"({"dtype":7,"shape":[1],"data_offsets":[0,4]})"), Errc::BadFormat, "dtype");
  expect_refused(one(R"({"dtype":"F32","data_offsets":[0,4]})"), Errc::BadFormat, "shape");
  expect_refused(one(R"({"dtype":"F32","shape":[1]})"), Errc::BadFormat, "data_offsets");
  expect_refused(one(R"({"dtype":"F32","shape":[1],"data_offsets":[0]})"), Errc::BadFormat,
                 "data_offsets");
  expect_refused(one(R"({"dtype":"Q4","shape":[1],"data_offsets":[0,4]})"), Errc::BadFormat,
                 "unknown dtype 'Q4'");
  expect_refused(one(R"({"dtype":"I64","shape":[1],"data_offsets":[0,8]})"), Errc::Unsupported,
                 "dtype I64");
  expect_refused(one(R"({"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]})"), Errc::Unsupported,
                 "F8_E4M3");
  // Offsets outside the buffer, reversed, or disagreeing with the shape.
  expect_refused(one(R"({"dtype":"F32","shape":[20],"data_offsets":[0,80]})"), Errc::BadFormat,
                 "truncated");
  expect_refused(one(R"({"dtype":"F32","shape":[1],"data_offsets":[8,4]})"), Errc::BadFormat,
                 "begin after end");
  expect_refused(one(R"({"dtype":"F32","shape":[3],"data_offsets":[0,8]})"), Errc::BadFormat,
                 "needs 12");
  expect_refused(
      one(R"({"dtype":"F32","shape":[1],"data_offsets":[18446744073709551612,18446744073709551615]})"),
      Errc::BadFormat, "truncated");
  // Dimensions that are negative, fractional, strings, too large or overflowing.
  expect_refused(one(R"({"dtype":"F32","shape":[-1],"data_offsets":[0,4]})"), Errc::BadFormat,
                 "negative");
  expect_refused(one(R"({"dtype":"F32","shape":[1.5],"data_offsets":[0,4]})"), Errc::BadFormat,
                 "non-negative integer");
  expect_refused(one(R"({"dtype":"F32","shape":["1"],"data_offsets":[0,4]})"), Errc::BadFormat,
                 "non-negative integer");
  expect_refused(one(R"({"dtype":"F32","shape":[1e30],"data_offsets":[0,4]})"), Errc::BadFormat,
                 "non-negative integer");
  expect_refused(one(R"({"dtype":"F32","shape":[99999999999999999999999],"data_offsets":[0,4]})"),
                 Errc::BadFormat, "non-negative integer");
  expect_refused(one(R"({"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]})"),
                 Errc::BadFormat, "impossibly large");
  // 2^62 * 4 bytes wraps to 0 in 64 bits; must not be taken as an empty tensor.
  expect_refused(one(R"({"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]})"),
                 Errc::BadFormat, "impossibly large");
  expect_refused(one(R"({"dtype":"F32","shape":[1],"data_offsets":[-4,0]})"), Errc::BadFormat,
                 "negative");
}

TEST(Safetensors, RefusesOverlappingTensors) {
  const std::string h = R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                        R"("b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})";
  expect_refused(make_file(h, 32), Errc::BadFormat, "overlap");
  const std::string same = R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},)"
                           R"("b":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})";
  expect_refused(make_file(same, 4), Errc::BadFormat, "overlap");
}

TEST(Safetensors, EveryTruncationOfAValidFileIsRefusedOrInBounds) {
  const std::string h = R"({"__metadata__":{"format":"pt"},)"
                        R"("w":{"dtype":"F32","shape":[3,5],"data_offsets":[0,60]},)"
                        R"("b":{"dtype":"BF16","shape":[5],"data_offsets":[60,70]}})";
  const auto full = make_file(h, 70);
  ASSERT_NO_THROW(SafetensorsFile::parse(full));
  for (std::size_t len = 0; len < full.size(); ++len) {
    // A copy of exactly `len` bytes, so a read past it is visible to sanitizers.
    std::vector<std::byte> cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(len));
    EXPECT_THROW(SafetensorsFile::parse(cut), Error) << "length " << len;
  }
}

TEST(Safetensors, RandomByteFlipsNeverReadOutOfBounds) {
  const std::string h = R"({"w":{"dtype":"F16","shape":[4,6],"data_offsets":[0,48]},)"
                        R"("v":{"dtype":"F32","shape":[6],"data_offsets":[48,72]}})";
  const auto full = make_file(h, 72);
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<std::byte> b = full;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i) {
      b[rng() % (8 + h.size())] = static_cast<std::byte>(rng() & 0xFF);
    }
    try {
      const SafetensorsFile f = SafetensorsFile::parse(b);
      for (const SafetensorsTensor& t : f.tensors()) {
        ASSERT_GE(t.data.data(), b.data());
        ASSERT_LE(t.data.data() + t.data.size(), b.data() + b.size());
      }
    } catch (const Error& e) {
      EXPECT_TRUE(e.code() == Errc::BadFormat || e.code() == Errc::Unsupported) << e.what();
    }
  }
}

class SafetensorsDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(SEAM_SCRATCH_DIR) /
           ("st_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void write(const std::string& name, const std::vector<std::byte>& bytes) {
    std::ofstream(dir_ / name, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  std::filesystem::path dir_;
};

TEST_F(SafetensorsDir, ReadsShardsThroughTheIndex) {
  write("s1.safetensors",
        make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8));
  write("s2.safetensors", make_file(R"({"b":{"dtype":"F16","shape":[3],"data_offsets":[0,6]},)"
                                    R"("c":{"dtype":"F16","shape":[1],"data_offsets":[6,8]}})",
                                    8));
  write(
      "model.safetensors.index.json",
      R"({"metadata":{"total_size":22},"weight_map":{"a":"s1.safetensors","b":"s2.safetensors","c":"s2.safetensors"}})");
  const SafetensorsSet set = SafetensorsSet::open_dir(dir_.string());
  EXPECT_EQ(set.n_files(), 2u);
  ASSERT_EQ(set.tensors().size(), 3u);
  ASSERT_NE(set.find("b"), nullptr);
  EXPECT_EQ(set.find("b")->type, TensorType::F16);
  EXPECT_EQ(set.find("a")->shape, (std::vector<std::uint64_t>{2}));
}

TEST_F(SafetensorsDir, RefusesIndexThatLies) {
  write("s1.safetensors",
        make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8));
  const auto refused = [&](const std::string& index, Errc code, const std::string& needle) {
    write("model.safetensors.index.json", index);
    try {
      SafetensorsSet::open_dir(dir_.string());
      ADD_FAILURE() << "accepted " << index;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  refused(R"({"weight_map":{"b":"s1.safetensors"}})", Errc::BadFormat, "does not contain");
  refused(R"({"weight_map":{"a":"../s1.safetensors"}})", Errc::BadFormat, "plain file name");
  refused(R"({"weight_map":{"a":"/etc/passwd"}})", Errc::BadFormat, "plain file name");
  refused(R"({"weight_map":{"a":"missing.safetensors"}})", Errc::Io, "missing.safetensors");
  refused(R"({"weight_map":{"a":3}})", Errc::BadFormat, "not a file name");
  refused(R"({"weight_map":{}})", Errc::BadFormat, "weight_map");
  refused(R"({"metadata":{}})", Errc::BadFormat, "weight_map");
  refused(R"(not json)", Errc::BadFormat, "JSON");
}

TEST_F(SafetensorsDir, MissingWeightsNameTheFiles) {
  try {
    SafetensorsSet::open_dir(dir_.string());
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::Io);
    EXPECT_NE(std::string(e.what()).find("model.safetensors"), std::string::npos);
  }
}

}  // namespace
}  // namespace seam
