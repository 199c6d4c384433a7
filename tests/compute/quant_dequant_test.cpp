// Decoders against llama.cpp's own to_float output (shared/models/quant/dequant):
// every product in these formats is exact in f32, so equality is bitwise.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "compute/matmul.h"
#include "compute/quant.h"
#include "seam/error.h"

namespace seam {
namespace {

std::vector<char> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}

struct Case {
  const char* file;
  TensorType type;
};

class DequantRef : public ::testing::TestWithParam<Case> {};

constexpr std::int64_t kRows = 512, kCols = 512;  // blk.0.attn_q.weight: ne = [512, 512]

TEST_P(DequantRef, BitIdenticalToLlamaCpp) {
  const Case c = GetParam();
  const std::string base =
      std::string(SEAM_SHARED_DIR) + "/models/quant/dequant/" + c.file + ".blk.0.attn_q.weight";
  const std::vector<char> raw = read_file(base + ".raw");
  const std::vector<char> ref_bytes = read_file(base + ".f32");
  ASSERT_FALSE(raw.empty()) << base << ".raw missing";
  ASSERT_EQ(ref_bytes.size(), static_cast<std::size_t>(kRows * kCols * 4));
  const std::size_t row = quant::row_size(c.type, kCols);
  ASSERT_EQ(raw.size(), row * kRows);

  std::vector<std::uint32_t> ref(kRows * kCols);
  std::memcpy(ref.data(), ref_bytes.data(), ref_bytes.size());

  // Whole tensor as one row, then row by row through get_row (embedding lookup).
  std::vector<float> all(kRows * kCols);
  quant::dequantize_row(c.type, raw.data(), all.data(), kRows * kCols);
  std::size_t mismatches = 0, first = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (std::bit_cast<std::uint32_t>(all[i]) != ref[i] && mismatches++ == 0) first = i;
  }
  EXPECT_EQ(mismatches, 0u) << "first at " << first << ": " << all[first] << " vs "
                            << std::bit_cast<float>(ref[first]);

  WeightView w{c.type, kCols, kRows, reinterpret_cast<const std::byte*>(raw.data()), row};
  std::vector<float> out(kCols);
  for (std::int64_t r : {0, 1, 255, 511}) {
    get_row(w, r, out.data());
    EXPECT_EQ(std::memcmp(out.data(), ref.data() + r * kCols, kCols * 4), 0) << "row " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, DequantRef,
    ::testing::Values(Case{"f16", TensorType::F16}, Case{"bf16", TensorType::BF16},
                      Case{"q8_0", TensorType::Q8_0}, Case{"q4_0", TensorType::Q4_0},
                      Case{"q4_1", TensorType::Q4_1}, Case{"q5_0", TensorType::Q5_0},
                      Case{"q5_1", TensorType::Q5_1}, Case{"q2_k", TensorType::Q2_K},
                      Case{"q3_k", TensorType::Q3_K}, Case{"q4_k", TensorType::Q4_K},
                      Case{"q5_k", TensorType::Q5_K}, Case{"q6_k", TensorType::Q6_K}),
    [](const auto& info) { return std::string(info.param.file); });

TEST(Dequant, F32IsACopy) {
  const float x[3] = {1.5f, -0.0f, 3e-39f};
  float y[3];
  quant::dequantize_row(TensorType::F32, x, y, 3);
  EXPECT_EQ(std::memcmp(x, y, sizeof x), 0);
}

TEST(Dequant, RejectsUndecodableTypesByName) {
  float y[256];
  const std::uint8_t raw[256] = {};
  try {
    quant::dequantize_row(TensorType::IQ2_XS, raw, y, 256);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::Unsupported);
    EXPECT_NE(std::string(e.what()).find("IQ2_XS"), std::string::npos) << e.what();
  }
}

TEST(Dequant, RejectsPartialBlocks) {
  float y[64];
  const std::uint8_t raw[64] = {};
  EXPECT_THROW(quant::dequantize_row(TensorType::Q4_0, raw, y, 33), Error);
  EXPECT_THROW(quant::dequantize_row(TensorType::Q4_K, raw, y, 32), Error);
}

TEST(GetRow, RejectsRowOutOfRange) {
  const std::uint8_t raw[34 * 2] = {};
  WeightView w{TensorType::Q8_0, 32, 2, reinterpret_cast<const std::byte*>(raw), 34};
  float out[32];
  EXPECT_NO_THROW(get_row(w, 1, out));
  EXPECT_THROW(get_row(w, 2, out), Error);
  EXPECT_THROW(get_row(w, -1, out), Error);
}

}  // namespace
}  // namespace seam
