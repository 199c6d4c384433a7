#include "format/hf_json.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "seam/error.h"

namespace seam::hf {

namespace {

[[noreturn]] void bad(const std::string& file, const std::string& what) {
  throw Error(Errc::BadFormat, "[hf] " + file + ": " + what);
}

// "'key' must be ..., got VALUE", built by appending (GCC 12 reports a false
// -Wrestrict on the equivalent chain of operator+).
std::string wrong_type(std::string_view key, std::string_view must, const json& v) {
  std::string s = "'";
  s.append(key).append("' must be ").append(must).append(", got ").append(v.dump().substr(0, 40));
  return s;
}

const json* member(const json& obj, std::string_view key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace

int json_nesting_depth(std::string_view s) {
  int depth = 0, max_depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      max_depth = std::max(max_depth, ++depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return max_depth;
}

json read_json_object(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw Error(Errc::Io, "[hf] cannot read " + path + ": " + ec.message());
  if (size > kMaxJsonBytes) bad(path, "is " + std::to_string(size) + " bytes, too large for JSON");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(Errc::Io, "[hf] cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  if (json_nesting_depth(text) > kMaxJsonDepth) bad(path, "is nested too deeply");
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) bad(path, "is not valid JSON");
  if (!j.is_object()) bad(path, "is not a JSON object");
  return j;
}

std::optional<std::uint64_t> get_uint(const json& obj, std::string_view key,
                                      const std::string& file) {
  const json* v = member(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_number_unsigned()) {
    bad(file, wrong_type(key, "a non-negative integer", *v));
  }
  return v->get<std::uint64_t>();
}

std::optional<double> get_number(const json& obj, std::string_view key, const std::string& file) {
  const json* v = member(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) {
    bad(file, wrong_type(key, "a number", *v));
  }
  return v->get<double>();
}

std::optional<bool> get_bool(const json& obj, std::string_view key, const std::string& file) {
  const json* v = member(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) {
    bad(file, wrong_type(key, "true or false", *v));
  }
  return v->get<bool>();
}

std::optional<std::string> get_string(const json& obj, std::string_view key,
                                      const std::string& file) {
  const json* v = member(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    bad(file, wrong_type(key, "a string", *v));
  }
  return v->get<std::string>();
}

}  // namespace seam::hf
