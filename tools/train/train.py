#!/usr/bin/python3
"""Train the default llama-architecture model on the KJV corpus, on one CPU thread.

The learning rate follows warmup + cosine over a *wall-clock* budget rather than
a step count, so the schedule finishes on time however busy the machine is.
A checkpoint (model, config, losses) is written every --ckpt-min minutes and at
the end, so an interrupted run still leaves a usable model.
"""
import argparse
import json
import math
import os
import random
import time

# One thread everywhere (torch intra-op, OpenMP, OpenBLAS): the machine is shared.
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import sentencepiece as spm
import torch
import torch.nn.functional as F

from model import Config, Llama


def load_stream(sp, path):
    """Token stream: each chapter's verses encoded separately (each gets the
    dummy-prefix space, exactly as a prompt would), then </s>. Returns the
    stream and the offsets where verses start (training windows begin there)."""
    with open(path, encoding="utf-8") as f:
        chapters = [c.split("\n") for c in f.read().split("\n\n") if c.strip()]
    stream, starts = [], []
    for ch in chapters:
        for ids in sp.encode([v for v in ch if v]):
            starts.append(len(stream))
            stream.extend(ids)
        stream.append(sp.eos_id())
    return torch.tensor(stream, dtype=torch.long), starts


def batch(stream, starts, bsz, ctx, bos, rng):
    """x = <s> + stream[p : p+ctx-1], y = stream[p : p+ctx]; p at a verse start."""
    xs, ys = [], []
    limit = len(stream) - ctx
    for _ in range(bsz):
        p = starts[rng.randrange(len(starts))]
        while p > limit:
            p = starts[rng.randrange(len(starts))]
        seg = stream[p:p + ctx]
        xs.append(torch.cat((torch.tensor([bos]), seg[:-1])))
        ys.append(seg)
    return torch.stack(xs), torch.stack(ys)


@torch.no_grad()
def evaluate(model, stream, ctx, bos):
    """Mean nats/token over non-overlapping <s>-prefixed windows of the stream."""
    model.eval()
    tot, n = 0.0, 0
    for p in range(0, len(stream) - 1, ctx):
        seg = stream[p:p + ctx]
        x = torch.cat((torch.tensor([bos]), seg[:-1]))[None]
        logits = model(x)
        tot += F.cross_entropy(logits[0], seg, reduction="sum").item()
        n += len(seg)
    model.train()
    return tot / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="build-train")
    ap.add_argument("--minutes", type=float, default=55.0, help="wall-clock training budget")
    ap.add_argument("--ckpt-min", type=float, default=5.0)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr-frac", type=float, default=0.05)
    ap.add_argument("--warmup-min", type=float, default=2.0)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=1611)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-steps", type=int, default=0, help="stop early (benchmarking)")
    for f, v in Config().to_dict().items():
        if f != "vocab":
            ap.add_argument("--" + f.replace("_", "-"), type=type(v), default=v)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)

    sp = spm.SentencePieceProcessor(model_file=os.path.join(args.out, "kjv.model"))
    cfg = Config(vocab=sp.get_piece_size(), dim=args.dim, layers=args.layers,
                 heads=args.heads, kv_heads=args.kv_heads, ffn=args.ffn, ctx=args.ctx,
                 rope_base=args.rope_base, eps=args.eps)
    train, starts = load_stream(sp, os.path.join(args.out, "train.txt"))
    valid, _ = load_stream(sp, os.path.join(args.out, "valid.txt"))
    model = Llama(cfg)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"config {cfg.to_dict()} params {n_params} train tokens {len(train)} "
          f"valid tokens {len(valid)}", flush=True)

    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.wd},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    budget = args.minutes * 60.0
    warm = args.warmup_min * 60.0

    def lr_at(t):
        if t < warm:
            return args.lr * max(t / warm, 0.02)
        frac = min((t - warm) / max(budget - warm, 1e-9), 1.0)
        lo = args.lr * args.min_lr_frac
        return lo + 0.5 * (args.lr - lo) * (1 + math.cos(math.pi * frac))

    ckpt_path = os.path.join(args.out, "ckpt.pt")
    history = []

    def save(step, tokens, elapsed, train_loss, val_loss):
        state = {"config": cfg.to_dict(), "model": model.state_dict(), "step": step,
                 "tokens": tokens, "elapsed_s": elapsed, "train_loss": train_loss,
                 "val_loss": val_loss, "params": n_params, "history": history}
        torch.save(state, ckpt_path + ".tmp")
        os.replace(ckpt_path + ".tmp", ckpt_path)

    t0 = time.time()
    next_ckpt = args.ckpt_min * 60.0
    step, tokens, ema = 0, 0, None
    while True:
        elapsed = time.time() - t0
        if elapsed >= budget or (args.max_steps and step >= args.max_steps):
            break
        lr = lr_at(elapsed)
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = batch(train, starts, args.batch, cfg.ctx, sp.bos_id(), rng)
        loss = F.cross_entropy(model(x).view(-1, cfg.vocab), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        tokens += x.numel()
        ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item()
        if step % 20 == 0:
            print(f"step {step} t {elapsed:.0f}s tok {tokens} lr {lr:.2e} "
                  f"loss {loss.item():.4f} ema {ema:.4f} tok/s {tokens / max(elapsed, 1e-9):.0f}",
                  flush=True)
        if elapsed >= next_ckpt:
            vl = evaluate(model, valid, cfg.ctx, sp.bos_id())
            history.append({"step": step, "elapsed_s": round(elapsed), "train_ema": ema,
                            "val": vl})
            print(f"EVAL step {step} t {elapsed:.0f}s train(ema) {ema:.4f} val {vl:.4f}",
                  flush=True)
            save(step, tokens, elapsed, ema, vl)
            next_ckpt += args.ckpt_min * 60.0

    elapsed = time.time() - t0
    # Final numbers on full passes, not the noisy running average.
    vl = evaluate(model, valid, cfg.ctx, sp.bos_id())
    sub = train[: len(valid) * 4]  # a fixed 4x-validation-sized slice of train
    tl = evaluate(model, sub, cfg.ctx, sp.bos_id())
    history.append({"step": step, "elapsed_s": round(elapsed), "train_ema": ema,
                    "train_eval": tl, "val": vl})
    save(step, tokens, elapsed, tl, vl)
    print(f"DONE step {step} tokens {tokens} time {elapsed:.0f}s train {tl:.4f} "
          f"val {vl:.4f} nats/token", flush=True)
    prompt = sp.encode("And God said")
    out = model.greedy([sp.bos_id()] + prompt, 40)
    print("greedy:", sp.decode(prompt + out), flush=True)
    with open(os.path.join(args.out, "train_summary.json"), "w") as f:
        json.dump({"config": cfg.to_dict(), "params": n_params, "steps": step,
                   "tokens": tokens, "elapsed_s": round(elapsed), "train_loss": tl,
                   "val_loss": vl, "history": history}, f, indent=1)


if __name__ == "__main__":
    main()
