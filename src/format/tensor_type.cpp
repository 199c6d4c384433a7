#include "format/tensor_type.h"

#include <array>
#include <limits>

namespace seam {

namespace {

// Indexed by ggml type id; ids the format never defined (4, 5, 31..33, 36..38)
// keep an empty name. Sizes follow ggml's block structs (QK_K = 256).
constexpr std::size_t kTypeCount = 40;

constexpr std::array<TensorTypeInfo, kTypeCount> make_table() {
  std::array<TensorTypeInfo, kTypeCount> t{};
  auto set = [&t](TensorType id, std::string_view name, std::uint32_t block, std::uint32_t size,
                  bool decodable) {
    t[static_cast<std::size_t>(id)] = TensorTypeInfo{name, block, size, decodable};
  };
  set(TensorType::F32, "F32", 1, 4, true);
  set(TensorType::F16, "F16", 1, 2, true);
  set(TensorType::Q4_0, "Q4_0", 32, 18, true);     // f16 d + 16 nibble bytes
  set(TensorType::Q4_1, "Q4_1", 32, 20, true);     // f16 d, m + 16
  set(TensorType::Q5_0, "Q5_0", 32, 22, true);     // f16 d + u32 qh + 16
  set(TensorType::Q5_1, "Q5_1", 32, 24, true);     // f16 d, m + u32 qh + 16
  set(TensorType::Q8_0, "Q8_0", 32, 34, true);     // f16 d + 32 int8
  set(TensorType::Q8_1, "Q8_1", 32, 36, false);    // f16 d, s + 32 int8
  set(TensorType::Q2_K, "Q2_K", 256, 84, true);    // 16 scales + 64 qs + f16 d, dmin
  set(TensorType::Q3_K, "Q3_K", 256, 110, true);   // 32 hmask + 64 qs + 12 scales + f16 d
  set(TensorType::Q4_K, "Q4_K", 256, 144, true);   // f16 d, dmin + 12 scales + 128 qs
  set(TensorType::Q5_K, "Q5_K", 256, 176, true);   // f16 d, dmin + 12 scales + 32 qh + 128 qs
  set(TensorType::Q6_K, "Q6_K", 256, 210, true);   // 128 ql + 64 qh + 16 scales + f16 d
  set(TensorType::Q8_K, "Q8_K", 256, 292, false);  // f32 d + 256 int8 + 16 i16 bsums
  set(TensorType::IQ2_XXS, "IQ2_XXS", 256, 66, false);
  set(TensorType::IQ2_XS, "IQ2_XS", 256, 74, false);
  set(TensorType::IQ3_XXS, "IQ3_XXS", 256, 98, false);
  set(TensorType::IQ1_S, "IQ1_S", 256, 50, false);
  set(TensorType::IQ4_NL, "IQ4_NL", 32, 18, true);  // f16 d + 16 nibble bytes
  set(TensorType::IQ3_S, "IQ3_S", 256, 110, false);
  set(TensorType::IQ2_S, "IQ2_S", 256, 82, false);
  set(TensorType::IQ4_XS, "IQ4_XS", 256, 136, true);  // f16 d + u16 + 4 scale bytes + 128
  set(TensorType::I8, "I8", 1, 1, false);
  set(TensorType::I16, "I16", 1, 2, false);
  set(TensorType::I32, "I32", 1, 4, false);
  set(TensorType::I64, "I64", 1, 8, false);
  set(TensorType::F64, "F64", 1, 8, false);
  set(TensorType::IQ1_M, "IQ1_M", 256, 56, false);
  set(TensorType::BF16, "BF16", 1, 2, true);
  set(TensorType::TQ1_0, "TQ1_0", 256, 54, false);
  set(TensorType::TQ2_0, "TQ2_0", 256, 66, false);
  set(TensorType::MXFP4, "MXFP4", 32, 17, true);  // e8m0 scale + 16 fp4 pairs
  return t;
}

constexpr std::array<TensorTypeInfo, kTypeCount> kTable = make_table();

}  // namespace

std::optional<TensorTypeInfo> tensor_type_info(std::uint32_t id) {
  if (id >= kTable.size() || kTable[id].name.empty()) return std::nullopt;
  return kTable[id];
}

std::optional<std::uint64_t> row_bytes(TensorType t, std::uint64_t row_len) {
  const auto info = tensor_type_info(static_cast<std::uint32_t>(t));
  if (!info || row_len % info->block_size != 0) return std::nullopt;
  const std::uint64_t blocks = row_len / info->block_size;
  if (blocks > std::numeric_limits<std::uint64_t>::max() / info->type_size) return std::nullopt;
  return blocks * info->type_size;
}

namespace {

struct FileTypeName {
  std::uint32_t id;
  std::string_view name;
};
// 4 (Q4_1 with F16 output) and 5/6 (Q4_2, Q4_3) are gone from llama.cpp, as
// are 33-35 (the Q4_0 repacks it now makes at load).
constexpr FileTypeName kFileTypes[] = {
    {0, "F32"},      {1, "F16"},      {2, "Q4_0"},       {3, "Q4_1"},    {7, "Q8_0"},
    {8, "Q5_0"},     {9, "Q5_1"},     {10, "Q2_K"},      {11, "Q3_K_S"}, {12, "Q3_K_M"},
    {13, "Q3_K_L"},  {14, "Q4_K_S"},  {15, "Q4_K_M"},    {16, "Q5_K_S"}, {17, "Q5_K_M"},
    {18, "Q6_K"},    {19, "IQ2_XXS"}, {20, "IQ2_XS"},    {21, "Q2_K_S"}, {22, "IQ3_XS"},
    {23, "IQ3_XXS"}, {24, "IQ1_S"},   {25, "IQ4_NL"},    {26, "IQ3_S"},  {27, "IQ3_M"},
    {28, "IQ2_S"},   {29, "IQ2_M"},   {30, "IQ4_XS"},    {31, "IQ1_M"},  {32, "BF16"},
    {36, "TQ1_0"},   {37, "TQ2_0"},   {38, "MXFP4_MOE"}, {39, "NVFP4"},  {40, "Q1_0"},
    {41, "Q2_0"},
};

}  // namespace

std::optional<std::string_view> file_type_name(std::uint32_t id) {
  for (const FileTypeName& f : kFileTypes)
    if (f.id == id) return f.name;
  return std::nullopt;
}

std::optional<std::uint32_t> file_type_id(std::string_view name) {
  for (const FileTypeName& f : kFileTypes)
    if (f.name == name) return f.id;
  return std::nullopt;
}

}  // namespace seam
