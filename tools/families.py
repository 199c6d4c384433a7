"""families.py - float64 reference of the per-layer model families (reference.py's second half).

Mixture of experts (Mixtral-style `llama` with experts, `qwen3moe`, `gpt-oss`) and the Gated
DeltaNet hybrids (`qwen35`, `qwen35moe`, `qwen3next`), written from the papers and the published
model code (Mixtral: Jiang et al. 2024; gpt-oss model card and reference code; Gated DeltaNet:
Yang et al. 2024, "Gated Delta Networks"; Qwen3-Next / Qwen3.5 modeling code), and Gemma 4's
E models (per-layer embeddings, two head sizes, KV shared by the last layers; Gemma 4 modeling
code). Layers may differ in kind (attention or gated delta net), heads, head size, RoPE,
window and FFN width; llama.cpp's graph builders fixed only the GGUF layout.
Weights are decoded exactly and every computation runs in float64.

reference.py dispatches here for these architectures (`open_model`, `gen`), and its selftest
runs `selftest_families`. Recipes are dicts, as in reference.py.
"""

import inspect
import json
import math
import os
import subprocess

import numpy as np

import gguf
from reference import (RefError, _rng, apply_rope, gelu_tanh, rms_norm, rope_angles, silu,
                       soft_cap, sp_vocab, yarn_inv_freq, yarn_mscale)

# ----------------------------------------------------------------------------
# recipes
#
# rope:        "normal" (adjacent pairs) or "neox" (i, i + n_rot/2).
# qk_norm:     per-head RMSNorm of q and k before RoPE.
# qkv_bias:    blk.N.attn_{q,k,v}.bias and attn_output.bias when present.
# sinks:       blk.N.attn_sinks.weight: one extra logit per head in the softmax denominator.
# swa_period:  layer l uses attention.sliding_window unless l % P == P - 1 (0: no window).
# ffn_norm:    the pre-FFN norm's tensor name.
# moe:         None (dense SwiGLU), "softmax" (p = softmax(logits), top-k of p, w = p[top-k]
#              renormalised), or "topk_softmax" (top-k of the logits, w = softmax over the k).
# moe_act:     "silu" (SwiGLU) or "swiglu_oai" (gpt-oss: clamped, alpha 1.702, (up + 1)).
# moe_bias:    expert matmuls and the router carry biases (gpt-oss).
# shared_exp:  a shared expert gated by sigmoid(ffn_gate_inp_shexp . h).
# hybrid:      gated-delta-net layers, every full_attention_interval-th layer attention.
# gated_q:     attn_q holds per head [q | gate]; out = Wo (attn * sigmoid(gate)).
# ba_fused:    qwen3next's blk.N.ssm_ba: per k-head [beta x r | alpha x r] (r = H_v / H_k).
# v_head_map:  which k-head v-head h reads: "tiled" (h mod H_k: qwen35*, whose converter
#              reorders V heads) or "grouped" (h // r: qwen3next, HF's repeat_interleave).
BASE = {"gemma4": False, "rope": "neox", "qk_norm": False, "qkv_bias": False, "sinks": False,
        "swa_period": 0,
        "ffn_norm": "ffn_norm", "moe": None, "moe_act": "silu", "moe_bias": False,
        "shared_exp": False, "hybrid": False, "gated_q": False, "ba_fused": False,
        "v_head_map": "tiled"}
_HYBRID = {"qk_norm": True, "hybrid": True, "gated_q": True, "ffn_norm": "post_attention_norm"}
FAMILIES = {
    "llama": {"rope": "normal", "moe": "softmax"},        # with llama.expert_count > 0
    "qwen3moe": {"qk_norm": True, "moe": "softmax"},
    "gpt-oss": {"qkv_bias": True, "sinks": True, "swa_period": 2,
                "ffn_norm": "post_attention_norm", "moe": "topk_softmax",
                "moe_act": "swiglu_oai", "moe_bias": True},
    "qwen35": dict(_HYBRID),
    "qwen35moe": dict(_HYBRID, moe="softmax", shared_exp=True),
    "qwen3next": dict(_HYBRID, moe="softmax", shared_exp=True, ba_fused=True,
                      v_head_map="grouped"),
    # gemma4 (E2B/E4B): its own forward (FamilyModel.forward_gemma4); the dense FFN is GeGLU.
    "gemma4": {"gemma4": True, "qk_norm": True},
}
OAI_ALPHA, OAI_LIMIT = 1.702, 7.0


def is_family(arch, metadata):
    if arch == "llama":
        return int(metadata.get("llama.expert_count", 0) or 0) > 0
    return arch in FAMILIES


def softplus(x):
    """Stable softplus: x for x > 20 (log1p(e^x) == x there in float64 to 1e-9), else log1p(e^x)."""
    return np.where(x > 20.0, x, np.log1p(np.exp(np.minimum(x, 20.0))))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def l2_norm(x, eps=1e-6):
    """x / sqrt(sum x^2 + eps) over the last axis: the Qwen3-Next / Qwen3.5 modeling code's
    l2norm (eps 1e-6). llama.cpp's ggml_l2_norm divides by max(||x||, rms_eps) instead; for
    the unit-scale q/k rows here the two differ by ~eps / (2 ||x||^2), below 1e-6 relative."""
    return x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + eps)


def swiglu_oai(g, u):
    g = np.minimum(g, OAI_LIMIT)
    u = np.clip(u, -OAI_LIMIT, OAI_LIMIT)
    return g * sigmoid(OAI_ALPHA * g) * (u + 1.0)


def route(logits, k, mode):
    """(T, n_exp) router logits -> (ids (T, k), weights (T, k)), highest first."""
    if mode == "softmax":
        p = softmax(logits)
        ids = np.argsort(-p, axis=-1, kind="stable")[:, :k]
        w = np.take_along_axis(p, ids, axis=-1)
        return ids, w / np.maximum(w.sum(axis=-1, keepdims=True), 6.103515625e-5)
    if mode == "topk_softmax":
        ids = np.argsort(-logits, axis=-1, kind="stable")[:, :k]
        return ids, softmax(np.take_along_axis(logits, ids, axis=-1))
    raise RefError(f"unknown routing {mode}")


def _q8_0_round(v):
    """v rounded as ggml's CPU kernels round activations for a Q8_0 dot product."""
    return gguf.dequantize(gguf.quantize_q8_0(np.asarray(v, np.float32)), "Q8_0", v.size) \
        .astype(np.float64)


def gated_delta_rule(q, k, v, g, beta, state):
    """Sequential gated delta rule (Yang et al. 2024, eq. 10) per head h and token t:
    S <- S e^g_t;  S <- S + beta_t (v_t - S k_t) k_t^T;  o_t = S q_t.
    q, k: (T, H, S_k); v: (T, H, S_v); g, beta: (T, H); state: (H, S_v, S_k).
    Returns (o (T, H, S_v), the new state)."""
    o = np.empty(v.shape)
    for t in range(q.shape[0]):
        state = state * np.exp(g[t])[:, None, None]
        delta = beta[t][:, None] * (v[t] - np.einsum("hij,hj->hi", state, k[t]))
        state = state + delta[:, :, None] * k[t][:, None, :]
        o[t] = np.einsum("hij,hj->hi", state, q[t])
    return o, state


class State:
    """Per-sequence state: K/V per attention layer, conv window and delta-rule matrix per
    gated-delta-net layer."""

    def __init__(self, n_layer):
        self.k = [None] * n_layer
        self.v = [None] * n_layer
        self.conv = [None] * n_layer     # (K-1, C): the last K-1 raw (pre-conv) inputs
        self.ssm = [None] * n_layer      # (H_v, S_v, S_k)
        self.n_past = 0


