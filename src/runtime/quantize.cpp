#include "seam/quantize.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "compute/quant.h"
#include "compute/quantize_k.h"
#include "core/thread_pool.h"
#include "format/gguf.h"
#include "format/hf_model.h"
#include "runtime/quantize_plan.h"
#include "seam/error.h"

namespace seam {

namespace {

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// The file's layer index of a "blk.N." tensor, or nullopt.
std::optional<int> layer_of(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return std::nullopt;
  int n = 0;
  std::size_t i = 4;
  if (i >= name.size() || !std::isdigit(static_cast<unsigned char>(name[i]))) return std::nullopt;
  for (; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])); ++i) {
    n = n * 10 + (name[i] - '0');
    if (n > 1000000) return std::nullopt;
  }
  return n;
}

bool contains(const std::string& s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

// llama.cpp's use_more_bits: the first and last eighth of the layers and every
// third layer in between get the larger type in the *_M mixes.
bool use_more_bits(int i_layer, int n_layer) {
  return i_layer < n_layer / 8 || i_layer >= 7 * n_layer / 8 || (i_layer - n_layer / 8) % 3 == 2;
}

// When `t`'s block does not divide the row: llama.cpp's fallback for the
// K-quants, then F16 (block size 1) when even a 32-block does not fit.
TensorType fit_row(TensorType t, std::uint64_t row, std::string& note) {
  auto fits = [row](TensorType x) { return row % type_info(x).block_size == 0; };
  if (fits(t)) return t;
  TensorType alt = TensorType::F16;
  if (t == TensorType::Q4_K) alt = TensorType::Q5_0;
  if (t == TensorType::Q5_K) alt = TensorType::Q5_1;
  if (t == TensorType::Q6_K) alt = TensorType::Q8_0;
  if (!fits(alt)) alt = TensorType::F16;
  note = "row length " + std::to_string(row) + " is not a multiple of " +
         std::to_string(type_info(t).block_size) + "; stored as " + quant::type_name(alt);
  return alt;
}

}  // namespace

TensorType parse_quant_type(const std::string& name) {
  const std::string u = upper(name);
  for (TensorType t : {TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0,
                       TensorType::Q5_1, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K,
                       TensorType::F16, TensorType::BF16, TensorType::F32}) {
    if (quant::type_name(t) == u) return t;
  }
  throw Error(Errc::InvalidArgument, "unknown quantization type '" + name +
                                         "'; choose Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, "
                                         "Q6_K, F16, BF16 or F32");
}

std::uint32_t llama_file_type(TensorType target, bool q4_k_m) {
  if (q4_k_m) return 15;
  switch (target) {
    case TensorType::F32:
      return 0;
    case TensorType::F16:
      return 1;
    case TensorType::Q4_0:
      return 2;
    case TensorType::Q4_1:
      return 3;
    case TensorType::Q8_0:
      return 7;
    case TensorType::Q5_0:
      return 8;
    case TensorType::Q5_1:
      return 9;
    case TensorType::Q4_K:
      return 14;  // llama.cpp names an all-Q4_K file Q4_K_S
    case TensorType::Q5_K:
      return 16;  // Q5_K_S
    case TensorType::Q6_K:
      return 18;
    case TensorType::BF16:
      return 32;
    default:
      return 0;
  }
}

