#include "seam/inspect.h"

#include <cstdio>
#include <map>

#include "format/gguf.h"
#include "format/hf_model.h"
#include "runtime/model_impl.h"

namespace seam {

namespace {

constexpr std::size_t kMaxArrayItems = 8;
constexpr std::size_t kMaxStringChars = 200;

std::string render(const GgufValue& v);

std::string render_string(const std::string& s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size() && i < kMaxStringChars; ++i) {
    const char c = s[i];
    if (c == '\n')
      out += "\\n";
    else if (c == '"')
      out += "\\\"";
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  if (s.size() > kMaxStringChars) out += "...";
  return out + "\"";
}

std::string render(const GgufValue& v) {
  switch (v.type) {
    case GgufValueType::UINT8:
    case GgufValueType::UINT16:
    case GgufValueType::UINT32:
    case GgufValueType::UINT64:
      return std::to_string(std::get<std::uint64_t>(v.v));
    case GgufValueType::INT8:
    case GgufValueType::INT16:
    case GgufValueType::INT32:
    case GgufValueType::INT64:
      return std::to_string(std::get<std::int64_t>(v.v));
    case GgufValueType::FLOAT32:
    case GgufValueType::FLOAT64: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", std::get<double>(v.v));
      return buf;
    }
    case GgufValueType::BOOL:
      return std::get<bool>(v.v) ? "true" : "false";
    case GgufValueType::STRING:
      return render_string(std::get<std::string>(v.v));
    case GgufValueType::ARRAY: {
      const GgufArray& a = std::get<GgufArray>(v.v);
      std::string out = "[";
      for (std::size_t i = 0; i < a.items.size() && i < kMaxArrayItems; ++i) {
        out += (i ? ", " : "") + render(a.items[i]);
      }
      if (a.items.size() > kMaxArrayItems) {
        out += ", ... (" + std::to_string(a.items.size()) + " " +
               std::string(gguf_value_type_name(a.elem_type)) + " items)";
      }
      return out + "]";
    }
  }
  return "?";
}

}  // namespace

InspectReport inspect_file(const std::string& path) {
  GgufFile file = open_model_file(path);  // a GGUF file or a Hugging Face directory
  InspectReport r;
  r.gguf_version = file.version();
  for (const auto& [key, value] : file.metadata()) r.metadata.emplace_back(key, render(value));
  std::map<std::string, int> counts;
  for (const GgufTensor& t : file.tensors()) {
    auto info = tensor_type_info(static_cast<std::uint32_t>(t.type));
    const std::string type = info ? std::string(info->name) : "?";
    r.tensors.push_back({t.name, type, t.ne, t.nbytes});
    counts[type]++;
    r.n_params += t.n_elements();
    r.tensor_bytes += t.nbytes;
  }
  for (const auto& [type, n] : counts) {
    r.type_summary += (r.type_summary.empty() ? "" : ", ") + type + " x" + std::to_string(n);
  }
  r.admission = admission_verdict(file);
  return r;
}

}  // namespace seam
