#!/usr/bin/env python3
"""reference.py - an independent float64 numpy reference of decoder-only LLM forward passes.

Written from the published math (LLaMA: RMSNorm, SwiGLU, rotary embeddings; RoFormer
for RoPE; GQA), not from any engine's code.  Weights are read with tools/gguf.py and
decoded exactly, then every computation runs in float64.

Commands
  reference.py gen --out FILE.gguf [--dim 48 --layers 2 --heads 3 --kv-heads 1 --ffn 100
                   --vocab 300 --ctx 256 --tied|--untied --dtype F32|F16|Q8_0|Q4_0
                   --seed 0 --rope-theta 10000 --rope-dim N --head-dim N --norm-eps 1e-5
                   --llama3-rope-freqs --std S --name NAME --arch ARCH --window W
                   --rope-linear F --yarn F [--yarn-beta-fast B --yarn-beta-slow B
                   --yarn-attn-factor A --yarn-log-mul M] --orig-ctx N --longrope
                   --rope-attn-factor A --attn-temp-scale BETA ...]
        random-weight GGUF of one recipe with real metadata keys, tensor names and a
        small SentencePiece-style vocabulary.
  reference.py logits MODEL.gguf --tokens 1,2,3 --out FILE.f32 [--chunk N] [--n-ctx N]
        float32 LE logits for every position, shape (n_tokens, n_vocab), row-major.
        --n-ctx: the context the model runs with (LongRoPE's long/short choice).
  reference.py greedy MODEL.gguf --tokens 1,2,3 --n 32 [--recompute] [--show]
        JSON list of the n greedy next ids (argmax, lowest id on ties).
  reference.py gen --arch gemma4|qwen35|qwen35moe|qwen3next|qwen3moe|gpt-oss --out FILE.gguf
                   [--seed S --experts N --experts-used K] [--mtp N (qwen35)]
                   [--split-experts (gemma4 with --experts)]
  reference.py gen --arch llama --experts N [--experts-used K] --out FILE.gguf
        the per-layer families (tools/families.py): MoE, Gated DeltaNet hybrids, gemma4.
  reference.py selftest [--quick]
        reader/writer round trips, quantizer and dequantizer bit-exactness, forward-pass
        invariants, and validation against llama.cpp outputs in $SEAM_SHARED_DIR
        (default /work/shared).

Architectures are recipes (RECIPES): a dict of options read by one forward pass, so a
new architecture is a new dict (plus, if needed, a new option), never a copy of the loop.
"""

import argparse
import inspect
import json
import math
import os
import subprocess
import sys
import tempfile
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf  # noqa: E402

# ----------------------------------------------------------------------------
# architecture recipes
#
# rope:          "normal" rotates adjacent pairs (2i, 2i+1) (llama as stored in GGUF);
#                "neox" rotates (i, i + n_rot/2).
# qkv_bias:      add blk.N.attn_{q,k,v}.bias when present.
# qk_norm:       per-head RMSNorm of q and k (blk.N.attn_{q,k}_norm.weight) before RoPE.
# sliding_window:metadata key suffix holding the window (a query at position i sees keys j
#                with i - window < j <= i), or None.
# swa_default:   window when that key is absent (gemma2: 4096); 0 = no window.
# swa_period:    which layers use the window when attention.sliding_window_pattern is absent:
#                period P means layer l is local unless l % P == P - 1; 0 = every layer.
#                The key itself may hold a period or one flag per layer.
# swa_rope:      local layers rotate with rope.freq_base_swa (default 10000) and no linear
#                scaling (gemma3's local/global RoPE); global layers use rope.freq_base.
# act:           FFN gate activation ("silu" -> SwiGLU, "gelu_tanh" -> GeGLU, tanh form).
# embed_scale:   multiply token embeddings by sqrt(n_embd) (gemma).
# post_norms:    RMSNorm the attention and FFN outputs (blk.N.post_attention_norm,
#                blk.N.post_ffw_norm) before adding them to the residual (gemma2/3).
# attn_softcap / final_softcap: (key suffix, default or None): score = c * tanh(score / c)
#                on attention scores (after scaling) / on the final logits.
# qpas_27b_layers: gemma's query_pre_attn_scalar, which GGUF does not carry: the attention
#                scale is 1/sqrt(n_embd / n_head) for the 27B model (this block count), else
#                1/sqrt(head_dim) (gemma_pytorch config).
# fused_qkv:     blk.N.attn_qkv.weight holds rows [q; k; v] (phi3).
# fused_gate_up: blk.N.ffn_up.weight holds rows [gate; up] (2 * n_ff), no ffn_gate (phi3).
# attn_temp:     Llama 4 attention temperature (mistral3): with attention.temperature_scale
#                = beta, q at position p is scaled by 1 + beta * ln(1 + floor(p / n_orig)),
#                n_orig = rope.scaling.original_context_length.
# RoPE scaling (any recipe): rope.scaling.type linear (positions / factor), yarn (below),
# llama3 (rope_freqs.weight divides the frequencies), and phi3 LongRoPE
# (rope_factors_long/short.weight divide them: long when the context the model runs with,
# n_ctx, exceeds n_orig). rope.scaling.attn_factor multiplies cos and sin in every case.
# GGUF gemma norms already hold HF's (1 + w): convert_hf_to_gguf adds the 1, so every norm
# here is x / rms(x) * w on the stored weight.
DEFAULT_RECIPE = {
    "rope": "normal",
    "qkv_bias": False,
    "qk_norm": False,
    "sliding_window": None,
    "swa_default": 0,
    "swa_period": 0,
    "swa_rope": False,
    "act": "silu",
    "embed_scale": False,
    "post_norms": False,
    "attn_softcap": None,
    "final_softcap": None,
    "qpas_27b_layers": None,
    "fused_qkv": False,
    "fused_gate_up": False,
    "attn_temp": False,
}
_GEMMA = {"rope": "neox", "act": "gelu_tanh", "embed_scale": True, "post_norms": True,
          "sliding_window": "attention.sliding_window"}
RECIPES = {
    # Mistral 7B v0.1 is a llama whose file states a window (every layer, HF semantics).
    "llama": {"sliding_window": "attention.sliding_window"},
    "qwen2": {"rope": "neox", "qkv_bias": True},
    "qwen3": {"rope": "neox", "qk_norm": True},
    "gemma2": dict(_GEMMA, swa_default=4096, swa_period=2, qpas_27b_layers=46,
                   attn_softcap=("attn_logit_softcapping", 50.0),
                   final_softcap=("final_logit_softcapping", 30.0)),
    "gemma3": dict(_GEMMA, qk_norm=True, swa_period=6, swa_rope=True, qpas_27b_layers=62,
                   final_softcap=("final_logit_softcapping", None)),
    "phi3": {"rope": "neox", "fused_qkv": True, "fused_gate_up": True},
    "mistral3": {"attn_temp": True},
}


class RefError(Exception):
    pass


def rms_norm(x, w, eps):
    """x: (..., n) float64; w: (n,)."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def silu(x):
    return x / (1.0 + np.exp(-x))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


ACTIVATIONS = {"silu": silu, "gelu_tanh": gelu_tanh}


def soft_cap(x, cap):
    return cap * np.tanh(x / cap)


def rope_angles(positions, n_rot, base, freq_factors=None, freq_scale=1.0):
    """(T,) positions -> (T, n_rot/2) angles p * scale * base^(-2i/n_rot) / factor_i."""
    i = np.arange(n_rot // 2, dtype=np.float64)
    inv = base ** (-2.0 * i / n_rot)
    if freq_factors is not None:
        inv = inv / freq_factors
    return np.asarray(positions, dtype=np.float64)[:, None] * freq_scale * inv[None, :]


def yarn_inv_freq(n_rot, base, factor, orig_ctx, beta_fast=32.0, beta_slow=1.0, ext=1.0,
                  freq_factors=None):
    """YaRN (Peng et al. 2023, "YaRN: Efficient Context Window Extension", sec. 3.2-3.3):
    pair i keeps its original frequency when it turns more than beta_fast times over the
    original context, is interpolated (divided by the scale s) when it turns fewer than
    beta_slow times, and mixes linearly in between. The ramp ends are pair indices, floored
    and ceiled as in the reference implementation. ext scales the original-frequency weight.
    """
    i = np.arange(n_rot // 2, dtype=np.float64)
    orig = base ** (-2.0 * i / n_rot)
    if freq_factors is not None:
        orig = orig / freq_factors

    def pair_for(rotations):  # the pair whose wavelength fits `rotations` times in orig_ctx
        return n_rot * math.log(orig_ctx / (rotations * 2 * math.pi)) / (2 * math.log(base))
    lo = max(math.floor(pair_for(beta_fast)), 0)
    hi = min(math.ceil(pair_for(beta_slow)), n_rot - 1)
    ramp = np.clip((i - lo) / max(hi - lo, 0.001), 0.0, 1.0)
    keep = (1.0 - ramp) * ext
    return orig / factor * (1.0 - keep) + orig * keep


def yarn_mscale(s, mscale=1.0):
    """YaRN's attention factor sqrt(1/t) = 0.1 ln s + 1 (1 for s <= 1)."""
    return 1.0 if s <= 1 else 0.1 * mscale * math.log(s) + 1.0