std::vector<PlannedTensor> plan_quantization(const GgufFile& file, TensorType target, bool q4_k_m) {
  // The *_M mix counts layers as llama.cpp does: by the attn_v / ffn_down tensors present.
  int n_attn_v = 0, n_ffn_down = 0;
  bool has_output = false;
  for (const GgufTensor& t : file.tensors()) {
    if (contains(t.name, "attn_v.weight")) ++n_attn_v;
    if (contains(t.name, "ffn_down")) ++n_ffn_down;
    if (t.name == "output.weight") has_output = true;
  }
  if (q4_k_m) target = TensorType::Q4_K;
  std::vector<PlannedTensor> plan;
  int i_attn_v = 0, i_ffn_down = 0;
  for (const GgufTensor& t : file.tensors()) {
    PlannedTensor p{&t, t.type, {}};
    const bool is_float_or_quant = quant::traits(t.type) != nullptr;
    const bool is_weight = t.name.size() > 7 && t.name.ends_with(".weight");
    if (!is_float_or_quant) {
      p.note = "kept: not a float tensor";
    } else if (t.ne.size() < 2 || t.n_rows() == 1) {
      p.to = TensorType::F32;
    } else if (!is_weight) {
      p.note = "kept: not a weight";
    } else {
      TensorType want = target;
      if (q4_k_m) {
        // llama.cpp's llama_tensor_get_type for LLAMA_FTYPE_MOSTLY_Q4_K_M.
        if (t.name == "output.weight" || (!has_output && t.name == "token_embd.weight")) {
          want = TensorType::Q6_K;
        } else if (contains(t.name, "attn_v.weight")) {
          if (use_more_bits(i_attn_v, n_attn_v)) want = TensorType::Q6_K;
          ++i_attn_v;
        } else if (contains(t.name, "ffn_down")) {
          const int i_layer = layer_of(t.name).value_or(i_ffn_down);
          if (use_more_bits(i_layer, n_ffn_down)) want = TensorType::Q6_K;
          ++i_ffn_down;
        } else if (contains(t.name, "attn_qkv.weight")) {
          want = TensorType::Q5_K;
        }
      }
      p.to = fit_row(want, t.ne[0], p.note);
    }
    plan.push_back(std::move(p));
  }
  return plan;
}

QuantizeReport quantize_model(const std::string& in, const std::string& out,
                              const QuantizeOptions& options) {
  std::string mix = options.mix;
  for (char& c : mix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!mix.empty() && mix != "q4_k_m") {
    throw Error(Errc::InvalidArgument,
                "unknown --mix '" + options.mix + "'; the one mix is q4_k_m");
  }
  const bool q4_k_m = mix == "q4_k_m";
  const TensorType target = q4_k_m ? TensorType::Q4_K : parse_quant_type(options.type);
  std::error_code ec;
  if (std::filesystem::equivalent(in, out, ec)) {
    throw Error(Errc::InvalidArgument, "the output must be a different file from the input");
  }
  const GgufFile file = open_model_file(in);
  const auto plan = plan_quantization(file, target, q4_k_m);

  GgufWriter w;
  for (const auto& [key, value] : file.metadata()) w.set(key, value);
  const std::uint32_t file_type = llama_file_type(target, q4_k_m);
  w.set("general.file_type", GgufValue::u32(file_type));
  w.set("general.quantization_version", GgufValue::u32(2));

  ThreadPool pool(options.n_threads);
  QuantizeReport report;
  report.file_type = file_type;
  for (const PlannedTensor& p : plan) {
    const GgufTensor& t = *p.src;
    QuantizedTensor r;
    r.name = t.name;
    r.from = quant::type_name(t.type);
    r.to = quant::type_name(p.to);
    r.note = p.note;
    r.bytes_in = t.nbytes;
    if (p.to == t.type) {
      // Unchanged type: the bytes are copied as they are (no decode/encode drift).
      w.add_tensor(t.name, t.ne, t.type, {t.data, t.nbytes});
      r.bytes_out = t.nbytes;
    } else {
      const std::uint64_t row = t.ne[0];
      const std::uint64_t rows = t.n_rows();
      const std::size_t in_row = quant::row_size(t.type, static_cast<std::int64_t>(row));
      const std::size_t out_row = *row_bytes(p.to, row);
      std::vector<std::byte> buf(out_row * rows);  // [rows][out_row]
      pool.parallel_for(rows, 16, [&](std::size_t r0, std::size_t r1) {
        std::vector<float> tmp(row);
        for (std::size_t i = r0; i < r1; ++i) {
          quant::dequantize_row(t.type, t.data + i * in_row, tmp.data(),
                                static_cast<std::int64_t>(row));
          quant::quantize_weight_row(p.to, tmp.data(), buf.data() + i * out_row,
                                     static_cast<std::int64_t>(row));
        }
      });
      w.add_tensor(t.name, t.ne, p.to, buf);
      r.bytes_out = buf.size();
    }
    report.bytes_in += r.bytes_in;
    report.bytes_out += r.bytes_out;
    report.tensors.push_back(std::move(r));
    if (options.on_tensor) options.on_tensor(report.tensors.size(), plan.size());
  }
  const std::string tmp = out + ".part";
  w.write(tmp);
  std::filesystem::rename(tmp, out, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw Error(Errc::Io,
                "cannot move the quantized file into place at " + out + ": " + ec.message());
  }
  return report;
}

}  // namespace seam
