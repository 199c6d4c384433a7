#include "format/tensor_type.h"

#include <gtest/gtest.h>

#include <limits>
#include <set>

namespace seam {
namespace {

struct Expected {
  std::uint32_t id;
  std::string_view name;
  std::uint32_t block, size;
};

// ggml's type ids and block geometry (ggml-common.h block structs, QK_K = 256).
constexpr Expected kExpected[] = {
    {0, "F32", 1, 4},         {1, "F16", 1, 2},         {2, "Q4_0", 32, 18},
    {3, "Q4_1", 32, 20},      {6, "Q5_0", 32, 22},      {7, "Q5_1", 32, 24},
    {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},      {10, "Q2_K", 256, 84},
    {11, "Q3_K", 256, 110},   {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},   {15, "Q8_K", 256, 292},   {16, "IQ2_XXS", 256, 66},
    {17, "IQ2_XS", 256, 74},  {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},
    {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},  {22, "IQ2_S", 256, 82},
    {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},         {25, "I16", 1, 2},
    {26, "I32", 1, 4},        {27, "I64", 1, 8},        {28, "F64", 1, 8},
    {29, "IQ1_M", 256, 56},   {30, "BF16", 1, 2},       {34, "TQ1_0", 256, 54},
    {35, "TQ2_0", 256, 66},   {39, "MXFP4", 32, 17},
};

TEST(TensorType, TableMatchesTheFormat) {
  for (const auto& e : kExpected) {
    SCOPED_TRACE(e.name);
    const auto info = tensor_type_info(e.id);
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(info->name, e.name);
    EXPECT_EQ(info->block_size, e.block);
    EXPECT_EQ(info->type_size, e.size);
    EXPECT_EQ(type_info(static_cast<TensorType>(e.id)).name, e.name);
  }
}

TEST(TensorType, UndefinedIdsAreUnknown) {
  for (std::uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 40u, 41u, 1000u, 0xffffffffu}) {
    EXPECT_FALSE(tensor_type_info(id).has_value()) << id;
  }
  std::set<std::uint32_t> listed;
  for (const auto& e : kExpected) listed.insert(e.id);
  for (std::uint32_t id = 0; id < 64; ++id) {
    EXPECT_EQ(tensor_type_info(id).has_value(), listed.contains(id)) << id;
  }
}

// general.file_type ids as llama.h numbers them (llama_ftype), some of each
// kind, and the ids it removed or never used.
TEST(TensorType, FileTypeNamesAreLlamaCpps) {
  const std::pair<std::uint32_t, std::string_view> known[] = {
      {0, "F32"},     {1, "F16"},     {2, "Q4_0"},    {7, "Q8_0"},    {8, "Q5_0"},
      {10, "Q2_K"},   {14, "Q4_K_S"}, {15, "Q4_K_M"}, {17, "Q5_K_M"}, {18, "Q6_K"},
      {21, "Q2_K_S"}, {25, "IQ4_NL"}, {30, "IQ4_XS"}, {32, "BF16"},   {38, "MXFP4_MOE"}};
  for (const auto& [id, name] : known) {
    EXPECT_EQ(file_type_name(id), name) << id;
    EXPECT_EQ(file_type_id(name), id) << name;
  }
  for (std::uint32_t id : {4u, 5u, 6u, 33u, 34u, 35u, 1024u, 0xffffffffu}) {
    EXPECT_FALSE(file_type_name(id).has_value()) << id;
  }
  EXPECT_FALSE(file_type_id("Q4_K").has_value());  // a tensor type, not a file type
  for (std::uint32_t id = 0; id < 64; ++id) {
    if (const auto name = file_type_name(id)) {
      EXPECT_EQ(file_type_id(*name), id) << *name;
    }
  }
}

TEST(TensorType, DecodableIsExactlyTheKernelSet) {
  const std::set<std::string_view> kernels = {"F32",  "F16",    "BF16",   "Q8_0", "Q4_0", "Q4_1",
                                              "Q5_0", "Q5_1",   "Q2_K",   "Q3_K", "Q4_K", "Q5_K",
                                              "Q6_K", "IQ4_NL", "IQ4_XS", "MXFP4"};
  for (const auto& e : kExpected) {
    EXPECT_EQ(tensor_type_info(e.id)->decodable, kernels.contains(e.name)) << e.name;
  }
}

TEST(TensorType, RowBytes) {
  EXPECT_EQ(row_bytes(TensorType::F32, 7), 28u);
  EXPECT_EQ(row_bytes(TensorType::BF16, 3), 6u);
  EXPECT_EQ(row_bytes(TensorType::Q4_0, 64), 36u);
  EXPECT_EQ(row_bytes(TensorType::Q8_0, 512), 16u * 34);
  EXPECT_EQ(row_bytes(TensorType::Q4_K, 512), 288u);
  EXPECT_EQ(row_bytes(TensorType::Q6_K, 1536), 6u * 210);
  EXPECT_EQ(row_bytes(TensorType::MXFP4, 32), 17u);
  EXPECT_EQ(row_bytes(TensorType::Q4_K, 0), 0u);
  // Not a whole number of blocks.
  EXPECT_FALSE(row_bytes(TensorType::Q4_0, 33).has_value());
  EXPECT_FALSE(row_bytes(TensorType::Q6_K, 128).has_value());
  EXPECT_FALSE(row_bytes(TensorType::IQ4_NL, 16).has_value());
  // Overflow of blocks * bytes per block.
  EXPECT_FALSE(
      row_bytes(TensorType::F32, std::numeric_limits<std::uint64_t>::max() / 2).has_value());
  EXPECT_FALSE(row_bytes(static_cast<TensorType>(4), 32).has_value());
}

}  // namespace
}  // namespace seam
