// Decoders against llama.cpp's own to_float output (shared/models/quant/dequant):
// every product in these formats is exact in f32, so equality is bitwise.
#include <gtest/gtest.h>

#include <cmath>

#include <bit>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "compute/matmul.h"
#include "compute/quant.h"
#include "core/half.h"
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

// MXFP4 (OCP microscaling, gpt-oss experts): one E8M0 byte e and 16 bytes of
// E2M1 codes, element j in the low nibble of byte j and j + 16 in the high one.
// E2M1 magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6 (codes 0-7, 8-15 negative), times
// 2^(e - 127): worked here by hand from the OCP MX spec, not from ggml's doubled table.
TEST(Dequant, Mxfp4E2M1TimesE8M0) {
  std::uint8_t b[17] = {};
  b[0] = 127 + 2;   // scale 4
  b[1 + 0] = 0xF1;  // element 0: code 1 -> 0.5 * 4; element 16: code 15 -> -6 * 4
  b[1 + 5] = 0x97;  // element 5: code 7 -> 6 * 4; element 21: code 9 -> -0.5 * 4
  b[1 + 9] = 0x08;  // element 9: code 8 -> -0 ; element 25: code 0 -> 0
  float y[64];
  quant::dequantize_row(TensorType::MXFP4, b, y, 32);
  EXPECT_EQ(y[0], 2.0f);
  EXPECT_EQ(y[16], -24.0f);
  EXPECT_EQ(y[5], 24.0f);
  EXPECT_EQ(y[21], -2.0f);
  EXPECT_EQ(y[9], 0.0f);
  EXPECT_EQ(y[25], 0.0f);
  // The E8M0 extremes: e = 0 is 2^-127 (a subnormal float), e = 254 is 2^127.
  std::uint8_t lo[34] = {};
  lo[0] = 0;
  lo[1] = 0x02;  // element 0: code 2 -> 1 * 2^-127
  lo[17] = 254;
  lo[18] = 0x02;  // element 32: 2^127
  quant::dequantize_row(TensorType::MXFP4, lo, y, 64);
  EXPECT_EQ(y[0], std::ldexp(1.0f, -127));
  EXPECT_EQ(y[32], std::ldexp(1.0f, 127));
  EXPECT_EQ(quant::row_size(TensorType::MXFP4, 64), 34u);
}

// IQ4 blocks as ggml-common.h lays them out, values worked by hand from the
// published codebook {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38,
// 53, 69, 89, 113}. No llama.cpp dump covers these types, so the layout is
// spelled out here: nibble order, scale bit positions, sign of ls - 32.
TEST(Dequant, IQ4NonLinearCodebook) {
  // IQ4_NL: d = 0.5; byte j holds element j (low nibble) and j + 16 (high).
  std::uint8_t nl[18] = {};
  const std::uint16_t half = f32_to_fp16(0.5f);
  std::memcpy(nl, &half, 2);
  nl[2 + 0] = 0xF0;  // element 0: code 0 -> -127; element 16: code 15 -> 113
  nl[2 + 3] = 0x87;  // element 3: code 7 -> -10; element 19: code 8 -> 1
  float y[256];
  quant::dequantize_row(TensorType::IQ4_NL, nl, y, 32);
  EXPECT_EQ(y[0], -63.5f);
  EXPECT_EQ(y[16], 56.5f);
  EXPECT_EQ(y[3], -5.0f);
  EXPECT_EQ(y[19], 0.5f);
  EXPECT_EQ(y[1], -63.5f);  // byte 0x00: code 0 for both halves
  EXPECT_EQ(y[17], -63.5f);

  // IQ4_XS: d = 0.25; sub-block 0 scale 33 (ls - 32 = 1): low bits 1 in
  // scales_l[0] & 0xF, high bits 2 = 0b10 in scales_h bits 0-1; sub-block 3
  // scale 0 (ls - 32 = -32): all bits zero; sub-block 5 scale 63 (+31):
  // low 0xF in scales_l[2] >> 4, high 0b11 in scales_h bits 10-11.
  std::uint8_t xs[136] = {};
  const std::uint16_t quarter = f32_to_fp16(0.25f);
  std::memcpy(xs, &quarter, 2);
  const std::uint16_t scales_h = 0b10 | (0b11 << 10);
  std::memcpy(xs + 2, &scales_h, 2);
  xs[4 + 0] = 0x01;
  xs[4 + 2] = 0xF0;
  std::uint8_t* qs = xs + 8;
  qs[16 * 0 + 2] = 0x9E;   // sub-block 0: element 2 code 14 -> 89, element 18 code 9 -> 13
  qs[16 * 3 + 0] = 0x0F;   // sub-block 3: element 96 code 15 -> 113, times -32
  qs[16 * 5 + 15] = 0xC0;  // sub-block 5: element 175 code 0 -> -127, element 191 code 12 -> 53
  quant::dequantize_row(TensorType::IQ4_XS, xs, y, 256);
  EXPECT_EQ(y[2], 0.25f * 1 * 89);
  EXPECT_EQ(y[18], 0.25f * 1 * 13);
  EXPECT_EQ(y[96], 0.25f * -32 * 113);
  EXPECT_EQ(y[160 + 15], 0.25f * 31 * -127);
  EXPECT_EQ(y[160 + 31], 0.25f * 31 * 53);
  EXPECT_EQ(y[32], 0.25f * -32 * -127);  // sub-block 1: no scale bits set, byte 0x00
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
