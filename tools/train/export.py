#!/usr/bin/python3
"""Export the trained checkpoint to a llama GGUF with tools/gguf.py, then verify it.

Verification (on by default):
  1. every tensor read back from the file matches the torch weight (F16/Q8_0
     rounding only) and has the GGUF shape ne = [in, out];
  2. greedy continuations of a prompt: the torch model (fp32), the torch model
     with the weights decoded from the file, and tools/reference.py (float64
     numpy, reading only the file) must give the same ids;
  3. with --seam BINARY, the engine itself: `seam tokenize` must split held-out
     verses exactly as SentencePiece does, and `seam run --temp 0` must print the
     same greedy text.
Prints a sampled continuation of the prompt too.
"""
import argparse
import json
import os
import subprocess
import sys

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np
import sentencepiece as spm
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)
ROOT = os.path.dirname(TOOLS)
sys.path.insert(0, TOOLS)
import gguf  # noqa: E402
from model import Config, Llama  # noqa: E402

FILE_TYPE = {"F32": 0, "F16": 1, "Q8_0": 7}


def tensor_map(model):
    """GGUF name -> (torch parameter, is a matrix)."""
    m = {"token_embd.weight": model.tok.weight}
    for i, b in enumerate(model.blocks):
        p = f"blk.{i}."
        m.update({p + "attn_norm.weight": b.attn_norm.weight,
                  p + "attn_q.weight": b.wq.weight, p + "attn_k.weight": b.wk.weight,
                  p + "attn_v.weight": b.wv.weight, p + "attn_output.weight": b.wo.weight,
                  p + "ffn_norm.weight": b.ffn_norm.weight,
                  p + "ffn_gate.weight": b.w_gate.weight, p + "ffn_up.weight": b.w_up.weight,
                  p + "ffn_down.weight": b.w_down.weight})
    m["output_norm.weight"] = model.norm.weight
    m["output.weight"] = model.out.weight
    return m


def vocab(sp):
    tokens, scores, types = [], [], []
    for i in range(sp.get_piece_size()):
        tokens.append(sp.id_to_piece(i))
        scores.append(sp.get_score(i))
        # GGUF token types: 1 normal, 2 unknown, 3 control, 6 byte.
        types.append(2 if sp.is_unknown(i) else 3 if sp.is_control(i)
                     else 6 if sp.is_byte(i) else 1)
    return tokens, np.asarray(scores, np.float32), np.asarray(types, np.int32)


def write_gguf(path, model, cfg, sp, dtype, summary):
    w = gguf.GGUFWriter(path)
    a = "llama"
    w.add("general.architecture", a)
    w.add("general.name", "seam-kjv")
    w.add("general.description",
          f"seam's default model: a {summary['params'] / 1e6:.1f}M-parameter llama trained "
          "from scratch on the King James Bible (Debian bible-kjv). See docs/default-model.md.")
    w.add("general.license", "CC0-1.0")
    w.add("general.file_type", FILE_TYPE[dtype])
    if dtype == "Q8_0":
        w.add("general.quantization_version", 2)
    w.add(f"{a}.vocab_size", cfg.vocab)
    w.add(f"{a}.context_length", cfg.ctx)
    w.add(f"{a}.embedding_length", cfg.dim)
    w.add(f"{a}.block_count", cfg.layers)
    w.add(f"{a}.feed_forward_length", cfg.ffn)
    w.add(f"{a}.rope.dimension_count", cfg.head_dim)
    w.add(f"{a}.attention.head_count", cfg.heads)
    w.add(f"{a}.attention.head_count_kv", cfg.kv_heads)
    w.add(f"{a}.attention.layer_norm_rms_epsilon", float(cfg.eps))
    w.add(f"{a}.rope.freq_base", float(cfg.rope_base))
    tokens, scores, types = vocab(sp)
    w.add("tokenizer.ggml.model", "llama")
    w.add("tokenizer.ggml.pre", "default")
    w.add("tokenizer.ggml.tokens", tokens)
    w.add("tokenizer.ggml.scores", scores)
    w.add("tokenizer.ggml.token_type", types)
    w.add("tokenizer.ggml.bos_token_id", sp.bos_id())
    w.add("tokenizer.ggml.eos_token_id", sp.eos_id())
    w.add("tokenizer.ggml.unknown_token_id", sp.unk_id())
    w.add("tokenizer.ggml.add_bos_token", True)
    w.add("tokenizer.ggml.add_eos_token", False)
    w.add("tokenizer.ggml.add_space_prefix", True)
    for name, p in tensor_map(model).items():
        arr = p.detach().float().numpy()  # torch Linear (out, in) -> GGUF ne [in, out]
        # Norm weights stay F32, as in llama.cpp's own conversions.
        w.add_tensor(name, arr, dtype if arr.ndim == 2 else "F32")
    w.write()


