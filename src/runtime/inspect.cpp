#include "seam/inspect.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "format/gguf.h"
#include "format/hf_model.h"
#include "model/loader.h"
#include "runtime/model_impl.h"
#include "seam/error.h"

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

std::string describe_layer(const ModelSpec& s, std::uint32_t l) {
  const LayerSpec& L = s.layers[l];
  std::string d;
  if (L.kind == LayerKind::GatedDeltaNet) {
    const DeltaNetParams& p = s.hp.delta_net;
    d = "gated delta net, " + std::to_string(p.n_head_k) + " k-heads / " +
        std::to_string(p.n_head_v) + " v-heads of " + std::to_string(p.d_state) + ", conv " +
        std::to_string(p.d_conv);
  } else {
    d = "attention, " + std::to_string(L.n_head) + " heads (" + std::to_string(L.n_head_kv) +
        " KV) of " + std::to_string(L.head_dim);
    if (L.rope.n_rot > 0) {
      char base[32];
      std::snprintf(base, sizeof base, " base %g", static_cast<double>(L.rope.freq_base));
      d += ", rope ";
      if (L.rope.neox) d += "neox ";
      d += std::to_string(L.rope.n_rot);
      d += base;
      if (L.rope.ext_factor != 0.0f) {
        d += " yarn";
      } else if (L.rope.freq_scale != 1.0f) {
        d += " linear";
      }
    }
    d += L.n_swa > 0 ? ", window " + std::to_string(L.n_swa) : ", full context";
    if (L.kv_source != l) d += ", KV of layer " + std::to_string(L.kv_source);
  }
  if (L.ffn == FfnKind::Moe) {
    if (L.n_ff_dense > 0) d += ", ffn " + std::to_string(L.n_ff_dense) + " and";
    d += (L.n_ff_dense > 0 ? " experts " : ", experts ") + std::to_string(L.n_expert_used) +
         " of " + std::to_string(L.n_expert) + " x " + std::to_string(L.n_ff);
    if (L.n_ff_shexp > 0) d += " + shared " + std::to_string(L.n_ff_shexp);
  } else {
    d += ", ffn " + std::to_string(L.n_ff);
  }
  return d;
}

// Sorted layer indices as "0-3", "0-22/2" (every second), or "0, 5, 9".
std::string layer_set(const std::vector<std::uint32_t>& ids) {
  if (ids.size() == 1) return std::to_string(ids[0]);
  const std::uint32_t step = ids[1] - ids[0];
  bool even = true;
  for (std::size_t i = 1; i < ids.size(); ++i) even = even && ids[i] - ids[i - 1] == step;
  std::string out;
  if (even && (ids.size() > 2 || step == 1)) {
    out += std::to_string(ids.front());
    out += '-';
    out += std::to_string(ids.back());
    if (step > 1) {
      out += '/';
      out += std::to_string(step);
    }
    return out;
  }
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(ids[i]);
  }
  return out;
}

// Groups of identical layers in order of their first layer. A file whose
// metadata cannot be read shows no layers (the verdict says why).
std::vector<std::string> layer_lines(const GgufFile& file) {
  ModelSpec s;
  try {
    s = admit_model(file);
  } catch (const Error&) {
    return {};
  }
  std::vector<std::pair<std::string, std::vector<std::uint32_t>>> groups;
  for (std::uint32_t l = 0; l < s.layers.size(); ++l) {
    const std::string d = describe_layer(s, l);
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == d; });
    if (it == groups.end()) {
      groups.push_back({d, {l}});
    } else {
      it->second.push_back(l);
    }
  }
  std::vector<std::string> out;
  for (const auto& [d, ids] : groups) out.push_back(layer_set(ids) + ": " + d);
  return out;
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
  r.layers = layer_lines(file);
  r.admission = admission_verdict(file);
  return r;
}

}  // namespace seam
