#!/usr/bin/env python3
"""Benchmarks of `seam observe` (docs/observe.md), not timed tests.

  observe_bench.py --seam build/seam --model MODEL --text FILE [--threads N] [--ctx N]

1. throughput: observation tokens/s on a file against `seam perplexity` on the
   same model and text (both wall-clock, model load included, best of --runs);
2. the cost of --top-k 10 over --top-k 0 (entropy and rank are always computed);
3. the decode calls of the stream while an interjection rides along, against
   those without one (p50, p99 of the call's wall time, from --debug-log), with
   the stream cut into chunks of --batch tokens.
"""
import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd):
    """Wall-clock and CPU seconds (user + system) of one run; CPU time is the
    fairer figure on a shared machine."""
    t0, c0 = time.perf_counter(), cpu()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    dt, dc = time.perf_counter() - t0, cpu() - c0
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr}")
    return (dt, dc), p.stdout, p.stderr


def best(n, cmd):
    runs = [run(cmd)[0] for _ in range(n)]
    return min(w for w, _ in runs), min(c for _, c in runs)


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seam", default="build/seam")
    ap.add_argument("--model", required=True)
    ap.add_argument("--text", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ctx", type=int, default=0,
                    help="-c for both tools (default: each tool's own default)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--gap-only", action="store_true", help="only the interjection measurement")
    ap.add_argument("--throughput-only", action="store_true", help="no interjection measurement")
    ap.add_argument("--windows", type=int, nargs="*", default=[],
                    help="also measure these --window values (smaller: cheaper rolls)")
    a = ap.parse_args()
    t = ["-t", str(a.threads)] + (["-c", str(a.ctx)] if a.ctx else [])

    base = [a.seam, "observe", "-m", a.model, "-f", a.text] + t
    if not a.gap_only:
        throughput(a, t, base)
    if not a.throughput_only:
        gap(a, base)


def throughput(a, t, base):
    _, out, _ = run([a.seam, "perplexity", "-m", a.model, "-f", a.text, "--json"] + t)
    info = json.loads(out)
    tokens, scored = info["tokens"], info["scored"]
    # perplexity forwards whole windows only (the tail that fills none is
    # skipped) and asks logits of, and scores, their second halves; the
    # observer forwards and scores every token of the text. Each tool's rate
    # is over the tokens it forwarded.
    forwarded = info["windows"] * info["n_ctx"]
    ppl = best(a.runs, [a.seam, "perplexity", "-m", a.model, "-f", a.text] + t)
    obs = base + ["--no-interject"]
    obs10 = best(a.runs, obs + ["--top-k", "10"])
    obs0 = best(a.runs, obs + ["--top-k", "0"])
    print(f"text: {tokens} tokens, {a.threads} threads{f', context {a.ctx}' if a.ctx else ''}; "
          "tokens read per second (perplexity: its windows' tokens; observe: the text's), "
          "by wall clock and by CPU time")

    def line(name, r, n=tokens):
        return f"{name:28s} {n / r[0]:9.1f} wall {n / r[1]:9.1f} cpu"

    def share(r):
        return f"{100 * (tokens / r[1]) / (forwarded / ppl[1]):.1f}% of perplexity by CPU"
    print(line("seam perplexity", ppl, forwarded) +
          f"  ({info['windows']} windows of {info['n_ctx']}: {forwarded} tokens)")
    print(line("seam observe --top-k 10", obs10) + f"  ({share(obs10)})")
    print(f"scored tokens per CPU second: perplexity {scored / ppl[1]:.1f} ({scored} scored), "
          f"observe {tokens / obs10[1]:.1f} ({tokens} scored)")
    print(line("seam observe --top-k 0", obs0) +
          f"  (top-10 costs {100 * (obs10[1] / obs0[1] - 1):+.1f}% CPU)")
    pre = best(a.runs, obs + ["--top-k", "10", "--roll", "prefill"])
    print(line("seam observe --roll prefill", pre) + f"  ({share(pre)})")
    for w in a.windows:
        r = best(a.runs, obs + ["--top-k", "10", "--window", str(w)])
        print(line(f"seam observe --window {w}", r) + f"  ({share(r)})")



def gap(a, base):
    """Decode calls of (nearly) full stream chunks: a run without interjections
    against the calls of a run that had an interjection beside the chunk."""
    def calls(extra):
        with tempfile.TemporaryDirectory() as d:
            log = os.path.join(d, "debug.log")
            run(base + ["-b", str(a.batch), "--z", "1.5", "--z-rearm", "0.5", "--warmup", "32",
                        "--cooldown", "64", "--interject-tokens", "32", "--debug-log", log] + extra)
            out = []
            for line in open(log):
                m = re.match(r"decode tokens=(\d+) stream=(\d+) scratch=(\d+) .* ms=([\d.]+)", line)
                if m and int(m.group(2)) >= a.batch * 3 // 4:
                    out.append((int(m.group(3)), float(m.group(4))))
            return out
    alone = [ms for _, ms in calls(["--no-interject"])]
    beside = [ms for sc, ms in calls([]) if sc > 0]
    if alone and beside:
        print(f"stream chunk of {a.batch} tokens: without interjections p50 {pct(alone, 50):.3f} ms "
              f"p99 {pct(alone, 99):.3f} ms ({len(alone)} calls); with an interjection beside it "
              f"p50 {pct(beside, 50):.3f} ms p99 {pct(beside, 99):.3f} ms ({len(beside)} calls); "
              f"ratio p50 {pct(beside, 50) / pct(alone, 50):.2f}, p99 "
              f"{pct(beside, 99) / pct(alone, 99):.2f}")
    else:
        print("no interjection ran beside a full stream chunk: lower --z or use a longer text")


if __name__ == "__main__":
    main()
