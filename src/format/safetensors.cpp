#include "format/safetensors.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "format/hf_json.h"
#include "seam/error.h"

namespace seam {

namespace {

using json = nlohmann::json;

[[noreturn]] void bad(const std::string& source, const std::string& what) {
  throw Error(Errc::BadFormat, "[safetensors] " + source + ": " + what);
}

struct DtypeInfo {
  std::string_view name;
  std::uint64_t size;  // bytes per element; 0: not loadable
  TensorType type;
};

// Every dtype the format defines, so that a valid file with a dtype we do not
// load is refused as unsupported, not as corrupt. U8 is loaded as raw bytes
// (TensorType::I8 by size): gpt-oss keeps its MXFP4 blocks and scales in it,
// and only that importer reads such tensors (hf_gpt_oss.cpp).
constexpr DtypeInfo kDtypes[] = {
    {"F32", 4, TensorType::F32},     {"F16", 2, TensorType::F16},
    {"BF16", 2, TensorType::BF16},   {"F64", 0, TensorType::F32},
    {"I64", 0, TensorType::F32},     {"I32", 0, TensorType::F32},
    {"I16", 0, TensorType::F32},     {"I8", 0, TensorType::F32},
    {"U64", 0, TensorType::F32},     {"U32", 0, TensorType::F32},
    {"U16", 0, TensorType::F32},     {"U8", 1, TensorType::I8},
    {"BOOL", 0, TensorType::F32},    {"F8_E4M3", 0, TensorType::F32},
    {"F8_E5M2", 0, TensorType::F32}, {"F8_E8M0", 0, TensorType::F32},
    {"F4", 0, TensorType::F32},      {"F6_E2M3", 0, TensorType::F32},
    {"F6_E3M2", 0, TensorType::F32}, {"C64", 0, TensorType::F32},
};

// A non-negative JSON integer that fits u64; anything else (negative, float,
// string, overflowed literal) is refused.
std::uint64_t as_index(const json& v, const std::string& source, const std::string& what) {
  if (!v.is_number_unsigned()) {
    if (v.is_number_integer()) bad(source, what + " is negative (" + v.dump() + ")");
    bad(source, what + " must be a non-negative integer, got " + v.dump().substr(0, 40));
  }
  return v.get<std::uint64_t>();
}

std::string shape_str(const std::vector<std::uint64_t>& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

}  // namespace

std::uint64_t SafetensorsTensor::n_elements() const {
  std::uint64_t n = 1;
  for (std::uint64_t d : shape) n *= d;  // validated not to overflow at parse time
  return n;
}

SafetensorsFile SafetensorsFile::open(const std::string& path, Residency residency) {
  auto file = std::make_shared<const MappedFile>(MappedFile::open(path, residency));
  SafetensorsFile f = parse(file->bytes(), path);
  f.file_ = std::move(file);
  return f;
}

SafetensorsFile SafetensorsFile::parse(std::span<const std::byte> bytes, std::string source_name) {
  SafetensorsFile f;
  f.source_ = std::move(source_name);
  const std::string& src = f.source_;
  if (bytes.size() < 8) {
    bad(src, "file is " + std::to_string(bytes.size()) +
                 " bytes, shorter than the 8-byte header length; it is truncated or not a "
                 "safetensors file");
  }
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<std::uint8_t>(bytes[i]);
  if (n > kSafetensorsMaxHeader) {
    bad(src, "header length " + std::to_string(n) + " is larger than the " +
                 std::to_string(kSafetensorsMaxHeader) + "-byte limit; the file is corrupt");
  }
  if (n > bytes.size() - 8) {
    bad(src, "header length " + std::to_string(n) + " runs past the end of the " +
                 std::to_string(bytes.size()) + "-byte file; it is truncated");
  }
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8),
                              static_cast<std::size_t>(n));
  if (hf::json_nesting_depth(text) > kSafetensorsMaxDepth)
    bad(src, "header JSON is nested too deeply");
  const json header = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded()) bad(src, "header is not valid JSON");
  if (!header.is_object()) bad(src, "header is not a JSON object");

  const std::span<const std::byte> buffer = bytes.subspan(8 + static_cast<std::size_t>(n));
  struct Range {
    std::uint64_t begin, end;
    std::size_t tensor;
  };
  std::vector<Range> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) bad(src, "__metadata__ is not an object of strings");
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string()) bad(src, "__metadata__ value for '" + k + "' is not a string");
        f.metadata_.emplace(k, v.get<std::string>());
      }
      continue;
    }
    const std::string what = "tensor '" + name + "'";
    if (!entry.is_object()) bad(src, what + " is not described by an object");
    const auto dt = entry.find("dtype");
    const auto sh = entry.find("shape");
    const auto off = entry.find("data_offsets");
    if (dt == entry.end() || !dt->is_string()) bad(src, what + " lacks a string 'dtype'");
    if (sh == entry.end() || !sh->is_array()) bad(src, what + " lacks a 'shape' array");
    if (off == entry.end() || !off->is_array() || off->size() != 2) {
      bad(src, what + " lacks 'data_offsets' [begin, end]");
    }
    const std::string dtype = dt->get<std::string>();
    const DtypeInfo* info = nullptr;
    for (const DtypeInfo& d : kDtypes) {
      if (d.name == dtype) info = &d;
    }
    if (!info) bad(src, what + " has unknown dtype '" + dtype.substr(0, 40) + "'");
    if (info->size == 0) {
      throw Error(Errc::Unsupported, "[safetensors] " + src + ": " + what + " has dtype " + dtype +
                                         "; seam loads only F32, F16 and BF16 weights");
    }
    SafetensorsTensor t;
    t.name = name;
    t.type = info->type;
    std::uint64_t count = 1;
    for (std::size_t i = 0; i < sh->size(); ++i) {
      const std::uint64_t d = as_index((*sh)[i], src, what + " shape[" + std::to_string(i) + "]");
      // Bound the element count so count * element size cannot overflow.
      if (d != 0 && count > (std::numeric_limits<std::uint64_t>::max() / 8) / d) {
        bad(src, what + " has an impossibly large shape");
      }
      count *= d;
      t.shape.push_back(d);
    }
    const std::uint64_t begin = as_index((*off)[0], src, what + " data_offsets[0]");
    const std::uint64_t end = as_index((*off)[1], src, what + " data_offsets[1]");
    if (begin > end) {
      bad(src, what + " has data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                   "] with begin after end");
    }
    if (end > buffer.size()) {
      bad(src, what + " ends at byte " + std::to_string(end) + " of a " +
                   std::to_string(buffer.size()) +
                   "-byte data buffer; the file is truncated or its header is corrupt");
    }
    if (end - begin != count * info->size) {
      bad(src, what + " has " + std::to_string(end - begin) + " bytes of data but shape " +
                   shape_str(t.shape) + " of " + dtype + " needs " +
                   std::to_string(count * info->size));
    }
    t.data = buffer.subspan(static_cast<std::size_t>(begin), static_cast<std::size_t>(end - begin));
    ranges.push_back({begin, end, f.tensors_.size()});
    f.tensors_.push_back(std::move(t));
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
    return a.begin < b.begin || (a.begin == b.begin && a.end < b.end);
  });
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].begin < ranges[i - 1].end) {
      bad(src, "tensors '" + f.tensors_[ranges[i - 1].tensor].name + "' and '" +
                   f.tensors_[ranges[i].tensor].name + "' overlap in the data buffer");
    }
  }
  std::sort(f.tensors_.begin(), f.tensors_.end(),
            [](const SafetensorsTensor& a, const SafetensorsTensor& b) { return a.name < b.name; });
  return f;
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  auto it = std::lower_bound(
      tensors_.begin(), tensors_.end(), name,
      [](const SafetensorsTensor& t, std::string_view n) { return std::string_view(t.name) < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

SafetensorsSet SafetensorsSet::open_dir(const std::string& dir, Residency residency) {
  namespace fs = std::filesystem;
  SafetensorsSet set;
  const fs::path root(dir);
  const fs::path index_path = root / "model.safetensors.index.json";
  if (fs::exists(index_path)) {
    const std::string src = index_path.string();
    std::ifstream in(index_path, std::ios::binary);
    if (!in) throw Error(Errc::Io, "[safetensors] cannot read " + src);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    if (hf::json_nesting_depth(text) > kSafetensorsMaxDepth) bad(src, "JSON is nested too deeply");
    const json index = json::parse(text, nullptr, false);
    if (index.is_discarded() || !index.is_object()) bad(src, "is not a JSON object");
    const auto wm = index.find("weight_map");
    if (wm == index.end() || !wm->is_object() || wm->empty()) {
      bad(src, "lacks a non-empty 'weight_map' object");
    }
    std::map<std::string, std::size_t> shard_of_file;
    std::vector<std::pair<std::string, std::size_t>> wanted;
    for (const auto& [tensor, file] : wm->items()) {
      if (!file.is_string()) bad(src, "weight_map entry for '" + tensor + "' is not a file name");
      const std::string name = file.get<std::string>();
      // Shards are siblings of the index: no directories, no way out of `dir`.
      if (name.empty() || name == "." || name == ".." ||
          name.find_first_of("/\\") != std::string::npos) {
        bad(src, "weight_map names '" + name.substr(0, 80) + "', which is not a plain file name");
      }
      auto [it, fresh] = shard_of_file.emplace(name, set.files_.size());
      if (fresh) set.files_.push_back(SafetensorsFile::open((root / name).string(), residency));
      wanted.emplace_back(tensor, it->second);
    }
    for (const auto& [tensor, shard] : wanted) {
      const SafetensorsTensor* t = set.files_[shard].find(tensor);
      if (!t) {
        bad(src, "weight_map puts '" + tensor + "' in " + set.files_[shard].source() +
                     ", which does not contain it");
      }
      set.index_.emplace(tensor, t);
    }
    return set;
  }
  const fs::path single = root / "model.safetensors";
  if (!fs::exists(single)) {
    throw Error(Errc::Io, "[safetensors] " + dir +
                              " holds neither model.safetensors nor model.safetensors.index.json");
  }
  set.files_.push_back(SafetensorsFile::open(single.string(), residency));
  for (const SafetensorsTensor& t : set.files_.back().tensors()) set.index_.emplace(t.name, &t);
  return set;
}

const SafetensorsTensor* SafetensorsSet::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second;
}

std::vector<const SafetensorsTensor*> SafetensorsSet::tensors() const {
  std::vector<const SafetensorsTensor*> out;
  out.reserve(index_.size());
  for (const auto& [name, t] : index_) out.push_back(t);
  return out;
}

std::vector<std::shared_ptr<const MappedFile>> SafetensorsSet::mappings() const {
  std::vector<std::shared_ptr<const MappedFile>> out;
  for (const SafetensorsFile& f : files_) out.push_back(f.mapping());
  return out;
}

}  // namespace seam
