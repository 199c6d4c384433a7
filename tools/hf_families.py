"""hf_families.py - Hugging Face directories of the per-layer families (hf.py's second half).

gpt-oss (GptOssForCausalLM) and the Gated DeltaNet hybrids (Qwen3NextForCausalLM,
Qwen3_5ForCausalLM / Qwen3_5ForConditionalGeneration, Qwen3_5MoeForCausalLM /
Qwen3_5MoeForConditionalGeneration): `files` writes the checkpoint transformers saves for
tools/families.py's fixed-shape GGUF model (the inverse of llama.cpp's converter), and
`convert` is that converter (its GptOssModel, Qwen3NextModel and Qwen3_5TextModel rules):

gpt-oss: experts in MXFP4 as `*_blocks` [E, rows, nb, 16] (U8, element 2k in the low nibble
of byte k) and `*_scales` [E, rows, nb] (E8M0), gate_up_proj rows interleaved (gate unit i at
row 2i, up unit i at 2i + 1, the bias too); the converter re-packs each block to ggml's
layout (element j low, j + 16 high nibble of byte j) and splits gate and up. --dense-experts
writes the dequantized form transformers keeps in memory (gate_up_proj [E, dim, 2 n_ff],
down_proj [E, n_ff, dim]), which the converter transposes. The pre-FFN norm is
post_attention_norm, the sinks attn_sinks.weight, the router ffn_gate_inp.

hybrids: norms stored as w - 1 (the converter adds 1; linear_attn.norm excepted), ssm_a as
A_log (-exp at conversion), conv1d as [C, 1, K]. Qwen3-Next keeps q, k, v and z in
in_proj_qkvz grouped by key head ([q_g; k_g; v of the group; z of the group]) and b, a in
in_proj_ba ([b x r; a x r] per group); the converter splits qkvz into attn_qkv and attn_gate
and keeps ssm_ba. Qwen3.5 keeps value heads in grouped order (head g r + j reads key head g)
where its GGUF has them tiled (head j H_k + g): the converter moves them in the v rows of
in_proj_qkv and v channels of conv1d, in_proj_z, in_proj_b, in_proj_a, A_log, dt_bias and the
columns of out_proj. Qwen3-Next's experts are one matrix per expert, Qwen3.5-MoE's fused
(gate_up_proj [E, 2 n_ff, dim], down_proj [E, dim, n_ff]); both have a shared expert and its
sigmoid gate. --hf-arch ...ForConditionalGeneration nests the text config in text_config,
prefixes the language model with model.language_model., and adds a vision tensor and an MTP
block, which the converter drops.
"""

import os

import numpy as np

import gguf
import reference
from safetensors_io import encode as _encode, read_checkpoint, to_f32 as _to_f32

GPT_OSS = "GptOssForCausalLM"
HYBRID_ARCHS = {"Qwen3NextForCausalLM": "qwen3next", "Qwen3_5ForCausalLM": "qwen35",
                "Qwen3_5ForConditionalGeneration": "qwen35",
                "Qwen3_5MoeForCausalLM": "qwen35moe",
                "Qwen3_5MoeForConditionalGeneration": "qwen35moe"}
DEFAULT_CLASS = {"gpt-oss": GPT_OSS, "qwen3next": "Qwen3NextForCausalLM",
                 "qwen35": "Qwen3_5ForCausalLM", "qwen35moe": "Qwen3_5MoeForCausalLM"}
GGUF_ARCH = dict(HYBRID_ARCHS, **{GPT_OSS: "gpt-oss"})
TORCH_DTYPE = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}
LM_PREFIX = "model.language_model."

# GGUF kind -> checkpoint module, per layer (the pre-FFN norm is post_attention_norm in both).
ATTENTION_LAYER = {"attn_norm": "input_layernorm",
                   "post_attention_norm": "post_attention_layernorm",
                   "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
                   "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj"}
