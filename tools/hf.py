#!/usr/bin/python3
"""Random-weight Hugging Face directories (llama, mistral, mixtral, qwen2, qwen3, qwen3moe, phi3,
gemma2, gemma3, gemma4, gpt-oss, qwen35, qwen35moe, qwen3next) and their GGUF conversion (numpy
only).

    hf.py gen --out DIR [--gguf FILE.gguf] [reference.py gen options]
              [--st-dtype F32|F16|BF16] [--shards N] [--hf-arch LlamaForCausalLM]
              [--metaspace] [--template-list] [--no-add-bos-flag]
    hf.py convert DIR --out FILE.gguf --vocab-from FILE.gguf
    hf.py tokenizer VOCAB.gguf --out DIR     (tokenizer.json of a GGUF vocabulary)

`gen` draws a model with reference.gen_model (same seeds, same weights), writes it the way
transformers saves a LlamaForCausalLM checkpoint:
  config.json, model.safetensors (or N shards + model.safetensors.index.json),
  tokenizer.json (SentencePiece-style BPE with byte fallback, merges derived from the
  vocabulary's scores), tokenizer_config.json (bos/eos, add_bos_token, chat_template),
and, with --gguf, converts that directory back to GGUF with `convert`.

HF keeps Q/K rows of each head in the "halves" RoPE order; GGUF (and reference.py) uses
adjacent pairs. `gen` un-permutes the generated GGUF rows; `convert` permutes them back
exactly as llama.cpp's converter does (reshape(n_head, 2, d/2, n).swapaxes(1, 2)), so the
round trip reproduces the generated weights bit for bit in F32.

gemma2/gemma3 (--arch, --hf-arch Gemma3ForConditionalGeneration) store their norms as w - 1
(HF computes x * (1 + w); `convert` adds the 1 back as llama.cpp's converter does), tie the
output, and take --window/--swa-pattern/--attn-softcap/--final-softcap/--rope-base-swa/
--rope-linear as reference.py does; --pad-vocab adds embedding rows past the tokenizer
(trimmed by `convert`), --rope-parameters writes gemma3's RoPE in newer transformers' form.

Mixture of experts: --arch qwen3moe or --arch llama (MixtralForCausalLM) with --experts N
--experts-used K draws tools/families.py's fixed-shape model (only the counts and --seed vary)
and writes one matrix per expert (mlp.experts.E.{gate,up,down}_proj, or Mixtral's
block_sparse_moe.experts.E.w1/w3/w2) and the router (mlp.gate, block_sparse_moe.gate);
--fused-experts writes qwen3moe's experts as transformers 5 saves them (mlp.experts.gate_up_proj
[E, 2 n_ff, dim], mlp.experts.down_proj). `convert` stacks them as llama.cpp's converters do.

gemma4 (--arch, --hf-arch Gemma4ForConditionalGeneration) is reference.py gen --arch gemma4's
fixed-shape model (only --seed varies; --drop TENSOR leaves a GGUF tensor out, e.g.
blk.N.attn_v.weight or output.weight for a tied output): norms stored as they apply, RoPE as
rope_parameters.{full_attention (proportional), sliding_attention}, global_head_dim,
use_double_wide_mlp, num_kv_shared_layers, hidden_size_per_layer_input; `convert` writes
what llama.cpp's Gemma4Model writes (rope_freqs.weight included). --pad-vocab pads both
embeddings.

gpt-oss (--dense-experts), qwen35, qwen35moe and qwen3next (--hf-arch
Qwen3_5[Moe]ForConditionalGeneration) are tools/families.py's fixed-shape models (only --seed
and the expert counts vary), written and converted by tools/hf_families.py.
"""

import argparse
import json
import math
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import families  # noqa: E402
import gguf  # noqa: E402
import hf_families  # noqa: E402
from safetensors_io import (ST_DTYPES, encode as _encode, read_checkpoint,  # noqa: E402
                            read_safetensors, to_f32, write_safetensors)
import reference  # noqa: E402

SPACE = "\u2581"

# ----------------------------------------------------------------------------
# Q/K row order


def halves_to_pairs(rows, n_head):
    """HF -> GGUF: (n_head, 2, d/2, ...) -> swap -> (n_head, d/2, 2, ...)."""
    shape = rows.shape
    return rows.reshape(n_head, 2, shape[0] // n_head // 2, *shape[1:]).swapaxes(1, 2).reshape(shape)


def pairs_to_halves(rows, n_head):
    """GGUF -> HF, the inverse of halves_to_pairs."""
    shape = rows.shape
    return rows.reshape(n_head, shape[0] // n_head // 2, 2, *shape[1:]).swapaxes(1, 2).reshape(shape)


# ----------------------------------------------------------------------------
# tokenizer.json from a SentencePiece-style GGUF vocabulary


def spm_merges(tokens, scores, types):
    """Merges an SPM vocabulary implies: every split (a, b) of a normal multi-character piece
    where each side is a piece or a single character, ranked by the piece's score (best
    first), then by split position."""
    index = {t: i for i, t in enumerate(tokens) if types[i] == 1}
    order = sorted((i for i, t in enumerate(tokens) if types[i] == 1 and len(t) > 1),
                   key=lambda i: (-scores[i], i))
    merges = []
    for i in order:
        t = tokens[i]
        for k in range(1, len(t)):
            a, b = t[:k], t[k:]
            if (a in index or len(a) == 1) and (b in index or len(b) == 1):
                merges.append(f"{a} {b}")
    return merges


def _added_tokens(tokens, types):
    """Unknown/control tokens are special added tokens, user-defined ones plain added tokens."""
    return [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": types[i] == 4, "special": types[i] != 4}
            for i, t in enumerate(tokens) if types[i] in (2, 3, 4)]


# HF pre-tokenizers of the byte-level vocabularies, by tokenizer.ggml.pre.
_LLAMA3_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
              r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN2_RE = _LLAMA3_RE.replace(r"\p{N}{1,3}", r"\p{N}")


def _byte_level(use_regex):
    return {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
            "use_regex": use_regex}


def _split(regex):
    return {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated",
            "invert": False}


BYTE_LEVEL_PRE = {
    "gpt-2": (None, _byte_level(True)),
    "llama-bpe": (None, {"type": "Sequence",
                         "pretokenizers": [_split(_LLAMA3_RE), _byte_level(False)]}),
    "qwen2": ({"type": "NFC"}, {"type": "Sequence",
                                "pretokenizers": [_split(_QWEN2_RE), _byte_level(False)]}),
    "starcoder": (None, {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True}, _byte_level(True)]}),
}


def byte_level_tokenizer_files(meta):
    """tokenizer.json + tokenizer_config.json of a byte-level BPE GGUF vocabulary."""
    tokens = list(meta["tokenizer.ggml.tokens"])
    types = [int(t) for t in meta.get("tokenizer.ggml.token_type", [1] * len(tokens))]
    pre = meta.get("tokenizer.ggml.pre", "default")
    if pre not in BYTE_LEVEL_PRE:
        raise ValueError(f"no Hugging Face pre-tokenizer known for '{pre}'")
    normalizer, pre_tok = BYTE_LEVEL_PRE[pre]
    tok = {"version": "1.0", "truncation": None, "padding": None,
           "added_tokens": _added_tokens(tokens, types), "normalizer": normalizer,
           "pre_tokenizer": pre_tok, "post_processor": None,
           "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                       "use_regex": True},
           "model": {"type": "BPE", "dropout": None, "unk_token": None,
                     "continuing_subword_prefix": "", "end_of_word_suffix": "",
                     "fuse_unk": False, "byte_fallback": False,
                     "ignore_merges": pre == "llama-bpe",
                     "vocab": {t: i for i, t in enumerate(tokens) if types[i] in (1, 5, 6)},
                     "merges": [m.split(" ") for m in meta["tokenizer.ggml.merges"]]}}
    cfg = {}
    for key, name in (("bos", "bos_token"), ("eos", "eos_token")):
        i = meta.get(f"tokenizer.ggml.{key}_token_id")
        if i is not None and 0 <= int(i) < len(tokens):
            cfg[name] = tokens[int(i)]
    if "tokenizer.ggml.add_bos_token" in meta:
        cfg["add_bos_token"] = bool(meta["tokenizer.ggml.add_bos_token"])
    return tok, cfg


