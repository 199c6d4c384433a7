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
#include "format/tensor_type.h"
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

// Weights llama-quantize keeps in their own type, small or precision-critical
// (the MoE router: a quantized router picks other experts). Returns why, or null.
const char* kept_weight(const std::string& name) {
  if (contains(name, "_norm.weight")) return "kept: a norm";
  if (contains(name, "ffn_gate_inp.weight")) return "kept: the expert router";
  if (contains(name, "ssm_conv1d")) return "kept: a short-convolution kernel";
  if (contains(name, "per_layer_model_proj")) return "kept: the per-layer projection";
  if (contains(name, "altup") || contains(name, "laurel")) return "kept: a small matrix";
  if (name == "position_embd.weight" || name == "token_types.weight")
    return "kept: a positional or token-type embedding";
  if (contains(name, "attn_rel_b.weight")) return "kept: a relative position bias";
  return nullptr;
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
  if (t == TensorType::Q2_K || t == TensorType::Q3_K) alt = TensorType::Q4_0;
  if (t == TensorType::IQ4_XS) alt = TensorType::IQ4_NL;
  if (!fits(alt)) alt = TensorType::F16;
  note = "row length " + std::to_string(row) + " is not a multiple of " +
         std::to_string(type_info(t).block_size) + "; stored as " + quant::type_name(alt);
  return alt;
}

}  // namespace

namespace {

// llama.cpp's type and mix names that seam does not write: refused by name,
// with the nearest choices seam does write, rather than as "unknown".
void refuse_unwritable(const std::string& u) {
  for (const char* t : {"IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ3_XXS",
                        "IQ3_XS", "IQ3_S", "IQ3_M", "TQ1_0", "TQ2_0", "MXFP4", "MXFP4_MOE"}) {
    if (u == t)
      throw Error(Errc::InvalidArgument,
                  u + " is one of llama.cpp's " +
                      (u[0] == 'I'   ? "importance-matrix"
                       : u[0] == 'T' ? "ternary"
                                     : "MXFP4") +
                      " types, which seam cannot write; the nearest it writes are the mixes "
                      "IQ4_XS, Q3_K_M and Q2_K");
  }
}

}  // namespace

TensorType parse_quant_type(const std::string& name) {
  const std::string u = upper(name);
  refuse_unwritable(u);
  for (TensorType t : {TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0,
                       TensorType::Q5_1, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K,
                       TensorType::F16, TensorType::BF16, TensorType::F32}) {
    if (quant::type_name(t) == u) return t;
  }
  throw Error(Errc::InvalidArgument, "unknown quantization type '" + name +
                                         "'; choose Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, "
                                         "Q6_K, F16, BF16 or F32; a mix (Q4_K_M, ...) goes in "
                                         "QuantizeOptions::mix (the CLI takes either)");
}

namespace {

struct MixName {
  QuantMix mix;
  const char* name;  // llama.cpp's, which is also its file type's (file_type_name)
  TensorType base;
};
constexpr MixName kMixes[] = {
    {QuantMix::Q2_K, "Q2_K", TensorType::Q2_K},
    {QuantMix::Q3_K_S, "Q3_K_S", TensorType::Q3_K},
    {QuantMix::Q3_K_M, "Q3_K_M", TensorType::Q3_K},
    {QuantMix::Q3_K_L, "Q3_K_L", TensorType::Q3_K},
    {QuantMix::Q4_K_S, "Q4_K_S", TensorType::Q4_K},
    {QuantMix::Q4_K_M, "Q4_K_M", TensorType::Q4_K},
    {QuantMix::Q5_K_S, "Q5_K_S", TensorType::Q5_K},
    {QuantMix::Q5_K_M, "Q5_K_M", TensorType::Q5_K},
    {QuantMix::IQ4_NL, "IQ4_NL", TensorType::IQ4_NL},
    {QuantMix::IQ4_XS, "IQ4_XS", TensorType::IQ4_XS},
};

const MixName& mix_name(QuantMix mix) {
  for (const MixName& m : kMixes)
    if (m.mix == mix) return m;
  throw Error(Errc::InvalidArgument, "no mix");
}

}  // namespace

QuantMix parse_quant_mix(const std::string& name) {
  const std::string u = upper(name);
  if (u.empty()) return QuantMix::None;
  refuse_unwritable(u);
  for (const MixName& m : kMixes)
    if (u == m.name) return m.mix;
  throw Error(Errc::InvalidArgument,
              "unknown mix '" + name +
                  "'; the mixes are q2_k, q3_k_s, q3_k_m, q3_k_l, q4_k_s, q4_k_m, q5_k_s, q5_k_m, "
                  "iq4_nl and iq4_xs");
}

TensorType mix_base_type(QuantMix mix) { return mix_name(mix).base; }

std::uint32_t llama_file_type(TensorType target, QuantMix mix) {
  if (mix != QuantMix::None) return file_type_id(mix_name(mix).name).value();
  // llama.cpp names an all-Q4_K (Q5_K) file Q4_K_S (Q5_K_S). A type with no
  // file type of its own (Q3_K alone) is written as 0, F32's, as before.
  const std::string_view name = target == TensorType::Q4_K   ? "Q4_K_S"
                                : target == TensorType::Q5_K ? "Q5_K_S"
                                                             : type_info(target).name;
  return file_type_id(name).value_or(0);
}