def verify_tensors(path, model):
    r = gguf.GGUFReader(path)
    worst = 0.0
    for name, p in tensor_map(model).items():
        want = p.detach().float().numpy()
        info = r.tensors[name]
        assert list(info.ne) == list(reversed(want.shape)), (name, info.ne, want.shape)
        got = r.tensor(name).reshape(want.shape)
        err = float(np.abs(got - want).max() / (np.abs(want).max() + 1e-12))
        worst = max(worst, err)
    print(f"tensors: {len(r.tensors)} read back, shapes ok, worst relative error {worst:.2e}")
    return r


def check_engine(args, sp, greedy_ids):
    with open(os.path.join(args.out, "valid.txt"), encoding="utf-8") as f:
        verses = [v for v in f.read().split("\n") if v][::7]
    for v in verses:
        r = subprocess.run([args.seam, "tokenize", "-m", args.gguf, "--json", "--", v],
                           check=True, capture_output=True, text=True)
        got = json.loads(r.stdout)["ids"]
        if got != [sp.bos_id()] + sp.encode(v):
            sys.exit(f"FAIL: seam tokenize differs from SentencePiece on {v!r}")
    print(f"seam tokenize matches SentencePiece on {len(verses)} held-out verses")
    r = subprocess.run([args.seam, "run", "-m", args.gguf, "-p", args.prompt, "--temp", "0",
                        "-n", str(args.n), "-t", "1"], check=True, capture_output=True,
                       text=True)
    # seam prints only the continuation, as it reads after the prompt.
    prompt = sp.encode(args.prompt)
    full, head = sp.decode(prompt + greedy_ids), sp.decode(prompt)
    assert full.startswith(head)
    want = full[len(head):]
    if r.stdout.rstrip("\n") != want:
        sys.exit(f"FAIL: seam run greedy printed {r.stdout!r}, torch gives {want!r}")
    print("seam run --temp 0 prints the same greedy text")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="build-train", help="training folder (ckpt.pt, kjv.model)")
    ap.add_argument("--gguf", default=os.path.join(ROOT, "models", "seam-kjv.gguf"))
    ap.add_argument("--dtype", default="F16", choices=sorted(FILE_TYPE))
    ap.add_argument("--prompt", default="And God said")
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--no-verify", action="store_true")
    ap.add_argument("--seam", help="also check against this seam binary")
    args = ap.parse_args()
    torch.set_num_threads(1)

    ck = torch.load(os.path.join(args.out, "ckpt.pt"))
    cfg = Config(**ck["config"])
    model = Llama(cfg)
    model.load_state_dict(ck["model"])
    model.eval()
    sp = spm.SentencePieceProcessor(model_file=os.path.join(args.out, "kjv.model"))
    summary = {k: ck[k] for k in ("step", "tokens", "elapsed_s", "train_loss", "val_loss",
                                  "params")}
    os.makedirs(os.path.dirname(os.path.abspath(args.gguf)), exist_ok=True)
    write_gguf(args.gguf, model, cfg, sp, args.dtype, summary)
    size = os.path.getsize(args.gguf)
    print(f"wrote {args.gguf}: {size} bytes ({args.dtype}); checkpoint {json.dumps(summary)}")
    if size > 16 * 1024 * 1024:
        sys.exit("the default model must be at most 16 MiB")
    if args.no_verify:
        return

    r = verify_tensors(args.gguf, model)
    ids = [sp.bos_id()] + sp.encode(args.prompt)
    g_torch = model.greedy(ids, args.n)
    # The same network with the weights exactly as the file stores them.
    filed = Llama(cfg)
    with torch.no_grad():
        for name, p in tensor_map(filed).items():
            p.copy_(torch.from_numpy(r.tensor(name).reshape(tuple(p.shape))))
    filed.eval()
    g_filed = filed.greedy(ids, args.n)
    ref = subprocess.run([sys.executable, os.path.join(TOOLS, "reference.py"), "greedy",
                          args.gguf, "--tokens", ",".join(map(str, ids)), "--n", str(args.n)],
                         check=True, capture_output=True, text=True)
    g_ref = json.loads(ref.stdout.strip().splitlines()[-1])
    print(f"prompt ids {ids}")
    print(f"torch fp32 greedy       {g_torch}")
    print(f"torch, file weights     {g_filed}")
    print(f"reference.py greedy     {g_ref}")
    print(f"greedy text: {sp.decode(sp.encode(args.prompt) + g_torch)!r}")
    gen = torch.Generator().manual_seed(0)
    s = model.sample(ids, 60, temperature=0.8, top_k=40, eos=sp.eos_id(), gen=gen)
    print(f"sample (T=0.8, top-k 40, seed 0): {sp.decode(sp.encode(args.prompt) + s)!r}")
    if g_ref != g_filed:
        sys.exit("FAIL: reference.py and the torch model disagree on the exported file")
    if g_filed != g_torch:
        print("note: file rounding changed the fp32 greedy path (the file itself is consistent)")
    if args.seam:
        check_engine(args, sp, g_filed)
    print("OK: the exported file reproduces the torch model's greedy continuation")


if __name__ == "__main__":
    main()
