"""The default model's architecture: a plain llama block stack in torch.

Written so its tensors map one-to-one onto GGUF llama tensors:
- Linear weights are (out, in), which GGUF stores as ne = [in, out];
- RoPE rotates adjacent pairs (x[2i], x[2i+1]) by pos * base^(-2i/head_dim),
  the layout GGUF llama files use for q/k (llama.cpp's "normal" rope), so q/k
  are exported without any permutation;
- grouped-query attention maps query head h to kv head h // (n_head/n_kv_head).
"""
import math
from dataclasses import dataclass, asdict

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    vocab: int = 2048
    dim: int = 192
    layers: int = 4
    heads: int = 6
    kv_heads: int = 3
    ffn: int = 512
    ctx: int = 256
    rope_base: float = 10000.0
    eps: float = 1e-5

    @property
    def head_dim(self):
        return self.dim // self.heads

    def to_dict(self):
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(cfg, n, device=None):
    hd = cfg.head_dim
    inv = cfg.rope_base ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)  # (hd/2,)
    ang = torch.arange(n, dtype=torch.float64)[:, None] * inv[None, :]        # (n, hd/2)
    return ang.cos().float().to(device), ang.sin().float().to(device)


def apply_rope(x, cos, sin):
    # x: (B, H, T, hd); pairs are adjacent elements (2i, 2i+1).
    x0, x1 = x[..., 0::2], x[..., 1::2]
    r0 = x0 * cos - x1 * sin
    r1 = x0 * sin + x1 * cos
    return torch.stack((r0, r1), dim=-1).flatten(-2)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        hd = cfg.head_dim
        self.attn_norm = RMSNorm(cfg.dim, cfg.eps)
        self.wq = nn.Linear(cfg.dim, cfg.heads * hd, bias=False)
        self.wk = nn.Linear(cfg.dim, cfg.kv_heads * hd, bias=False)
        self.wv = nn.Linear(cfg.dim, cfg.kv_heads * hd, bias=False)
        self.wo = nn.Linear(cfg.heads * hd, cfg.dim, bias=False)
        self.ffn_norm = RMSNorm(cfg.dim, cfg.eps)
        self.w_gate = nn.Linear(cfg.dim, cfg.ffn, bias=False)
        self.w_up = nn.Linear(cfg.dim, cfg.ffn, bias=False)
        self.w_down = nn.Linear(cfg.ffn, cfg.dim, bias=False)

    def forward(self, x, cos, sin, mask):
        cfg = self.cfg
        B, T, _ = x.shape
        hd = cfg.head_dim
        h = self.attn_norm(x)
        q = self.wq(h).view(B, T, cfg.heads, hd).transpose(1, 2)
        k = self.wk(h).view(B, T, cfg.kv_heads, hd).transpose(1, 2)
        v = self.wv(h).view(B, T, cfg.kv_heads, hd).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        rep = cfg.heads // cfg.kv_heads
        if rep > 1:
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd)) + mask  # (B, H, T, T)
        o = F.softmax(att, dim=-1) @ v
        x = x + self.wo(o.transpose(1, 2).reshape(B, T, cfg.heads * hd))
        h = self.ffn_norm(x)
        return x + self.w_down(F.silu(self.w_gate(h)) * self.w_up(h))


class Llama(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab, cfg.dim)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.norm = RMSNorm(cfg.dim, cfg.eps)
        self.out = nn.Linear(cfg.dim, cfg.vocab, bias=False)
        cos, sin = rope_tables(cfg, cfg.ctx)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        for n, p in self.named_parameters():
            if p.dim() == 2:
                nn.init.normal_(p, std=0.02)
            # Residual projections scaled down with depth (GPT-2 style).
            if n.endswith("wo.weight") or n.endswith("w_down.weight"):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * cfg.layers))

    def forward(self, idx):
        B, T = idx.shape
        mask = torch.full((T, T), float("-inf")).triu(1)
        cos, sin = self.cos[:T], self.sin[:T]
        x = self.tok(idx)
        for b in self.blocks:
            x = b(x, cos, sin, mask)
        return self.out(self.norm(x))

    @torch.no_grad()
    def greedy(self, ids, n):
        ids = list(ids)
        out = []
        for _ in range(n):
            logits = self(torch.tensor([ids[-self.cfg.ctx:]]))[0, -1]
            t = int(logits.argmax())
            out.append(t)
            ids.append(t)
        return out

    @torch.no_grad()
    def sample(self, ids, n, temperature=0.8, top_k=40, eos=None, gen=None):
        ids = list(ids)
        out = []
        for _ in range(n):
            logits = self(torch.tensor([ids[-self.cfg.ctx:]]))[0, -1] / temperature
            v, i = logits.topk(top_k)
            t = int(i[torch.multinomial(F.softmax(v, -1), 1, generator=gen)])
            if t == eos:
                break
            out.append(t)
            ids.append(t)
        return out