def write_tokenizer(src_gguf, out):
    """A tokenizer-only HF directory (tokenizer.json, tokenizer_config.json) from a GGUF."""
    meta = gguf.GGUFReader(src_gguf).metadata
    if meta["tokenizer.ggml.model"] == "llama":
        tok, cfg = tokenizer_files(meta, template=None)
    elif meta["tokenizer.ggml.model"] == "gpt2":
        tok, cfg = byte_level_tokenizer_files(meta)
    else:
        raise ValueError(f"tokenizer model {meta['tokenizer.ggml.model']} has no HF BPE form")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, ensure_ascii=False)


def tokenizer_files(vocab_meta, metaspace=False, template=None, template_list=False,
                    add_bos_flag=True):
    tokens = list(vocab_meta["tokenizer.ggml.tokens"])
    scores = [float(s) for s in vocab_meta["tokenizer.ggml.scores"]]
    types = [int(t) for t in vocab_meta["tokenizer.ggml.token_type"]]
    unk = tokens[int(vocab_meta["tokenizer.ggml.unknown_token_id"])]
    bos = tokens[int(vocab_meta["tokenizer.ggml.bos_token_id"])]
    eos = tokens[int(vocab_meta["tokenizer.ggml.eos_token_id"])]
    added = _added_tokens(tokens, types)
    if metaspace:  # transformers' "legacy": false form
        normalizer = None
        pre = {"type": "Metaspace", "replacement": SPACE, "prepend_scheme": "first",
               "split": False}
    else:
        normalizer = {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": SPACE},
            {"type": "Replace", "pattern": {"String": " "}, "content": SPACE}]}
        pre = None
    tok = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": normalizer,
        "pre_tokenizer": pre,
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": bos, "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [], "special_tokens": {}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": SPACE}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": unk,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": {t: i for i, t in enumerate(tokens)},
                  "merges": spm_merges(tokens, scores, types)},
    }
    cfg = {"bos_token": bos, "eos_token": {"content": eos, "special": True},
           "unk_token": unk, "add_eos_token": False, "model_max_length": 2048,
           "tokenizer_class": "LlamaTokenizer", "legacy": not metaspace}
    if add_bos_flag:
        cfg["add_bos_token"] = True
    if template is not None:
        cfg["chat_template"] = ([{"name": "default", "template": template},
                                 {"name": "tool_use", "template": template + "{# tools #}"}]
                                if template_list else template)
    return tok, cfg


# ----------------------------------------------------------------------------
# gen


def llama3_rope_scaling(ctx):
    return {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": ctx}


def rope_factors(rs, base, dim):
    """Llama 3 frequency factors: base frequencies rounded to float32 (the converters compute
    them in float32), the rest in double, factors rounded to float32. seam computes the same."""
    factor = rs.get("factor", 8.0)
    low = rs.get("low_freq_factor", 1.0)
    high = rs.get("high_freq_factor", 4.0)
    old = rs.get("original_max_position_embeddings", 8192)
    out = []
    for i in range(0, dim, 2):
        freq = float(np.float32(1.0 / math.pow(base, i / dim)))
        wl = 2 * math.pi / freq
        if wl < old / high:
            f = 1.0
        elif wl > old / low:
            f = factor
        else:
            s = (old / wl - low) / (high - low)
            f = 1.0 / ((1 - s) / factor + s)
        out.append(f)
    return np.asarray(out, dtype=np.float32)


HF_ARCHS = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM",
            "qwen3": "Qwen3ForCausalLM", "qwen3moe": "Qwen3MoeForCausalLM",
            "phi3": "Phi3ForCausalLM",
            "mistral3": "Ministral3ForCausalLM", "gemma2": "Gemma2ForCausalLM",
            "gemma3": "Gemma3ForCausalLM", "gemma4": "Gemma4ForCausalLM",
            **hf_families.DEFAULT_CLASS}
GGUF_ARCH = {"LlamaForCausalLM": "llama", "MistralForCausalLM": "llama",
             "MixtralForCausalLM": "llama", "Qwen2ForCausalLM": "qwen2",
             "Qwen3ForCausalLM": "qwen3", "Qwen3MoeForCausalLM": "qwen3moe",
             "Phi3ForCausalLM": "phi3", "Ministral3ForCausalLM": "mistral3",
             "Gemma2ForCausalLM": "gemma2", "Gemma3ForCausalLM": "gemma3",
             "Gemma3ForConditionalGeneration": "gemma3", "Gemma4ForCausalLM": "gemma4",
             "Gemma4ForConditionalGeneration": "gemma4", **hf_families.GGUF_ARCH}
# phi3 checkpoints keep q, k, v and gate, up fused, as its GGUF does.
PHI3_LAYER = {"attn_qkv": "self_attn.qkv_proj", "ffn_up": "mlp.gate_up_proj"}
PER_LAYER = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj",
             "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
             "attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm",
             "attn_k_norm": "self_attn.k_norm", "ffn_norm": "post_attention_layernorm",
             "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
# Mixture of experts: the router and each expert's matrices, per checkpoint class. GGUF stacks
# the experts of a layer into one [n_expert, rows, cols] tensor (the converters' torch.stack).
MOE_ROUTER = {"Qwen3MoeForCausalLM": "mlp.gate", "MixtralForCausalLM": "block_sparse_moe.gate"}
MOE_EXPERTS = {"Qwen3MoeForCausalLM": ("mlp.experts", {"ffn_gate_exps": "gate_proj",
                                                       "ffn_up_exps": "up_proj",
                                                       "ffn_down_exps": "down_proj"}),
               "MixtralForCausalLM": ("block_sparse_moe.experts", {"ffn_gate_exps": "w1",
                                                                   "ffn_up_exps": "w3",
                                                                   "ffn_down_exps": "w2"})}


def moe_tensors(name, w, hf_arch, fused, tensor):
    """HF tensors of a GGUF router or stacked expert tensor blk.L.<kind>.weight; None for
    any other. fused: transformers 5's per-layer form (mlp.experts.gate_up_proj
    [E, 2 n_ff, dim], mlp.experts.down_proj [E, dim, n_ff]) instead of one per expert;
    `tensor(name)` reads another GGUF tensor (the up half of gate_up_proj)."""
    _, layer, kind, _ = name.split(".")
    base = f"model.layers.{layer}."
    if kind == "ffn_gate_inp":
        return [(base + MOE_ROUTER[hf_arch] + ".weight", w)]
    if not kind.endswith("_exps"):
        return None
    prefix, names = MOE_EXPERTS[hf_arch]
    if fused:
        if kind == "ffn_down_exps":
            return [(base + prefix + ".down_proj", w)]
        if kind == "ffn_gate_exps":
            up = tensor(name.replace("ffn_gate_exps", "ffn_up_exps"))
            return [(base + prefix + ".gate_up_proj", np.concatenate([w, up], axis=1))]
        return []  # ffn_up_exps: written with the gate as gate_up_proj
    return [(f"{base}{prefix}.{e}.{names[kind]}.weight", w[e]) for e in range(w.shape[0])]