namespace {

// llama.cpp's llama_tensor_get_type for its mixed file types (LLAMA_FTYPE_MOSTLY_Q2_K,
// Q3_K_S, Q3_K_M, Q3_K_L, Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M, IQ4_NL, IQ4_XS), without an
// importance matrix, as seam quantizes. Not reproduced: its Falcon branches
// (seam runs no Falcon). Its 70B rule (attn_v Q4_K -> Q5_K) keys on llama.cpp's model-size label;
// it is applied where that label is 70B for the architectures seam runs: llama with 80 layers and
// grouped-query attention.
struct MixCounters {
  int n_attn_v = 0, i_attn_v = 0;
  int n_ffn_down = 0, i_ffn_down = 0;
  bool has_output = false;
  bool eight_experts = false;
  bool llama_70b = false;
  std::uint64_t n_gqa = 1;  // query heads per KV head
};

TensorType mix_type(QuantMix mix, const GgufTensor& t, MixCounters& c) {
  using M = QuantMix;
  using T = TensorType;
  const bool m_mix = mix == M::Q4_K_M || mix == M::Q5_K_M;
  const bool iq4 = mix == M::IQ4_NL || mix == M::IQ4_XS;
  T want = mix_base_type(mix);
  if (t.name == "output.weight" || (!c.has_output && t.name == "token_embd.weight")) {
    // fit_row turns Q6_K into Q8_0 when the row is not a multiple of 256, as llama.cpp does here.
    return T::Q6_K;
  }
  if (contains(t.name, "attn_v.weight")) {
    if (mix == M::Q2_K)
      want = c.n_gqa >= 4 ? T::Q4_K : T::Q3_K;
    else if (mix == M::Q3_K_M)
      want = c.i_attn_v < 2 ? T::Q5_K : T::Q4_K;
    else if (mix == M::Q3_K_L)
      want = T::Q5_K;
    else if (iq4 && c.n_gqa >= 4)
      want = T::Q5_K;
    else if (m_mix && use_more_bits(c.i_attn_v, c.n_attn_v))
      want = T::Q6_K;
    else if (mix == M::Q4_K_S && c.i_attn_v < 4)
      want = T::Q5_K;
    if (c.llama_70b && (want == T::Q3_K || want == T::Q4_K)) want = T::Q5_K;
    if (c.eight_experts) want = T::Q8_0;  // llama.cpp: ~128 MB for 8-expert models
    ++c.i_attn_v;
  } else if (contains(t.name, "ffn_down")) {
    const int i_layer = layer_of(t.name).value_or(c.i_ffn_down);
    const int n_layer = c.n_ffn_down;
    if (mix == M::Q2_K)
      want = T::Q3_K;
    else if (mix == M::Q3_K_M)
      want = i_layer < n_layer / 16 ? T::Q5_K : T::Q4_K;
    else if (mix == M::Q3_K_L)
      want = T::Q5_K;
    else if (mix == M::Q4_K_M && use_more_bits(i_layer, n_layer))
      want = T::Q6_K;
    else if (iq4 && i_layer < n_layer / 8)  // llama.cpp: without an importance matrix
      want = T::Q5_K;
    else if (mix == M::Q5_K_M && use_more_bits(i_layer, n_layer))
      want = T::Q6_K;
    else if (mix == M::Q4_K_S && i_layer < n_layer / 8)
      want = T::Q5_K;
    ++c.i_ffn_down;
  } else if (contains(t.name, "attn_output.weight")) {
    if (c.eight_experts) {
      if (mix == M::Q2_K || mix == M::Q3_K_S || mix == M::Q3_K_M || mix == M::Q4_K_S ||
          mix == M::Q4_K_M || iq4)
        want = T::Q5_K;
    } else if (mix == M::Q2_K) {
      want = T::Q3_K;
    } else if (mix == M::Q3_K_M) {
      want = T::Q4_K;
    } else if (mix == M::Q3_K_L) {
      want = T::Q5_K;
    }
  } else if (contains(t.name, "attn_qkv.weight")) {
    if (mix == M::Q3_K_M || mix == M::Q3_K_L) want = T::Q4_K;
    if (mix == M::Q4_K_M) want = T::Q5_K;
    if (mix == M::Q5_K_M) want = T::Q6_K;
  }
  return want;
}

}  // namespace

