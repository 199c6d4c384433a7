// Reading the JSON files of a Hugging Face model directory (config.json,
// tokenizer.json, ...) with errors that name the file and the key.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace seam::hf {

using json = nlohmann::json;

// Largest JSON file read; tokenizer.json of a 256k vocabulary is ~20 MB.
inline constexpr std::uint64_t kMaxJsonBytes = 512ull << 20;

// Nesting depth of a JSON text, counted outside strings. Checked before
// parsing so that input like a million '[' cannot exhaust the stack in any
// recursive step (destruction of the parsed value, our own walks).
int json_nesting_depth(std::string_view text);
inline constexpr int kMaxJsonDepth = 64;

// Parses `path` as a JSON object. Error(Io) if it cannot be read,
// Error(BadFormat) naming the file if it is not a JSON object.
json read_json_object(const std::string& path);

// Typed access to `obj[key]` (absent or null -> nullopt); a value of the wrong
// type is Error(BadFormat) naming `file` and `key`.
std::optional<std::uint64_t> get_uint(const json& obj, std::string_view key,
                                      const std::string& file);
std::optional<double> get_number(const json& obj, std::string_view key, const std::string& file);
std::optional<bool> get_bool(const json& obj, std::string_view key, const std::string& file);
std::optional<std::string> get_string(const json& obj, std::string_view key,
                                      const std::string& file);

}  // namespace seam::hf
