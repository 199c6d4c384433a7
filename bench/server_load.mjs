#!/usr/bin/env node
// Load generator for OpenAI-compatible servers (`seam serve`, llama-server):
// C concurrent clients each send streaming chat requests back to back; the
// script reports requests/s, generated tokens/s, time to first token and
// inter-token latency (p50/p99) per concurrency level. Optionally a side
// stream of long new prompts keeps arriving, to show whether prefill stalls
// the streams that are generating. No dependencies (Node's fetch).
//
//   node bench/server_load.mjs --url http://127.0.0.1:8080 --clients 1,4,8,16 \
//        --requests 4 --max-tokens 64 [--long-prompts 1] [--api-key KEY] [--json]
//   node bench/server_load.mjs --seam build/seam --model M.gguf [--serve-args "-t 2 ..."] ...
//
// With --seam the script starts `seam serve --port 0` itself (and stops it
// after). --check exits 1 unless every request succeeded and generated
// tokens (the ctest smoke). Tokens are counted from the usage chunk
// (stream_options.include_usage); a server that omits it is counted by
// content chunks.
import { spawn } from "node:child_process";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => {
    if (a.startsWith("--")) acc.push([a.slice(2), all[i + 1] && !all[i + 1].startsWith("--") ? all[i + 1] : "1"]);
    return acc;
  }, []));
let url = (args.url || "http://127.0.0.1:8080").replace(/\/$/, "");
const levels = (args.clients || "1,4,8,16").split(",").map(Number);
const perClient = Number(args.requests || 4);
const maxTokens = Number(args["max-tokens"] || 64);
const longPrompts = Number(args["long-prompts"] || 0);
const headers = { "Content-Type": "application/json" };
if (args["api-key"]) headers.Authorization = "Bearer " + args["api-key"];

const subjects = ["a cat", "the sea", "a small town", "a clock", "the rain", "a garden",
                  "an old ship", "a mountain", "a lamp", "the moon", "a river", "a bridge",
                  "a letter", "a baker", "the wind", "a train"];

function pct(xs, p) {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

// One streaming request; returns its figures (milliseconds).
async function one(content, maxTok, record) {
  const t0 = performance.now();
  const r = await fetch(url + "/v1/chat/completions", {
    method: "POST", headers,
    body: JSON.stringify({ messages: [{ role: "user", content }], max_tokens: maxTok,
                           temperature: 0.8, stream: true, stream_options: { include_usage: true },
                           // Every request generates max_tokens (seam and llama-server both
                           // accept this extension), so tokens/s compares like with like.
                           ignore_eos: true }),
  });
  if (!r.ok) throw new Error(`HTTP ${r.status}: ${await r.text()}`);
  const reader = r.body.getReader();
  const dec = new TextDecoder();
  let buf = "", first = 0, last = 0, chunks = 0, tokens = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let at;
    while ((at = buf.indexOf("\n\n")) >= 0) {
      const ev = buf.slice(0, at);
      buf = buf.slice(at + 2);
      if (!ev.startsWith("data: ") || ev === "data: [DONE]") continue;
      const c = JSON.parse(ev.slice(6));
      if (c.usage) tokens = c.usage.completion_tokens;
      const d = c.choices && c.choices[0] && c.choices[0].delta;
      if (d && d.content) {
        const now = performance.now();
        if (!first) first = now;
        else if (record) record.itl.push(now - last);
        last = now;
        chunks++;
      }
    }
  }
  if (record && first) record.ttft.push(first - t0);
  return tokens || chunks;
}

let longSerial = 0;
async function level(c) {
  const rec = { ttft: [], itl: [] }, longRec = { ttft: [], itl: [] };
  let tokens = 0, requests = 0, stop = false;
  const t0 = performance.now();
  const side = [];
  for (let i = 0; i < longPrompts; i++) {
    side.push((async () => {
      while (!stop) {
        // A new long prompt each time (no prefix reuse, across levels too):
        // ~600 tokens on a llama vocabulary.
        const text = `Request ${i}-${longSerial++}: ` + subjects.join(" and ").repeat(12);
        await one(text, 4, longRec).catch(() => {});
      }
    })());
  }
  const clients = [];
  for (let i = 0; i < c; i++) {
    clients.push((async () => {
      for (let k = 0; k < perClient; k++) {
        // (not `tokens += await ...`: that reads `tokens` before the await)
        const n = await one(`Write about ${subjects[(i + k) % subjects.length]}.`, maxTokens, rec);
        tokens += n;
        requests++;
      }
    })());
  }
  await Promise.all(clients);
  stop = true;
  await Promise.all(side);
  const secs = (performance.now() - t0) / 1000;
  return { clients: c, requests, seconds: secs, req_per_s: requests / secs, tok_per_s: tokens / secs,
           ttft_p50_ms: pct(rec.ttft, 50), ttft_p99_ms: pct(rec.ttft, 99),
           itl_p50_ms: pct(rec.itl, 50), itl_p99_ms: pct(rec.itl, 99),
           long_prompts: longRec.ttft.length, long_ttft_p50_ms: pct(longRec.ttft, 50) };
}

// Starts `seam serve --port 0` and resolves with its URL once /health is 200.
async function startSeam() {
  const extra = (args["serve-args"] || "").split(/\s+/).filter(Boolean);
  const server = spawn(args.seam, ["serve", "--port", "0", "-m", args.model, ...extra],
                       { stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  const port = await new Promise((resolve, reject) => {
    server.stderr.on("data", (d) => {
      err += d;
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(err);
      if (m) resolve(Number(m[1]));
    });
    server.on("exit", (code) => reject(new Error("seam serve exited " + code + ": " + err)));
  });
  for (let i = 0; i < 600; i++) {
    try { if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) break; } catch (e) {}
    await new Promise((r) => setTimeout(r, 50));
  }
  server.stderr.removeAllListeners("data");
  server.stderr.resume();  // keep draining the access log
  return { server, url: `http://127.0.0.1:${port}` };
}

let seam = null;
if (args.seam) {
  seam = await startSeam();
  url = seam.url;
}
const rows = [];
try {
  for (const c of levels) rows.push(await level(c));
} finally {
  if (seam) {
    const exited = new Promise((resolve) => seam.server.on("exit", resolve));
    seam.server.kill("SIGTERM");
    await exited;
  }
}
if (args.check) {
  for (const r of rows) {
    if (r.requests !== r.clients * perClient || !(r.tok_per_s > 0) ||
        !Number.isFinite(r.ttft_p99_ms) || (longPrompts > 0 && r.long_prompts === 0)) {
      console.error("load check failed:", JSON.stringify(r));
      process.exit(1);
    }
  }
}
if (args.json) {
  console.log(JSON.stringify(rows, null, 2));
} else {
  const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : "-");
  // With long prompts: how many were answered and their time to first token.
  const lp = longPrompts > 0;
  console.log("| clients | req/s | gen tok/s | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms |" +
              (lp ? " long prompts | long TTFT p50 ms |" : ""));
  console.log("|---:|---:|---:|---:|---:|---:|---:|" + (lp ? "---:|---:|" : ""));
  for (const r of rows)
    console.log(`| ${r.clients} | ${f(r.req_per_s, 2)} | ${f(r.tok_per_s)} | ${f(r.ttft_p50_ms)} | ` +
                `${f(r.ttft_p99_ms)} | ${f(r.itl_p50_ms, 2)} | ${f(r.itl_p99_ms, 2)} |` +
                (lp ? ` ${r.long_prompts} | ${f(r.long_ttft_p50_ms)} |` : ""));
}