std::vector<PlannedTensor> plan_quantization(const GgufFile& file, TensorType target,
                                             QuantMix mix) {
  // The mixes count layers as llama.cpp does: attn_v by the tensors present,
  // ffn_down by the model's layer count (the tensors present when it is absent).
  MixCounters c;
  for (const GgufTensor& t : file.tensors()) {
    if (contains(t.name, "attn_v.weight")) ++c.n_attn_v;
    if (contains(t.name, "ffn_down")) ++c.n_ffn_down;
    if (t.name == "output.weight") c.has_output = true;
  }
  try {
    const std::string arch = file.get_string("general.architecture").value_or("");
    const std::uint64_t n_layer = file.get_uint(arch + ".block_count").value_or(0);
    if (n_layer > 0 && n_layer < 1000000) c.n_ffn_down = static_cast<int>(n_layer);
    c.eight_experts = file.get_uint(arch + ".expert_count").value_or(0) == 8;
    const std::uint64_t n_head = file.get_uint(arch + ".attention.head_count").value_or(0);
    const std::uint64_t n_head_kv =
        file.get_uint(arch + ".attention.head_count_kv").value_or(n_head);
    c.llama_70b = arch == "llama" && n_layer == 80 && n_head_kv != n_head;
    if (n_head_kv > 0) c.n_gqa = n_head / n_head_kv;
  } catch (const Error&) {
    // A key of the wrong type: the counts come from the tensors, as without it.
  }
  std::vector<PlannedTensor> plan;
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
    } else if (const char* why = kept_weight(t.name)) {
      p.note = why;
    } else {
      const TensorType want = mix == QuantMix::None ? target : mix_type(mix, t, c);
      p.to = fit_row(want, t.ne[0], p.note);
    }
    plan.push_back(std::move(p));
  }
  return plan;
}

QuantizeReport quantize_model(const std::string& in, const std::string& out,
                              const QuantizeOptions& options) {
  checked_thread_count(options.n_threads, "QuantizeOptions::n_threads");
  const QuantMix mix = parse_quant_mix(options.mix);
  const TensorType target =
      mix != QuantMix::None ? mix_base_type(mix) : parse_quant_type(options.type);
  std::error_code ec;
  if (std::filesystem::equivalent(in, out, ec)) {
    throw Error(Errc::InvalidArgument, "the output must be a different file from the input");
  }
  const GgufFile file = open_model_file(in);
  const auto plan = plan_quantization(file, target, mix);

  GgufWriter w;
  for (const auto& [key, value] : file.metadata()) w.set(key, value);
  const std::uint32_t file_type = llama_file_type(target, mix);
  w.set("general.file_type", GgufValue::u32(file_type));
  w.set("general.quantization_version", GgufValue::u32(2));

  ThreadPool pool(options.n_threads);
  QuantizeReport report;
  report.file_type = file_type;
  // Each tensor is made when the writer reaches it, so that memory holds one
  // output tensor at a time rather than the whole output file.
  const std::size_t n_tensors = plan.size();
  // Each source tensor is read once: its mapped pages go as soon as it is done,
  // or an 8B input would stay resident in full (8.8 GB for an 8.1 GiB file).
  auto done = [&options, &file, n_tensors](const GgufTensor& t, std::size_t i) {
    file.release_pages(t);
    if (options.on_tensor) options.on_tensor(i + 1, n_tensors);
  };
  for (const PlannedTensor& p : plan) {
    const GgufTensor& t = *p.src;
    const std::size_t index = report.tensors.size();
    QuantizedTensor r;
    r.name = t.name;
    r.from = quant::type_name(t.type);
    r.to = quant::type_name(p.to);
    r.note = p.note;
    r.bytes_in = t.nbytes;
    if (p.to == t.type) {
      // Unchanged type: the bytes are copied as they are (no decode/encode drift).
      w.add_deferred_tensor(t.name, t.ne, t.type, [&t, index, &done](std::span<std::byte> dst) {
        std::memcpy(dst.data(), t.data, dst.size());
        done(t, index);
      });
      r.bytes_out = t.nbytes;
    } else {
      const std::uint64_t row = t.ne[0];
      const std::uint64_t rows = t.n_rows();
      const std::size_t in_row = quant::row_size(t.type, static_cast<std::int64_t>(row));
      const std::size_t out_row = *row_bytes(p.to, row);
      const TensorType to = p.to;
      w.add_deferred_tensor(
          t.name, t.ne, to,
          [&t, &pool, &done, to, row, rows, in_row, out_row, index](std::span<std::byte> dst) {
            pool.parallel_for(rows, 16, [&](std::size_t r0, std::size_t r1) {
              std::vector<float> tmp(row);
              for (std::size_t i = r0; i < r1; ++i) {
                quant::dequantize_row(t.type, t.data + i * in_row, tmp.data(),
                                      static_cast<std::int64_t>(row));
                quant::quantize_weight_row(to, tmp.data(), dst.data() + i * out_row,
                                           static_cast<std::int64_t>(row));
              }
            });
            done(t, index);
          });
      r.bytes_out = out_row * rows;
    }
    report.bytes_in += r.bytes_in;
    report.bytes_out += r.bytes_out;
    report.tensors.push_back(std::move(r));
  }
  const std::string tmp = out + ".part";
  w.write(tmp);
  std::filesystem::rename(tmp, out, ec);
  if (ec) {
    const std::string why = ec.message();  // before remove() reuses ec
    std::filesystem::remove(tmp, ec);
    throw Error(Errc::Io, "cannot move the quantized file into place at " + out + ": " + why);
  }
  return report;
}

}  // namespace seam