GPT_OSS_LAYER = {**ATTENTION_LAYER, "ffn_gate_inp": "mlp.router"}
HYBRID_LAYER = {**ATTENTION_LAYER,
                "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm",
                "attn_qkv": "linear_attn.in_proj_qkv", "attn_gate": "linear_attn.in_proj_z",
                "ssm_beta": "linear_attn.in_proj_b", "ssm_alpha": "linear_attn.in_proj_a",
                "ssm_ba": "linear_attn.in_proj_ba", "ssm_conv1d": "linear_attn.conv1d",
                "ssm_dt": "linear_attn.dt_bias", "ssm_a": "linear_attn.A_log",
                "ssm_norm": "linear_attn.norm", "ssm_out": "linear_attn.out_proj",
                "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
                "ffn_gate_inp": "mlp.gate",
                "ffn_gate_shexp": "mlp.shared_expert.gate_proj",
                "ffn_up_shexp": "mlp.shared_expert.up_proj",
                "ffn_down_shexp": "mlp.shared_expert.down_proj",
                "ffn_gate_inp_shexp": "mlp.shared_expert_gate"}
PLUS_ONE = ("attn_norm", "post_attention_norm", "attn_q_norm", "attn_k_norm")


def is_family(hf_arch):
    return hf_arch in GGUF_ARCH


# ----------------------------------------------------------------------------
# MXFP4 layouts


def mxfp4_to_hf(raw, n_exp, rows, cols):
    """GGUF MXFP4 bytes of [n_exp, rows, cols] -> (blocks [E, rows, nb, 16],
    scales [E, rows, nb])."""
    b = np.frombuffer(raw, np.uint8).reshape(n_exp, rows, cols // 32, 17)
    qs = b[..., 1:]
    elems = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)        # element order 0..31
    return (elems[..., 0::2] | (elems[..., 1::2] << 4)).astype(np.uint8), b[..., 0].copy()


def mxfp4_from_hf(blocks, scales):
    """The converter's re-pack: GGUF MXFP4 bytes [E, rows, nb, 17] of HF blocks and scales."""
    elems = np.empty(blocks.shape[:-1] + (32,), np.uint8)
    elems[..., 0::2], elems[..., 1::2] = blocks & 0x0F, blocks >> 4
    qs = elems[..., :16] | (elems[..., 16:] << 4)
    return np.concatenate([scales[..., None], qs], axis=-1).astype(np.uint8)


def interleave(gate, up, axis):
    """gate/up halves -> gpt-oss's interleaved rows (gate i at 2i, up i at 2i + 1)."""
    shape = list(gate.shape)
    shape[axis] *= 2
    out = np.empty(shape, gate.dtype)
    idx = [slice(None)] * len(shape)
    idx[axis] = slice(0, None, 2)
    out[tuple(idx)] = gate
    idx[axis] = slice(1, None, 2)
    out[tuple(idx)] = up
    return out


# ----------------------------------------------------------------------------
# value-head order (Qwen3.5)


