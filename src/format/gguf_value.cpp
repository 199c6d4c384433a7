// GgufValue constructors and comparison.
#include <bit>
#include <utility>

#include "format/gguf.h"

namespace seam {

std::string_view gguf_value_type_name(GgufValueType t) {
  switch (t) {
    case GgufValueType::UINT8:
      return "UINT8";
    case GgufValueType::INT8:
      return "INT8";
    case GgufValueType::UINT16:
      return "UINT16";
    case GgufValueType::INT16:
      return "INT16";
    case GgufValueType::UINT32:
      return "UINT32";
    case GgufValueType::INT32:
      return "INT32";
    case GgufValueType::FLOAT32:
      return "FLOAT32";
    case GgufValueType::BOOL:
      return "BOOL";
    case GgufValueType::STRING:
      return "STRING";
    case GgufValueType::ARRAY:
      return "ARRAY";
    case GgufValueType::UINT64:
      return "UINT64";
    case GgufValueType::INT64:
      return "INT64";
    case GgufValueType::FLOAT64:
      return "FLOAT64";
  }
  return "UNKNOWN";
}

namespace {
GgufValue make(GgufValueType t, auto x) {
  GgufValue g;
  g.type = t;
  g.v = std::move(x);
  return g;
}
}  // namespace

GgufValue GgufValue::u8(std::uint8_t x) { return make(GgufValueType::UINT8, std::uint64_t{x}); }
GgufValue GgufValue::i8(std::int8_t x) { return make(GgufValueType::INT8, std::int64_t{x}); }
GgufValue GgufValue::u16(std::uint16_t x) { return make(GgufValueType::UINT16, std::uint64_t{x}); }
GgufValue GgufValue::i16(std::int16_t x) { return make(GgufValueType::INT16, std::int64_t{x}); }
GgufValue GgufValue::u32(std::uint32_t x) { return make(GgufValueType::UINT32, std::uint64_t{x}); }
GgufValue GgufValue::i32(std::int32_t x) { return make(GgufValueType::INT32, std::int64_t{x}); }
GgufValue GgufValue::u64(std::uint64_t x) { return make(GgufValueType::UINT64, x); }
GgufValue GgufValue::i64(std::int64_t x) { return make(GgufValueType::INT64, x); }
GgufValue GgufValue::f32(float x) { return make(GgufValueType::FLOAT32, double{x}); }
GgufValue GgufValue::f64(double x) { return make(GgufValueType::FLOAT64, x); }
GgufValue GgufValue::boolean(bool x) { return make(GgufValueType::BOOL, x); }
GgufValue GgufValue::str(std::string s) { return make(GgufValueType::STRING, std::move(s)); }

GgufValue GgufValue::array(GgufValueType elem, std::vector<GgufValue> items) {
  return make(GgufValueType::ARRAY, GgufArray{elem, std::move(items)});
}

GgufValue GgufValue::strings(const std::vector<std::string>& items) {
  std::vector<GgufValue> out;
  out.reserve(items.size());
  for (const auto& s : items) out.push_back(str(s));
  return array(GgufValueType::STRING, std::move(out));
}

GgufValue GgufValue::f32s(const std::vector<float>& items) {
  std::vector<GgufValue> out;
  out.reserve(items.size());
  for (float x : items) out.push_back(f32(x));
  return array(GgufValueType::FLOAT32, std::move(out));
}

GgufValue GgufValue::i32s(const std::vector<std::int32_t>& items) {
  std::vector<GgufValue> out;
  out.reserve(items.size());
  for (std::int32_t x : items) out.push_back(i32(x));
  return array(GgufValueType::INT32, std::move(out));
}

bool GgufArray::operator==(const GgufArray& other) const {
  return elem_type == other.elem_type && items == other.items;
}

bool GgufValue::operator==(const GgufValue& other) const {
  if (type != other.type || v.index() != other.v.index()) return false;
  if (const double* a = std::get_if<double>(&v)) {
    return std::bit_cast<std::uint64_t>(*a) ==
           std::bit_cast<std::uint64_t>(std::get<double>(other.v));
  }
  return v == other.v;
}

}  // namespace seam
