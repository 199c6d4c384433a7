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
//
// Tokens are counted from the usage chunk (stream_options.include_usage);
// a server that omits it is counted by content chunks.
const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => {
    if (a.startsWith("--")) acc.push([a.slice(2), all[i + 1] && !all[i + 1].startsWith("--") ? all[i + 1] : "1"]);
    return acc;
  }, []));
const url = (args.url || "http://127.0.0.1:8080").replace(/\/$/, "");
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

async function level(c) {
  const rec = { ttft: [], itl: [] };
  let tokens = 0, requests = 0, stop = false;
  const t0 = performance.now();
  const side = [];
  for (let i = 0; i < longPrompts; i++) {
    side.push((async () => {
      let k = 0;
      while (!stop) {
        // A new long prompt each time (no prefix reuse): ~600 tokens on a llama vocabulary.
        const text = `Request ${i}-${k++}: ` + subjects.join(" and ").repeat(12);
        await one(text, 4, null).catch(() => {});
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
           itl_p50_ms: pct(rec.itl, 50), itl_p99_ms: pct(rec.itl, 99) };
}

const rows = [];
for (const c of levels) rows.push(await level(c));
if (args.json) {
  console.log(JSON.stringify(rows, null, 2));
} else {
  const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : "-");
  console.log("| clients | req/s | gen tok/s | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms |");
  console.log("|---:|---:|---:|---:|---:|---:|---:|");
  for (const r of rows)
    console.log(`| ${r.clients} | ${f(r.req_per_s, 2)} | ${f(r.tok_per_s)} | ${f(r.ttft_p50_ms)} | ` +
                `${f(r.ttft_p99_ms)} | ${f(r.itl_p50_ms, 2)} | ${f(r.itl_p99_ms, 2)} |`);
}