def gen(out, gguf_out=None, st_dtype="F32", shards=1, hf_arch=None,
        metaspace=False, template="{% for m in messages %}{{ m['content'] }}{% endfor %}",
        template_list=False, add_bos_flag=True, pad_vocab=0, rope_parameters=False,
        drop=(), experts=None, experts_used=None, fused_experts=False, dense_experts=False,
        **model_args):
    st_dtype = st_dtype.upper()
    family = model_args.get("arch") in hf_families.DEFAULT_CLASS
    moe = not family and model_args.get("arch") != "gemma4" and \
        (bool(experts) or model_args.get("arch") == "qwen3moe")
    if fused_experts and model_args.get("arch") != "qwen3moe":
        raise reference.RefError("--fused-experts: qwen3moe only")
    if model_args.get("arch") in GEMMA_ARCHS:
        model_args["tied"] = True   # gemma's output is always its embedding
    if drop and model_args.get("arch") != "gemma4":
        raise reference.RefError("--drop: gemma4 only")
    if st_dtype not in ST_DTYPES:
        raise reference.RefError(f"--st-dtype must be one of {sorted(ST_DTYPES)}")
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "src.gguf")
        if family:
            # The per-layer family's fixed shape (tools/families.py) with the given counts.
            families.gen_family(src, model_args["arch"], experts=experts,
                                experts_used=experts_used, seed=model_args.get("seed", 0))
        elif model_args.get("arch") == "gemma4":
            # The per-layer family's fixed shape (tools/families.py); only the seed and the
            # dropped tensors vary.
            families.gen_family(src, "gemma4", seed=model_args.get("seed", 0),
                                drop=tuple(drop), experts=experts, experts_used=experts_used)
        elif moe:
            # The per-layer family's fixed shape with the given expert counts.
            families.gen_family(src, model_args.get("arch", "llama"), experts=experts,
                                experts_used=experts_used, seed=model_args.get("seed", 0))
        else:
            reference.gen_model(src, dtype="F32", **model_args)
        r = gguf.GGUFReader(src)
        m = r.metadata
        a = m["general.architecture"]
        hf_arch = hf_arch or ("MixtralForCausalLM" if moe and a == "llama" else HF_ARCHS[a])
        if not family and moe != (hf_arch in MOE_ROUTER):
            raise reference.RefError(f"--hf-arch {hf_arch} with experts: use "
                                     "MixtralForCausalLM or Qwen3MoeForCausalLM")
        if GGUF_ARCH.get(hf_arch) != a:
            raise reference.RefError(f"--hf-arch {hf_arch} does not hold a {a} model")
        if family:
            config, tensors = hf_families.files(r, hf_arch, st_dtype, dense_experts)
        elif a == "gemma4":
            config, tensors = gemma4_files(r, hf_arch, st_dtype, pad_vocab,
                                           model_args.get("seed", 0))
        else:
            heads = int(m[f"{a}.attention.head_count"])
            kv_heads = int(m[f"{a}.attention.head_count_kv"])
            dim = int(m[f"{a}.embedding_length"])
            head_dim = int(m.get(f"{a}.attention.key_length", dim // heads))
            layers = int(m[f"{a}.block_count"])
            tied = "output.weight" not in r.tensors
            config = {
                "architectures": [hf_arch],
                "model_type": {"MistralForCausalLM": "mistral", "MixtralForCausalLM": "mixtral",
                               "Qwen3MoeForCausalLM": "qwen3_moe"}.get(hf_arch, a),
                "hidden_size": dim,
                "num_hidden_layers": layers,
                "num_attention_heads": heads,
                "num_key_value_heads": kv_heads,
                "intermediate_size": int(m[f"{a}.feed_forward_length"]),
                "rms_norm_eps": float(np.float32(m[f"{a}.attention.layer_norm_rms_epsilon"])),
                "rope_theta": float(m[f"{a}.rope.freq_base"]),
                "max_position_embeddings": int(m[f"{a}.context_length"]),
                "vocab_size": int(m[f"{a}.vocab_size"]),
                "tie_word_embeddings": tied,
                "bos_token_id": int(m["tokenizer.ggml.bos_token_id"]),
                "eos_token_id": int(m["tokenizer.ggml.eos_token_id"]),
                "hidden_act": "silu",
                "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[st_dtype],
            }
            if f"{a}.attention.key_length" in m:
                config["head_dim"] = head_dim
            if moe:
                n_exp, n_used = int(m[f"{a}.expert_count"]), int(m[f"{a}.expert_used_count"])
                config["num_experts_per_tok"] = n_used
                if hf_arch == "MixtralForCausalLM":
                    config["num_local_experts"] = n_exp
                else:
                    config.update(num_experts=n_exp, norm_topk_prob=True, decoder_sparse_step=1,
                                  mlp_only_layers=[], moe_intermediate_size=int(
                                      m[f"{a}.expert_feed_forward_length"]))
            n_rot = int(m[f"{a}.rope.dimension_count"])
            if n_rot != head_dim:
                config["partial_rotary_factor"] = n_rot / head_dim
            if model_args.get("llama3_rope_freqs"):
                config["rope_scaling"] = llama3_rope_scaling(int(m[f"{a}.context_length"]))
            window = m.get(f"{a}.attention.sliding_window")
            if window is not None:
                if hf_arch != "MistralForCausalLM" and a not in GEMMA_ARCHS:
                    raise reference.RefError(
                        "--window: only MistralForCausalLM states a window here")
                config["sliding_window"] = int(window)
            orig = m.get(f"{a}.rope.scaling.original_context_length")
            if m.get(f"{a}.rope.scaling.type") == "yarn":
                rs = {"rope_type": "yarn", "factor": float(m[f"{a}.rope.scaling.factor"])}
                if orig is not None:
                    rs["original_max_position_embeddings"] = int(orig)
                for k, hk in (("yarn_beta_fast", "beta_fast"), ("yarn_beta_slow", "beta_slow"),
                              ("yarn_attn_factor", "attention_factor")):
                    if f"{a}.rope.scaling.{k}" in m:
                        rs[hk] = float(m[f"{a}.rope.scaling.{k}"])
                config["rope_scaling"] = rs
            if a == "mistral3":
                # Ministral 3 configs (newer transformers): everything RoPE in rope_parameters.
                rp = dict(config.pop("rope_scaling", {"rope_type": "default"}))
                rp["rope_theta"] = config.pop("rope_theta")
                lm = m.get(f"{a}.rope.scaling.yarn_log_multiplier")
                if lm is not None:
                    rp["mscale"], rp["mscale_all_dim"] = 1.0, float(lm)
                beta = m.get(f"{a}.attention.temperature_scale")
                if beta is not None:
                    rp["llama_4_scaling_beta"] = float(beta)
                    rp.setdefault("original_max_position_embeddings", int(orig))
                config["rope_parameters"] = rp
                config["model_type"] = "ministral3"
            if "rope_factors_long.weight" in r.tensors:
                # Phi-3 128k configs: the training context at the top level, the factors (and
                # no attention factor: it follows from max_position_embeddings / original).
                config["original_max_position_embeddings"] = int(orig)
                config["rope_scaling"] = {
                    "type": "longrope",
                    "long_factor": [float(v) for v in r.tensor("rope_factors_long.weight")],
                    "short_factor": [float(v) for v in r.tensor("rope_factors_short.weight")]}

            names = {"token_embd.weight": "model.embed_tokens.weight",
                     "output_norm.weight": "model.norm.weight", "output.weight": "lm_head.weight"}
            tensors = []
            if a in GEMMA_ARCHS:
                config = gemma_config(config, m, a, hf_arch, pad_vocab, rope_parameters)
                tensors = gemma_tensors(r, a, hf_arch, st_dtype, pad_vocab,
                                        model_args.get("seed", 0))
            for name in (r.tensors if a not in GEMMA_ARCHS else ()):
                if name in ("rope_freqs.weight", "rope_factors_long.weight",
                            "rope_factors_short.weight"):
                    continue  # HF recomputes them from rope_scaling
                w = r.tensor(name)
                parts = moe_tensors(name, w, hf_arch, fused_experts, r.tensor) \
                    if moe and name.startswith("blk.") else None
                if parts is not None:
                    tensors += [(n, t.shape, st_dtype, _encode(t, st_dtype)) for n, t in parts]
                    continue
                if name.startswith("blk."):
                    _, layer, kind, suffix = name.split(".")
                    hf_kind = PHI3_LAYER[kind] if a == "phi3" and kind in PHI3_LAYER \
                        else PER_LAYER[kind]
                    hf_name = f"model.layers.{layer}.{hf_kind}.{suffix}"
                    if a in ("llama", "mistral3") and kind == "attn_q":
                        w = pairs_to_halves(w, heads)
                    elif a in ("llama", "mistral3") and kind == "attn_k":
                        w = pairs_to_halves(w, kv_heads)
                else:
                    hf_name = names[name]
                tensors.append((hf_name, w.shape, st_dtype, _encode(w, st_dtype)))
        tensors.sort(key=lambda t: t[0])

    for f in ("model.safetensors", "model.safetensors.index.json"):
        if os.path.exists(os.path.join(out, f)):
            os.remove(os.path.join(out, f))
    if shards <= 1:
        write_safetensors(os.path.join(out, "model.safetensors"), tensors, {"format": "pt"})
    else:
        parts = [tensors[i::shards] for i in range(shards)]
        wm = {}
        for k, part in enumerate(parts):
            fn = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
            write_safetensors(os.path.join(out, fn), part, {"format": "pt"})
            wm.update({t[0]: fn for t in part})
        total = sum(len(t[3]) for t in tensors)
        with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": wm}, f, indent=2)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    tok, tcfg = tokenizer_files(m, metaspace, template, template_list, add_bos_flag)
    with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tcfg, f, ensure_ascii=False, indent=2)
    # The vocabulary of the GGUF is reference.py's (with its own scores), so the GGUF
    # tokenizer and the tokenizer.json-derived one are compared, not copied.
    vocab = {k: (v, r.types[k]) for k, v in m.items() if k.startswith("tokenizer.")}
    if gguf_out:
        convert(out, gguf_out, vocab)
    return config


# ----------------------------------------------------------------------------
# gemma2 / gemma3: what transformers saves for Gemma2ForCausalLM, Gemma3ForCausalLM and
# Gemma3ForConditionalGeneration, and what llama.cpp's Gemma2Model / Gemma3Model write.

GEMMA_ARCHS = ("gemma2", "gemma3")
GEMMA_LAYER = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj",
               "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
               "attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm",
               "attn_k_norm": "self_attn.k_norm",
               "post_attention_norm": "post_attention_layernorm",
               "ffn_norm": "pre_feedforward_layernorm",
               "post_ffw_norm": "post_feedforward_layernorm",
               "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
# transformers' Gemma2Config / Gemma3TextConfig defaults for keys config.json may omit (the
# converter reads configs through AutoConfig, so it sees them; seam applies the same).
GEMMA_DEFAULTS = {
    "gemma2": {"num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
               "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 8192,
               "query_pre_attn_scalar": 256, "sliding_window": 4096,
               "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0,
               "tie_word_embeddings": True},
    "gemma3": {"num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
               "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "max_position_embeddings": 131072,
               "query_pre_attn_scalar": 256, "sliding_window": 4096,
               "sliding_window_pattern": 6, "rope_local_base_freq": 10000.0,
               "attn_logit_softcapping": None, "final_logit_softcapping": None,
               "tie_word_embeddings": True},
}
GEMMA_27B_LAYERS = {"gemma2": 46, "gemma3": 62}
GEMMA_PERIOD = {"gemma2": 2, "gemma3": 6}   # the recipes' default local/global periods
CG_PREFIX = "model.language_model."


def gemma_config(config, m, a, hf_arch, pad_vocab, rope_parameters=False):
    """config.json of a gemma model from the generic keys gen wrote and the GGUF metadata;
    rope_parameters: gemma3's RoPE in newer transformers' per-attention-type form."""
    p = f"{a}."
    dim, heads, layers = config["hidden_size"], config["num_attention_heads"], \
        config["num_hidden_layers"]
    hd = int(m.get(p + "attention.key_length", dim // heads))
    config["model_type"] = a
    config.pop("hidden_act", None)
    config["hidden_activation"] = "gelu_pytorch_tanh"
    config["head_dim"] = hd
    # What the recipe scales attention by (GGUF has no key): n_embd / n_head for 27B.
    config["query_pre_attn_scalar"] = dim // heads if layers == GEMMA_27B_LAYERS[a] else hd
    config["vocab_size"] += pad_vocab
    window = m.get(p + "attention.sliding_window")
    pattern = m.get(p + "attention.sliding_window_pattern")
    if a == "gemma2":
        config["attn_logit_softcapping"] = float(m.get(p + "attn_logit_softcapping", 50.0))
        config["final_logit_softcapping"] = float(m.get(p + "final_logit_softcapping", 30.0))
        config["sliding_window"] = int(window) if window is not None else 4096
        period = 2
    else:
        config["attn_logit_softcapping"] = None
        fc = m.get(p + "final_logit_softcapping")
        config["final_logit_softcapping"] = float(fc) if fc is not None else None
        config["sliding_window"] = int(window) if window else 4096
        config["rope_local_base_freq"] = float(m.get(p + "rope.freq_base_swa", 10000.0))
        period = 6
        if not window:
            pattern = 1   # no window: every layer global
    if isinstance(pattern, (list, np.ndarray)):
        config["layer_types"] = ["sliding_attention" if f else "full_attention" for f in pattern]
    elif pattern is not None and int(pattern) == 0:   # period 0: every layer local
        config["layer_types"] = ["sliding_attention"] * layers
    elif a == "gemma3":
        config["sliding_window_pattern"] = int(pattern if pattern is not None else period)
    elif pattern is not None and int(pattern) != period:
        P = int(pattern)
        config["layer_types"] = ["sliding_attention" if (L + 1) % P else "full_attention"
                                 for L in range(layers)]
    if m.get(p + "rope.scaling.type") == "linear":
        config["rope_scaling"] = {"rope_type": "linear",
                                  "factor": float(m[p + "rope.scaling.factor"])}
    elif m.get(p + "rope.scaling.type") is not None:
        raise reference.RefError(f"{a}: only linear rope scaling has a Hugging Face form here")
    if rope_parameters:
        if a != "gemma3":
            raise reference.RefError("--rope-parameters: gemma3 only")
        full = dict(config.pop("rope_scaling", None) or {"rope_type": "default"})
        full["rope_theta"] = config.pop("rope_theta")
        config["rope_parameters"] = {
            "full_attention": full,
            "sliding_attention": {"rope_type": "default",
                                  "rope_theta": config.pop("rope_local_base_freq")}}
    if hf_arch != "Gemma3ForConditionalGeneration":
        return config
    # The multimodal class keeps the language model's keys under text_config, and
    # transformers leaves out those equal to the class defaults.
    top = {k: config.pop(k) for k in ("architectures", "torch_dtype", "bos_token_id",
                                      "eos_token_id")}
    text = {k: v for k, v in config.items() if GEMMA_DEFAULTS[a].get(k, object()) != v}
    text["model_type"] = "gemma3_text"
    return {**top, "model_type": "gemma3", "text_config": text,
            "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 8,
                              "num_hidden_layers": 1, "patch_size": 2, "image_size": 4},
            "mm_tokens_per_image": 4, "image_token_index": config["vocab_size"] - 1,
            "tie_word_embeddings": True}


def gemma_tensors(r, a, hf_arch, st_dtype, pad_vocab, seed):
    """(HF name, shape, dtype, bytes) of a gemma checkpoint: norms stored as w - 1 (HF
    computes x * (1 + w); the converter adds the 1 back), the embedding padded with
    pad_vocab rows past the tokenizer (as Gemma 3 4B+ ships it), and for the multimodal
    class the language model under model.language_model. next to a small vision tower."""
    prefix = CG_PREFIX if hf_arch == "Gemma3ForConditionalGeneration" else "model."
    rng = np.random.default_rng(seed + 1000)
    out = []
    for name in r.tensors:
        w = r.tensor(name)
        if name == "output.weight":
            raise reference.RefError("gemma ties its output to token_embd")
        if name.startswith("blk."):
            _, layer, kind, suffix = name.split(".")
            hf_name = f"{prefix}layers.{layer}.{GEMMA_LAYER[kind]}.{suffix}"
        else:
            hf_name = prefix + {"token_embd.weight": "embed_tokens.weight",
                                "output_norm.weight": "norm.weight"}[name]
        if hf_name.endswith("norm.weight"):
            w = w - np.float32(1)
        if name == "token_embd.weight" and pad_vocab:
            w = np.concatenate([w, rng.standard_normal((pad_vocab, w.shape[1]))])
        out.append((hf_name, w.shape, st_dtype, _encode(w, st_dtype)))
    if prefix == CG_PREFIX:
        dim = r.tensor("token_embd.weight").shape[1]
        for name, shape in (("model.vision_tower.vision_model.embeddings.patch_embedding.weight",
                             (8, 3, 2, 2)),
                            ("model.vision_tower.vision_model.post_layernorm.weight", (8,)),
                            ("model.multi_modal_projector.mm_input_projection_weight", (8, dim)),
                            ("model.multi_modal_projector.mm_soft_emb_norm.weight", (8,))):
            out.append((name, shape, st_dtype, _encode(rng.standard_normal(shape), st_dtype)))
    return out


def convert_gemma(d, out, vocab, raw):
    """llama.cpp's Gemma2Model / Gemma3Model for the keys and tensors gen writes, plus what
    seam needs that GGUF would otherwise lose: rope.freq_base for gemma2 (its converter
    writes none; llama.cpp's default is HF's default 10000), and the layer pattern when it
    is not the recipe's default period. gemma3's embedding is trimmed to the tokenizer's
    token count, as seam does (llama.cpp's converter counts the vocabulary
    differently; see docs/architectures.md)."""
    a = GGUF_ARCH[raw["architectures"][0]]
    c = {**raw, **(raw.get("text_config") or {})}
    rp = c.get("rope_parameters") or {}
    if "full_attention" in rp or "sliding_attention" in rp:
        # Newer transformers: RoPE per attention type (the converter's rope_parameters
        # ["full_attention"] for the global layers, ["sliding_attention"] for the local).
        del c["rope_parameters"]
        full, local = rp.get("full_attention") or {}, rp.get("sliding_attention") or {}
        if "rope_theta" in full:
            c["rope_theta"] = full["rope_theta"]
        c["rope_scaling"] = full if full.get("rope_type", "default") != "default" else None
        if "rope_theta" in local:
            c["rope_local_base_freq"] = local["rope_theta"]
    c = {**GEMMA_DEFAULTS[a], **c}
    heads, dim, layers = c["num_attention_heads"], c["hidden_size"], c["num_hidden_layers"]
    hd = c["head_dim"]
    recipe_qpas = dim // heads if layers == GEMMA_27B_LAYERS[a] else hd
    if c["query_pre_attn_scalar"] != recipe_qpas:
        raise ValueError(f"query_pre_attn_scalar {c['query_pre_attn_scalar']} is not the "
                         f"{recipe_qpas} seam's {a} recipe uses")
    w = gguf.GGUFWriter(out)
    w.add("general.architecture", a)
    w.add("general.name", os.path.basename(os.path.normpath(d)))
    w.add(f"{a}.block_count", layers)
    w.add(f"{a}.context_length", c["max_position_embeddings"])
    w.add(f"{a}.embedding_length", dim)
    w.add(f"{a}.feed_forward_length", c["intermediate_size"])
    w.add(f"{a}.attention.head_count", heads)
    w.add(f"{a}.attention.head_count_kv", c["num_key_value_heads"])
    w.add(f"{a}.attention.layer_norm_rms_epsilon", float(c["rms_norm_eps"]))
    w.add(f"{a}.attention.key_length", hd)
    w.add(f"{a}.attention.value_length", hd)
    w.add(f"{a}.rope.freq_base", float(c["rope_theta"]))
    if a == "gemma2":
        w.add(f"{a}.attn_logit_softcapping", float(c["attn_logit_softcapping"]), "float32")
        w.add(f"{a}.final_logit_softcapping", float(c["final_logit_softcapping"]), "float32")
    else:
        assert c.get("attn_logit_softcapping") is None
        if c.get("final_logit_softcapping"):
            w.add(f"{a}.final_logit_softcapping", float(c["final_logit_softcapping"]),
                  "float32")
        w.add(f"{a}.rope.freq_base_swa", float(c["rope_local_base_freq"]), "float32")
        rs = c.get("rope_scaling") or {}
        if rs.get("rope_type", rs.get("type")) == "linear" and rs.get("factor") is not None:
            w.add(f"{a}.rope.scaling.type", "linear")
            w.add(f"{a}.rope.scaling.factor", float(rs["factor"]), "float32")
    if c.get("layer_types"):
        flags = [t == "sliding_attention" for t in c["layer_types"]]
    else:
        P = c.get("sliding_window_pattern", 6) if a == "gemma3" else 2
        flags = [(L + 1) % P != 0 for L in range(layers)]
    # llama.cpp reads the layer pattern as a period only (an array is ignored): a period
    # when one fits (the first global layer fixes the candidate), else per-layer flags.
    P = (flags.index(False) if False in flags else layers) + 1
    if any(f != ((L + 1) % P != 0) for L, f in enumerate(flags)):
        P = 0
    window = c.get("sliding_window") or 0
    if not window or P == 1:   # every layer global
        if a == "gemma2":      # its window defaults to 4096 when unstated
            w.add(f"{a}.attention.sliding_window_pattern", 1, "uint32")
    else:
        w.add(f"{a}.attention.sliding_window", int(window), "uint32")
        if P == 0:
            w.add(f"{a}.attention.sliding_window_pattern", flags, "array<bool>")
        elif P != GEMMA_PERIOD[a]:
            w.add(f"{a}.attention.sliding_window_pattern", P, "uint32")
    w.add(f"{a}.vocab_size", c["vocab_size"])
    for k, (v, t) in vocab.items():
        w.add(k, v, type=t)
    n_tokens = len(vocab["tokenizer.ggml.tokens"][0])
    for hf_name, (dtype, shape, data) in sorted(read_checkpoint(d).items()):
        name = hf_name.replace("language_model.", "", 1)
        if "vision_tower." in name or "multi_modal_projector." in name:
            continue
        if name == "lm_head.weight":
            continue   # gemma's output is token_embd (Gemma2Model drops lm_head explicitly)
        if name.startswith("model.layers."):
            parts = name.split(".")
            kind = {v: k for k, v in GEMMA_LAYER.items()}['.'.join(parts[3:-1])]
            gname = f"blk.{parts[2]}.{kind}.{parts[-1]}"
        else:
            gname = {"model.embed_tokens.weight": "token_embd.weight",
                     "model.norm.weight": "output_norm.weight"}[name]
        if name.endswith("norm.weight"):
            # bf16 is cast to f32 before the +1; f16 adds in f16 (torch rounds the f32 sum).
            if dtype == "F16":
                v = (np.frombuffer(data, dtype="<f2").reshape(shape) + np.float16(1))
            else:
                v = to_f32(dtype, shape, data) + np.float32(1)
            w.add_tensor(gname, v.astype(np.float32), "F32")
            continue
        if len(shape) == 1:
            w.add_tensor(gname, to_f32(dtype, shape, data), "F32")
            continue
        raw_rows = np.frombuffer(data, dtype="<f4" if dtype == "F32" else "<u2").reshape(shape)
        if gname == "token_embd.weight" and a == "gemma3":
            raw_rows = raw_rows[:n_tokens]
            shape = raw_rows.shape
        w.add_tensor_raw(gname, list(reversed(shape)), dtype,
                         np.ascontiguousarray(raw_rows).tobytes())
    w.write()


# ----------------------------------------------------------------------------
# gemma4: what transformers saves for Gemma4ForCausalLM / Gemma4ForConditionalGeneration
# (the E models), and what llama.cpp's Gemma4Model writes. Norms are stored as they apply
# (no +1), the global layers' RoPE is "proportional" (rope_freqs.weight: 1 on the rotated
# pairs, 1e30 on the rest), per-layer widths come from use_double_wide_mlp and
# num_global_key_value_heads.

G4_LAYER = {**GEMMA_LAYER, "inp_gate": "per_layer_input_gate", "proj": "per_layer_projection",
            "post_norm": "post_per_layer_input_norm"}
G4_GLOBAL = {"token_embd.weight": "embed_tokens.weight",
             "per_layer_token_embd.weight": "embed_tokens_per_layer.weight",
             "per_layer_model_proj.weight": "per_layer_model_projection.weight",
             "per_layer_proj_norm.weight": "per_layer_projection_norm.weight",
             "output_norm.weight": "norm.weight"}
# The mixture-of-experts model's tensors, by GGUF "kind.suffix" (26B-A4B's names).
G4_MOE = {"ffn_gate_inp.weight": "router.proj.weight", "ffn_gate_inp.scale": "router.scale",
          "ffn_down_exps.scale": "router.per_expert_scale",
          "ffn_gate_up_exps.weight": "experts.gate_up_proj",
          "ffn_down_exps.weight": "experts.down_proj",
          "pre_ffw_norm_2.weight": "pre_feedforward_layernorm_2.weight",
          "post_ffw_norm_1.weight": "post_feedforward_layernorm_1.weight",
          "post_ffw_norm_2.weight": "post_feedforward_layernorm_2.weight"}
G4_DROPPED = ("vision_tower.", "multi_modal_projector.", "audio_tower.", "embed_vision.",
              "embed_audio.")


def gemma4_files(r, hf_arch, st_dtype, pad_vocab, seed):
    """(config.json, [(HF name, shape, dtype, bytes)]) of the gemma4 GGUF r."""
    m = r.metadata
    p = "gemma4."
    layers = int(m[p + "block_count"])
    swa = [bool(f) for f in m[p + "attention.sliding_window_pattern"]]
    shared = int(m.get(p + "attention.shared_kv_layers", 0))
    first_shared = layers - shared

    def per_layer(key):
        v = m[p + key]
        return [int(x) for x in v] if isinstance(v, (list, np.ndarray)) else [int(v)] * layers

    ff = per_layer("feed_forward_length")
    double = ff != [ff[0]] * layers
    if double and ff != [ff[0] if L < first_shared else 2 * ff[0] for L in range(layers)]:
        raise reference.RefError("gemma4: FFN widths HF can state are one width, or twice it "
                                 "on the KV-sharing layers")
    kvh = per_layer("attention.head_count_kv")
    kv_swa = sorted({h for h, f in zip(kvh, swa) if f})
    kv_full = sorted({h for h, f in zip(kvh, swa) if not f})
    if len(kv_swa) > 1 or len(kv_full) > 1:
        raise reference.RefError("gemma4: one KV head count per layer kind")
    kv_swa = kv_swa[0] if kv_swa else kv_full[0]
    kv_full = kv_full[0] if kv_full else kv_swa
    hd_full = int(m[p + "attention.key_length"])
    hd_swa = int(m[p + "attention.key_length_swa"])
    if int(m[p + "rope.dimension_count"]) != hd_full:
        raise reference.RefError("gemma4: the global layers rotate global_head_dim dims")
    freqs = r.tensor("rope_freqs.weight")
    n_pairs = int(np.sum(freqs == 1.0))
    if not (np.all(freqs[:n_pairs] == 1.0) and np.all(freqs[n_pairs:] == np.float32(1e30))):
        raise reference.RefError("gemma4: rope_freqs is not proportional RoPE's")
    tied = "output.weight" not in r.tensors
    vocab = int(m[p + "vocab_size"]) + pad_vocab
    text = {
        "model_type": "gemma4_text",
        "hidden_size": int(m[p + "embedding_length"]),
        "num_hidden_layers": layers,
        "num_attention_heads": int(m[p + "attention.head_count"]),
        "num_key_value_heads": kv_swa,
        "head_dim": hd_swa,
        "global_head_dim": hd_full,
        "intermediate_size": ff[0],
        "use_double_wide_mlp": double,
        "num_kv_shared_layers": shared,
        "hidden_size_per_layer_input": int(m.get(p + "embedding_length_per_layer_input", 0)),
        "vocab_size": vocab,
        "vocab_size_per_layer_input": vocab,
        "max_position_embeddings": int(m[p + "context_length"]),
        "rms_norm_eps": float(np.float32(m[p + "attention.layer_norm_rms_epsilon"])),
        "hidden_activation": "gelu_pytorch_tanh",
        "layer_types": ["sliding_attention" if f else "full_attention" for f in swa],
        "sliding_window": int(m[p + "attention.sliding_window"]),
        "attn_logit_softcapping": None,
        "final_logit_softcapping": float(m[p + "final_logit_softcapping"])
        if p + "final_logit_softcapping" in m else None,
        "rope_parameters": {
            "full_attention": {"rope_type": "proportional",
                               "partial_rotary_factor": 2 * n_pairs / hd_full,
                               "rope_theta": float(m[p + "rope.freq_base"])},
            "sliding_attention": {"rope_type": "default",
                                  "rope_theta": float(m[p + "rope.freq_base_swa"])}},
        "tie_word_embeddings": tied,
    }
    if kv_full != kv_swa:
        text["num_global_key_value_heads"] = kv_full
    if p + "expert_count" in m:   # 26B-A4B: a dense MLP and routed experts in every layer
        text.update(enable_moe_block=True, num_experts=int(m[p + "expert_count"]),
                    top_k_experts=int(m[p + "expert_used_count"]),
                    moe_intermediate_size=int(m[p + "expert_feed_forward_length"]),
                    attention_k_eq_v=True)
    n_rot_swa = int(m.get(p + "rope.dimension_count_swa", hd_swa))
    if n_rot_swa != hd_swa:
        text["rope_parameters"]["sliding_attention"]["partial_rotary_factor"] = n_rot_swa / hd_swa
    top = {"architectures": [hf_arch],
           "bos_token_id": int(m["tokenizer.ggml.bos_token_id"]),
           "eos_token_id": int(m["tokenizer.ggml.eos_token_id"]),
           "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[st_dtype]}
    cg = hf_arch == "Gemma4ForConditionalGeneration"
    if cg:
        config = {**top, "model_type": "gemma4", "text_config": text,
                  "vision_config": {"model_type": "gemma4_vision", "hidden_size": 8},
                  "tie_word_embeddings": tied}
    else:
        config = {**top, **text}
        config["model_type"] = "gemma4_text"
    prefix = CG_PREFIX if cg else "model."
    rng = np.random.default_rng(seed + 1000)
    tensors = []
    for name in r.tensors:
        if name == "rope_freqs.weight":
            continue   # HF derives it from rope_parameters
        w = r.tensor(name)
        if name == "output.weight":
            hf_name = "lm_head.weight"
        elif name.startswith("blk."):
            _, layer, kind, suffix = name.split(".")
            hf_name = (f"{prefix}layers.{layer}.layer_scalar" if kind == "layer_output_scale"
                       else f"{prefix}layers.{layer}.{G4_MOE[kind + '.' + suffix]}"
                       if kind + "." + suffix in G4_MOE
                       else f"{prefix}layers.{layer}.{G4_LAYER[kind]}.{suffix}")
        else:
            hf_name = prefix + G4_GLOBAL[name]
        if name in ("token_embd.weight", "per_layer_token_embd.weight") and pad_vocab:
            w = np.concatenate([w, rng.standard_normal((pad_vocab, w.shape[1]))])
        tensors.append((hf_name, w.shape, st_dtype, _encode(w, st_dtype)))
    if cg:
        for name, shape in (("model.vision_tower.patch_embedder.input_proj.weight", (8, 12)),
                            ("model.embed_vision.embedding_projection.weight",
                             (text["hidden_size"], 8)),
                            ("model.audio_tower.output_proj.weight", (8, 8)),
                            ("model.embed_audio.embedding_projection.weight",
                             (text["hidden_size"], 8))):
            tensors.append((name, shape, st_dtype, _encode(rng.standard_normal(shape), st_dtype)))
    return config, tensors


def convert_gemma4(d, out, vocab, raw):
    """llama.cpp's Gemma4Model for the keys and tensors gemma4_files writes: norms as they
    are, rope_freqs from rope_parameters.full_attention, per-layer FFN widths and KV heads,
    token_embd and per_layer_token_embd trimmed to the tokenizer's token count (as seam)."""
    c = {**raw, **(raw.get("text_config") or {})}
    a = "gemma4"
    layers = c["num_hidden_layers"]
    swa = [t == "sliding_attention" for t in c["layer_types"]]
    shared = c["num_kv_shared_layers"]
    hd_full, hd_swa = c["global_head_dim"], c["head_dim"]
    full, local = c["rope_parameters"]["full_attention"], c["rope_parameters"]["sliding_attention"]
    assert full["rope_type"] == "proportional"
    w = gguf.GGUFWriter(out)
    w.add("general.architecture", a)
    w.add("general.name", os.path.basename(os.path.normpath(d)))
    w.add(f"{a}.block_count", layers, "uint32")
    w.add(f"{a}.context_length", c["max_position_embeddings"], "uint32")
    w.add(f"{a}.embedding_length", c["hidden_size"], "uint32")
    n_ff = c["intermediate_size"]
    if c.get("use_double_wide_mlp"):
        w.add(f"{a}.feed_forward_length",
              [n_ff if L < layers - shared else 2 * n_ff for L in range(layers)], "array<int32>")
    else:
        w.add(f"{a}.feed_forward_length", n_ff, "uint32")
    w.add(f"{a}.attention.head_count", c["num_attention_heads"], "uint32")
    kv = c.get("num_key_value_heads", c["num_attention_heads"])
    if c.get("num_global_key_value_heads") is not None:
        w.add(f"{a}.attention.head_count_kv",
              [kv if f else c["num_global_key_value_heads"] for f in swa], "array<int32>")
    else:
        w.add(f"{a}.attention.head_count_kv", kv, "uint32")
    w.add(f"{a}.attention.key_length", hd_full, "uint32")
    w.add(f"{a}.attention.value_length", hd_full, "uint32")
    w.add(f"{a}.attention.key_length_swa", hd_swa, "uint32")
    w.add(f"{a}.attention.value_length_swa", hd_swa, "uint32")
    w.add(f"{a}.rope.dimension_count", hd_full, "uint32")
    w.add(f"{a}.rope.dimension_count_swa",
          int(hd_swa * local.get("partial_rotary_factor", 1.0)), "uint32")
    w.add(f"{a}.rope.freq_base", float(full["rope_theta"]), "float32")
    w.add(f"{a}.rope.freq_base_swa", float(local["rope_theta"]), "float32")
    w.add(f"{a}.attention.sliding_window", c["sliding_window"], "uint32")
    w.add(f"{a}.attention.sliding_window_pattern", swa, "array<bool>")
    w.add(f"{a}.attention.shared_kv_layers", shared, "uint32")
    w.add(f"{a}.embedding_length_per_layer_input", c.get("hidden_size_per_layer_input") or 0,
          "uint32")
    w.add(f"{a}.attention.layer_norm_rms_epsilon", float(c["rms_norm_eps"]), "float32")
    if c.get("final_logit_softcapping"):
        w.add(f"{a}.final_logit_softcapping", float(c["final_logit_softcapping"]), "float32")
    w.add(f"{a}.vocab_size", c["vocab_size"], "uint32")
    if c.get("enable_moe_block", bool(c.get("num_experts"))):
        w.add(f"{a}.expert_count", c["num_experts"], "uint32")
        w.add(f"{a}.expert_used_count", c["top_k_experts"], "uint32")
        w.add(f"{a}.expert_feed_forward_length", c["moe_intermediate_size"], "uint32")
    for k, (v, t) in vocab.items():
        w.add(k, v, type=t)
    n_pairs = int(hd_full * full["partial_rotary_factor"] / 2)
    divisors = [1.0] * n_pairs + [1e30] * (hd_full // 2 - n_pairs)
    w.add_tensor("rope_freqs.weight", np.asarray(divisors, dtype=np.float32), "F32")
    n_tokens = len(vocab["tokenizer.ggml.tokens"][0])
    layer_kinds = {v: k for k, v in G4_LAYER.items()}
    global_kinds = {v: k for k, v in G4_GLOBAL.items()}
    for hf_name, (dtype, shape, data) in sorted(read_checkpoint(d).items()):
        name = hf_name.replace("language_model.", "", 1)
        if any(x in name for x in G4_DROPPED):
            continue
        if name == "lm_head.weight":
            if c.get("tie_word_embeddings", True):
                continue
            gname = "output.weight"
        elif name.startswith("model.layers."):
            parts = name.split(".")
            moe_kinds = {v: k for k, v in G4_MOE.items()}
            if parts[3] == "layer_scalar":
                gname = f"blk.{parts[2]}.layer_output_scale.weight"
            elif ".".join(parts[3:]) in moe_kinds:
                gname = f"blk.{parts[2]}.{moe_kinds['.'.join(parts[3:])]}"
            else:
                gname = f"blk.{parts[2]}.{layer_kinds['.'.join(parts[3:-1])]}.{parts[-1]}"
        else:
            gname = global_kinds[name[len("model."):]]
        if len(shape) == 1:
            w.add_tensor(gname, to_f32(dtype, shape, data), "F32")
            continue
        raw_rows = np.frombuffer(data, dtype="<f4" if dtype == "F32" else "<u2").reshape(shape)
        if gname in ("token_embd.weight", "per_layer_token_embd.weight"):
            raw_rows = raw_rows[:n_tokens]
            shape = raw_rows.shape
        w.add_tensor_raw(gname, list(reversed(shape)), dtype,
                         np.ascontiguousarray(raw_rows).tobytes())
    w.write()


# ----------------------------------------------------------------------------
# convert: HF llama directory -> GGUF (what llama.cpp's converter writes for these keys)


def convert(d, out, vocab):
    with open(os.path.join(d, "config.json")) as f:
        c = json.load(f)
    if GGUF_ARCH.get(c["architectures"][0]) in GEMMA_ARCHS:
        return convert_gemma(d, out, vocab, c)
    if GGUF_ARCH.get(c["architectures"][0]) == "gemma4":
        return convert_gemma4(d, out, vocab, c)
    if hf_families.is_family(c["architectures"][0]):
        return hf_families.convert(d, out, vocab, c)
    a = GGUF_ARCH[c["architectures"][0]]
    heads = c["num_attention_heads"]
    kv_heads = c.get("num_key_value_heads", heads)
    head_dim = c.get("head_dim", c["hidden_size"] // heads)
    w = gguf.GGUFWriter(out)
    w.add("general.architecture", a)
    w.add("general.name", os.path.basename(os.path.normpath(d)))
    w.add(f"{a}.block_count", c["num_hidden_layers"])
    w.add(f"{a}.context_length", c["max_position_embeddings"])
    w.add(f"{a}.embedding_length", c["hidden_size"])
    w.add(f"{a}.feed_forward_length", c["intermediate_size"])
    w.add(f"{a}.attention.head_count", heads)
    w.add(f"{a}.attention.head_count_kv", kv_heads)
    w.add(f"{a}.rope.freq_base", float(c.get("rope_theta", (c.get("rope_parameters") or {})
                                             .get("rope_theta", 10000.0))))
    w.add(f"{a}.attention.layer_norm_rms_epsilon", float(c["rms_norm_eps"]))
    if "head_dim" in c:
        w.add(f"{a}.attention.key_length", head_dim)
        w.add(f"{a}.attention.value_length", head_dim)
    n_rot = head_dim
    if "partial_rotary_factor" in c:  # phi3's converter: int(pct * n_embd) // n_head
        n_rot = int(c["partial_rotary_factor"] * c["hidden_size"]) // heads
    w.add(f"{a}.rope.dimension_count", n_rot)
    w.add(f"{a}.vocab_size", c["vocab_size"])
    moe = c["architectures"][0] if c["architectures"][0] in MOE_ROUTER else None
    if moe:
        w.add(f"{a}.expert_count", c.get("num_experts", c.get("num_local_experts")), "uint32")
        w.add(f"{a}.expert_used_count", c["num_experts_per_tok"], "uint32")
        if "moe_intermediate_size" in c:
            w.add(f"{a}.expert_feed_forward_length", c["moe_intermediate_size"], "uint32")
    rs = c.get("rope_scaling") or c.get("rope_parameters") or {}
    rtype = rs.get("rope_type", rs.get("type"))
    if a == "phi3":
        # phi3's converter: training context, window (0 = none), LongRoPE tensors below.
        orig = rs.get("original_max_position_embeddings", c.get("original_max_position_embeddings"))
        if orig is not None:
            w.add(f"{a}.rope.scaling.original_context_length", int(orig), "uint32")
        w.add(f"{a}.attention.sliding_window", int(c.get("sliding_window") or 0), "uint32")
        if rtype in ("longrope", "su"):
            scale = c["max_position_embeddings"] / orig
            af = math.sqrt(1 + math.log(scale) / math.log(orig)) if scale > 1.0 else 1.0
            w.add(f"{a}.rope.scaling.attn_factor", af, "float32")
            for t, k in (("rope_factors_long.weight", "long_factor"),
                         ("rope_factors_short.weight", "short_factor")):
                w.add_tensor(t, np.asarray(rs[k], dtype=np.float32), "F32")
    elif rtype in ("linear", "yarn") and rs.get("factor") is not None:
        # The generic converter's keys (no yarn_log_multiplier: it leaves mscale_all_dim out).
        w.add(f"{a}.rope.scaling.type", rtype)
        w.add(f"{a}.rope.scaling.factor", float(rs["factor"]), "float32")
        if rtype == "yarn":
            w.add(f"{a}.rope.scaling.original_context_length",
                  int(rs["original_max_position_embeddings"]), "uint32")
            for hk, k in (("extrapolation_factor", "yarn_ext_factor"),
                          ("attention_factor", "yarn_attn_factor"),
                          ("beta_fast", "yarn_beta_fast"), ("beta_slow", "yarn_beta_slow")):
                if rs.get(hk) is not None:
                    w.add(f"{a}.rope.scaling.{k}", float(rs[hk]), "float32")
        if a == "mistral3":  # Mistral3Model.Ministral3Model's additions
            w.add(f"{a}.rope.scaling.yarn_log_multiplier", float(rs["mscale_all_dim"]), "float32")
            w.add(f"{a}.attention.temperature_scale", float(rs["llama_4_scaling_beta"]),
                  "float32")
    for k, (v, t) in vocab.items():
        w.add(k, v, type=t)
    ckpt = read_checkpoint(d)
    ggml = {"F32": "F32", "F16": "F16", "BF16": "BF16"}
    names = {"model.embed_tokens.weight": "token_embd.weight",
             "model.norm.weight": "output_norm.weight", "lm_head.weight": "output.weight"}
    per_layer = {v: k for k, v in PER_LAYER.items()}
    if a == "phi3":
        per_layer.update({v: k for k, v in PHI3_LAYER.items()})
    stacks = {}  # (layer, GGUF kind) -> {expert: raw 2-D array}, or the fused 3-D array
    if moe:
        per_layer[MOE_ROUTER[moe]] = "ffn_gate_inp"
        expert_prefix, expert_names = MOE_EXPERTS[moe]
        expert_kind = {v: k for k, v in expert_names.items()}
    if rtype == "llama3":
        w.add_tensor("rope_freqs.weight",
                     rope_factors(rs, float(c.get("rope_theta", 10000.0)), head_dim), "F32")
    for hf_name in sorted(ckpt):
        dtype, shape, data = ckpt[hf_name]
        if hf_name in names:
            name = names[hf_name]
            if name == "output.weight" and c.get("tie_word_embeddings"):
                continue
        else:
            parts = hf_name.split(".")
            rest = ".".join(parts[3:])
            if moe and rest.startswith(expert_prefix + "."):
                raw = np.frombuffer(data, dtype="<f4" if dtype == "F32" else "<u2").reshape(shape)
                tail = rest[len(expert_prefix) + 1:].removesuffix(".weight").split(".")
                if tail == ["gate_up_proj"]:  # transformers 5: [E, 2 n_ff, dim], split on rows
                    half = shape[1] // 2
                    stacks[(parts[2], "ffn_gate_exps")] = (dtype, raw[:, :half, :])
                    stacks[(parts[2], "ffn_up_exps")] = (dtype, raw[:, half:, :])
                elif tail == ["down_proj"]:
                    stacks[(parts[2], "ffn_down_exps")] = (dtype, raw)
                else:
                    e, kind = int(tail[0]), expert_kind[tail[1]]
                    stacks.setdefault((parts[2], kind), (dtype, {}))[1][e] = raw
                continue
            name = f"blk.{parts[2]}.{per_layer['.'.join(parts[3:-1])]}.{parts[-1]}"
        # Only per-layer names (blk.N.attn_q.weight) have a third part.
        permute = a in ("llama", "mistral3") and name.split(".")[2:3] in (["attn_q"], ["attn_k"])
        if len(shape) == 1 and permute:  # a llama q/k bias follows its rows
            v = to_f32(dtype, shape, data).reshape(-1, 1)
            v = halves_to_pairs(v, heads if ".attn_q." in name else kv_heads)
            w.add_tensor(name, v.reshape(-1), "F32")
            continue
        if len(shape) == 1:  # norms and biases are stored as F32, as the converters do
            w.add_tensor(name, to_f32(dtype, shape, data), "F32")
            continue
        raw = np.frombuffer(data, dtype="<f4" if dtype == "F32" else "<u2").reshape(shape)
        if permute:
            raw = halves_to_pairs(raw, heads if ".attn_q." in name else kv_heads)
        w.add_tensor_raw(name, list(reversed(shape)), ggml[dtype], np.ascontiguousarray(raw).tobytes())
    for (layer, kind), (dtype, parts) in sorted(stacks.items()):
        stacked = np.stack([parts[e] for e in sorted(parts)]) if isinstance(parts, dict) else parts
        w.add_tensor_raw(f"blk.{layer}.{kind}.weight", list(reversed(stacked.shape)), ggml[dtype],
                         np.ascontiguousarray(stacked).tobytes())
    w.write()


def main(argv=None):
    p = argparse.ArgumentParser(prog="hf.py")
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("--out", required=True)
    g.add_argument("--gguf")
    g.add_argument("--st-dtype", default="F32")
    g.add_argument("--shards", type=int, default=1)
    g.add_argument("--arch", default="llama", choices=sorted(HF_ARCHS))
    g.add_argument("--hf-arch", help="config.json class (default: the --arch's own)")
    g.add_argument("--metaspace", action="store_true")
    g.add_argument("--template-list", action="store_true")
    g.add_argument("--no-add-bos-flag", action="store_true")
    g.add_argument("--dim", type=int, default=48)
    g.add_argument("--layers", type=int, default=2)
    g.add_argument("--heads", type=int, default=3)
    g.add_argument("--kv-heads", type=int)
    g.add_argument("--ffn", type=int, default=100)
    g.add_argument("--vocab", type=int, default=300)
    g.add_argument("--ctx", type=int, default=256)
    g.add_argument("--tied", action="store_true")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--rope-theta", type=float, default=10000.0)
    g.add_argument("--head-dim", type=int)
    g.add_argument("--norm-eps", type=float, default=1e-5)
    g.add_argument("--llama3-rope-freqs", action="store_true")
    g.add_argument("--rope-dim", type=int, help="rotated dims (partial_rotary_factor)")
    g.add_argument("--window", type=int, help="sliding_window (MistralForCausalLM)")
    g.add_argument("--orig-ctx", type=int, help="original_max_position_embeddings")
    g.add_argument("--yarn", type=float, metavar="FACTOR", help="rope_scaling yarn")
    g.add_argument("--yarn-beta-fast", type=float)
    g.add_argument("--yarn-beta-slow", type=float)
    g.add_argument("--yarn-attn-factor", type=float, help="rope_scaling attention_factor")
    g.add_argument("--longrope", action="store_true", help="phi3 LongRoPE long/short factors")
    g.add_argument("--yarn-log-mul", type=float, help="mscale_all_dim (mistral3)")
    g.add_argument("--attn-temp-scale", type=float, help="llama_4_scaling_beta (mistral3)")
    g.add_argument("--swa-pattern", type=reference._swa_pattern_arg,
                   help="gemma: sliding_window_pattern period N, or per-layer flags 1,0,1")
    g.add_argument("--attn-softcap", type=float, help="attn_logit_softcapping (gemma2)")
    g.add_argument("--final-softcap", type=float, help="final_logit_softcapping (gemma)")
    g.add_argument("--rope-base-swa", type=float, help="rope_local_base_freq (gemma3)")
    g.add_argument("--rope-linear", type=float, help="rope_scaling linear factor (gemma3)")
    g.add_argument("--rope-parameters", action="store_true",
                   help="gemma3: RoPE as rope_parameters.{full,sliding}_attention")
    g.add_argument("--drop", action="append", default=[], metavar="TENSOR",
                   help="gemma4: leave this GGUF tensor out (blk.N.attn_v.weight, output.weight)")
    g.add_argument("--experts", type=int,
                   help="experts per layer: llama (MixtralForCausalLM) or qwen3moe")
    g.add_argument("--experts-used", type=int, help="num_experts_per_tok")
    g.add_argument("--fused-experts", action="store_true",
                   help="qwen3moe: experts as transformers 5 saves them (gate_up_proj, down_proj)")
    g.add_argument("--dense-experts", action="store_true",
                   help="gpt-oss: dequantized experts (gate_up_proj, down_proj), not MXFP4")
    g.add_argument("--pad-vocab", type=int, default=0,
                   help="gemma: embedding rows past the tokenizer (trimmed by the converter)")
    t = sub.add_parser("tokenizer", help="tokenizer.json + tokenizer_config.json from a GGUF")
    t.add_argument("gguf")
    t.add_argument("--out", required=True)
    c = sub.add_parser("convert")
    c.add_argument("dir")
    c.add_argument("--out", required=True)
    c.add_argument("--vocab-from", required=True, help="GGUF whose tokenizer.* keys to copy")
    a = p.parse_args(argv)
    try:
        if a.cmd == "gen":
            gen(a.out, a.gguf, a.st_dtype, a.shards, a.hf_arch, a.metaspace,
                template_list=a.template_list, add_bos_flag=not a.no_add_bos_flag,
                dim=a.dim, layers=a.layers, heads=a.heads, kv_heads=a.kv_heads or a.heads,
                ffn=a.ffn, vocab=a.vocab, ctx=a.ctx, tied=a.tied, seed=a.seed,
                rope_theta=a.rope_theta, head_dim=a.head_dim, norm_eps=a.norm_eps,
                llama3_rope_freqs=a.llama3_rope_freqs, arch=a.arch, rope_dim=a.rope_dim,
                window=a.window, orig_ctx=a.orig_ctx, yarn=a.yarn,
                yarn_beta_fast=a.yarn_beta_fast, yarn_beta_slow=a.yarn_beta_slow,
                yarn_attn_factor=a.yarn_attn_factor, longrope=a.longrope,
                yarn_log_mul=a.yarn_log_mul, attn_temp_scale=a.attn_temp_scale,
                swa_pattern=a.swa_pattern, attn_softcap=a.attn_softcap,
                final_softcap=a.final_softcap, rope_base_swa=a.rope_base_swa,
                rope_linear=a.rope_linear, pad_vocab=a.pad_vocab,
                rope_parameters=a.rope_parameters, drop=a.drop, experts=a.experts,
                experts_used=a.experts_used, fused_experts=a.fused_experts,
                dense_experts=a.dense_experts)
        elif a.cmd == "tokenizer":
            write_tokenizer(a.gguf, a.out)
        else:
            r = gguf.GGUFReader(a.vocab_from)
            vocab = {k: (v, r.types[k]) for k, v in r.metadata.items()
                     if k.startswith("tokenizer.")}
            convert(a.dir, a.out, vocab)
    except (reference.RefError, gguf.GGUFError, OSError, KeyError, ValueError) as e:
        print(f"hf.py: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