def tiled_to_grouped(n_head_k, n_head_v):
    """perm with grouped[perm[t]] = tiled[t]: tiled head t reads key head t mod H_k and is
    grouped head (t mod H_k) r + t // H_k."""
    r = n_head_v // n_head_k
    return np.array([(t % n_head_k) * r + t // n_head_k for t in range(n_head_v)])


def move_heads(a, axis, first, per_head, hk, hv, to):
    """a with the value-head blocks along `axis` (from `first`, `per_head` long) moved from
    tiled to grouped order (to="grouped", what a checkpoint holds) or back (to="tiled")."""
    out = np.array(a, copy=True)
    for t, g in enumerate(tiled_to_grouped(hk, hv)):
        tiled = [slice(None)] * a.ndim
        grouped = [slice(None)] * a.ndim
        tiled[axis] = slice(first + t * per_head, first + (t + 1) * per_head)
        grouped[axis] = slice(first + g * per_head, first + (g + 1) * per_head)
        src, dst = (tiled, grouped) if to == "grouped" else (grouped, tiled)
        out[tuple(dst)] = a[tuple(src)]
    return out


def reorder_value_heads(kind, w, hk, hv, S, to):
    """move_heads over the value heads a tensor kind holds (heads of S rows or columns)."""
    where = {"attn_qkv": (0, 2 * hk * S, S), "ssm_conv1d": (0, 2 * hk * S, S),
             "attn_gate": (0, 0, S), "ssm_beta": (0, 0, 1), "ssm_alpha": (0, 0, 1),
             "ssm_dt": (0, 0, 1), "ssm_a": (0, 0, 1), "ssm_out": (1, 0, S)}.get(kind)
    return w if where is None else move_heads(w, *where, hk, hv, to)


def a_log_of(ssm_a):
    """A_log whose conversion, float32(-exp(float64(A_log))), is exactly ssm_a."""
    out = np.empty(ssm_a.shape, np.float32)
    for i, a in enumerate(np.asarray(ssm_a, np.float32).reshape(-1)):
        x = np.float32(np.log(-np.float64(a)))
        for _ in range(64):
            got = np.float32(-np.exp(np.float64(x)))
            if got == a:
                break
            x = np.nextafter(x, np.float32(np.inf) if got > a else np.float32(-np.inf),
                             dtype=np.float32)
        else:
            raise reference.RefError(f"no float32 A_log converts to ssm_a {a!r}")
        out.reshape(-1)[i] = x
    return out


# ----------------------------------------------------------------------------
# gen: GGUF model -> (config.json, [(HF name, shape, dtype, bytes)])


def files(r, hf_arch, st_dtype, dense_experts=False):
    a = r.metadata["general.architecture"]
    if GGUF_ARCH.get(hf_arch) != a:
        raise reference.RefError(f"--hf-arch {hf_arch} does not hold a {a} model")
    if a == "gpt-oss":
        return _gpt_oss_files(r, st_dtype, dense_experts)
    if dense_experts:
        raise reference.RefError("--dense-experts: gpt-oss only")
    return _hybrid_files(r, hf_arch, st_dtype)


def _common_config(m, a, hf_arch, st_dtype, r):
    return {"architectures": [hf_arch],
            "hidden_size": int(m[f"{a}.embedding_length"]),
            "num_hidden_layers": int(m[f"{a}.block_count"]),
            "num_attention_heads": int(m[f"{a}.attention.head_count"]),
            "num_key_value_heads": int(m[f"{a}.attention.head_count_kv"]),
            "head_dim": int(m[f"{a}.attention.key_length"]),
            "rms_norm_eps": float(np.float32(m[f"{a}.attention.layer_norm_rms_epsilon"])),
            "max_position_embeddings": int(m[f"{a}.context_length"]),
            "vocab_size": int(m[f"{a}.vocab_size"]),
            "tie_word_embeddings": "output.weight" not in r.tensors,
            "bos_token_id": int(m["tokenizer.ggml.bos_token_id"]),
            "eos_token_id": int(m["tokenizer.ggml.eos_token_id"]),
            "hidden_act": "silu", "torch_dtype": TORCH_DTYPE[st_dtype]}


def _gpt_oss_files(r, st_dtype, dense):
    m, a = r.metadata, "gpt-oss"
    p = a + "."
    layers = int(m[p + "block_count"])
    n_exp, n_used = int(m[p + "expert_count"]), int(m[p + "expert_used_count"])
    ff = int(m[p + "expert_feed_forward_length"])
    config = _common_config(m, a, GPT_OSS, st_dtype, r)
    config.update(
        model_type="gpt_oss", intermediate_size=ff, num_local_experts=n_exp,
        num_experts_per_tok=n_used, experts_per_token=n_used,
        sliding_window=int(m[p + "attention.sliding_window"]),
        layer_types=["sliding_attention" if L % 2 == 0 else "full_attention"
                     for L in range(layers)],
        rope_theta=float(m[p + "rope.freq_base"]),
        rope_scaling={"rope_type": "yarn", "factor": float(m[p + "rope.scaling.factor"]),
                      "original_max_position_embeddings":
                          int(m[p + "rope.scaling.original_context_length"]),
                      "beta_fast": float(m.get(p + "rope.scaling.yarn_beta_fast", 32.0)),
                      "beta_slow": float(m.get(p + "rope.scaling.yarn_beta_slow", 1.0)),
                      "truncate": False},
        swiglu_limit=7.0, attention_bias=True)
    if not dense:
        config["quantization_config"] = {
            "quant_method": "mxfp4",
            "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                       "model.embed_tokens", "lm_head"]}
    dim = config["hidden_size"]
    out = []

    def put(name, w, dtype=st_dtype):
        out.append((name, w.shape, dtype, w.tobytes() if dtype == "U8" else _encode(w, dtype)))

    names = {"token_embd.weight": "model.embed_tokens.weight",
             "output_norm.weight": "model.norm.weight", "output.weight": "lm_head.weight"}
    for name in r.tensors:
        if not name.startswith("blk."):
            put(names[name], r.tensor(name))
            continue
        _, layer, kind, suffix = name.split(".")
        base = f"model.layers.{layer}."
        if kind == "attn_sinks":
            put(base + "self_attn.sinks", r.tensor(name))
        elif kind in GPT_OSS_LAYER:
            put(f"{base}{GPT_OSS_LAYER[kind]}.{suffix}", r.tensor(name))
        elif kind in ("ffn_up_exps", "ffn_gate_exps") and suffix == "bias":
            if kind == "ffn_gate_exps":
                put(base + "mlp.experts.gate_up_proj_bias",
                    interleave(r.tensor(name), r.tensor(name.replace("gate", "up")), 1))
        elif kind == "ffn_down_exps" and suffix == "bias":
            put(base + "mlp.experts.down_proj_bias", r.tensor(name))
        elif kind == "ffn_gate_exps":
            up = name.replace("gate", "up")
            e = base + "mlp.experts."
            if dense:
                gu = interleave(r.tensor(name), r.tensor(up), 1)          # [E, 2 ff, dim]
                put(e + "gate_up_proj", np.ascontiguousarray(gu.transpose(0, 2, 1)))
            else:
                gb, gs = mxfp4_to_hf(r.raw(name), n_exp, ff, dim)
                ub, us = mxfp4_to_hf(r.raw(up), n_exp, ff, dim)
                put(e + "gate_up_proj_blocks", interleave(gb, ub, 1), "U8")
                put(e + "gate_up_proj_scales", interleave(gs, us, 1), "U8")
        elif kind == "ffn_down_exps":
            e = base + "mlp.experts."
            if dense:
                put(e + "down_proj", np.ascontiguousarray(r.tensor(name).transpose(0, 2, 1)))
            else:
                db, ds = mxfp4_to_hf(r.raw(name), n_exp, dim, ff)
                put(e + "down_proj_blocks", db, "U8")
                put(e + "down_proj_scales", ds, "U8")
        elif kind != "ffn_up_exps":
            raise reference.RefError(f"gpt-oss: no checkpoint name for {name}")
    return config, out


def _hybrid_files(r, hf_arch, st_dtype):
    m = r.metadata
    a = m["general.architecture"]
    p = a + "."
    layers = int(m[p + "block_count"])
    hk, hv = int(m[p + "ssm.group_count"]), int(m[p + "ssm.time_step_rank"])
    S = int(m[p + "ssm.state_size"])
    iv = int(m.get(p + "full_attention_interval", 4))
    text = _common_config(m, a, hf_arch, st_dtype, r)
    del text["architectures"], text["bos_token_id"], text["eos_token_id"], text["torch_dtype"]
    text.update(linear_conv_kernel_dim=int(m[p + "ssm.conv_kernel"]), linear_key_head_dim=S,
                linear_value_head_dim=S, linear_num_key_heads=hk, linear_num_value_heads=hv,
                full_attention_interval=iv,
                layer_types=["full_attention" if (L + 1) % iv == 0 else "linear_attention"
                             for L in range(layers)])
    if p + "feed_forward_length" in m:
        text["intermediate_size"] = int(m[p + "feed_forward_length"])
    rot = int(m[p + "rope.dimension_count"]) / text["head_dim"]
    if a == "qwen3next":
        text.update(rope_theta=float(m[p + "rope.freq_base"]), partial_rotary_factor=rot,
                    rope_scaling=None)
    else:
        sections = [int(s) for s in m[p + "rope.dimension_sections"]]
        text["rope_parameters"] = {"rope_type": "default",
                                   "rope_theta": float(m[p + "rope.freq_base"]),
                                   "partial_rotary_factor": rot,
                                   "mrope_section": sections[:3], "mrope_interleaved": True}
    moe = p + "expert_count" in m
    if moe:
        text.update(num_experts=int(m[p + "expert_count"]),
                    num_experts_per_tok=int(m[p + "expert_used_count"]),
                    moe_intermediate_size=int(m[p + "expert_feed_forward_length"]),
                    shared_expert_intermediate_size=int(
                        m[p + "expert_shared_feed_forward_length"]))
        if a == "qwen3next":
            text.update(norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[])
    top = {"architectures": [hf_arch], "bos_token_id": int(m["tokenizer.ggml.bos_token_id"]),
           "eos_token_id": int(m["tokenizer.ggml.eos_token_id"]),
           "torch_dtype": TORCH_DTYPE[st_dtype]}
    cg = hf_arch.endswith("ForConditionalGeneration")
    model_type = {"qwen3next": "qwen3_next", "qwen35": "qwen3_5", "qwen35moe": "qwen3_5_moe"}[a]
    if cg:
        config = dict(top, model_type=model_type, tie_word_embeddings=text["tie_word_embeddings"],
                      text_config=dict(text, model_type=model_type + "_text"),
                      vision_config={"model_type": model_type, "hidden_size": 8})
    else:
        config = dict(top, **text, model_type=model_type if a == "qwen3next"
                      else model_type + "_text")
    prefix = LM_PREFIX if cg else "model."
    C = 2 * hk * S + hv * S
    tiled = a != "qwen3next" and hv != hk
    out = []

    def put(name, w):
        out.append((name, w.shape, st_dtype, _encode(w, st_dtype)))

    names = {"token_embd.weight": "embed_tokens.weight", "output_norm.weight": "norm.weight"}
    for name in r.tensors:
        w = r.tensor(name)
        if name == "output.weight":
            put("lm_head.weight", w)
            continue
        if not name.startswith("blk."):
            put(prefix + names[name], w - 1 if name == "output_norm.weight" else w)
            continue
        parts = name.split(".")
        layer, kind = parts[1], parts[2]
        base = f"{prefix}layers.{layer}."
        if kind.endswith("_exps"):
            e = base + "mlp.experts."
            if a == "qwen3next":   # one matrix per expert
                hf = {"ffn_gate_exps": "gate_proj", "ffn_up_exps": "up_proj",
                      "ffn_down_exps": "down_proj"}[kind]
                for x in range(w.shape[0]):
                    put(f"{e}{x}.{hf}.weight", w[x])
            elif kind == "ffn_gate_exps":
                up = r.tensor(name.replace("ffn_gate_exps", "ffn_up_exps"))
                put(e + "gate_up_proj", np.concatenate([w, up], axis=1))
            elif kind == "ffn_down_exps":
                put(e + "down_proj", w)
            continue
        hf = base + HYBRID_LAYER[kind]
        if kind in PLUS_ONE:
            w = w - 1
        elif kind == "ssm_a":
            w = a_log_of(w)
        elif kind == "ssm_conv1d":
            w = w.reshape(C, 1, -1)
        elif kind == "ffn_gate_inp_shexp":
            w = w.reshape(1, -1)
        if tiled:
            w = reorder_value_heads(kind, w, hk, hv, S, "grouped")
        if kind == "attn_qkv" and a == "qwen3next":
            z = r.tensor(name.replace("attn_qkv", "attn_gate"))
            groups = []
            for g in range(hk):
                rdv = hv // hk * S
                groups += [w[g * S:(g + 1) * S], w[hk * S + g * S:hk * S + (g + 1) * S],
                           w[2 * hk * S + g * rdv:2 * hk * S + (g + 1) * rdv],
                           z[g * rdv:(g + 1) * rdv]]
            put(base + "linear_attn.in_proj_qkvz.weight", np.concatenate(groups))
            continue
        if kind == "attn_gate" and a == "qwen3next":
            continue   # in in_proj_qkvz
        suffix = "" if kind in ("ssm_a", "ssm_dt") else "." + parts[-1]
        put(hf + suffix, w)
    if cg:   # what the converter drops: a vision tensor and an MTP block
        rng = np.random.default_rng(7)
        for name, shape in (("model.visual.patch_embed.proj.weight", (8, 12)),
                            ("mtp.fc.weight", (text["hidden_size"], 2 * text["hidden_size"])),
                            ("mtp.layers.0.input_layernorm.weight", (text["hidden_size"],))):
            put(name, rng.standard_normal(shape))
    return config, out


# ----------------------------------------------------------------------------
# convert: directory -> GGUF, as llama.cpp's converter


def convert(d, out, vocab, raw):
    c = {**raw, **(raw.get("text_config") or {})}
    hf_arch = raw["architectures"][0]
    a = GGUF_ARCH[hf_arch]
    w = gguf.GGUFWriter(out)
    w.add("general.architecture", a)
    w.add("general.name", os.path.basename(os.path.normpath(d)))
    w.add(f"{a}.block_count", c["num_hidden_layers"], "uint32")
    w.add(f"{a}.context_length", c["max_position_embeddings"], "uint32")
    w.add(f"{a}.embedding_length", c["hidden_size"], "uint32")
    if "intermediate_size" in c:
        w.add(f"{a}.feed_forward_length", c["intermediate_size"], "uint32")
    w.add(f"{a}.attention.head_count", c["num_attention_heads"], "uint32")
    w.add(f"{a}.attention.head_count_kv", c["num_key_value_heads"], "uint32")
    rp = c.get("rope_parameters") or {}
    w.add(f"{a}.rope.freq_base", float(c.get("rope_theta", rp.get("rope_theta", 10000.0))),
          "float32")
    w.add(f"{a}.attention.layer_norm_rms_epsilon", float(c["rms_norm_eps"]), "float32")
    w.add(f"{a}.attention.key_length", c["head_dim"], "uint32")
    w.add(f"{a}.attention.value_length", c["head_dim"], "uint32")
    n_exp = c.get("num_experts", c.get("num_local_experts"))
    if n_exp:
        w.add(f"{a}.expert_count", n_exp, "uint32")
        w.add(f"{a}.expert_used_count", c["num_experts_per_tok"], "uint32")
    w.add(f"{a}.vocab_size", c["vocab_size"], "uint32")
    for k, (v, t) in vocab.items():
        w.add(k, v, type=t)
    ckpt = read_checkpoint(d)
    if a == "gpt-oss":
        _convert_gpt_oss(w, c, ckpt)
    else:
        _convert_hybrid(w, c, a, ckpt)
    w.write()


def _add(w, name, dtype, shape, data):
    if len(shape) == 1 or not name.endswith(".weight"):
        w.add_tensor(name, _to_f32(dtype, shape, data), "F32")
    else:
        w.add_tensor_raw(name, list(reversed(shape)), dtype, data)


def _convert_gpt_oss(w, c, ckpt):
    a = "gpt-oss"
    w.add(f"{a}.expert_feed_forward_length", c["intermediate_size"], "uint32")
    w.add(f"{a}.attention.sliding_window", c["sliding_window"], "uint32")
    rs = c["rope_scaling"]
    w.add(f"{a}.rope.scaling.type", "yarn")
    w.add(f"{a}.rope.scaling.factor", float(rs["factor"]), "float32")
    w.add(f"{a}.rope.scaling.original_context_length", rs["original_max_position_embeddings"],
          "uint32")
    w.add(f"{a}.rope.scaling.yarn_beta_fast", float(rs.get("beta_fast", 32.0)), "float32")
    w.add(f"{a}.rope.scaling.yarn_beta_slow", float(rs.get("beta_slow", 1.0)), "float32")
    rename = {v: k for k, v in GPT_OSS_LAYER.items()}
    glob = {"model.embed_tokens.weight": "token_embd.weight",
            "model.norm.weight": "output_norm.weight", "lm_head.weight": "output.weight"}
    for name, (dtype, shape, data) in sorted(ckpt.items()):
        if name in glob:
            _add(w, glob[name], dtype, shape, data)
            continue
        parts = name.split(".")
        blk, rest = f"blk.{parts[2]}.", ".".join(parts[3:])
        if rest == "self_attn.sinks":
            _add(w, blk + "attn_sinks.weight", dtype, shape, data)
        elif rest.startswith("mlp.experts."):
            e = rest[len("mlp.experts."):]
            if e == "gate_up_proj_bias":
                v = _to_f32(dtype, shape, data)
                w.add_tensor(blk + "ffn_gate_exps.bias", v[:, 0::2], "F32")
                w.add_tensor(blk + "ffn_up_exps.bias", v[:, 1::2], "F32")
            elif e == "down_proj_bias":
                w.add_tensor(blk + "ffn_down_exps.bias", _to_f32(dtype, shape, data), "F32")
            elif e == "gate_up_proj_blocks":
                blocks = np.frombuffer(data, np.uint8).reshape(shape)
                sdt, sshape, sdata = ckpt[name.replace("_blocks", "_scales")]
                scales = np.frombuffer(sdata, np.uint8).reshape(sshape)
                n, rows, nb = sshape
                for half, kind in ((0, "ffn_gate_exps"), (1, "ffn_up_exps")):
                    q = mxfp4_from_hf(blocks[:, half::2], scales[:, half::2])
                    w.add_tensor_raw(f"{blk}{kind}.weight", [nb * 32, rows // 2, n], "MXFP4",
                                     q.tobytes())
            elif e == "down_proj_blocks":
                blocks = np.frombuffer(data, np.uint8).reshape(shape)
                sdt, sshape, sdata = ckpt[name.replace("_blocks", "_scales")]
                n, rows, nb = sshape
                q = mxfp4_from_hf(blocks, np.frombuffer(sdata, np.uint8).reshape(sshape))
                w.add_tensor_raw(blk + "ffn_down_exps.weight", [nb * 32, rows, n], "MXFP4",
                                 q.tobytes())
            elif e in ("gate_up_proj", "down_proj"):
                v = _to_f32(dtype, shape, data).transpose(0, 2, 1)   # rows = outputs
                parts_out = ([("ffn_gate_exps", v[:, 0::2]), ("ffn_up_exps", v[:, 1::2])]
                             if e == "gate_up_proj" else [("ffn_down_exps", v)])
                for kind, m in parts_out:
                    m = np.ascontiguousarray(m)
                    w.add_tensor_raw(f"{blk}{kind}.weight", list(reversed(m.shape)), dtype,
                                     _encode(m, dtype))
            elif not e.endswith("_scales"):
                raise ValueError(f"unknown gpt-oss expert tensor {name}")
        else:
            kind, suffix = rest.rsplit(".", 1)
            _add(w, f"{blk}{rename[kind]}.{suffix}", dtype, shape, data)


def _convert_hybrid(w, c, a, ckpt):
    hk, hv = c["linear_num_key_heads"], c["linear_num_value_heads"]
    dk, dv = c["linear_key_head_dim"], c["linear_value_head_dim"]
    w.add(f"{a}.ssm.conv_kernel", c["linear_conv_kernel_dim"], "uint32")
    w.add(f"{a}.ssm.state_size", dk, "uint32")
    w.add(f"{a}.ssm.group_count", hk, "uint32")
    w.add(f"{a}.ssm.time_step_rank", hv, "uint32")
    w.add(f"{a}.ssm.inner_size", dv * hv, "uint32")
    w.add(f"{a}.full_attention_interval", c.get("full_attention_interval", 4), "uint32")
    rp = c.get("rope_parameters") or {}
    prf = rp.get("partial_rotary_factor", c.get("partial_rotary_factor", 0.25))
    w.add(f"{a}.rope.dimension_count", int(c["head_dim"] * prf), "uint32")
    if a != "qwen3next":
        sections = list(rp.get("mrope_section", [11, 11, 10]))
        w.add(f"{a}.rope.dimension_sections", sections + [0] * (4 - len(sections)),
              "array<int32>")
    if c.get("num_experts"):
        w.add(f"{a}.expert_feed_forward_length", c["moe_intermediate_size"], "uint32")
        w.add(f"{a}.expert_shared_feed_forward_length", c["shared_expert_intermediate_size"],
              "uint32")
    tiled = a != "qwen3next" and hv != hk
    rename = {v: k for k, v in HYBRID_LAYER.items()}
    stacks = {}
    for hf_name, (dtype, shape, data) in sorted(ckpt.items()):
        name = hf_name.replace("language_model.", "")
        if name.startswith(("mtp.", "model.mtp.", "model.visual.")):
            continue
        if name == "model.embed_tokens.weight":
            _add(w, "token_embd.weight", dtype, shape, data)
            continue
        if name == "lm_head.weight":
            _add(w, "output.weight", dtype, shape, data)
            continue
        if name == "model.norm.weight":
            w.add_tensor("output_norm.weight", _to_f32(dtype, shape, data) + np.float32(1), "F32")
            continue
        parts = name.split(".")
        layer, rest = int(parts[2]), ".".join(parts[3:])
        blk = f"blk.{layer}."
        if rest.startswith("mlp.experts."):
            e = rest[len("mlp.experts."):]
            v = _to_f32(dtype, shape, data)
            if e == "gate_up_proj":
                half = v.shape[1] // 2
                stacks[(layer, "ffn_gate_exps")] = (dtype, v[:, :half])
                stacks[(layer, "ffn_up_exps")] = (dtype, v[:, half:])
            elif e == "down_proj":
                stacks[(layer, "ffn_down_exps")] = (dtype, v)
            else:
                x, proj, _ = e.split(".")
                kind = {"gate_proj": "ffn_gate_exps", "up_proj": "ffn_up_exps",
                        "down_proj": "ffn_down_exps"}[proj]
                stacks.setdefault((layer, kind), (dtype, {}))[1][int(x)] = v
            continue
        if rest == "linear_attn.in_proj_qkvz.weight":
            v = _to_f32(dtype, shape, data)
            rdv = hv // hk * dv
            g = v.reshape(hk, 2 * dk + 2 * rdv, -1)
            qkv = np.concatenate([g[:, :dk].reshape(-1, v.shape[1]),
                                  g[:, dk:2 * dk].reshape(-1, v.shape[1]),
                                  g[:, 2 * dk:2 * dk + rdv].reshape(-1, v.shape[1])])
            z = g[:, 2 * dk + rdv:].reshape(-1, v.shape[1])
            for kind, m in (("attn_qkv", qkv), ("attn_gate", z)):
                m = np.ascontiguousarray(m)
                w.add_tensor_raw(f"{blk}{kind}.weight", list(reversed(m.shape)), dtype,
                                 _encode(m, dtype))
            continue
        stem = rest[:-len(".weight")] if rest.endswith(".weight") else rest
        kind = rename[stem]
        v = _to_f32(dtype, shape, data)
        if kind in PLUS_ONE:
            v = v + np.float32(1)
        if kind == "ssm_a":
            v = (-np.exp(v.astype(np.float64))).astype(np.float32)
        if kind == "ssm_conv1d":
            v = v.reshape(shape[0], shape[2])
        if tiled:
            v = reorder_value_heads(kind, v, hk, hv, dv, "tiled")
        gname = blk + kind + {"ssm_a": "", "ssm_dt": ".bias"}.get(kind, ".weight")
        if v.ndim == 1 or kind in ("ssm_conv1d", "ffn_gate_inp", "ffn_gate_inp_shexp") \
                or kind in PLUS_ONE or kind == "ssm_norm":
            # The converter's F32 tensors; the shared expert's gate stays [1, dim] (ne [dim, 1]).
            w.add_tensor(gname, np.ascontiguousarray(v, np.float32), "F32")
        else:
            v = np.ascontiguousarray(v)
            w.add_tensor_raw(gname, list(reversed(v.shape)), dtype, _encode(v, dtype))
    for (layer, kind), (dtype, parts) in sorted(stacks.items()):
        v = np.stack([parts[x] for x in sorted(parts)]) if isinstance(parts, dict) else parts
        v = np.ascontiguousarray(v)
        w.add_tensor_raw(f"blk.{layer}.{kind}.weight", list(reversed(v.shape)), dtype,
                         _encode(v, dtype))