class FamilyModel:
    def __init__(self, path):
        r = gguf.GGUFReader(path)
        self.reader = r
        md = r.metadata
        arch = md.get("general.architecture")
        if not is_family(arch, md):
            raise RefError(f"{arch!r} is not a per-layer family")
        self.arch = arch
        self.rc = rc = dict(BASE, **FAMILIES[arch])

        def hp(key, default=None):
            full = f"{arch}.{key}"
            if full in md:
                return md[full]
            if default is None:
                raise RefError(f"{path}: missing metadata {full}")
            return default
        self.n_embd = int(hp("embedding_length"))
        # llama.cpp appends the MTP blocks (nextn_predict_layers); only a draft model runs them.
        self.n_layer = int(hp("block_count")) - int(hp("nextn_predict_layers", 0))
        self.n_head = int(hp("attention.head_count"))
        kv = hp("attention.head_count_kv", self.n_head)      # gemma4 may give one per layer
        self.n_head_kv = int(np.max(kv)) if isinstance(kv, (list, np.ndarray)) else int(kv)
        self.head_dim = int(hp("attention.key_length", self.n_embd // self.n_head))
        self.n_rot = int(hp("rope.dimension_count", self.head_dim))
        self.freq_base = float(hp("rope.freq_base", 10000.0))
        self.eps = float(hp("attention.layer_norm_rms_epsilon", 1e-5))
        self.n_expert = int(hp("expert_count", 0))
        self.n_used = int(hp("expert_used_count", 0))
        if rc["moe"] and not (0 < self.n_used <= self.n_expert):
            raise RefError("expert_used_count must be in [1, expert_count]")
        self.window = int(hp("attention.sliding_window", 0)) if rc["swa_period"] else 0
        P = rc["swa_period"]
        self.swa = [bool(self.window) and L % P < P - 1 for L in range(self.n_layer)]
        self.recurrent = [False] * self.n_layer
        if rc["hybrid"]:
            self.d_conv = int(hp("ssm.conv_kernel"))
            self.S = int(hp("ssm.state_size"))
            self.Hk = int(hp("ssm.group_count"))
            self.Hv = int(hp("ssm.time_step_rank"))
            if int(hp("ssm.inner_size")) != self.Hv * self.S or self.Hv % self.Hk:
                raise RefError("ssm.inner_size must be time_step_rank * state_size and "
                               "time_step_rank a multiple of group_count")
            iv = int(hp("full_attention_interval", 4))
            self.recurrent = [(L + 1) % iv != 0 for L in range(self.n_layer)]
        if rc["gemma4"]:
            self._gemma4_hparams(hp)
        # YaRN (gpt-oss): as reference.Model reads it.
        self.yarn, self.mscale = None, 1.0
        if hp("rope.scaling.type", "none") == "yarn":
            s = float(hp("rope.scaling.factor", 1.0))
            orig = int(hp("rope.scaling.original_context_length", hp("context_length", 2048)))
            self.yarn = dict(factor=s, orig_ctx=orig,
                             beta_fast=float(hp("rope.scaling.yarn_beta_fast", 32.0)),
                             beta_slow=float(hp("rope.scaling.yarn_beta_slow", 1.0)))
            self.mscale = yarn_mscale(s)
        self.w = {n: r.tensor(n).astype(np.float64) for n in r.tensors}
        if "token_embd.weight" not in self.w or "output_norm.weight" not in self.w:
            raise RefError(f"{path}: missing token_embd or output_norm")
        self.n_vocab = self.w["token_embd.weight"].shape[0]
        self.out_w = self.w.get("output.weight", self.w["token_embd.weight"])
        self.min_gap = math.inf   # smallest k-th minus (k+1)-th router logit seen
        # Off by default. True mimics ggml's CPU MXFP4 matmul, which rounds the activations
        # to Q8_0 first (vec_dot_type): used to attribute llama.cpp's gap, not as the reference.
        self.q8_experts = False
        # Off by default. True mimics ggml's CPU GELU (GGML_GELU_FP16): input rounded to F16,
        # result read from an F16 table, for |x| < 10. Attribution only, like q8_experts.
        self.f16_gelu = False
        # Off by default. True rounds K and V to F16 (llama.cpp's default KV cache) and Q too
        # (its CPU flash attention converts Q to F16 for the K dot products).
        self.f16_kv = False

    def t(self, L, name, required=True):
        v = self.w.get(f"blk.{L}.{name}")
        if v is None and required:
            raise RefError(f"missing tensor blk.{L}.{name}")
        return v

    # --- blocks

    def attention(self, L, h, st, pos):
        rc, T = self.rc, h.shape[0]
        H, HK, D = self.n_head, self.n_head_kv, self.head_dim
        q = h @ self.t(L, "attn_q.weight").T
        k = h @ self.t(L, "attn_k.weight").T
        v = h @ self.t(L, "attn_v.weight").T
        if rc["qkv_bias"]:
            q, k, v = (x + self.t(L, f"attn_{n}.bias") for x, n in ((q, "q"), (k, "k"), (v, "v")))
        gate = None
        if rc["gated_q"]:                                   # per head [q | gate]
            qg = q.reshape(T, H, 2 * D)
            q, gate = qg[..., :D].reshape(T, H * D), qg[..., D:].reshape(T, H * D)
        q = q.reshape(T, H, D).transpose(1, 0, 2)
        k = k.reshape(T, HK, D).transpose(1, 0, 2)
        v = v.reshape(T, HK, D).transpose(1, 0, 2)
        if rc["qk_norm"]:
            q = rms_norm(q, self.t(L, "attn_q_norm.weight"), self.eps)
            k = rms_norm(k, self.t(L, "attn_k_norm.weight"), self.eps)
        if self.yarn:
            inv = yarn_inv_freq(self.n_rot, self.freq_base, **self.yarn)
            ang = pos.astype(np.float64)[:, None] * inv[None, :]
        else:
            ang = rope_angles(pos, self.n_rot, self.freq_base)
        q = self._kv_round(apply_rope(q, ang, rc["rope"], self.mscale))
        k = self._kv_round(apply_rope(k, ang, rc["rope"], self.mscale))
        v = self._kv_round(v)
        if st.k[L] is not None:
            k = np.concatenate([st.k[L], k], axis=1)
            v = np.concatenate([st.v[L], v], axis=1)
        st.k[L], st.v[L] = k, v
        g = H // HK
        kh, vh = np.repeat(k, g, axis=0), np.repeat(v, g, axis=0)
        s = q @ kh.transpose(0, 2, 1) / math.sqrt(D)
        qp, kp = pos[:, None], np.arange(k.shape[1])[None, :]
        allowed = kp <= qp
        if self.swa[L]:
            allowed &= (qp - kp) < self.window
        s = np.where(allowed[None], s, -np.inf)
        if rc["sinks"]:
            # sink_h joins each row's softmax denominator and takes no value.
            sink = self.t(L, "attn_sinks.weight")[:, None, None]
            m = np.maximum(s.max(axis=-1, keepdims=True), sink)
            p = np.exp(s - m)
            p /= p.sum(axis=-1, keepdims=True) + np.exp(sink - m)
        else:
            p = softmax(s)
        o = (p @ vh).transpose(1, 0, 2).reshape(T, H * D)
        if gate is not None:
            o = o * sigmoid(gate)
        out = o @ self.t(L, "attn_output.weight").T
        if rc["qkv_bias"]:
            out = out + self.t(L, "attn_output.bias")
        return out

    def delta_net(self, L, h, st):
        """Gated DeltaNet layer over the tokens of one sequence, in order."""
        rc, T = self.rc, h.shape[0]
        S, Hk, Hv, K = self.S, self.Hk, self.Hv, self.d_conv
        r = Hv // Hk
        m = h @ self.t(L, "attn_qkv.weight").T              # (T, C): [q | k | v]
        z = h @ self.t(L, "attn_gate.weight").T             # (T, Hv*S)
        if rc["ba_fused"]:
            ba = (h @ self.t(L, "ssm_ba.weight").T).reshape(T, Hk, 2 * r)
            b, a = ba[..., :r].reshape(T, Hv), ba[..., r:].reshape(T, Hv)
        else:
            b = h @ self.t(L, "ssm_beta.weight").T
            a = h @ self.t(L, "ssm_alpha.weight").T
        beta = sigmoid(b)                                   # (T, Hv)
        gexp = self.t(L, "ssm_a") * softplus(a + self.t(L, "ssm_dt.bias"))   # <= 0
        C = m.shape[1]
        prev = st.conv[L] if st.conv[L] is not None else np.zeros((K - 1, C))
        win = np.concatenate([prev, m])                     # (K-1+T, C)
        st.conv[L] = win[-(K - 1):].copy()
        cw = self.t(L, "ssm_conv1d.weight")                 # (C, K)
        u = np.stack([np.sum(win[t:t + K] * cw.T, axis=0) for t in range(T)])
        u = silu(u)
        q = u[:, :Hk * S].reshape(T, Hk, S)
        k = u[:, Hk * S:2 * Hk * S].reshape(T, Hk, S)
        v = u[:, 2 * Hk * S:].reshape(T, Hv, S)
        q = l2_norm(q) / math.sqrt(S)
        k = l2_norm(k)
        kh = np.arange(Hv) % Hk if rc["v_head_map"] == "tiled" else np.arange(Hv) // r
        state = st.ssm[L] if st.ssm[L] is not None else np.zeros((Hv, S, S))
        o, st.ssm[L] = gated_delta_rule(q[:, kh], k[:, kh], v, gexp, beta, state)
        y = rms_norm(o, self.t(L, "ssm_norm.weight"), self.eps) * silu(z.reshape(T, Hv, S))
        return y.reshape(T, Hv * S) @ self.t(L, "ssm_out.weight").T

    def ffn(self, L, h):
        rc = self.rc
        if not rc["moe"]:
            return (silu(h @ self.t(L, "ffn_gate.weight").T) * (h @ self.t(L, "ffn_up.weight").T)) \
                @ self.t(L, "ffn_down.weight").T
        logits = h @ self.t(L, "ffn_gate_inp.weight").T
        if rc["moe_bias"]:
            logits = logits + self.t(L, "ffn_gate_inp.bias")
        ids, wts = route(logits, self.n_used, rc["moe"])
        srt = -np.sort(-logits, axis=-1)   # softmax is monotone: gaps are read on the logits
        if self.n_used < self.n_expert:
            gap = float((srt[:, self.n_used - 1] - srt[:, self.n_used]).min())
            self.min_gap = min(self.min_gap, gap)
        Wg, Wu, Wd = (self.t(L, f"ffn_{n}_exps.weight") for n in ("gate", "up", "down"))
        q8 = _q8_0_round if self.q8_experts else (lambda v: v)
        out = np.zeros_like(h)
        for t in range(h.shape[0]):
            for e, wt in zip(ids[t], wts[t]):
                g, u = Wg[e] @ q8(h[t]), Wu[e] @ q8(h[t])
                if rc["moe_bias"]:
                    g = g + self.t(L, "ffn_gate_exps.bias")[e]
                    u = u + self.t(L, "ffn_up_exps.bias")[e]
                a = swiglu_oai(g, u) if rc["moe_act"] == "swiglu_oai" else silu(g) * u
                d = Wd[e] @ q8(a)
                if rc["moe_bias"]:
                    d = d + self.t(L, "ffn_down_exps.bias")[e]
                out[t] += wt * d
        if rc["shared_exp"]:
            sh = (silu(h @ self.t(L, "ffn_gate_shexp.weight").T) *
                  (h @ self.t(L, "ffn_up_shexp.weight").T)) @ self.t(L, "ffn_down_shexp.weight").T
            # [dim], or [1, dim] as llama.cpp's converters write it.
            gate = self.t(L, "ffn_gate_inp_shexp.weight").reshape(-1)
            out = out + sigmoid(h @ gate)[:, None] * sh
        return out

    # --- gemma4

    def _gemma4_hparams(self, hp):
        """Per-layer shapes: local (sliding-window) layers use key_length_swa,
        rope.dimension_count_swa and rope.freq_base_swa; global ones key_length,
        rope.dimension_count, rope.freq_base and rope_freqs.weight (proportional RoPE).
        The last shared_kv_layers layers own no KV: each reads the cache of the last
        KV-owning layer of its own kind (HF Gemma4: kv_shared_layer_index)."""
        L = self.n_layer
        pat = hp("attention.sliding_window_pattern")
        if len(pat) != L:
            raise RefError("attention.sliding_window_pattern needs one flag per layer")
        self.swa = [bool(v) for v in pat]
        self.window = int(hp("attention.sliding_window"))
        self.hd = [int(hp("attention.key_length_swa")) if self.swa[l]
                   else int(hp("attention.key_length")) for l in range(L)]
        self.rot = [int(hp("rope.dimension_count_swa", self.hd[l])) if self.swa[l]
                    else int(hp("rope.dimension_count", self.hd[l])) for l in range(L)]
        self.base = [float(hp("rope.freq_base_swa", 10000.0)) if self.swa[l]
                     else float(hp("rope.freq_base", 1e6)) for l in range(L)]
        kv = hp("attention.head_count_kv", self.n_head)
        self.hkv = [int(v) for v in kv] if isinstance(kv, (list, np.ndarray)) else [int(kv)] * L
        n_shared = int(hp("attention.shared_kv_layers", 0))
        first = L - n_shared
        self.kv_src = list(range(L))
        for l in range(first, L):
            own = [j for j in range(first) if self.swa[j] == self.swa[l]]
            if not own:
                raise RefError(f"layer {l} shares KV but no earlier layer has its kind")
            self.kv_src[l] = own[-1]
        self.n_ple = int(hp("embedding_length_per_layer_input", 0))
        self.final_softcap = float(hp("final_logit_softcapping", 0.0))

    def _kv_round(self, x):
        return x.astype(np.float16).astype(np.float64) if self.f16_kv else x

    def _gelu(self, x):
        if not self.f16_gelu:
            return gelu_tanh(x)
        y = gelu_tanh(x.astype(np.float16).astype(np.float64)).astype(np.float16).astype(np.float64)
        return np.where(x <= -10, 0.0, np.where(x >= 10, x, y))

    def _gemma4_experts(self, l, x):
        """Gemma 4 26B-A4B's routed experts on the residual x (the router reads x through a
        weightless RMS norm, / sqrt(E), times ffn_gate_inp.scale; the experts read
        pre_ffw_norm_2(x)); each expert's output is scaled by ffn_down_exps.scale[e]."""
        r_in = rms_norm(x, 1.0, self.eps) / math.sqrt(self.n_embd) * \
            self.t(l, "ffn_gate_inp.scale")
        logits = r_in @ self.t(l, "ffn_gate_inp.weight").T
        ids, wts = route(logits, self.n_used, "softmax")
        srt = -np.sort(-logits, axis=-1)
        if self.n_used < self.n_expert:
            self.min_gap = min(self.min_gap,
                               float((srt[:, self.n_used - 1] - srt[:, self.n_used]).min()))
        h = rms_norm(x, self.t(l, "pre_ffw_norm_2.weight"), self.eps)
        gate_up = self.t(l, "ffn_gate_up_exps.weight", required=False)
        if gate_up is None:   # split form
            gate_up = np.concatenate([self.t(l, "ffn_gate_exps.weight"),
                                      self.t(l, "ffn_up_exps.weight")], axis=1)
        down, scale = self.t(l, "ffn_down_exps.weight"), self.t(l, "ffn_down_exps.scale")
        F = gate_up.shape[1] // 2
        out = np.zeros_like(x)
        for t in range(x.shape[0]):
            for e, wt in zip(ids[t], wts[t]):
                gu = gate_up[e] @ h[t]
                out[t] += wt * scale[e] * (down[e] @ (self._gelu(gu[:F]) * gu[F:]))
        return out

    def forward_gemma4(self, tokens, st):
        T, E, L, P = tokens.size, self.n_embd, self.n_layer, self.n_ple
        pos = np.arange(st.n_past, st.n_past + T)
        x = self.w["token_embd.weight"][tokens] * math.sqrt(E)
        ple = None
        if P:
            # Per-Layer Embeddings: a token-indexed part and a projection of the scaled
            # embedding, each (T, L, P), averaged with 1/sqrt(2).
            tok = self.w["per_layer_token_embd.weight"][tokens].reshape(T, L, P) * math.sqrt(P)
            proj = (x @ self.w["per_layer_model_proj.weight"].T / math.sqrt(E)).reshape(T, L, P)
            proj = rms_norm(proj, self.w["per_layer_proj_norm.weight"], self.eps)
            ple = (proj + tok) / math.sqrt(2.0)
        qp = pos[:, None]
        for l in range(L):
            D, H, HK = self.hd[l], self.n_head, self.hkv[l]
            h = rms_norm(x, self.t(l, "attn_norm.weight"), self.eps)
            ff = self.w.get("rope_freqs.weight") if not self.swa[l] else None
            ang = rope_angles(pos, self.rot[l], self.base[l], ff)
            q = (h @ self.t(l, "attn_q.weight").T).reshape(T, H, D).transpose(1, 0, 2)
            q = apply_rope(rms_norm(q, self.t(l, "attn_q_norm.weight"), self.eps), ang, "neox")
            q = self._kv_round(q)   # ggml's CPU flash attention dots F16 K with F16-rounded Q
            if self.kv_src[l] == l:
                k = (h @ self.t(l, "attn_k.weight").T).reshape(T, HK, D).transpose(1, 0, 2)
                wv = self.t(l, "attn_v.weight", required=False)
                v = k.copy() if wv is None else \
                    (h @ wv.T).reshape(T, HK, D).transpose(1, 0, 2)
                k = apply_rope(rms_norm(k, self.t(l, "attn_k_norm.weight"), self.eps), ang, "neox")
                v = rms_norm(v, 1.0, self.eps)                       # V norm without weight
                k, v = self._kv_round(k), self._kv_round(v)
                if st.k[l] is not None:
                    k = np.concatenate([st.k[l], k], axis=1)
                    v = np.concatenate([st.v[l], v], axis=1)
                st.k[l], st.v[l] = k, v
            k, v = st.k[self.kv_src[l]], st.v[self.kv_src[l]]
            g = H // k.shape[0]
            s = q @ np.repeat(k, g, axis=0).transpose(0, 2, 1)       # attention scale 1
            kp = np.arange(k.shape[1])[None, :]
            allowed = kp <= qp
            if self.swa[l]:
                allowed &= (qp - kp) < self.window
            p = softmax(np.where(allowed[None], s, -np.inf))
            o = (p @ np.repeat(v, g, axis=0)).transpose(1, 0, 2).reshape(T, H * D)
            a = rms_norm(o @ self.t(l, "attn_output.weight").T,
                         self.t(l, "post_attention_norm.weight"), self.eps)
            x = x + a
            h = rms_norm(x, self.t(l, "ffn_norm.weight"), self.eps)
            f = (self._gelu(h @ self.t(l, "ffn_gate.weight").T) *
                 (h @ self.t(l, "ffn_up.weight").T)) @ self.t(l, "ffn_down.weight").T
            if self.n_expert:
                f = rms_norm(f, self.t(l, "post_ffw_norm_1.weight"), self.eps) + \
                    rms_norm(self._gemma4_experts(l, x), self.t(l, "post_ffw_norm_2.weight"),
                             self.eps)
            x = x + rms_norm(f, self.t(l, "post_ffw_norm.weight"), self.eps)
            if ple is not None:
                g2 = self._gelu(x @ self.t(l, "inp_gate.weight").T) * ple[:, l]
                x = x + rms_norm(g2 @ self.t(l, "proj.weight").T, self.t(l, "post_norm.weight"),
                                 self.eps)
            sc = self.t(l, "layer_output_scale.weight", required=False)
            if sc is not None:
                x = x * sc[0]
        st.n_past += T
        logits = rms_norm(x, self.w["output_norm.weight"], self.eps) @ self.out_w.T
        return soft_cap(logits, self.final_softcap) if self.final_softcap else logits

    def forward(self, tokens, st=None):
        tokens = np.asarray(tokens, dtype=np.int64)
        if tokens.ndim != 1 or tokens.size == 0:
            raise RefError("need a non-empty 1-D list of token ids")
        if tokens.min() < 0 or tokens.max() >= self.n_vocab:
            raise RefError(f"token id out of range [0, {self.n_vocab})")
        st = st or State(self.n_layer)
        if self.rc["gemma4"]:
            return self.forward_gemma4(tokens, st)
        pos = np.arange(st.n_past, st.n_past + tokens.size)
        x = self.w["token_embd.weight"][tokens]
        for L in range(self.n_layer):
            h = rms_norm(x, self.t(L, "attn_norm.weight"), self.eps)
            x = x + (self.delta_net(L, h, st) if self.recurrent[L] else
                     self.attention(L, h, st, pos))
            x = x + self.ffn(L, rms_norm(x, self.t(L, self.rc["ffn_norm"] + ".weight"), self.eps))
        st.n_past += tokens.size
        return rms_norm(x, self.w["output_norm.weight"], self.eps) @ self.out_w.T

    def new_state(self):
        return State(self.n_layer)

    def greedy(self, tokens, n, recompute=False, margins=None):
        from reference import _argmax
        out, seq = [], list(tokens)
        st = State(self.n_layer)
        row = self.forward(seq, st)[-1]
        for i in range(n):
            out.append(_argmax(row, margins))
            seq.append(out[-1])
            if i + 1 < n:
                row = self.forward(seq)[-1] if recompute else self.forward([out[-1]], st)[-1]
        return out

    def decode(self, ids):
        return " ".join(map(str, ids))


# ----------------------------------------------------------------------------
# generator

GEN_DEFAULTS = {
    "llama": dict(experts=4, experts_used=2),
    "qwen3moe": dict(experts=8, experts_used=2),
    "gpt-oss": dict(experts=8, experts_used=2),
    "qwen35": dict(experts=0, experts_used=0),
    "qwen35moe": dict(experts=8, experts_used=2),
    "qwen3next": dict(experts=8, experts_used=2),
    "gemma4": dict(experts=0, experts_used=0),
}


# The prompt the generator keeps free of router near-ties (and the selftest compares on).
PROBE_IDS = [1, 17, 99, 42, 5, 200, 201, 77, 3, 150, 260, 31]
PROBE_STEPS = 8
MIN_ROUTER_GAP = 0.05


def generator_params(arch):
    """The keyword arguments gen_family passes on for `arch` (its generator's parameters)."""
    return set(inspect.signature(_gen_gemma4 if arch == "gemma4" else _gen_family).parameters)


def gen_family(path, arch, experts=None, experts_used=None, seed=0, **kw):
    """Random-weight GGUF of a per-layer family (see _gen_family). For MoE files the
    router is redrawn (up to 50 times) until, over PROBE_IDS and its PROBE_STEPS greedy
    continuation, every layer's k-th and (k+1)-th router logits are MIN_ROUTER_GAP apart:
    llama.cpp's F16 rounding moves them by ~1e-3, so its top-k choices are ours."""
    if arch == "gemma4" and not experts:
        return _gen_gemma4(path, seed=seed, **kw)
    for router_seed in range(50):
        if arch == "gemma4":
            info = _gen_gemma4(path, seed=seed, experts=experts, experts_used=experts_used,
                               router_seed=router_seed, **kw)
        else:
            info = _gen_family(path, arch, experts, experts_used, seed=seed,
                               router_seed=router_seed, **kw)
        if not info["experts_used"] or info["experts_used"] == info["experts"]:
            return info
        m = FamilyModel(path)
        m.greedy(PROBE_IDS, PROBE_STEPS)
        if m.min_gap >= MIN_ROUTER_GAP:
            return dict(info, router_seed=router_seed, min_router_gap=m.min_gap)
    raise RefError(f"no router draw without near-ties in 50 tries ({arch})")


def _gen_family(path, arch, experts=None, experts_used=None, dim=64, layers=4, heads=4,
                kv_heads=2, head_dim=16, ffn=96, ffn_exp=32, vocab=320, ctx=4096, seed=0,
                router_std=6.0, router_seed=0, expert_type=None, hybrid_head_dim=32,
                ssm_state=16, ssm_groups=2, ssm_heads=4, mtp=0):
    """Random-weight GGUF of a per-layer family with the tensor names and keys llama.cpp
    reads (router logits of std `router_std`). Hybrids use `hybrid_head_dim` for their
    attention layers and S = `ssm_state`, H_k = `ssm_groups`, H_v = `ssm_heads` (the
    defaults are the test files'; benchmarks pass real shapes). `mtp` (qwen35) appends that
    many multi-token-prediction blocks as llama.cpp's converter does (counted in block_count,
    `nextn_predict_layers`); the main model's weights are those of the file without them."""
    if mtp and arch != "qwen35":
        raise RefError("mtp: qwen35 only")
    if arch not in FAMILIES:
        raise RefError(f"unknown family {arch}")
    rc = dict(BASE, **FAMILIES[arch])
    d = GEN_DEFAULTS[arch]
    n_exp = d["experts"] if experts is None else experts
    n_used = d["experts_used"] if experts_used is None else experts_used
    if rc["moe"] and not (0 < n_used <= n_exp):
        raise RefError(f"{arch} needs 0 < --experts-used <= --experts")
    if rc["hybrid"]:
        head_dim = hybrid_head_dim
    std = 0.5 / math.sqrt(dim)
    tokens, scores, types = sp_vocab(vocab)
    w = gguf.GGUFWriter(path)
    a = arch
    w.add("general.architecture", a)
    w.add("general.name", f"reference-{arch}-{dim}x{layers}")
    w.add("general.file_type", 0)
    w.add(f"{a}.vocab_size", vocab)
    w.add(f"{a}.context_length", ctx)
    w.add(f"{a}.embedding_length", dim)
    w.add(f"{a}.block_count", layers + mtp)
    if mtp:
        w.add(f"{a}.nextn_predict_layers", mtp, "uint32")
    # As llama.cpp's converters write it: gpt-oss's intermediate_size is the experts' width,
    # and Qwen3.5-MoE configs have no dense width (the key is left out).
    if arch != "qwen35moe":
        w.add(f"{a}.feed_forward_length", ffn_exp if arch in ("llama", "gpt-oss") else ffn)
    w.add(f"{a}.attention.head_count", heads)
    w.add(f"{a}.attention.head_count_kv", kv_heads)
    w.add(f"{a}.attention.key_length", head_dim)
    w.add(f"{a}.attention.value_length", head_dim)
    n_rot = head_dim // 4 if rc["hybrid"] else head_dim
    w.add(f"{a}.rope.dimension_count", n_rot)
    w.add(f"{a}.rope.freq_base", 10000.0 if not rc["hybrid"] else 1e7, "float32")
    w.add(f"{a}.attention.layer_norm_rms_epsilon", 1e-6, "float32")
    if rc["moe"]:
        w.add(f"{a}.expert_count", n_exp, "uint32")
        w.add(f"{a}.expert_used_count", n_used, "uint32")
        if arch != "llama":
            w.add(f"{a}.expert_feed_forward_length", ffn_exp, "uint32")
    if rc["shared_exp"]:
        w.add(f"{a}.expert_shared_feed_forward_length", ffn_exp, "uint32")
    if arch == "gpt-oss":
        if (expert_type or "MXFP4") == "MXFP4":
            w.add("general.file_type", 38, "uint32")        # LLAMA_FTYPE_MOSTLY_MXFP4_MOE
        w.add(f"{a}.attention.sliding_window", 4, "uint32")
        w.add(f"{a}.rope.scaling.type", "yarn")
        w.add(f"{a}.rope.scaling.factor", 32.0, "float32")
        w.add(f"{a}.rope.scaling.original_context_length", 256, "uint32")
        w.add(f"{a}.rope.scaling.yarn_beta_fast", 32.0, "float32")
        w.add(f"{a}.rope.scaling.yarn_beta_slow", 1.0, "float32")
    S, Hk, Hv = ssm_state, ssm_groups, ssm_heads
    if rc["hybrid"]:
        w.add(f"{a}.ssm.conv_kernel", 4, "uint32")
        w.add(f"{a}.ssm.state_size", S, "uint32")
        w.add(f"{a}.ssm.group_count", Hk, "uint32")
        w.add(f"{a}.ssm.time_step_rank", Hv, "uint32")
        w.add(f"{a}.ssm.inner_size", Hv * S, "uint32")
        w.add(f"{a}.full_attention_interval", 4, "uint32")
        if arch != "qwen3next":   # Qwen3.5's interleaved M-RoPE; Qwen3-Next rotates plainly
            w.add(f"{a}.rope.dimension_sections", [n_rot // 4, n_rot // 8, n_rot // 8, 0],
                  "array<int32>")
    w.add("tokenizer.ggml.model", "llama")
    w.add("tokenizer.ggml.tokens", tokens)
    w.add("tokenizer.ggml.scores", np.asarray(scores, dtype=np.float32))
    w.add("tokenizer.ggml.token_type", np.asarray(types, dtype=np.int32))
    w.add("tokenizer.ggml.bos_token_id", 1)
    w.add("tokenizer.ggml.eos_token_id", 2)
    w.add("tokenizer.ggml.unknown_token_id", 0)
    w.add("tokenizer.ggml.add_bos_token", True)

    def normal(name, shape, s):
        return _rng(seed, name).standard_normal(shape) * s

    def put(name, arr, t="F32"):
        w.add_tensor(name, arr, t)

    # gpt-oss ships its experts in MXFP4 (the other tensors stay F32 here). With
    # expert_type="F32" they hold the same (MXFP4-representable) values as F32.
    exp_type = expert_type or ("MXFP4" if arch == "gpt-oss" else "F32")
    exp_values = (lambda x: gguf.dequantize(gguf.quantize_mxfp4(x), "MXFP4", x.size)
                  .reshape(x.shape)) if arch == "gpt-oss" else (lambda x: x)

    def mat(name, rows, cols, s=None):
        put(name, normal(name, (rows, cols), (s or std) * math.sqrt(dim / cols)))

    def norm(name, n=dim):
        put(name, 1.0 + normal(name, (n,), 0.1))

    emb = normal("token_embd.weight", (vocab, dim), 1.0)
    put("token_embd.weight", emb)
    recurrent = [rc["hybrid"] and L < layers and (L + 1) % 4 != 0 for L in range(layers + mtp)]
    for L in range(layers + mtp):
        p = f"blk.{L}."
        norm(p + "attn_norm.weight")
        if recurrent[L]:
            C = 2 * Hk * S + Hv * S
            mat(p + "attn_qkv.weight", C, dim, 2 * std)
            mat(p + "attn_gate.weight", Hv * S, dim)
            if rc["ba_fused"]:
                mat(p + "ssm_ba.weight", 2 * Hv, dim, 4 * std)
            else:
                mat(p + "ssm_beta.weight", Hv, dim, 4 * std)
                mat(p + "ssm_alpha.weight", Hv, dim, 4 * std)
            put(p + "ssm_conv1d.weight", normal(p + "ssm_conv1d.weight", (C, 4), 0.5))
            put(p + "ssm_dt.bias", normal(p + "ssm_dt.bias", (Hv,), 0.5))
            put(p + "ssm_a", -np.exp(normal(p + "ssm_a", (Hv,), 0.5)))   # -exp(A_log) < 0
            norm(p + "ssm_norm.weight", S)
            mat(p + "ssm_out.weight", dim, Hv * S)
        else:
            qw = heads * head_dim * (2 if rc["gated_q"] else 1)
            mat(p + "attn_q.weight", qw, dim, 2 * std)
            mat(p + "attn_k.weight", kv_heads * head_dim, dim, 2 * std)
            mat(p + "attn_v.weight", kv_heads * head_dim, dim)
            mat(p + "attn_output.weight", dim, heads * head_dim)
            if rc["qk_norm"]:
                norm(p + "attn_q_norm.weight", head_dim)
                norm(p + "attn_k_norm.weight", head_dim)
            if rc["qkv_bias"]:
                for t, n in (("attn_q", heads * head_dim), ("attn_k", kv_heads * head_dim),
                             ("attn_v", kv_heads * head_dim), ("attn_output", dim)):
                    put(p + t + ".bias", normal(p + t + ".bias", (n,), 0.2))
            if rc["sinks"]:
                put(p + "attn_sinks.weight", normal(p + "attn_sinks.weight", (heads,), 1.0))
        norm(p + rc["ffn_norm"] + ".weight")
        if L >= layers:   # an MTP block: its own input projection and norms
            mat(p + "nextn.eh_proj.weight", dim, 2 * dim)
            norm(p + "nextn.enorm.weight")
            norm(p + "nextn.hnorm.weight")
            norm(p + "nextn.shared_head_norm.weight")
        if not rc["moe"]:
            mat(p + "ffn_gate.weight", ffn, dim)
            mat(p + "ffn_up.weight", ffn, dim)
            mat(p + "ffn_down.weight", dim, ffn)
            continue
        # Router: logits of std router_std over normed inputs, so the k-th and (k+1)-th
        # choices are typically far apart next to llama.cpp's ~1e-3 rounding.
        rname = p + "ffn_gate_inp.weight"
        put(rname, normal(f"{rname}#{router_seed}" if router_seed else rname, (n_exp, dim),
                          router_std / math.sqrt(dim)))
        for t, shape in (("gate", (n_exp, ffn_exp, dim)), ("up", (n_exp, ffn_exp, dim)),
                         ("down", (n_exp, dim, ffn_exp))):
            name = p + f"ffn_{t}_exps.weight"
            put(name, exp_values(normal(name, shape, std * math.sqrt(dim / shape[2]) * 2)),
                exp_type)
        if rc["moe_bias"]:
            put(p + "ffn_gate_inp.bias", normal(p + "ffn_gate_inp.bias", (n_exp,), 0.5))
            for t, n in (("gate", ffn_exp), ("up", ffn_exp), ("down", dim)):
                name = p + f"ffn_{t}_exps.bias"
                put(name, normal(name, (n_exp, n), 0.2))
        if rc["shared_exp"]:
            mat(p + "ffn_gate_shexp.weight", ffn_exp, dim)
            mat(p + "ffn_up_shexp.weight", ffn_exp, dim)
            mat(p + "ffn_down_shexp.weight", dim, ffn_exp)
            put(p + "ffn_gate_inp_shexp.weight", normal(p + "ffn_gate_inp_shexp.weight",
                                                        (dim,), 1.0 / math.sqrt(dim)))
    norm("output_norm.weight")
    # Planted successor (as reference.gen_model): argmax = succ(last token) by a wide margin.
    out = normal("output.weight", (vocab, dim), 0.02)
    perm = _rng(seed, "successor").permutation(np.arange(3, vocab))
    succ = np.concatenate([perm[:3], perm])
    np.add.at(out, succ, 8.0 / dim * emb)
    put("output.weight", out)
    w.write()
    return {"path": path, "arch": arch, "experts": n_exp, "experts_used": n_used}


def _gen_gemma4(path, dim=64, heads=4, kv_heads=1, vocab=320, ctx=4096, seed=0, drop=(),
                experts=0, experts_used=0, router_seed=0, router_std=6.0, split_experts=False):
    """A scaled-down Gemma 4 E model: 6 layers, every third global (E2B: every fifth),
    local head 16 / global head 32, RoPE bases 1e4 / 1e6, proportional RoPE on the global
    layers (a quarter of the pairs rotate, as E2B's rope_freqs), window 4, the last 3
    layers sharing KV, double-wide FFN on them, 8-wide per-layer embeddings,
    layer_output_scale and a final soft-cap of 30. Tensors named in `drop` are left out
    (blk.N.attn_v.weight: that layer's V is its K projection); the other weights keep
    their values, since each is drawn from its own name.

    With `experts`, the 26B-A4B form scaled down: no per-layer embeddings and no shared KV,
    2 KV heads on local layers and 1 on global ones, whose V is their K projection
    (attention_k_eq_v), and in every layer a dense GeGLU MLP (width 64) beside `experts`
    routed GeGLU experts of width 32 (`experts_used` chosen): a router over the weightless
    RMS norm of the residual scaled by 1/sqrt(dim) and ffn_gate_inp.scale, softmax, top-k,
    renormalised, each expert's output times ffn_down_exps.scale; experts fused as
    ffn_gate_up_exps (gate rows first), as the converter writes them, or with
    `split_experts` (the same values) as ffn_gate_exps and ffn_up_exps."""
    moe = bool(experts)
    if moe and not 0 < experts_used <= experts:
        raise RefError("gemma4 needs 0 < --experts-used <= --experts")
    L, n_shared, P = (6, 0, 0) if moe else (6, 3, 8)
    swa = [l % 3 != 2 for l in range(L)]
    hd = [16 if s else 32 for s in swa]
    ff = [64 if l < L - n_shared else 128 for l in range(L)]
    kv_heads = [2 if s else 1 for s in swa] if moe else kv_heads
    F = 32
    std = 0.5 / math.sqrt(dim)
    tokens, scores, types = sp_vocab(vocab)
    w = gguf.GGUFWriter(path)
    a = "gemma4"
    for k, v, t in (("general.architecture", a, None), ("general.name", "reference-gemma4", None),
                    ("general.file_type", 0, "uint32"), (f"{a}.vocab_size", vocab, "uint32"),
                    (f"{a}.context_length", ctx, "uint32"),
                    (f"{a}.embedding_length", dim, "uint32"), (f"{a}.block_count", L, "uint32"),
                    (f"{a}.feed_forward_length", ff[0] if moe else ff,
                     "uint32" if moe else "array<int32>"),
                    (f"{a}.attention.head_count", heads, "uint32"),
                    (f"{a}.attention.head_count_kv", kv_heads,
                     "array<int32>" if moe else "uint32"),
                    (f"{a}.attention.key_length", 32, "uint32"),
                    (f"{a}.attention.value_length", 32, "uint32"),
                    (f"{a}.attention.key_length_swa", 16, "uint32"),
                    (f"{a}.attention.value_length_swa", 16, "uint32"),
                    (f"{a}.rope.dimension_count", 32, "uint32"),
                    (f"{a}.rope.dimension_count_swa", 16, "uint32"),
                    (f"{a}.rope.freq_base", 1e6, "float32"),
                    (f"{a}.rope.freq_base_swa", 1e4, "float32"),
                    (f"{a}.attention.sliding_window", 4, "uint32"),
                    (f"{a}.attention.sliding_window_pattern", swa, "array<bool>"),
                    (f"{a}.attention.shared_kv_layers", n_shared, "uint32"),
                    (f"{a}.embedding_length_per_layer_input", P, "uint32"),
                    (f"{a}.attention.layer_norm_rms_epsilon", 1e-6, "float32"),
                    (f"{a}.final_logit_softcapping", 30.0, "float32"),
                    ("tokenizer.ggml.model", "llama", None),
                    ("tokenizer.ggml.tokens", tokens, None),
                    ("tokenizer.ggml.scores", np.asarray(scores, dtype=np.float32), None),
                    ("tokenizer.ggml.token_type", np.asarray(types, dtype=np.int32), None),
                    ("tokenizer.ggml.bos_token_id", 1, None),
                    ("tokenizer.ggml.eos_token_id", 2, None),
                    ("tokenizer.ggml.unknown_token_id", 0, None),
                    ("tokenizer.ggml.add_bos_token", True, None)):
        w.add(k, v, t)
    if moe:
        w.add(f"{a}.expert_count", experts, "uint32")
        w.add(f"{a}.expert_used_count", experts_used, "uint32")
        w.add(f"{a}.expert_feed_forward_length", F, "uint32")

    def normal(name, shape, s):
        return _rng(seed, name).standard_normal(shape) * s

    def put(name, arr):
        if name not in drop:
            w.add_tensor(name, arr, "F32")

    def mat(name, rows, cols, k=1.0):
        put(name, normal(name, (rows, cols), k * std * math.sqrt(dim / cols)))

    def norm(name, n=dim):
        put(name, 1.0 + normal(name, (n,), 0.1))

    emb = normal("token_embd.weight", (vocab, dim), 1.0)
    put("token_embd.weight", emb)
    if P:
        put("per_layer_token_embd.weight",
            normal("per_layer_token_embd.weight", (vocab, L * P), 1.0))
        mat("per_layer_model_proj.weight", L * P, dim)
        norm("per_layer_proj_norm.weight", P)
    put("rope_freqs.weight", np.concatenate([np.ones(4), np.full(12, 1e30)]))
    for l in range(L):
        p, D = f"blk.{l}.", hd[l]
        norm(p + "attn_norm.weight")
        mat(p + "attn_q.weight", heads * D, dim, 2.0)
        norm(p + "attn_q_norm.weight", D)
        if l < L - n_shared:
            kvh = kv_heads[l] if moe else kv_heads
            mat(p + "attn_k.weight", kvh * D, dim, 2.0)
            if not (moe and not swa[l]):   # 26B: global layers' V is their K projection
                mat(p + "attn_v.weight", kvh * D, dim)
            norm(p + "attn_k_norm.weight", D)
        mat(p + "attn_output.weight", dim, heads * D)
        norm(p + "post_attention_norm.weight")
        norm(p + "ffn_norm.weight")
        mat(p + "ffn_gate.weight", ff[l], dim)
        mat(p + "ffn_up.weight", ff[l], dim)
        mat(p + "ffn_down.weight", dim, ff[l])
        norm(p + "post_ffw_norm.weight")
        if moe:
            rname = p + "ffn_gate_inp.weight"
            # Its input has norm ~1 (rms 1/sqrt(dim)): logits of std ~router_std.
            put(rname, normal(f"{rname}#{router_seed}" if router_seed else rname,
                              (experts, dim), router_std))
            put(p + "ffn_gate_inp.scale", 1.0 + normal(p + "ffn_gate_inp.scale", (dim,), 0.2))
            norm(p + "pre_ffw_norm_2.weight")
            norm(p + "post_ffw_norm_1.weight")
            norm(p + "post_ffw_norm_2.weight")
            gate_up = normal(p + "ffn_gate_up_exps.weight", (experts, 2 * F, dim), 2 * std)
            if split_experts:
                put(p + "ffn_gate_exps.weight", gate_up[:, :F])
                put(p + "ffn_up_exps.weight", gate_up[:, F:])
            else:
                put(p + "ffn_gate_up_exps.weight", gate_up)
            put(p + "ffn_down_exps.weight", normal(p + "ffn_down_exps.weight",
                                                   (experts, dim, F), 2 * std * math.sqrt(dim / F)))
            put(p + "ffn_down_exps.scale", 0.5 + np.abs(normal(p + "ffn_down_exps.scale",
                                                               (experts,), 0.5)))
        if P:
            mat(p + "inp_gate.weight", P, dim, 4.0)
            mat(p + "proj.weight", dim, P)
            norm(p + "post_norm.weight")
        put(p + "layer_output_scale.weight", np.array([0.6 + 0.15 * l]))
    norm("output_norm.weight")
    out = normal("output.weight", (vocab, dim), 0.02)
    perm = _rng(seed, "successor").permutation(np.arange(3, vocab))
    succ = np.concatenate([perm[:3], perm])
    np.add.at(out, succ, 8.0 / dim * emb)
    put("output.weight", out)
    w.write()
    return {"path": path, "arch": a, "layers": L, "shared_kv_layers": n_shared,
            "experts": experts, "experts_used": experts_used}


# ----------------------------------------------------------------------------
# validation against llama.cpp (the peer)


def peer_dir():
    """$LLAMACPP_PEER_DIR, else `peer` beside the shared folder (as tests/peer.h)."""
    from reference import _shared_dir
    return os.environ.get("LLAMACPP_PEER_DIR") or \
        os.path.join(os.path.dirname(os.path.abspath(_shared_dir())), "peer")


def compare_with_peer(path, prompt, n, tmp, q8_experts=False, f16_gelu=False, f16_kv=False):
    """Run llamacpp-logits on `path` and the reference on the same ids. Returns a dict:
    greedy ids of both, max abs / rel logit difference over the n steps (rel: divided by
    the row's max |logit|), and the smallest router gap the reference saw."""
    exe = os.path.join(peer_dir(), "bin", "llamacpp-logits")
    out = os.path.join(tmp, os.path.basename(path) + ".steps.f32")
    # One thread: with two, ggml's workers spin and the run costs ~1 s of CPU instead of ~15 ms.
    r = subprocess.run([exe, path, json.dumps(prompt), "--n", str(n), "--top", "1",
                        "--threads", "1", "--step-logits-out", out],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RefError(f"llamacpp-logits failed on {path}: {r.stderr[-400:]}")
    peer = json.loads(r.stdout[r.stdout.index("{"):])
    m = FamilyModel(path)
    m.q8_experts = q8_experts
    m.f16_gelu = f16_gelu
    m.f16_kv = f16_kv
    st = m.new_state()
    rows = [m.forward(prompt, st)[-1]]
    for t in peer["greedy_ids"][:-1]:       # feed llama.cpp's choices: rows stay comparable
        rows.append(m.forward([t], st)[-1])
    ref = np.stack(rows)
    got = np.fromfile(out, "<f4").reshape(-1, m.n_vocab)[:len(rows)].astype(np.float64)
    d = np.abs(ref - got)
    scale = np.abs(ref).max(axis=1, keepdims=True)
    return {"peer_ids": peer["greedy_ids"], "ref_ids": [int(np.argmax(x)) for x in ref],
            "max_abs": float(d.max()), "max_rel": float((d / scale).max()),
            "min_router_gap": m.min_gap}


# ----------------------------------------------------------------------------
# selftest stages (run by reference.py selftest)

# Bounds on llama.cpp vs this reference, as the largest |difference| over the compared
# rows divided by that row's largest |logit| (the figures measured are in tools/README.md).
# F32 files: llama.cpp keeps K and V in F16 (relative rounding 2^-11 ~ 4.9e-4 per value),
# which reaches the logits through at most 6 layers: 6 * 2^-11 ~ 3e-3.
# MXFP4 experts (gpt-oss): ggml's CPU kernel rounds each expert's input activations to
# Q8_0 (1/254 of the block's largest |value|, ~4e-3) in 2 matmuls per layer and 4 layers:
# 3e-2.
PEER_REL_BOUND = {"F32": 3e-3, "MXFP4": 3e-2}
# (label, arch, gen options). gpt-oss runs twice: as shipped (MXFP4 experts) and with the
# same expert values stored as F32, which isolates the math from ggml's Q8_0 rounding.
PEER_CASES = [("gemma4", "gemma4", {}),
              ("gemma4 experts", "gemma4", {"experts": 8, "experts_used": 2}),
              ("qwen35", "qwen35", {}),
              ("qwen35moe", "qwen35moe", {}), ("qwen3next", "qwen3next", {}),
              ("qwen3moe", "qwen3moe", {}), ("gpt-oss", "gpt-oss", {}),
              ("gpt-oss F32 experts", "gpt-oss", {"expert_type": "F32"}),
              ("llama 4 experts", "llama", {"experts": 4, "experts_used": 2})]


def _st_blocks(c):
    print("per-layer family blocks:")
    with np.errstate(over="raise", invalid="raise"):
        sp = softplus(np.array([-1000.0, -1.0, 0.0, 1.0, 30.0, 1000.0]))
    c.check(sp[0] == 0.0 and sp[-1] == 1000.0 and abs(sp[2] - math.log(2)) < 1e-15 and
            abs(sp[3] - math.log1p(math.e)) < 1e-15, "softplus: stable at +-1000, log 2 at 0")
    rng = np.random.default_rng(11)
    lg = rng.standard_normal((5, 8)) * 3
    ids, w = route(lg, 3, "softmax")
    brute = np.argsort(-lg, axis=1)[:, :3]
    p = softmax(lg)
    c.check(np.array_equal(ids, brute) and np.allclose(w.sum(1), 1) and
            np.allclose(w, np.take_along_axis(p, ids, 1) /
                        np.take_along_axis(p, ids, 1).sum(1, keepdims=True)),
            "route softmax: top-3 of p, renormalised weights")
    ids2, w2 = route(lg, 3, "topk_softmax")
    c.check(np.array_equal(ids2, brute) and
            np.allclose(w2, softmax(np.take_along_axis(lg, brute, 1))),
            "route topk_softmax (gpt-oss): softmax over the selected logits")
    g = np.array([-10.0, 0.0, 5.0, 10.0])
    u = np.array([-9.0, 3.0, 8.0, -1.0])
    c.check(np.allclose(swiglu_oai(g, u), [-10 * sigmoid(-17.02) * -6, 0.0,
                                           5 * sigmoid(8.51) * 8, 7 * sigmoid(11.914) * 0]),
            "swiglu_oai: gate clamped above at 7, up to [-7, 7], (up + 1)")
    # Delta rule as associative memory: no decay, beta = 1, orthonormal keys -> S q = v of
    # the key equal to q, and a key written twice keeps only its latest value.
    H, Sk, Sv, T = 2, 6, 3, 4
    keys = np.linalg.qr(rng.standard_normal((Sk, Sk)))[0][:, :T].T          # (T, Sk)
    k = np.repeat(keys[:, None], H, axis=1)
    v = rng.standard_normal((T, H, Sv))
    o, S = gated_delta_rule(k, k, v, np.zeros((T, H)), np.ones((T, H)), np.zeros((H, Sv, Sk)))
    k2 = np.concatenate([k, k[:1]])
    v2 = np.concatenate([v, rng.standard_normal((1, H, Sv))])
    _, S2 = gated_delta_rule(k2, k2, v2, np.zeros((T + 1, H)), np.ones((T + 1, H)),
                             np.zeros((H, Sv, Sk)))
    got = np.einsum("hij,tj->thi", S, keys)
    c.check(np.allclose(o, v) and np.allclose(got, v) and
            np.allclose(np.einsum("hij,j->hi", S2, keys[0]), v2[-1]) and
            np.allclose(np.einsum("hij,j->hi", S2, keys[1]), v[1]),
            "delta rule: orthonormal keys recall their values; a rewrite replaces one")
    gdec = np.full((T, H), -0.5)
    od, _ = gated_delta_rule(k, k, v, gdec, np.ones((T, H)), np.zeros((H, Sv, Sk)))
    c.check(np.allclose(od, v), "delta rule: decay before the write leaves the fresh value")
    # MXFP4 hand block: e = 127 -> scale 2^-1 on ggml's doubled E2M1 values, i.e. plain E2M1
    # (0, 0.5, 1, 1.5, 2, 3, 4, 6, then -0 and the negatives); low nibbles first.
    e2m1 = [0, .5, 1, 1.5, 2, 3, 4, 6, 0, -.5, -1, -1.5, -2, -3, -4, -6]
    blk = bytes([127] + [j | ((15 - j) << 4) for j in range(16)])
    dq = gguf.dequantize(blk, "MXFP4", 32)
    c.check(list(dq[:16]) == e2m1 and list(dq[16:]) == e2m1[::-1] and
            np.array_equal(gguf.dequantize(gguf.quantize_mxfp4(dq * 8), "MXFP4", 32), dq * 8),
            "MXFP4: hand block decodes to E2M1 x 2^(e-127); grid values re-encode exactly")
    x = rng.standard_normal((3, 8))
    c.check(np.allclose(np.linalg.norm(l2_norm(x), axis=1), 1, atol=1e-6) and
            np.all(l2_norm(np.zeros((1, 8))) == 0), "l2_norm: unit rows, 0 stays 0")


# The weights whose zeroing removes one kind of block's output.
BLOCK_OUTPUTS = ("ssm_out.weight", "attn_output.weight", "ffn_down.weight",
                 "ffn_down_exps.weight", "ffn_down_shexp.weight", "proj.weight")


def _st_models(c, tmp):
    print("per-layer family models (gen, state, invariants):")
    ids = PROBE_IDS
    paths = {}
    for label, arch, kw in PEER_CASES:
        p = os.path.join(tmp, f"fam_{label.replace(' ', '_')}.gguf")
        info = gen_family(p, arch, **kw)
        paths[label] = p
        m = FamilyModel(p)
        full = m.forward(ids)
        st = m.new_state()
        parts = np.concatenate([m.forward(ids[:5], st), m.forward(ids[5:6], st),
                                m.forward(ids[6:], st)])
        c.check(np.abs(parts - full).max() < 1e-9 and
                m.greedy(ids, 4) == m.greedy(ids, 4, recompute=True) and
                np.abs(m.forward(ids[:4]) - full[:4]).max() < 1e-9,
                f"{label}: chunked via state == full, cache == recompute, causal"
                + (f" (router gap {info['min_router_gap']:.3f})" if "min_router_gap" in info
                   else ""))
        # The llama.cpp comparison can only see a block that moves the logits by more than
        # its bound: removing any one kind of block output must move them by 3x the bound.
        ref = np.abs(full).max()
        moves = {}
        for kind in BLOCK_OUTPUTS:
            names = [n for n in m.w if n.startswith("blk.") and n.endswith(kind)]
            if not names:
                continue
            z = FamilyModel(p)
            for n in names:
                z.w[n] = np.zeros_like(z.w[n])
            moves[kind.split(".")[0]] = float(np.abs(z.forward(ids) - full).max()) / ref
        weakest = min(moves, key=moves.get)
        c.check(moves[weakest] > 3 * PEER_REL_BOUND["F32"],
                f"{label}: every block kind moves the logits (weakest {weakest}: "
                f"{moves[weakest]:.1e} relative)")
    # MoE with every expert used and all experts equal == that dense FFN.
    m = FamilyModel(paths["qwen3moe"])
    for L in range(m.n_layer):
        for n in ("gate", "up", "down"):
            e = m.w[f"blk.{L}.ffn_{n}_exps.weight"]
            m.w[f"blk.{L}.ffn_{n}_exps.weight"] = np.repeat(e[:1], e.shape[0], axis=0)
    m.n_used = m.n_expert
    moe = m.forward(ids)
    m.rc = dict(m.rc, moe=None)
    for L in range(m.n_layer):
        for n in ("gate", "up", "down"):
            m.w[f"blk.{L}.ffn_{n}.weight"] = m.w[f"blk.{L}.ffn_{n}_exps.weight"][0]
    c.check(np.abs(m.forward(ids) - moe).max() < 1e-9, "MoE of identical experts == dense FFN")
    # The grouped (qwen3next) and tiled (qwen35*) V-head maps differ when H_v != H_k
    # (4 vs 2 here): swapping the map must move the logits.
    m = FamilyModel(paths["qwen3next"])
    base = m.forward(ids)
    m.rc = dict(m.rc, v_head_map="tiled")
    c.check(np.abs(m.forward(ids) - base).max() > 1e-4,
            "v-head to k-head map matters (H_v=4, H_k=2)")
    g = FamilyModel(paths["gemma4"])
    c.check(g.kv_src == [0, 1, 2, 1, 1, 2] and g.hd == [16, 16, 32, 16, 16, 32] and
            g.hkv == [1] * 6, "gemma4: shared layers read the last KV layer of their kind")
    base = g.forward(ids)
    ff = g.w["rope_freqs.weight"]
    g.w["rope_freqs.weight"] = np.ones_like(ff)
    c.check(np.abs(g.forward(ids) - base).max() > 1e-4, "gemma4: proportional RoPE is applied")
    g.w["rope_freqs.weight"] = ff
    g.n_ple = 0
    c.check(np.abs(g.forward(ids) - base).max() > 1e-3, "gemma4: per-layer embeddings matter")
    return paths


def _require_peer():
    return os.environ.get("SEAM_REQUIRE_PEER") == "1"


def _st_peer(c, tmp, paths):
    print("per-layer families vs llama.cpp (llamacpp-logits):")
    exe = os.path.join(peer_dir(), "bin", "llamacpp-logits")
    if not os.path.exists(exe):
        msg = f"{exe} not found (../shared/peers/setup-llamacpp.sh installs it)"
        if _require_peer():
            c.check(False, msg + " and SEAM_REQUIRE_PEER=1")
        else:
            c.skip(msg)
        return
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=2) as ex:   # llama.cpp runs in subprocesses
        futs = {label: ex.submit(compare_with_peer, paths[label], PROBE_IDS, PROBE_STEPS, tmp)
                for label, _, _ in PEER_CASES}
        for label, arch, kw in PEER_CASES:
            try:
                r = futs[label].result()
            except (RefError, subprocess.TimeoutExpired, ValueError) as e:
                c.check(False, f"{label}: {e}")
                continue
            kind = "MXFP4" if arch == "gpt-oss" and kw.get("expert_type") != "F32" else "F32"
            bound = PEER_REL_BOUND[kind]
            c.check(r["peer_ids"] == r["ref_ids"] and r["max_rel"] <= bound,
                    f"{label}: {PROBE_STEPS} greedy ids == llama.cpp; logits max abs "
                    f"{r['max_abs']:.2e}, max rel {r['max_rel']:.2e} (bound {bound:.0e}, {kind})")


def selftest_families(c, tmp, quick=False):
    _st_blocks(c)
    paths = _st_models(c, tmp)
    if quick:
        c.skip("per-layer families vs llama.cpp (--quick)")
        return
    _st_peer(c, tmp, paths)
