#!/usr/bin/env python3
"""Benchmarks of `seam observe` (docs/observe.md), not timed tests.

  observe_bench.py --seam build/seam --model MODEL --text FILE [--threads N]

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
import statistics
import subprocess
import sys
import tempfile
import time


def run(cmd):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr}")
    return dt, p.stdout, p.stderr


def best(n, cmd):
    return min(run(cmd)[0] for _ in range(n))


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
    ap.add_argument("--batch", type=int, default=64)
    a = ap.parse_args()
    t = ["-t", str(a.threads)]

    _, out, _ = run([a.seam, "perplexity", "-m", a.model, "-f", a.text, "--json"] + t)
    tokens = json.loads(out)["tokens"]
    ppl_s = best(a.runs, [a.seam, "perplexity", "-m", a.model, "-f", a.text] + t)
    obs = [a.seam, "observe", "-m", a.model, "-f", a.text, "--no-interject"] + t
    obs10_s = best(a.runs, obs + ["--top-k", "10"])
    obs0_s = best(a.runs, obs + ["--top-k", "0"])
    print(f"text: {tokens} tokens, {a.threads} threads")
    print(f"seam perplexity        {tokens / ppl_s:10.1f} tokens/s ({ppl_s:.3f} s)")
    print(f"seam observe --top-k 10 {tokens / obs10_s:9.1f} tokens/s ({obs10_s:.3f} s), "
          f"{100 * ppl_s / obs10_s:.1f}% of perplexity")
    print(f"seam observe --top-k 0  {tokens / obs0_s:9.1f} tokens/s ({obs0_s:.3f} s); "
          f"top-10 costs {100 * (obs10_s / obs0_s - 1):+.1f}%")

    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "debug.log")
        run(obs[:-1] + ["-b", str(a.batch), "--z", "1.5", "--z-rearm", "0.5", "--warmup", "32",
                        "--cooldown", "64", "--interject-tokens", "32", "--debug-log", log])
        alone, beside = [], []
        for line in open(log):
            m = re.match(r"decode tokens=(\d+) stream=(\d+) scratch=(\d+) .* ms=([\d.]+)", line)
            if not m or int(m.group(2)) < a.batch:
                continue  # only full stream chunks compare like with like
            (beside if int(m.group(3)) > 0 else alone).append(float(m.group(4)))
    if alone and beside:
        print(f"stream chunk of {a.batch} tokens: alone p50 {pct(alone, 50):.3f} ms p99 "
              f"{pct(alone, 99):.3f} ms ({len(alone)} calls); with an interjection beside it "
              f"p50 {pct(beside, 50):.3f} ms p99 {pct(beside, 99):.3f} ms ({len(beside)} calls); "
              f"ratio p50 {pct(beside, 50) / pct(alone, 50):.2f}, p99 "
              f"{pct(beside, 99) / pct(alone, 99):.2f}")
    else:
        print("no interjection ran beside a full stream chunk: lower --z or use a longer text")


if __name__ == "__main__":
    main()
