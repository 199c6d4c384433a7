// gpt-oss import (GptOssForCausalLM), as llama.cpp's GptOssModel converter
// writes it. The experts ship in MXFP4: per expert and row, `*_blocks`
// [E, rows, nb, 16] (U8, two E2M1 codes a byte, element 2k in the low nibble
// of byte k) and `*_scales` [E, rows, nb] (U8, an E8M0 exponent per 32
// elements). GGUF's MXFP4 block is the scale byte followed by 16 bytes
// holding element j in the low nibble and element j + 16 in the high one, so
// a block is re-packed byte by byte and the scale copied: no value changes.
// gate_up_proj interleaves its rows (gate unit i at row 2i, up unit i at row
// 2i + 1), as does its bias. A dequantized checkpoint stores gate_up_proj as
// [E, dim, 2 n_ff] and down_proj as [E, n_ff, dim] (input dimension first),
// transposed here as the converter transposes them.
#include <cmath>
#include <cstring>

#include "format/hf_import.h"
#include "seam/error.h"

namespace seam::hf_import {

namespace {

constexpr std::size_t kMxfp4Elems = 32, kMxfp4Codes = 16, kMxfp4Block = 17;

bool is_float(TensorType t) {
  return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16;
}

std::string shape_text(const std::vector<std::uint64_t>& s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

void expect_shape(const SafetensorsTensor& st, const std::vector<std::uint64_t>& shape,
                  bool want_float) {
  if (st.shape != shape) {
    bad(st.name,
        "has shape " + shape_text(st.shape) + "; the config asks for " + shape_text(shape));
  }
  if (want_float != is_float(st.type)) {
    bad(st.name, want_float ? "must hold F32, F16 or BF16 values" : "must hold U8 bytes");
  }
}

// Rows `first, first + step, ...` of each of `n` matrices of `rows` rows of
// `row_bytes` bytes, concatenated: the gate (first 0) or up (first 1) half of
// the interleaved gate_up_proj, or every row (step 1).
std::shared_ptr<std::vector<std::byte>> pick_rows(std::span<const std::byte> data, std::uint64_t n,
                                                  std::uint64_t rows, std::size_t row_bytes,
                                                  std::uint64_t first, std::uint64_t step) {
  const std::uint64_t out_rows = rows / step;
  auto out = std::make_shared<std::vector<std::byte>>(n * out_rows * row_bytes);
  for (std::uint64_t e = 0; e < n; ++e) {
    for (std::uint64_t r = 0; r < out_rows; ++r) {
      std::memcpy(out->data() + (e * out_rows + r) * row_bytes,
                  data.data() + (e * rows + first + r * step) * row_bytes, row_bytes);
    }
  }
  return out;
}

// [n, a, b] elements of `elem` bytes -> [n, b, a].
std::shared_ptr<std::vector<std::byte>> transpose_last_two(std::span<const std::byte> data,
                                                           std::uint64_t n, std::uint64_t a,
                                                           std::uint64_t b, std::size_t elem) {
  auto out = std::make_shared<std::vector<std::byte>>(data.size());
  for (std::uint64_t e = 0; e < n; ++e) {
    const std::byte* src = data.data() + e * a * b * elem;
    std::byte* dst = out->data() + e * a * b * elem;
    for (std::uint64_t i = 0; i < a; ++i) {
      for (std::uint64_t j = 0; j < b; ++j) {
        std::memcpy(dst + (j * a + i) * elem, src + (i * b + j) * elem, elem);
      }
    }
  }
  return out;
}

// GGUF MXFP4 rows `first, first + step, ...` of every expert from blocks
// [E, rows, nb, 16] and scales [E, rows, nb].
std::shared_ptr<std::vector<std::byte>> repack_mxfp4(const SafetensorsTensor& blocks,
                                                     const SafetensorsTensor& scales,
                                                     std::uint64_t first, std::uint64_t step) {
  const std::uint64_t n = blocks.shape[0], rows = blocks.shape[1], nb = blocks.shape[2];
  const std::uint64_t out_rows = rows / step;
  auto out = std::make_shared<std::vector<std::byte>>(n * out_rows * nb * kMxfp4Block);
  const auto* code = reinterpret_cast<const std::uint8_t*>(blocks.data.data());
  const auto* scale = reinterpret_cast<const std::uint8_t*>(scales.data.data());
  auto* dst = reinterpret_cast<std::uint8_t*>(out->data());
  for (std::uint64_t e = 0; e < n; ++e) {
    for (std::uint64_t r = 0; r < out_rows; ++r) {
      const std::uint64_t row = e * rows + first + r * step;
      for (std::uint64_t b = 0; b < nb; ++b) {
        const std::uint8_t s = scale[row * nb + b];
        if (s == 0xFF) {
          bad(scales.name, "holds the scale byte 0xFF (NaN in E8M0) at expert " +
                               std::to_string(e) + ", row " + std::to_string(first + r * step));
        }
        const std::uint8_t* in = code + (row * nb + b) * kMxfp4Codes;
        *dst++ = s;
        for (std::size_t k = 0; k < kMxfp4Codes / 2; ++k) {
          // Elements 2k, 2k + 1 (byte k) and 2k + 16, 2k + 17 (byte k + 8).
          dst[2 * k] = static_cast<std::uint8_t>((in[k] & 0x0F) | (in[k + 8] << 4));
          dst[2 * k + 1] = static_cast<std::uint8_t>((in[k] >> 4) | (in[k + 8] & 0xF0));
        }
        dst += kMxfp4Codes;
      }
    }
  }
  return out;
}

}  // namespace

void read_gpt_oss_config(const json& cfg, const std::string& file, const Config& c, KeyValues& kv) {
  const std::string a(c.arch->arch);
  const std::uint64_t window = require_positive(cfg, "sliding_window", file);
  if (window > UINT32_MAX / 4) bad(file, "'sliding_window' is out of range");
  kv.emplace_back(a + ".attention.sliding_window", u32_value(window));
  // The recipe's layout, fixed in llama.cpp's graph as in OpenAI's reference.
  if (const auto it = cfg.find("layer_types"); it != cfg.end() && !it->is_null()) {
    if (!it->is_array() || it->size() != c.n_layer) {
      bad(file, "'layer_types' must list one type per layer");
    }
    for (std::size_t l = 0; l < it->size(); ++l) {
      const char* want = l % 2 == 0 ? "sliding_attention" : "full_attention";
      if (!(*it)[l].is_string() || (*it)[l].get<std::string>() != want) {
        throw Error(Errc::Unsupported, "[hf] " + file + ": 'layer_types'[" + std::to_string(l) +
                                           "] is not '" + want +
                                           "'; seam's gpt-oss recipe, like llama.cpp's, slides "
                                           "the window on even layers only");
      }
    }
  }
  const auto constant = [&](std::string_view key, double want) {
    if (const auto v = hf::get_number(cfg, key, file); v && std::abs(*v - want) > 1e-6 * want) {
      throw Error(Errc::Unsupported, "[hf] " + file + ": '" + std::string(key) +
                                         "' = " + std::to_string(*v) +
                                         "; the gpt-oss recipe uses " + std::to_string(want));
    }
  };
  constant("swiglu_limit", 7.0);
  constant("swiglu_alpha", 1.702);
  if (const auto q = cfg.find("quantization_config"); q != cfg.end() && !q->is_null()) {
    if (!q->is_object()) bad(file, "'quantization_config' must be an object");
    const auto method = hf::get_string(*q, "quant_method", file);
    if (method && *method != "mxfp4") {
      throw Error(Errc::Unsupported, "[hf] " + file + ": quantization_config quant_method '" +
                                         *method + "' (gpt-oss loads 'mxfp4' or unquantized)");
    }
  }
}

std::optional<std::string> gpt_oss_gguf_name(std::string_view name, const Config& c) {
  if (const auto lt = layer_tensor(name, c)) {
    static constexpr std::pair<std::string_view, std::string_view> kNames[] = {
        {"post_attention_layernorm.weight", "post_attention_norm.weight"},
        {"self_attn.sinks", "attn_sinks.weight"},
        {"self_attn.o_proj.bias", "attn_output.bias"},
        {"mlp.router.weight", "ffn_gate_inp.weight"},
        {"mlp.router.bias", "ffn_gate_inp.bias"},
    };
    for (const auto& [hf, gg] : kNames) {
      if (lt->second == hf) return "blk." + std::to_string(lt->first) + "." + std::string(gg);
    }
  }
  return gguf_name(name, c);
}

bool collect_gpt_oss_expert(const SafetensorsTensor& st, const Config& c, GptOssExpertSets& sets) {
  const auto lt = layer_tensor(st.name, c);
  constexpr std::string_view prefix = "mlp.experts.";
  if (!lt || !lt->second.starts_with(prefix)) return false;
  const std::string_view rest = lt->second.substr(prefix.size());
  GptOssLayerExperts& L = sets[lt->first];
  const std::pair<std::string_view, const SafetensorsTensor**> kParts[] = {
      {"gate_up_proj_blocks", &L.gate_up_blocks},
      {"gate_up_proj_scales", &L.gate_up_scales},
      {"down_proj_blocks", &L.down_blocks},
      {"down_proj_scales", &L.down_scales},
      {"gate_up_proj", &L.gate_up},
      {"down_proj", &L.down},
      {"gate_up_proj_bias", &L.gate_up_bias},
      {"down_proj_bias", &L.down_bias},
  };
  for (const auto& [suffix, slot] : kParts) {
    if (rest == suffix) {
      *slot = &st;
      return true;
    }
  }
  return false;
}

void gpt_oss_expert_tensors(std::uint64_t layer, const GptOssLayerExperts& L, const Config& c,
                            std::vector<GgufTensor>& out, Keepalive& keepalive) {
  const std::string blk = "blk." + std::to_string(layer) + ".";
  const std::uint64_t n = c.n_expert, dim = c.n_embd, ff = c.n_ff_expert;
  const std::string where = "model.layers." + std::to_string(layer) + ".mlp.experts";
  const auto need = [&](const SafetensorsTensor* t, std::string_view what) {
    if (!t) bad(where, "lacks " + std::string(what));
    return t;
  };
  // Biases: gate_up's interleaved [E, 2 n_ff] into the gate and up halves.
  const SafetensorsTensor* gub = need(L.gate_up_bias, "gate_up_proj_bias");
  const SafetensorsTensor* db = need(L.down_bias, "down_proj_bias");
  expect_shape(*gub, {n, 2 * ff}, true);
  expect_shape(*db, {n, dim}, true);
  const std::size_t bias_elem = gub->data.size() / (n * 2 * ff);
  for (std::uint64_t half = 0; half < 2; ++half) {
    out.push_back(owned_tensor(blk + (half ? "ffn_up_exps.bias" : "ffn_gate_exps.bias"), gub->type,
                               {ff, n}, pick_rows(gub->data, n, 2 * ff, bias_elem, half, 2),
                               keepalive));
  }
  out.push_back(owned_tensor(blk + "ffn_down_exps.bias", db->type, {dim, n},
                             pick_rows(db->data, n, 1, db->data.size() / n, 0, 1), keepalive));

  if (L.gate_up_blocks || L.gate_up_scales || L.down_blocks || L.down_scales) {
    if (L.gate_up || L.down) bad(where, "holds both MXFP4 blocks and dequantized matrices");
    if (dim % kMxfp4Elems != 0 || ff % kMxfp4Elems != 0) {
      bad(where, "MXFP4 needs hidden_size and intermediate_size divisible by 32");
    }
    const SafetensorsTensor* gb = need(L.gate_up_blocks, "gate_up_proj_blocks");
    const SafetensorsTensor* gs = need(L.gate_up_scales, "gate_up_proj_scales");
    const SafetensorsTensor* dnb = need(L.down_blocks, "down_proj_blocks");
    const SafetensorsTensor* dns = need(L.down_scales, "down_proj_scales");
    expect_shape(*gb, {n, 2 * ff, dim / kMxfp4Elems, kMxfp4Codes}, false);
    expect_shape(*gs, {n, 2 * ff, dim / kMxfp4Elems}, false);
    expect_shape(*dnb, {n, dim, ff / kMxfp4Elems, kMxfp4Codes}, false);
    expect_shape(*dns, {n, dim, ff / kMxfp4Elems}, false);
    out.push_back(owned_tensor(blk + "ffn_gate_exps.weight", TensorType::MXFP4, {dim, ff, n},
                               repack_mxfp4(*gb, *gs, 0, 2), keepalive));
    out.push_back(owned_tensor(blk + "ffn_up_exps.weight", TensorType::MXFP4, {dim, ff, n},
                               repack_mxfp4(*gb, *gs, 1, 2), keepalive));
    out.push_back(owned_tensor(blk + "ffn_down_exps.weight", TensorType::MXFP4, {ff, dim, n},
                               repack_mxfp4(*dnb, *dns, 0, 1), keepalive));
    return;
  }
  const SafetensorsTensor* gu = need(L.gate_up, "gate_up_proj (or its MXFP4 _blocks/_scales)");
  const SafetensorsTensor* dn = need(L.down, "down_proj (or its MXFP4 _blocks/_scales)");
  expect_shape(*gu, {n, dim, 2 * ff}, true);
  expect_shape(*dn, {n, ff, dim}, true);
  const std::size_t elem = gu->data.size() / (n * dim * 2 * ff);
  const auto rows = transpose_last_two(gu->data, n, dim, 2 * ff, elem);  // [E, 2 n_ff, dim]
  for (std::uint64_t half = 0; half < 2; ++half) {
    out.push_back(owned_tensor(blk + (half ? "ffn_up_exps.weight" : "ffn_gate_exps.weight"),
                               gu->type, {dim, ff, n},
                               pick_rows(*rows, n, 2 * ff, dim * elem, half, 2), keepalive));
  }
  out.push_back(owned_tensor(
      blk + "ffn_down_exps.weight", dn->type, {ff, dim, n},
      transpose_last_two(dn->data, n, ff, dim, dn->data.size() / (n * ff * dim)), keepalive));
}

}  // namespace seam::hf_import