def apply_rope(x, ang, style, mscale=1.0):
    """x: (heads, T, head_dim); ang: (T, n_rot/2). Dimensions >= n_rot pass through.
    cos and sin are multiplied by mscale (YaRN / LongRoPE attention factor)."""
    n_rot = 2 * ang.shape[1]
    out = x.copy()
    cos, sin = mscale * np.cos(ang)[None], mscale * np.sin(ang)[None]
    if style == "normal":
        a, b = x[..., 0:n_rot:2], x[..., 1:n_rot:2]
        out[..., 0:n_rot:2] = a * cos - b * sin
        out[..., 1:n_rot:2] = a * sin + b * cos
    elif style == "neox":
        h = n_rot // 2
        a, b = x[..., :h], x[..., h:n_rot]
        out[..., :h] = a * cos - b * sin
        out[..., h:n_rot] = a * sin + b * cos
    else:
        raise RefError(f"unknown rope style {style}")
    return out


class KVCache:
    """Per-layer K and V for the positions seen so far: (n_head_kv, n_past, head_dim)."""

    def __init__(self, n_layer):
        self.k = [None] * n_layer
        self.v = [None] * n_layer
        self.n_past = 0


class Model:
    def __init__(self, path, recipe_overrides=None, n_ctx=None):
        """n_ctx: the context size the model runs with (LongRoPE's long/short choice);
        default the file's context_length, as llama.cpp's default context."""
        r = gguf.GGUFReader(path)
        self.reader = r
        md = r.metadata
        arch = md.get("general.architecture")
        if arch not in RECIPES:
            raise RefError(f"architecture {arch!r} has no recipe; known: {sorted(RECIPES)}")
        self.arch = arch
        self.recipe = {**DEFAULT_RECIPE, **RECIPES[arch], **(recipe_overrides or {})}

        def hp(key, default=None, required=True):
            full = f"{arch}.{key}"
            if full in md:
                v = md[full]
                if isinstance(v, (list, np.ndarray)):
                    if len(set(np.asarray(v).tolist())) != 1:
                        raise RefError(f"per-layer {full} is not supported yet")
                    v = np.asarray(v).tolist()[0]
                return v
            if required and default is None:
                raise RefError(f"{path}: missing metadata {full}")
            return default

        self.n_embd = int(hp("embedding_length"))
        self.n_layer = int(hp("block_count"))
        self.n_head = int(hp("attention.head_count"))
        self.n_head_kv = int(hp("attention.head_count_kv", self.n_head))
        self.head_dim = int(hp("attention.key_length", self.n_embd // self.n_head))
        self.v_head_dim = int(hp("attention.value_length", self.head_dim))
        self.n_rot = int(hp("rope.dimension_count", self.head_dim))
        self.freq_base = float(hp("rope.freq_base", 10000.0))
        self.eps = float(hp("attention.layer_norm_rms_epsilon", 1e-5))
        self.n_ctx_train = int(hp("context_length", 2048, required=False))
        self.n_orig = int(hp("rope.scaling.original_context_length", self.n_ctx_train,
                             required=False))
        self.n_ctx = int(n_ctx) if n_ctx else self.n_ctx_train
        scaling = hp("rope.scaling.type", "none", required=False)
        factor = float(hp("rope.scaling.factor", 0.0, required=False) or 0.0)
        self.freq_scale = 1.0
        self.yarn = None
        self.mscale = float(hp("rope.scaling.attn_factor", 1.0, required=False))
        self.mscale_scaled = 1.0   # extra factor on layers that use the scaled rotation
        if scaling == "linear" and factor > 0:
            self.freq_scale = 1.0 / factor
        elif scaling == "yarn":
            s = factor if factor > 0 else 1.0
            self.freq_scale = 1.0 / s   # marks the layers that use the scaled rotation
            self.yarn = dict(factor=s, orig_ctx=self.n_orig,
                             beta_fast=float(hp("rope.scaling.yarn_beta_fast", 32.0,
                                                required=False)),
                             beta_slow=float(hp("rope.scaling.yarn_beta_slow", 1.0,
                                                required=False)),
                             ext=float(hp("rope.scaling.yarn_ext_factor", 1.0, required=False)))
            af = hp("rope.scaling.yarn_attn_factor", None, required=False)
            log_mul = float(hp("rope.scaling.yarn_log_multiplier", 0.0, required=False))
            if af is not None:
                self.mscale_scaled = float(af)      # HF: an explicit attention_factor wins
            elif log_mul:
                self.mscale_scaled = yarn_mscale(s) / yarn_mscale(s, log_mul)
            else:
                self.mscale_scaled = yarn_mscale(s)
        elif scaling not in ("none", "linear", "longrope", None) and \
                "rope_freqs.weight" not in r.tensors:
            raise RefError(f"rope scaling {scaling!r} is not supported yet")
        rc = self.recipe
        sw = rc["sliding_window"]
        self.window = int(md.get(f"{arch}.{sw}", rc["swa_default"])) if sw else 0
        self.swa_layers = None  # None: every layer uses the window (when there is one)
        self.freq_base_swa, self.freq_scale_swa = self.freq_base, self.freq_scale
        if self.window:
            pat = md.get(f"{arch}.attention.sliding_window_pattern", rc["swa_period"])
            if isinstance(pat, (list, np.ndarray)):
                if len(pat) != self.n_layer:
                    raise RefError("attention.sliding_window_pattern needs one flag per layer")
                self.swa_layers = [bool(v) for v in pat]
            else:
                P = int(pat)
                self.swa_layers = [P == 0 or L % P < P - 1 for L in range(self.n_layer)]
            if rc["swa_rope"]:
                self.freq_base_swa = float(md.get(f"{arch}.rope.freq_base_swa", 10000.0))
                self.freq_scale_swa = 1.0

        def cap(opt):
            if rc[opt] is None:
                return 0.0
            key, default = rc[opt]
            v = md.get(f"{arch}.{key}", default)
            return 0.0 if v is None else float(v)
        self.attn_softcap = cap("attn_softcap")
        self.final_softcap = cap("final_softcap")
        self.embed_scale = math.sqrt(self.n_embd) if rc["embed_scale"] else 1.0
        qpas = self.head_dim
        if rc["qpas_27b_layers"] is not None and self.n_layer == rc["qpas_27b_layers"]:
            qpas = self.n_embd // self.n_head
        self.attn_scale = 1.0 / math.sqrt(qpas)
        if int(hp("expert_count", 0, required=False) or 0) > 0:
            raise RefError("mixture-of-experts models are not supported")
        longrope = [t in r.tensors for t in ("rope_factors_long.weight",
                                             "rope_factors_short.weight")]
        if any(longrope) and not all(longrope):
            raise RefError("LongRoPE needs both rope_factors_long and rope_factors_short")
        self.temp_scale = float(hp("attention.temperature_scale", 0.0, required=False)) \
            if rc["attn_temp"] else 0.0
        if self.n_head % self.n_head_kv:
            raise RefError("head_count must be a multiple of head_count_kv")
        if self.n_rot % 2 or self.n_rot > self.head_dim:
            raise RefError("rope.dimension_count must be even and <= head_dim")

        need = ["token_embd.weight", "output_norm.weight"]
        for i in range(self.n_layer):
            names = ["attn_norm", "attn_output", "ffn_norm", "ffn_up", "ffn_down"]
            names += ["attn_qkv"] if rc["fused_qkv"] else ["attn_q", "attn_k", "attn_v"]
            names += [] if rc["fused_gate_up"] else ["ffn_gate"]
            names += ["attn_q_norm", "attn_k_norm"] if rc["qk_norm"] else []
            names += ["post_attention_norm", "post_ffw_norm"] if rc["post_norms"] else []
            need += [f"blk.{i}.{t}.weight" for t in names]
        missing = [n for n in need if n not in r.tensors]
        if missing:
            more = " ..." if len(missing) > 4 else ""
            raise RefError(f"{path}: missing tensors {missing[:4]}{more}")
        self.w = {}
        for name in r.tensors:
            self.w[name] = r.tensor(name).astype(np.float64)
        self.n_vocab = self.w["token_embd.weight"].shape[0]
        self.out_w = self.w.get("output.weight", self.w["token_embd.weight"])
        ff = self.w.get("rope_freqs.weight")
        if ff is not None and ff.shape != (self.n_rot // 2,):
            raise RefError(f"rope_freqs.weight has shape {ff.shape}, want ({self.n_rot // 2},)")
        if all(longrope):
            ff = self.w["rope_factors_long.weight" if self.n_ctx > self.n_orig
                        else "rope_factors_short.weight"]
            if ff.shape != (self.n_rot // 2,):
                raise RefError(f"LongRoPE factors have shape {ff.shape}, want ({self.n_rot // 2},)")
        self.freq_factors = ff

    def layer(self, i, name):
        return self.w.get(f"blk.{i}.{name}")

    def forward(self, tokens, cache=None):
        """Logits (len(tokens), n_vocab) for tokens appended after the cache's positions."""
        tokens = np.asarray(tokens, dtype=np.int64)
        if tokens.ndim != 1 or tokens.size == 0:
            raise RefError("need a non-empty 1-D list of token ids")
        if tokens.min() < 0 or tokens.max() >= self.n_vocab:
            raise RefError(f"token id out of range [0, {self.n_vocab})")
        if cache is None:
            cache = KVCache(self.n_layer)
        rc = self.recipe
        T = tokens.size
        p0 = cache.n_past
        pos = np.arange(p0, p0 + T)
        if self.yarn:
            inv = yarn_inv_freq(self.n_rot, self.freq_base, freq_factors=self.freq_factors,
                                **self.yarn)
            ang_global = pos.astype(np.float64)[:, None] * inv[None, :]
            inv_l = yarn_inv_freq(self.n_rot, self.freq_base_swa, freq_factors=self.freq_factors,
                                  **dict(self.yarn, factor=1.0 / self.freq_scale_swa
                                         if self.freq_scale_swa != self.freq_scale
                                         else self.yarn["factor"]))
            ang_local = pos.astype(np.float64)[:, None] * inv_l[None, :]
        else:
            ang_global = rope_angles(pos, self.n_rot, self.freq_base, self.freq_factors,
                                     self.freq_scale)
            ang_local = rope_angles(pos, self.n_rot, self.freq_base_swa, self.freq_factors,
                                    self.freq_scale_swa)
        ms_global = self.mscale * self.mscale_scaled
        ms_local = ms_global if self.freq_scale_swa == self.freq_scale else self.mscale
        temp = 1.0 + self.temp_scale * np.log1p(np.floor(pos / self.n_orig)) \
            if self.temp_scale else None                         # (T,)
        qpos, kpos = pos[:, None], np.arange(p0 + T)[None, :]
        causal = kpos <= qpos                                    # (T, p0+T)
        windowed = causal & ((qpos - kpos) < self.window) if self.window else causal
        group = self.n_head // self.n_head_kv
        H, HK, D, DV = self.n_head, self.n_head_kv, self.head_dim, self.v_head_dim
        QW, KW = H * D, HK * D
        act = ACTIVATIONS[rc["act"]]

        x = self.w["token_embd.weight"][tokens] * self.embed_scale  # (T, n_embd)
        for L in range(self.n_layer):
            local = bool(self.window) and (self.swa_layers is None or self.swa_layers[L])
            ang = ang_local if local else ang_global
            ms = ms_local if local else ms_global
            allowed = windowed if local else causal
            h = rms_norm(x, self.layer(L, "attn_norm.weight"), self.eps)
            if rc["fused_qkv"]:
                qkv = h @ self.layer(L, "attn_qkv.weight").T     # (T, QW + 2 KW): [q | k | v]
                q, k, v = qkv[:, :QW], qkv[:, QW:QW + KW], qkv[:, QW + KW:]
            else:
                q = h @ self.layer(L, "attn_q.weight").T         # (T, H*D)
                k = h @ self.layer(L, "attn_k.weight").T         # (T, HK*D)
                v = h @ self.layer(L, "attn_v.weight").T         # (T, HK*DV)
            if rc["qkv_bias"]:
                bq, bk, bv = (self.layer(L, f"attn_{t}.bias") for t in "qkv")
                q = q if bq is None else q + bq
                k = k if bk is None else k + bk
                v = v if bv is None else v + bv
            q = q.reshape(T, H, D).transpose(1, 0, 2)            # (H, T, D)
            k = k.reshape(T, HK, D).transpose(1, 0, 2)           # (HK, T, D)
            v = v.reshape(T, HK, DV).transpose(1, 0, 2)          # (HK, T, DV)
            if rc["qk_norm"]:
                q = rms_norm(q, self.layer(L, "attn_q_norm.weight"), self.eps)
                k = rms_norm(k, self.layer(L, "attn_k_norm.weight"), self.eps)
            q = apply_rope(q, ang, rc["rope"], ms)
            k = apply_rope(k, ang, rc["rope"], ms)
            if temp is not None:
                q = q * temp[None, :, None]
            if cache.k[L] is not None:
                k = np.concatenate([cache.k[L], k], axis=1)
                v = np.concatenate([cache.v[L], v], axis=1)
            cache.k[L], cache.v[L] = k, v
            kh = np.repeat(k, group, axis=0)                     # query head h -> kv h//group
            vh = np.repeat(v, group, axis=0)
            s = q @ kh.transpose(0, 2, 1) * self.attn_scale      # (H, T, p0+T)
            if self.attn_softcap:
                s = soft_cap(s, self.attn_softcap)
            s = np.where(allowed[None], s, -np.inf)
            s = s - s.max(axis=-1, keepdims=True)
            p = np.exp(s)
            p /= p.sum(axis=-1, keepdims=True)
            o = (p @ vh).transpose(1, 0, 2).reshape(T, H * DV)   # (T, H*DV)
            a = o @ self.layer(L, "attn_output.weight").T
            if rc["post_norms"]:
                a = rms_norm(a, self.layer(L, "post_attention_norm.weight"), self.eps)
            x = x + a
            h = rms_norm(x, self.layer(L, "ffn_norm.weight"), self.eps)
            if rc["fused_gate_up"]:
                gu = h @ self.layer(L, "ffn_up.weight").T        # (T, 2 n_ff): [gate | up]
                ff = gu.shape[1] // 2
                gate, up = gu[:, :ff], gu[:, ff:]
            else:
                gate = h @ self.layer(L, "ffn_gate.weight").T
                up = h @ self.layer(L, "ffn_up.weight").T
            f = (act(gate) * up) @ self.layer(L, "ffn_down.weight").T
            if rc["post_norms"]:
                f = rms_norm(f, self.layer(L, "post_ffw_norm.weight"), self.eps)
            x = x + f
        cache.n_past = p0 + T
        x = rms_norm(x, self.w["output_norm.weight"], self.eps)
        logits = x @ self.out_w.T                                # (T, n_vocab)
        return soft_cap(logits, self.final_softcap) if self.final_softcap else logits

    def greedy(self, tokens, n, recompute=False, margins=None):
        """n greedy ids (argmax, lowest id on ties). margins: optional list to receive top1-top2."""
        out = []
        if recompute:
            seq = list(tokens)
            for _ in range(n):
                row = self.forward(seq)[-1]
                out.append(_argmax(row, margins))
                seq.append(out[-1])
            return out
        cache = KVCache(self.n_layer)
        row = self.forward(tokens, cache)[-1]
        for i in range(n):
            out.append(_argmax(row, margins))
            if i + 1 < n:
                row = self.forward([out[-1]], cache)[-1]
        return out

    # --- vocabulary helpers (for printing only)
    def decode(self, ids):
        toks = self.reader.metadata.get("tokenizer.ggml.tokens")
        types = self.reader.metadata.get("tokenizer.ggml.token_type")
        if toks is None:
            return " ".join(map(str, ids))
        buf = bytearray()
        for i in ids:
            t = toks[i]
            tt = int(types[i]) if types is not None else 1
            if tt == 6 and t.startswith("<0x") and len(t) == 6:
                buf.append(int(t[3:5], 16))
            elif tt in (2, 3):
                continue
            else:
                buf += t.replace("\u2581", " ").encode("utf-8", "surrogateescape")
        return buf.decode("utf-8", "replace")


def open_model(path, n_ctx=None):
    """Model for the uniform-layer recipes above, families.FamilyModel for the per-layer
    families (mixture of experts, gated-delta-net hybrids, gemma4)."""
    import families
    md = gguf.GGUFReader(path).metadata
    if families.is_family(md.get("general.architecture"), md):
        return families.FamilyModel(path)
    return Model(path, n_ctx=n_ctx)


def _argmax(row, margins=None):
    i = int(np.argmax(row))  # first index of the maximum = lowest id on ties
    if margins is not None:
        rest = np.delete(row, i)
        margins.append(float(row[i] - rest.max()) if rest.size else float("inf"))
    return i


# ----------------------------------------------------------------------------
# random model generator


def _rng(seed, name):
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def sp_vocab(n_vocab):
    """SentencePiece-style vocab: specials, 256 byte tokens, then scored pieces."""
    if n_vocab < 262:
        raise RefError("--vocab must be at least 262 (3 specials + 256 bytes + pieces)")
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [2, 3, 3] + [6] * 256
    letters = "etaoinshrdlucmfwypvbgkjqxz"
    pieces = ["\u2581"] + [f"\u2581{c}" for c in letters] + list(letters)
    pieces += [f"\u2581{a}{b}" for a in letters for b in letters]
    pieces += [f"{a}{b}" for a in letters for b in letters]
    k = 0
    while len(pieces) < n_vocab - len(tokens):  # more than ~1400 pieces: numbered fillers
        pieces.append(f"\u2581w{k}")
        k += 1
    need = n_vocab - len(tokens)
    tokens += pieces[:need]
    types += [1] * need
    scores = [0.0] * 259 + [-float(i) for i in range(need)]
    return tokens, scores, types


def llama3_freq_factors(n_rot, base, orig_ctx, factor=8.0, low=1.0, high=4.0):
    """Llama 3.1 rope frequency factors (divisors of each pair's frequency)."""
    i = np.arange(n_rot // 2, dtype=np.float64)
    freq = base ** (-2.0 * i / n_rot)
    wavelen = 2 * math.pi / freq
    out = np.empty_like(freq)
    for j, wl in enumerate(wavelen):
        if wl < orig_ctx / high:
            out[j] = 1.0
        elif wl > orig_ctx / low:
            out[j] = factor
        else:
            smooth = (orig_ctx / wl - low) / (high - low)
            out[j] = 1.0 / ((1 - smooth) / factor + smooth)
    return out


FILE_TYPES = {"F32": 0, "F16": 1, "Q4_0": 2, "Q8_0": 7}


def _parse_set(item):
    """KEY=VALUE -> (key, int | float | bool | str)."""
    if "=" not in item:
        raise RefError(f"--set wants KEY=VALUE, got {item!r}")
    k, v = item.split("=", 1)
    for conv in (int, float):
        try:
            return k, conv(v)
        except ValueError:
            pass
    if v in ("true", "false"):
        return k, v == "true"
    return k, v


def gen_model(path, dim=48, layers=2, heads=3, kv_heads=1, ffn=100, vocab=300, ctx=256,
              tied=False, dtype="F32", seed=0, rope_theta=10000.0, rope_dim=None,
              head_dim=None, norm_eps=1e-5, llama3_rope_freqs=False, std=None, name=None,
              arch="llama", window=None, swa_pattern=None, attn_softcap=None,
              final_softcap=None, rope_base_swa=None, rope_linear=None, drop=(), sets=(),
              longrope=False, orig_ctx=None, yarn=None, yarn_beta_fast=None,
              yarn_beta_slow=None, yarn_attn_factor=None, yarn_log_mul=None,
              rope_attn_factor=None, attn_temp_scale=None):
    """Write a random-weight GGUF of `arch` (a RECIPES key) with the tensor names and
    metadata keys convert_hf_to_gguf writes; returns the writer's metadata summary.
    window/swa_pattern/attn_softcap/final_softcap/rope_base_swa write the matching
    `<arch>.*` keys (swa_pattern: an int period or a list of per-layer flags);
    rope_linear writes linear rope scaling with that factor; drop omits tensors and
    sets adds raw (key, value) metadata (both for admission tests); longrope adds
    phi3's rope_factors_long/short tensors with the attention factor phi3's converter
    computes (sqrt(1 + ln(ctx / orig_ctx) / ln orig_ctx)); yarn writes YaRN scaling with
    that factor (and the optional yarn_* keys); orig_ctx writes
    rope.scaling.original_context_length; rope_attn_factor rope.scaling.attn_factor;
    attn_temp_scale mistral3's attention.temperature_scale."""
    if arch not in RECIPES:
        raise RefError(f"--arch must be one of {sorted(RECIPES)}")
    rc = dict(DEFAULT_RECIPE, **RECIPES[arch])
    dtype = dtype.upper()
    if dtype not in FILE_TYPES:
        raise RefError(f"--dtype must be one of {sorted(FILE_TYPES)}")
    hd = head_dim or dim // heads
    if head_dim is None and dim % heads:
        raise RefError("--dim must be a multiple of --heads (or pass --head-dim)")
    if heads % kv_heads:
        raise RefError("--heads must be a multiple of --kv-heads")
    n_rot = rope_dim or hd
    if n_rot % 2 or n_rot > hd:
        raise RefError("--rope-dim must be even and <= head_dim")
    if dtype in ("Q8_0", "Q4_0"):
        for n, what in ((dim, "--dim"), (ffn, "--ffn"), (heads * hd, "heads*head_dim")):
            if n % 32:
                raise RefError(f"{dtype} needs {what} to be a multiple of 32 (got {n})")
    # Layer matrices are scaled with 1/sqrt(fan-in) so that attention and FFN visibly move
    # the residual stream at any width, while the planted successor below keeps argmax stable.
    std = std if std is not None else 0.5 / math.sqrt(dim)
    tokens, scores, types = sp_vocab(vocab)

    w = gguf.GGUFWriter(path)
    a = arch
    w.add("general.architecture", a)
    w.add("general.name", name or f"reference-{arch}-{dim}x{layers}-{dtype}")
    w.add("general.file_type", FILE_TYPES[dtype])
    if dtype in ("Q8_0", "Q4_0"):
        w.add("general.quantization_version", 2)
    w.add(f"{a}.vocab_size", vocab)
    w.add(f"{a}.context_length", ctx)
    w.add(f"{a}.embedding_length", dim)
    w.add(f"{a}.block_count", layers)
    w.add(f"{a}.feed_forward_length", ffn)
    w.add(f"{a}.attention.head_count", heads)
    w.add(f"{a}.attention.head_count_kv", kv_heads)
    if head_dim is not None:
        w.add(f"{a}.attention.key_length", hd)
        w.add(f"{a}.attention.value_length", hd)
    w.add(f"{a}.rope.freq_base", float(rope_theta))
    w.add(f"{a}.rope.dimension_count", n_rot)
    w.add(f"{a}.attention.layer_norm_rms_epsilon", float(norm_eps))
    if window is not None:
        w.add(f"{a}.attention.sliding_window", int(window), "uint32")
    if swa_pattern is not None:
        if isinstance(swa_pattern, (list, tuple)):
            w.add(f"{a}.attention.sliding_window_pattern", [bool(v) for v in swa_pattern],
                  "array<bool>")
        else:
            w.add(f"{a}.attention.sliding_window_pattern", int(swa_pattern), "uint32")
    if attn_softcap is not None:
        w.add(f"{a}.attn_logit_softcapping", float(attn_softcap), "float32")
    if final_softcap is not None:
        w.add(f"{a}.final_logit_softcapping", float(final_softcap), "float32")
    if rope_base_swa is not None:
        w.add(f"{a}.rope.freq_base_swa", float(rope_base_swa), "float32")
    if rope_linear is not None:
        w.add(f"{a}.rope.scaling.type", "linear")
        w.add(f"{a}.rope.scaling.factor", float(rope_linear), "float32")
    if orig_ctx is not None:
        w.add(f"{a}.rope.scaling.original_context_length", int(orig_ctx), "uint32")
    if yarn is not None:
        w.add(f"{a}.rope.scaling.type", "yarn")
        w.add(f"{a}.rope.scaling.factor", float(yarn), "float32")
        for key, v in (("yarn_beta_fast", yarn_beta_fast), ("yarn_beta_slow", yarn_beta_slow),
                       ("yarn_attn_factor", yarn_attn_factor),
                       ("yarn_log_multiplier", yarn_log_mul)):
            if v is not None:
                w.add(f"{a}.rope.scaling.{key}", float(v), "float32")
    if longrope and rope_attn_factor is None:
        orig = orig_ctx or ctx
        scale = ctx / orig
        rope_attn_factor = math.sqrt(1 + math.log(scale) / math.log(orig)) if scale > 1 else 1.0
    if rope_attn_factor is not None:
        w.add(f"{a}.rope.scaling.attn_factor", float(rope_attn_factor), "float32")
    if attn_temp_scale is not None:
        w.add(f"{a}.attention.temperature_scale", float(attn_temp_scale), "float32")
    w.add("tokenizer.ggml.model", "llama")
    w.add("tokenizer.ggml.tokens", tokens)
    w.add("tokenizer.ggml.scores", np.asarray(scores, dtype=np.float32))
    w.add("tokenizer.ggml.token_type", np.asarray(types, dtype=np.int32))
    w.add("tokenizer.ggml.bos_token_id", 1)
    w.add("tokenizer.ggml.eos_token_id", 2)
    w.add("tokenizer.ggml.unknown_token_id", 0)
    w.add("tokenizer.ggml.add_bos_token", True)
    w.add("tokenizer.ggml.add_eos_token", False)
    for k, v in sets:  # last, so a set key replaces a default (adding a key twice replaces it)
        w.add(k, v)

    def normal(name, shape, s):
        return _rng(seed, name).standard_normal(shape) * s

    def norm_w(name):
        return 1.0 + normal(name, (dim,), 0.1)

    dropped = set(drop)

    def put(name, array, t):
        if name not in dropped:
            w.add_tensor(name, array, t)

    emb = normal("token_embd.weight", (vocab, dim), 1.0)
    put("token_embd.weight", emb, dtype)
    if llama3_rope_freqs:
        ff = llama3_freq_factors(n_rot, rope_theta, ctx)
        put("rope_freqs.weight", ff, "F32")
    if longrope:
        for t in ("rope_factors_long.weight", "rope_factors_short.weight"):
            put(t, 1.0 + _rng(seed, t).random(n_rot // 2), "F32")
    for L in range(layers):
        p = f"blk.{L}."

        def mat(t, rows, cols):
            s = std * (math.sqrt(dim / cols) if cols != dim else 1.0)
            if t in ("attn_q", "attn_k"):
                s *= 2.0  # sharper attention patterns, so position (RoPE) matters
            return normal(p + t + ".weight", (rows, cols), s)

        put(p + "attn_norm.weight", norm_w(p + "attn_norm.weight"), "F32")
        q, k, v = (mat("attn_q", heads * hd, dim), mat("attn_k", kv_heads * hd, dim),
                   mat("attn_v", kv_heads * hd, dim))
        if rc["fused_qkv"]:
            put(p + "attn_qkv.weight", np.concatenate([q, k, v]), dtype)
        else:
            for t, m in (("attn_q", q), ("attn_k", k), ("attn_v", v)):
                put(p + t + ".weight", m, dtype)
        if rc["qkv_bias"]:
            for t, n in (("attn_q", heads * hd), ("attn_k", kv_heads * hd),
                         ("attn_v", kv_heads * hd)):
                put(p + t + ".bias", normal(p + t + ".bias", (n,), 0.2), "F32")
        if rc["qk_norm"]:
            for t in ("attn_q_norm", "attn_k_norm"):
                put(p + t + ".weight", 1.0 + normal(p + t + ".weight", (hd,), 0.2), "F32")
        put(p + "attn_output.weight", mat("attn_output", dim, heads * hd), dtype)
        if rc["post_norms"]:
            put(p + "post_attention_norm.weight", norm_w(p + "post_attention_norm.weight"),
                "F32")
        put(p + "ffn_norm.weight", norm_w(p + "ffn_norm.weight"), "F32")
        gate, up = mat("ffn_gate", ffn, dim), mat("ffn_up", ffn, dim)
        if rc["fused_gate_up"]:
            put(p + "ffn_up.weight", np.concatenate([gate, up]), dtype)
        else:
            put(p + "ffn_gate.weight", gate, dtype)
            put(p + "ffn_up.weight", up, dtype)
        put(p + "ffn_down.weight", mat("ffn_down", dim, ffn), dtype)
        if rc["post_norms"]:
            put(p + "post_ffw_norm.weight", norm_w(p + "post_ffw_norm.weight"), "F32")
    put("output_norm.weight", norm_w("output_norm.weight"), "F32")
    if not tied:
        # Planted successor: the normalized residual is close to the current token's
        # embedding, so row succ(t) ~ alpha * emb[t] makes argmax = succ(last token) by a
        # wide margin, and greedy runs visit many different tokens.
        out = normal("output.weight", (vocab, dim), 0.02)
        perm = _rng(seed, "successor").permutation(np.arange(3, vocab))
        succ = np.concatenate([perm[:3], perm])   # ids 0..2 also map to ordinary tokens
        alpha = 8.0 / dim
        np.add.at(out, succ, alpha * emb)
        put("output.weight", out, dtype)
    w.write()
    return {"path": path, "arch": arch, "n_rot": n_rot, "head_dim": hd, "dtype": dtype,
            "tied": tied}


# ----------------------------------------------------------------------------
# selftest


def _shared_dir():
    return os.environ.get("SEAM_SHARED_DIR", "/work/shared")


class _Checks:
    def __init__(self):
        self.failed = 0

    def check(self, ok, what):
        print(f"  {'ok  ' if ok else 'FAIL'} {what}")
        if not ok:
            self.failed += 1

    def skip(self, what):
        print(f"  skip {what}")


def _st_gguf(c, tmp):
    print("gguf reader/writer:")
    w = gguf.GGUFWriter(os.path.join(tmp, "all.gguf"))
    vals = {
        "u8": (200, "uint8"), "i8": (-100, "int8"), "u16": (65535, "uint16"),
        "i16": (-30000, "int16"), "u32": (4000000000, None), "i32": (-5, None),
        "f32": (1.5, None), "bool": (True, None), "str": ("h\u00e9llo \u2581", None),
        "u64": (2**40, None), "i64": (-2**40, None), "f64": (0.1, "float64"),
        "a.str": (["a", "", "\u00fc"], None), "a.i32": ([1, -2, 3], None),
        "a.f32": ([0.5, 2.0], None), "a.bool": ([True, False], None),
        "a.u64": (np.arange(4, dtype=np.uint64), None),
        "a.nested": ([[1, 2], [3], []], "array<array<int16>>"),
        "a.nested_str": ([["x"], ["y", "z"]], None), "a.empty": ([], None),
    }
    want_types = {"u32": "uint32", "i32": "int32", "f32": "float32", "bool": "bool",
                  "str": "string", "u64": "uint64", "i64": "int64", "a.str": "array<string>",
                  "a.i32": "array<int32>", "a.f32": "array<float32>", "a.bool": "array<bool>",
                  "a.u64": "array<uint64>", "a.nested": "array<array<int16>>",
                  "a.nested_str": "array<array<string>>"}
    for k, (v, t) in vals.items():
        w.add(k, v, type=t)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 64)).astype(np.float32)
    for d in ("F32", "F16", "BF16", "Q8_0", "Q4_0"):
        w.add_tensor("t." + d, x, d)
    w.add_tensor("odd", rng.standard_normal((5, 7)), "F16")
    w.write()
    r = gguf.GGUFReader(w.path)

    def same(a, b):
        if isinstance(a, (list, tuple, np.ndarray)):
            return len(a) == len(b) and all(same(p, q) for p, q in zip(a, b))
        return a == b if not isinstance(a, float) else abs(a - b) <= 1e-7 * abs(a)

    c.check(all(same(vals[k][0], r.metadata[k]) for k in vals), "metadata values round-trip")
    c.check(all(r.types[k] == t for k, t in want_types.items()), "metadata types round-trip")
    c.check(np.array_equal(r.tensor("t.F32"), x), "F32 tensor exact")
    c.check(np.array_equal(r.tensor("t.F16"), x.astype(np.float16).astype(np.float32)),
            "F16 tensor = round-to-nearest-even half")
    c.check(r.tensors["odd"].ne == [7, 5] and r.tensor("odd").shape == (5, 7),
            "numpy shape (5,7) <-> ne [7,5]")
    c.check(float(np.abs(r.tensor("t.BF16") - x).max()) <= 2.0**-8 * float(np.abs(x).max()),
            "BF16 tensor within half an ulp")
    for d in ("Q8_0", "Q4_0"):
        c.check(r.raw("t." + d) == gguf.encode_tensor(x, d)[1], f"{d} bytes round-trip")
    for bad, what in ((lambda: w.add("k", 70000, type="uint16"), "out-of-range uint16"),
                      (lambda: w.add_tensor("q", np.zeros((2, 48)), "Q8_0"), "Q8_0 row of 48"),
                      (lambda: gguf.GGUFReader(os.path.join(tmp, "trunc.gguf")), "truncated")):
        if what == "truncated":
            with open(os.path.join(tmp, "trunc.gguf"), "wb") as f:
                f.write(open(w.path, "rb").read()[:200])
        try:
            bad()
            c.check(False, f"rejects {what}")
        except gguf.GGUFError:
            c.check(True, f"rejects {what}")
    shared = _shared_dir()
    for rel in ("models/stories260K.gguf", "models/quant/ref-llama-512-q4_k_m.gguf"):
        p = os.path.join(shared, rel)
        if not os.path.exists(p):
            c.skip(f"byte-identical rewrite of {rel} (not found)")
            continue
        r = gguf.GGUFReader(p)
        w = gguf.GGUFWriter(os.path.join(tmp, "rt.gguf"), alignment=r.alignment)
        for k, v in r.metadata.items():
            w.add(k, v, type=r.types[k])
        for n, ti in r.tensors.items():
            w.add_tensor_raw(n, ti.ne, ti.type, r.raw(n))
        c.check(w.to_bytes() == open(p, "rb").read(), f"byte-identical rewrite of {rel}")


def _st_quant(c, tmp):
    print("quantizers:")
    q = np.arange(-127, 128, 8, dtype=np.float32)            # 32 values -127, -119, ..., 121
    x = q * np.float32(0.25)                                 # amax 31.75 -> d = 0.25 exactly
    want = np.float16(0.25).tobytes() + q.astype(np.int8).tobytes()
    c.check(gguf.quantize_q8_0(x) == want, "Q8_0 hand block, d = 0.25")
    x = np.zeros(32, np.float32)
    x[3], x[9], x[20] = 3.0, -3.0, 1.0          # tie on |x|: the first (+3) sets d = -0.375
    qv = [min(15, int(v * np.float32(1 / -0.375) + np.float32(8.5))) for v in x]
    want = np.float16(-0.375).tobytes() + bytes(qv[j] | (qv[j + 16] << 4) for j in range(16))
    c.check(gguf.quantize_q4_0(x) == want, "Q4_0 hand block, tie -> first, d = -0.375")
    c.check(gguf.quantize_q8_0(np.zeros(32)) == bytes(34), "Q8_0 zero block")
    # ggml keeps max = +0.0 when no |x| exceeds 0, so d = 0/-8 = -0.0 (fp16 0x8000).
    c.check(gguf.quantize_q4_0(-np.zeros(32)) == bytes([0, 0x80] + [0x88] * 16), "Q4_0 zero block")
    y = np.array([0.5, -0.5, 1.5, -2.5] + [0.0] * 27 + [127.0], np.float32)  # d = 1: ties away
    c.check(gguf.quantize_q8_0(y)[2:6] == bytes([1, 255, 2, 253]), "Q8_0 rounds half away from 0")
    mk = os.path.join(_shared_dir(), "tools", "mkgguf.py")
    if not os.path.exists(mk):
        c.skip("quantizers vs mkgguf.py (not found)")
        return
    files = {}
    for d in ("F32", "Q8_0", "Q4_0"):
        files[d] = os.path.join(tmp, f"mk_{d}.gguf")
        subprocess.run([sys.executable, mk, "--dim", "64", "--layers", "1", "--heads", "2",
                        "--ffn", "96", "--vocab", "300", "--std", "0.7", "--dtype", d,
                        "--seed", "5", "-o", files[d]], check=True, capture_output=True)
    f32 = gguf.GGUFReader(files["F32"])
    for d, fn in (("Q8_0", gguf.quantize_q8_0), ("Q4_0", gguf.quantize_q4_0)):
        r = gguf.GGUFReader(files[d])
        names = [n for n, ti in r.tensors.items() if ti.type == d]
        bad = [n for n in names if fn(f32.tensor(n)) != r.raw(n)]
        c.check(names and not bad, f"{d} quantizer bit-exact vs mkgguf.py on {len(names)} tensors")


def _st_llama_quantize(c):
    """Our encoders vs llama-quantize's bytes: ref-llama-512's float weights are regenerated
    from their documented generator (PCG64 seeded with (0, crc32(name)), N(0, 0.03^2) layer
    matrices, N(0, 1) token_embd) and must encode to exactly the stored blocks."""
    print("encoders vs llama-quantize (ref-llama-512):")
    qd = os.path.join(_shared_dir(), "models", "quant")
    p = os.path.join(qd, "ref-llama-512-q4_0.gguf")
    if not os.path.exists(p):
        c.skip(f"{p} not found")
        return

    def weights(name, shape):
        g = np.random.default_rng([0, zlib.crc32(name.encode())])
        return g.standard_normal(shape, dtype=np.float32) * np.float32(
            1.0 if name == "token_embd.weight" else 0.03)

    r = gguf.GGUFReader(p)
    names = [n for n, ti in r.tensors.items() if ti.type == "Q4_0"]
    bad = [n for n in names if gguf.quantize_q4_0(weights(n, r.tensors[n].shape)) != r.raw(n)]
    c.check(names and not bad, f"Q4_0 bit-exact on {len(names)} tensors of {os.path.basename(p)}")
    x = weights("blk.0.attn_q.weight", (512, 512))
    for t in ("Q8_0", "F16", "BF16"):
        raw = os.path.join(qd, "dequant", f"{t.lower()}.blk.0.attn_q.weight.raw")
        if os.path.exists(raw):
            c.check(gguf.encode_tensor(x, t)[1] == open(raw, "rb").read(),
                    f"{t} bit-exact on blk.0.attn_q.weight")


def _st_dequant(c):
    print("dequantizers vs llama.cpp to_float dumps:")
    d = os.path.join(_shared_dir(), "models", "quant", "dequant")
    if not os.path.isdir(d):
        c.skip(f"{d} not found")
        return
    for f in sorted(os.listdir(d)):
        if not f.endswith(".raw"):
            continue
        t = f.split(".")[0].upper()
        ref = np.fromfile(os.path.join(d, f[:-4] + ".f32"), "<f4")
        got = gguf.dequantize(open(os.path.join(d, f), "rb").read(), t, ref.size)
        bad = int(np.sum(got.view(np.uint32) != ref.view(np.uint32)))
        c.check(bad == 0, f"{t:5s} {ref.size} values, {bad} bit mismatches")


def _st_forward(c, tmp):
    print("forward-pass invariants (random models from gen):")
    p = os.path.join(tmp, "gqa.gguf")
    gen_model(p, dim=48, layers=2, heads=6, kv_heads=2, ffn=100, vocab=300, seed=3,
              llama3_rope_freqs=True, rope_theta=500000.0)
    m = Model(p)
    ids = [1, 17, 299, 42, 5, 200, 201, 77, 3, 150]
    full = m.forward(ids)
    cache = KVCache(m.n_layer)
    parts = np.concatenate([m.forward(ids[:3], cache), m.forward(ids[3:4], cache),
                            m.forward(ids[4:], cache)])
    c.check(np.abs(parts - full).max() < 1e-9, "chunked prefill via KV cache == full forward")
    c.check(m.greedy(ids, 8) == m.greedy(ids, 8, recompute=True), "greedy: cache == recompute")
    prefix = m.forward(ids[:5])
    c.check(np.abs(prefix - full[:5]).max() < 1e-9, "causal: later tokens leave earlier rows alone")

    # GQA == MHA whose kv weights are repeated per query group.
    mha = Model(p)
    g = m.n_head // m.n_head_kv
    for L in range(m.n_layer):
        for t in ("attn_k.weight", "attn_v.weight"):
            wt = m.layer(L, t).reshape(m.n_head_kv, m.head_dim, -1)
            mha.w[f"blk.{L}.{t}"] = np.repeat(wt, g, axis=0).reshape(m.n_head * m.head_dim, -1)
    mha.n_head_kv = m.n_head
    c.check(np.abs(mha.forward(ids) - full).max() < 1e-9, "GQA == MHA with repeated kv heads")

    # Adjacent-pair RoPE == NEOX RoPE on q/k rows permuted evens-then-odds within each head.
    nx = Model(p, {"rope": "neox"})
    perm = np.concatenate([np.arange(0, m.head_dim, 2), np.arange(1, m.head_dim, 2)])
    for L in range(m.n_layer):
        for t, nh in (("attn_q.weight", m.n_head), ("attn_k.weight", m.n_head_kv)):
            wt = m.layer(L, t).reshape(nh, m.head_dim, -1)[:, perm]
            nx.w[f"blk.{L}.{t}"] = wt.reshape(nh * m.head_dim, -1)
    c.check(np.abs(nx.forward(ids) - full).max() < 1e-9, "normal RoPE == NEOX on permuted q/k")
    wrong = Model(p, {"rope": "neox"}).forward(ids)
    c.check(np.abs(wrong - full).max() > 1e-3, "RoPE style visibly changes the logits")
    nof = Model(p)
    nof.freq_factors = None
    c.check(np.abs(nof.forward(ids) - full).max() > 1e-3, "rope_freqs.weight is applied")
    nof.freq_factors = np.ones(m.n_rot // 2)
    c.check(np.abs(nof.forward(ids)[0] - full[0]).max() < 1e-9, "position 0 is unrotated")

    # RoPE encodes relative position: q.k depends on p_q - p_k only (partial n_rot too).
    rng = np.random.default_rng(7)
    qv, kv = rng.standard_normal((2, 1, 1, 24))
    ok = True
    for style in ("normal", "neox"):
        for n_rot in (24, 16):
            ff = 1.0 + rng.random(n_rot // 2)

            def dot(pq, pk):
                aq = rope_angles([pq], n_rot, 10000.0, ff)
                ak = rope_angles([pk], n_rot, 10000.0, ff)
                return float(np.sum(apply_rope(qv, aq, style) * apply_rope(kv, ak, style)))
            ok &= abs(dot(5, 2) - dot(105, 102)) < 1e-9 and abs(dot(5, 2) - dot(5, 3)) > 1e-6
    c.check(ok, "RoPE q.k depends only on relative position (both styles, partial n_rot)")
    sw = Model(p)
    sw.window = 3
    sw_full = sw.forward(ids)
    c.check(np.abs(sw_full[:3] - full[:3]).max() < 1e-9 and np.abs(sw_full[3:] - full[3:]).max()
            > 1e-6, "sliding window 3 only changes rows >= 3")

    _st_archs(c, tmp, ids)

    margins = []
    gen_ids = m.greedy([1, 50], 24, margins=margins)
    c.check(min(margins) > 0.5 and len(set(gen_ids)) > 12,
            f"gen model greedy is stable (min margin {min(margins):.2f}) and varied")
    for d in ("F16", "Q8_0", "Q4_0"):
        q = os.path.join(tmp, f"gen_{d}.gguf")
        gen_model(q, dim=64, layers=2, heads=4, kv_heads=2, ffn=96, vocab=300, seed=3, dtype=d)
        r = gguf.GGUFReader(q)
        c.check(r.tensors["blk.0.attn_q.weight"].type == d and
                r.tensors["blk.0.attn_norm.weight"].type == "F32", f"gen --dtype {d} tensor types")
    t = os.path.join(tmp, "tied.gguf")
    gen_model(t, tied=True, seed=4)
    mt = Model(t)
    c.check("output.weight" not in mt.reader.tensors and mt.greedy([1, 77], 3) == [77, 77, 77],
            "tied model: LM head = token_embd (greedy repeats the last token)")


def _st_archs(c, tmp, ids):
    """Each architecture option against an equivalent written another way."""
    shape = dict(dim=48, layers=3, heads=4, kv_heads=2, ffn=64, vocab=300, seed=9)
    paths = {}
    for arch in ("llama", "qwen2", "qwen3", "gemma2", "gemma3", "phi3"):
        paths[arch] = os.path.join(tmp, f"arch_{arch}.gguf")
        gen_model(paths[arch], arch=arch, tied=arch.startswith("gemma"),
                  window=5 if arch.startswith("gemma") else None, **shape)
    llama = Model(paths["llama"]).forward(ids)
    # The generator draws each matrix by name, so phi3's fused tensors hold llama's q/k/v and
    # gate/up: with llama's RoPE pairs the two must agree exactly.
    fused = Model(paths["phi3"], {"rope": "normal"}).forward(ids)
    c.check(np.abs(fused - llama).max() < 1e-9, "phi3 fused [q;k;v] and [gate;up] == separate")
    # qwen2 == llama + biases: zero biases give llama's logits under the same RoPE.
    q2 = Model(paths["qwen2"], {"rope": "normal"})
    for L in range(q2.n_layer):
        for t in "qkv":
            q2.w[f"blk.{L}.attn_{t}.bias"] = np.zeros_like(q2.w[f"blk.{L}.attn_{t}.bias"])
    c.check(np.abs(q2.forward(ids) - llama).max() < 1e-9, "qwen2 with zero biases == llama")
    q2b = Model(paths["qwen2"], {"rope": "normal"}).forward(ids)
    c.check(np.abs(q2b - llama).max() > 1e-3, "qwen2 biases change the logits")
    q3 = Model(paths["qwen3"], {"rope": "normal", "qk_norm": False}).forward(ids)
    c.check(np.abs(q3 - llama).max() < 1e-9, "qwen3 without qk_norm == llama")
    g2 = Model(paths["gemma2"])
    c.check(g2.swa_layers == [True, False, True] and g2.window == 5 and
            g2.attn_softcap == 50.0 and g2.final_softcap == 30.0 and
            abs(g2.attn_scale - 1 / math.sqrt(12)) < 1e-12,
            "gemma2: even layers local, default caps 50/30, scale 1/sqrt(head_dim)")
    full = g2.forward(ids)
    g2.window = 0
    nowin = g2.forward(ids)
    c.check(np.abs(full[:5] - nowin[:5]).max() < 1e-9 and np.abs(full[5:] - nowin[5:]).max()
            > 1e-6, "gemma2 window 5 only changes rows >= 5")
    g2.window, g2.attn_softcap = 5, 1e9
    uncapped = g2.forward(ids)
    c.check(np.abs(uncapped - full).max() > 1e-6, "gemma2 attention softcap matters")
    g3 = Model(paths["gemma3"])
    c.check(g3.swa_layers == [True, True, True] and g3.freq_base_swa == 10000.0 and
            g3.final_softcap == 0.0, "gemma3: period 6 (3 layers all local), local base 1e4")
    base = g3.forward(ids)
    g3.freq_base_swa = 1e6
    c.check(np.abs(g3.forward(ids) - base).max() > 1e-6, "gemma3 local layers use their own base")


def _st_real(c, quick):
    print("real models:")
    shared = _shared_dir()
    sp = os.path.join(shared, "models", "stories260K.gguf")
    if os.path.exists(sp):
        m = Model(sp)
        prompt = [1, 403, 407, 261, 378]
        out = m.greedy(prompt, 40)
        text = m.decode(prompt + out)
        print(f"    stories260K: {text!r}")
        c.check(m.decode(prompt) == " Once upon a time" and "Lily" in text and out == m.greedy(
            prompt, 40, recompute=True), "stories260K greedy story (a girl named Lily)")
    else:
        c.skip("stories260K.gguf not found")
    if quick:
        c.skip("ref-llama-512 twin logits (--quick)")
        return
    qd = os.path.join(shared, "models", "quant")
    ej = os.path.join(qd, "expected.json")
    if not os.path.exists(ej):
        c.skip("models/quant not found")
        return
    files = json.load(open(ej))["files"]
    for key in ("q4_k_m", "q2_k-pure", "q4_0"):
        f = files[key]
        if not os.path.exists(os.path.join(qd, f["file"])):
            c.skip(f"{f['file']} not found")
            continue
        m = Model(os.path.join(qd, f["file"]))
        ids = f["prompt_ids"]
        last = m.forward(ids)[-1]
        twin = np.fromfile(os.path.join(qd, f["twin_logits"]), "<f4")
        d = last - twin
        mx, rms = float(np.abs(d).max()), float(np.sqrt(np.mean(d * d)))
        c.check(mx <= 2e-3 and rms <= 5e-4,
                f"{key}: last-row logits vs llama.cpp twin: max abs {mx:.2e}, rms {rms:.2e}")
        c.check(m.greedy(ids, 16) == f["greedy_ids"], f"{key}: 16 greedy ids == llama.cpp")


def _st_scaling(c, tmp):
    """RoPE scaling, windows and temperature against what they reduce to."""
    ids = [1] + [int(v) for v in _rng(5, "scaling ids").integers(3, 300, 29)]
    shape = dict(dim=48, layers=2, heads=4, kv_heads=2, ffn=64, vocab=300, seed=21)

    def model(name, **kw):
        path = os.path.join(tmp, f"sc_{name}.gguf")
        gen_model(path, **dict(shape, **kw))
        return Model(path, n_ctx=kw.pop("n_ctx", None))

    def same(a, b):
        return np.abs(a - b).max() < 1e-9

    plain = model("plain").forward(ids)
    c.check(same(model("yarn1", yarn=1.0, orig_ctx=8).forward(ids), plain),
            "YaRN factor 1 == no scaling")
    inv = yarn_inv_freq(64, 10000.0, 16.0, 4096)
    base = 10000.0 ** (-np.arange(32) * 2.0 / 64)
    # Pair i turns 4096 * f_i / (2 pi) times over the original context: the ramp runs from
    # the pair that turns 32 times (floored) to the one that turns once (ceiled).
    turns = 4096 * base / (2 * math.pi)
    lo, hi = int(np.sum(turns > 32)) - 1, int(np.sum(turns > 1))
    c.check(np.allclose(inv[:lo + 1], base[:lo + 1]) and np.allclose(inv[hi:], base[hi:] / 16),
            f"YaRN keeps pairs <= {lo} and interpolates pairs >= {hi}")
    y = model("yarn4", yarn=4.0, orig_ctx=8)
    c.check(abs(y.mscale_scaled - (0.1 * math.log(4) + 1)) < 1e-12 and
            np.abs(y.forward(ids) - plain).max() > 1e-3, "YaRN s=4: mscale 0.1 ln 4 + 1, moves logits")
    lm = model("yarnlm", yarn=4.0, orig_ctx=8, yarn_log_mul=1.0)
    c.check(abs(lm.mscale_scaled - 1.0) < 1e-12, "yarn_log_multiplier 1: attention factor 1")

    p3 = dict(arch="phi3", rope_dim=8, ctx=64)
    phi = model("phi_plain", **p3).forward(ids)
    lr = model("phi_lr", longrope=True, orig_ctx=16, **p3)
    c.check(lr.n_ctx == 64 and lr.freq_factors is lr.w["rope_factors_long.weight"] and
            abs(lr.mscale - math.sqrt(1 + math.log(4) / math.log(16))) < 1e-6,
            "LongRoPE default n_ctx = context_length > original: long factors, sqrt attn factor")
    short = Model(os.path.join(tmp, "sc_phi_lr.gguf"), n_ctx=16)
    c.check(short.freq_factors is short.w["rope_factors_short.weight"],
            "LongRoPE n_ctx <= original: short factors")
    for name in ("rope_factors_long.weight", "rope_factors_short.weight"):
        short.w[name] = np.ones_like(short.w[name])
    short.freq_factors = short.w["rope_factors_short.weight"]
    short.mscale = 1.0
    c.check(same(short.forward(ids), phi), "LongRoPE with unit factors and factor 1 == phi3")

    c.check(same(model("win_long", window=len(ids)).forward(ids), plain),
            "llama window >= prompt == no window")
    win = model("win3", window=3)
    c.check(win.swa_layers == [True, True] and
            np.abs(win.forward(ids)[:3] - plain[:3]).max() < 1e-9 and
            np.abs(win.forward(ids)[3:] - plain[3:]).max() > 1e-3,
            "llama window 3 on every layer changes rows >= 3 only")
    m3 = model("m3", arch="mistral3")
    c.check(same(m3.forward(ids), plain), "mistral3 without options == llama (same weights)")
    t = model("m3t", arch="mistral3", orig_ctx=10, attn_temp_scale=0.5).forward(ids)
    c.check(same(t[:10], plain[:10]) and np.abs(t[10:] - plain[10:]).max() > 1e-3,
            "attention temperature starts at the original context")


def _st_gen_widths(c, tmp):
    """gen passes the widths given to a per-layer family's generator, and refuses one it
    has no parameter for (or a family-only one for llama), rather than dropping them."""
    p = os.path.join(tmp, "widths.gguf")
    code = main(["gen", "--out", p, "--arch", "qwen35", "--dim", "128", "--layers", "2",
                 "--ssm-heads", "8", "--ssm-state", "8"])
    md = gguf.GGUFReader(p).metadata if code == 0 else {}
    c.check(md.get("qwen35.embedding_length") == 128 and md.get("qwen35.block_count") == 2
            and md.get("qwen35.ssm.time_step_rank") == 8 and md.get("qwen35.ssm.state_size") == 8,
            "gen --arch qwen35 --dim 128 --layers 2 --ssm-heads 8 --ssm-state 8 writes that shape")
    c.check(main(["gen", "--out", p, "--ssm-heads", "8"]) == 1,
            "gen --ssm-heads without a hybrid family is refused")
    c.check(main(["gen", "--out", p, "--arch", "gemma4", "--layers", "3"]) == 1,
            "gen --arch gemma4 --layers 3 is refused (gemma4's layer count is fixed)")


def selftest(quick=False):
    c = _Checks()
    with tempfile.TemporaryDirectory() as tmp:
        _st_gguf(c, tmp)
        _st_quant(c, tmp)
        _st_llama_quantize(c)
        _st_dequant(c)
        _st_forward(c, tmp)
        _st_scaling(c, tmp)
        _st_gen_widths(c, tmp)
        import families
        families.selftest_families(c, tmp, quick)
        _st_real(c, quick)
    print("selftest:", "PASSED" if not c.failed else f"{c.failed} FAILED")
    return 1 if c.failed else 0


# ----------------------------------------------------------------------------
# CLI


def _parse_tokens(s):
    try:
        ids = [int(t) for t in s.replace(" ", "").split(",") if t != ""]
    except ValueError:
        raise RefError(f"--tokens must be comma-separated integers, got {s!r}")
    if not ids:
        raise RefError("--tokens is empty")
    return ids


def _swa_pattern_arg(v):
    if "," in v:
        return [int(x) != 0 for x in v.split(",") if x != ""]
    return int(v)


def _family_names():
    import families
    return families.FAMILIES


# gen's width options: None where not given, so that each generator (gen_model,
# or a per-layer family's in tools/families.py) keeps its own defaults.
WIDTHS = ("dim", "layers", "heads", "kv_heads", "head_dim", "ffn", "vocab", "ctx")
# Shapes only a per-layer family's generator has: its experts' width, and a
# hybrid's delta net (state size, k-heads, v-heads) and attention head size.
FAMILY_WIDTHS = ("ffn_exp", "ssm_state", "ssm_groups", "ssm_heads", "hybrid_head_dim")


def _widths_given(a, names=WIDTHS):
    return {k: getattr(a, k) for k in names if getattr(a, k) is not None}


def _family_widths(a, families):
    """The widths given on the command line as keyword arguments of the family's
    generator; one it does not take is an error, not silently dropped."""
    given = _widths_given(a, WIDTHS + FAMILY_WIDTHS)
    takes = families.generator_params(a.arch)
    refused = sorted(k for k in given if k not in takes)
    if refused:
        flags = ", ".join("--" + k.replace("_", "-") for k in refused)
        raise RefError(f"{a.arch} files have fixed {flags} (tools/families.py); leave them out")
    return given


def cmd_gen(a):
    import families
    if a.arch in families.FAMILIES and (a.arch != "llama" or a.experts):
        if a.drop and a.arch != "gemma4":
            raise RefError(f"--drop applies to gemma4 among the per-layer families, not {a.arch}")
        kw = {"drop": a.drop} if a.drop else {}
        if a.expert_type:
            kw["expert_type"] = a.expert_type
        if a.mtp:
            kw["mtp"] = a.mtp
        if a.split_experts:
            kw["split_experts"] = True
        kw.update(_family_widths(a, families))
        info = families.gen_family(a.out, a.arch, experts=a.experts,
                                   experts_used=a.experts_used, seed=a.seed, **kw)
        print(json.dumps(info), file=sys.stderr)
        return
    if a.experts or a.experts_used:
        raise RefError(f"--experts applies to llama and the MoE families, not {a.arch}")
    family_only = _widths_given(a, FAMILY_WIDTHS)
    if family_only:
        flags = ", ".join("--" + k.replace("_", "-") for k in sorted(family_only))
        raise RefError(f"{flags} shape the per-layer families (tools/families.py), not {a.arch}")
    w = _widths_given(a)
    if "kv_heads" not in w:  # the option's default: as many as --heads
        w["kv_heads"] = w.get("heads", inspect.signature(gen_model).parameters["heads"].default)
    info = gen_model(a.out, **w, tied=a.tied, dtype=a.dtype,
                     seed=a.seed, rope_theta=a.rope_theta, rope_dim=a.rope_dim,
                     norm_eps=a.norm_eps,
                     llama3_rope_freqs=a.llama3_rope_freqs, std=a.std, name=a.name,
                     arch=a.arch, window=a.window, swa_pattern=a.swa_pattern,
                     attn_softcap=a.attn_softcap, final_softcap=a.final_softcap,
                     rope_base_swa=a.rope_base_swa, rope_linear=a.rope_linear,
                     drop=a.drop, sets=[_parse_set(x) for x in a.set], longrope=a.longrope,
                     orig_ctx=a.orig_ctx, yarn=a.yarn, yarn_beta_fast=a.yarn_beta_fast,
                     yarn_beta_slow=a.yarn_beta_slow, yarn_attn_factor=a.yarn_attn_factor,
                     yarn_log_mul=a.yarn_log_mul, rope_attn_factor=a.rope_attn_factor,
                     attn_temp_scale=a.attn_temp_scale)
    print(json.dumps(info), file=sys.stderr)


def cmd_logits(a):
    m = open_model(a.model, n_ctx=a.n_ctx)
    if a.q8_experts:
        if not hasattr(m, "q8_experts"):
            raise RefError("--q8-experts applies to the mixture-of-experts families")
        m.q8_experts = True
    ids = _parse_tokens(a.tokens)
    if a.chunk:
        cache = m.new_state() if hasattr(m, "new_state") else KVCache(m.n_layer)
        rows = [m.forward(ids[i:i + a.chunk], cache) for i in range(0, len(ids), a.chunk)]
        logits = np.concatenate(rows, axis=0)
    else:
        logits = m.forward(ids)
    logits.astype("<f4").tofile(a.out)
    print(f"wrote {a.out}: {logits.shape[0]} x {logits.shape[1]} float32", file=sys.stderr)


def cmd_greedy(a):
    m = open_model(a.model)
    ids = _parse_tokens(a.tokens)
    if a.n < 0:
        raise RefError("--n must be >= 0")
    margins = []
    out = m.greedy(ids, a.n, recompute=a.recompute, margins=margins)
    print(json.dumps(out))
    if a.show:
        print(f"text: {m.decode(ids)!r} -> {m.decode(out)!r}", file=sys.stderr)
        if margins:
            print(f"min top1-top2 margin: {min(margins):.4f}", file=sys.stderr)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 2)[2])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen", help="write a random-weight GGUF of one architecture")
    g.add_argument("--out", required=True)
    gen_defaults = inspect.signature(gen_model).parameters
    for name in ("dim", "layers", "heads", "kv-heads", "ffn", "vocab", "ctx"):
        default = "--heads" if name == "kv-heads" else gen_defaults[name].default
        g.add_argument(f"--{name}", type=int, default=None,
                       help=f"default {default} (per-layer families: their own)")
    for name in FAMILY_WIDTHS:
        g.add_argument("--" + name.replace("_", "-"), type=int, default=None,
                       help="per-layer families only (default: the family's own)")
    t = g.add_mutually_exclusive_group()
    t.add_argument("--tied", dest="tied", action="store_true",
                   help="no output.weight: the LM head reuses token_embd")
    t.add_argument("--untied", dest="tied", action="store_false", help="(default)")
    g.set_defaults(tied=False)
    g.add_argument("--dtype", default="F32", type=str.upper, choices=sorted(FILE_TYPES))
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--rope-theta", type=float, default=10000.0)
    g.add_argument("--rope-dim", type=int, default=None, help="rope.dimension_count (<= head_dim)")
    g.add_argument("--head-dim", type=int, default=None,
                   help="attention.key_length/value_length (default dim/heads)")
    g.add_argument("--norm-eps", type=float, default=1e-5)
    g.add_argument("--llama3-rope-freqs", action="store_true",
                   help="add rope_freqs.weight with Llama 3.1 frequency factors")
    g.add_argument("--std", type=float, default=None, help="std of layer matrices (0.5/sqrt(dim))")
    g.add_argument("--name", default=None)
    g.add_argument("--arch", default="llama", choices=sorted(set(RECIPES) | set(_family_names())),
                   help="general.architecture: tensor names, keys and recipe (per-layer"
                   " families: see tools/families.py; they take --experts,"
                   " --experts-used, --expert-type, --seed and the widths their"
                   " generator has, e.g. --dim, --layers, --heads, --ffn)")
    g.add_argument("--experts", type=int, default=None,
                   help="expert_count (llama: Mixtral-style file; MoE families: default 8)")
    g.add_argument("--experts-used", type=int, default=None, help="expert_used_count")
    g.add_argument("--expert-type", default=None, type=str.upper, choices=["F32", "MXFP4"],
                   help="gpt-oss expert tensors (default MXFP4; F32 holds the same values)")
    g.add_argument("--split-experts", action="store_true",
                   help="gemma4 with --experts: ffn_gate_exps + ffn_up_exps, not ffn_gate_up_exps")
    g.add_argument("--mtp", type=int, default=0,
                   help="qwen35: multi-token-prediction blocks appended (nextn_predict_layers)")
    g.add_argument("--window", type=int, default=None, help="attention.sliding_window")
    g.add_argument("--swa-pattern", type=_swa_pattern_arg, default=None,
                   help="attention.sliding_window_pattern: a period N, or flags like 1,0,1")
    g.add_argument("--attn-softcap", type=float, default=None, help="attn_logit_softcapping")
    g.add_argument("--final-softcap", type=float, default=None, help="final_logit_softcapping")
    g.add_argument("--rope-base-swa", type=float, default=None, help="rope.freq_base_swa")
    g.add_argument("--rope-linear", type=float, default=None,
                   help="rope.scaling.type linear with this rope.scaling.factor")
    g.add_argument("--drop", action="append", default=[], metavar="TENSOR",
                   help="omit this tensor (admission tests); repeatable")
    g.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="add a raw metadata key (admission tests); repeatable")
    g.add_argument("--longrope", action="store_true",
                   help="add phi3 rope_factors_long/short.weight tensors and the converter's"
                   " rope.scaling.attn_factor")
    g.add_argument("--orig-ctx", type=int, default=None,
                   help="rope.scaling.original_context_length")
    g.add_argument("--yarn", type=float, default=None, metavar="FACTOR",
                   help="rope.scaling.type yarn with this rope.scaling.factor")
    g.add_argument("--yarn-beta-fast", type=float, default=None)
    g.add_argument("--yarn-beta-slow", type=float, default=None)
    g.add_argument("--yarn-attn-factor", type=float, default=None)
    g.add_argument("--yarn-log-mul", type=float, default=None,
                   help="rope.scaling.yarn_log_multiplier (HF mscale_all_dim)")
    g.add_argument("--rope-attn-factor", type=float, default=None,
                   help="rope.scaling.attn_factor")
    g.add_argument("--attn-temp-scale", type=float, default=None,
                   help="attention.temperature_scale (mistral3)")
    lg = sub.add_parser("logits", help="logits of every position as float32")
    lg.add_argument("model")
    lg.add_argument("--tokens", required=True)
    lg.add_argument("--out", required=True)
    lg.add_argument("--n-ctx", type=int, default=None,
                    help="context size the model runs with (LongRoPE long/short choice);"
                    " default context_length")
    lg.add_argument("--chunk", type=int, default=0,
                    help="feed the prompt in chunks of N through the KV cache")
    lg.add_argument("--q8-experts", action="store_true",
                    help="round each expert matmul's input to Q8_0 first, as ggml's and seam's"
                    " CPU kernels do for quantized experts (MXFP4)")
    gr = sub.add_parser("greedy", help="greedy continuation ids as JSON")
    gr.add_argument("model")
    gr.add_argument("--tokens", required=True)
    gr.add_argument("--n", type=int, default=32)
    gr.add_argument("--recompute", action="store_true",
                    help="recompute the whole sequence each step instead of using the KV cache")
    gr.add_argument("--show", action="store_true", help="print decoded text and margin to stderr")
    st = sub.add_parser("selftest", help="internal checks")
    st.add_argument("--quick", action="store_true", help="skip the 512-dim model checks")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "gen":
            cmd_gen(a)
        elif a.cmd == "logits":
            cmd_logits(a)
        elif a.cmd == "greedy":
            cmd_greedy(a)
        else:
            return selftest(quick=a.quick)
    except (RefError, gguf.GGUFError, OSError) as e:
        print(f"reference.py: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
