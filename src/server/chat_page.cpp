#include "server/chat_page.h"

namespace seam::server {

namespace {

// The page talks to /v1/chat/completions with stream + include_usage and
// renders the SSE chunks as they arrive; the API key (if any) is kept in the
// browser's localStorage.
constexpr std::string_view kPage = R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>seam chat</title>
<link rel="icon" href="data:,">
<style>
  body { font: 15px/1.45 system-ui, sans-serif; margin: 0; display: flex; flex-direction: column;
         height: 100vh; background: #fafafa; color: #222; }
  header { padding: 8px 12px; background: #263238; color: #eee; display: flex; gap: 12px;
           flex-wrap: wrap; align-items: center; }
  header label { font-size: 13px; }
  header input { font: inherit; }
  #system { width: 28em; }
  #log { flex: 1; overflow-y: auto; padding: 12px; }
  .msg { max-width: 52em; margin: 0 0 12px; padding: 8px 12px; border-radius: 8px;
         white-space: pre-wrap; word-wrap: break-word; }
  .user { background: #e3f2fd; margin-left: auto; }
  .assistant { background: #fff; border: 1px solid #ddd; }
  .error { background: #ffebee; color: #b71c1c; }
  .stats { font-size: 12px; color: #777; margin-top: 4px; white-space: normal; }
  pre { background: #263238; color: #eee; padding: 8px; border-radius: 4px; overflow-x: auto;
        white-space: pre; }
  form { display: flex; gap: 8px; padding: 12px; border-top: 1px solid #ddd; background: #fff; }
  #input { flex: 1; font: inherit; padding: 6px; min-height: 2.5em; }
  button { font: inherit; padding: 6px 14px; }
</style>
</head>
<body>
<header>
  <strong>seam</strong><span id="model"></span>
  <label>System <input id="system" placeholder="system prompt (optional)"></label>
  <label>Temperature <input id="temperature" type="number" min="0" max="2" step="0.1" value="0.8" style="width:4em"></label>
  <label>Max tokens <input id="max_tokens" type="number" min="1" value="256" style="width:5em"></label>
  <label>API key <input id="api_key" type="password" style="width:9em"></label>
  <button id="clear" type="button">Clear</button>
</header>
<div id="log"></div>
<form id="form">
  <textarea id="input" placeholder="Message (Enter sends, Shift+Enter for a new line)"></textarea>
  <button id="send" type="submit">Send</button>
  <button id="stop" type="button" disabled>Stop</button>
</form>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
const log = $("log");
let history = [];
let controller = null;

$("api_key").value = localStorage.getItem("seam_api_key") || "";
$("api_key").addEventListener("change", () => {
  localStorage.setItem("seam_api_key", $("api_key").value);
  loadModel();
});

function headers() {
  const h = { "Content-Type": "application/json" };
  const key = $("api_key").value.trim();
  if (key) h["Authorization"] = "Bearer " + key;
  return h;
}

// Text with ``` fences becomes text nodes and <pre><code> blocks (never HTML).
function render(el, text) {
  el.textContent = "";
  const parts = text.split("```");
  parts.forEach((part, i) => {
    if (i % 2 === 0) { el.appendChild(document.createTextNode(part)); return; }
    const nl = part.indexOf("\n");
    const pre = document.createElement("pre");
    const code = document.createElement("code");
    code.textContent = nl >= 0 ? part.slice(nl + 1) : part;
    pre.appendChild(code);
    el.appendChild(pre);
  });
}

// Streamed text is drawn at most once per frame, and prose without a fence
// grows its one text node: a re-render per token made a long answer's cost
// quadratic and froze the page.
function drawPending(el) {
  const t = el.pendingText;
  el.pendingText = undefined;
  if (t === undefined) return;  // drawn already, or an error message replaced the stream
  const node = el.firstChild;
  if (t.indexOf("`") < 0 && node && node === el.lastChild && node.nodeType === Node.TEXT_NODE &&
      t.startsWith(node.data))
    node.appendData(t.slice(node.data.length));
  else
    render(el, t);
  log.scrollTop = log.scrollHeight;
}
function streamRender(el, text) {
  if (el.pendingText === undefined) requestAnimationFrame(() => drawPending(el));
  el.pendingText = text;
}

function add(role, text) {
  const div = document.createElement("div");
  div.className = "msg " + role;
  const body = document.createElement("div");
  body.className = "body";
  render(body, text);
  div.appendChild(body);
  log.appendChild(div);
  log.scrollTop = log.scrollHeight;
  return div;
}

// The model's name for the header. /health says whether the server wants a
// key; without one it is not asked (a 401 would only clutter the console).
async function loadModel() {
  try {
    if (!$("api_key").value.trim()) {
      const h = await (await fetch("/health")).json();
      if (h.auth) return;
    }
    const r = await fetch("/v1/models", { headers: headers() });
    if (r.ok) { const j = await r.json(); $("model").textContent = j.data[0].id; }
  } catch (e) { /* the page still works; the name is cosmetic */ }
}

async function send(text) {
  const messages = [];
  const sys = $("system").value.trim();
  if (sys) messages.push({ role: "system", content: sys });
  history.push({ role: "user", content: text });
  add("user", text);
  const div = add("assistant", "");
  const body = div.querySelector(".body");
  const stats = document.createElement("div");
  stats.className = "stats";
  div.appendChild(stats);
  let answer = "", tokens = 0, usage = null, finish = null;
  const t0 = performance.now();
  let tFirst = 0;
  controller = new AbortController();
  $("send").disabled = true; $("stop").disabled = false;
  try {
    const req = {
      messages: messages.concat(history), stream: true, stream_options: { include_usage: true },
      temperature: Number($("temperature").value), max_tokens: Number($("max_tokens").value),
    };
    const r = await fetch("/v1/chat/completions", {
      method: "POST", headers: headers(), body: JSON.stringify(req), signal: controller.signal });
    if (!r.ok) {
      let msg = r.status + " " + r.statusText;
      try { msg = (await r.json()).error.message; } catch (e) {}
      throw new Error(msg);
    }
    const reader = r.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let at;
      while ((at = buf.indexOf("\n\n")) >= 0) {
        const event = buf.slice(0, at);
        buf = buf.slice(at + 2);
        for (const line of event.split("\n")) {
          if (!line.startsWith("data: ")) continue;
          const data = line.slice(6);
          if (data === "[DONE]") continue;
          const c = JSON.parse(data);
          if (c.error) throw new Error(c.error.message);
          if (c.usage) usage = c.usage;
          const ch = c.choices && c.choices[0];
          if (!ch) continue;
          if (ch.delta && ch.delta.content) {
            if (!tFirst) tFirst = performance.now();
            answer += ch.delta.content; tokens++;
            streamRender(body, answer);
          }
          if (ch.finish_reason) finish = ch.finish_reason;
        }
      }
    }
    history.push({ role: "assistant", content: answer });
  } catch (e) {
    if (e.name === "AbortError") {
      finish = "stopped";
      history.push({ role: "assistant", content: answer });
    } else {
      div.className = "msg error";
      body.pendingText = undefined;
      render(body, answer + (answer ? "\n" : "") + "Error: " + e.message);
      history.pop();
    }
  } finally {
    controller = null;
    $("send").disabled = false; $("stop").disabled = true;
  }
  // The last tokens may still wait for a frame (a short answer can arrive
  // whole before the first): the text is drawn before the stats under it.
  drawPending(body);
  const t1 = performance.now();
  const n = usage ? usage.completion_tokens : tokens;
  const secs = tFirst ? (t1 - tFirst) / 1000 : 0;
  const parts = [n + " tokens"];
  if (secs > 0 && n > 1) parts.push(((n - 1) / secs).toFixed(1) + " tokens/s");
  if (tFirst) parts.push("first token " + (tFirst - t0).toFixed(0) + " ms");
  if (usage && usage.prompt_tokens_details)
    parts.push(usage.prompt_tokens_details.cached_tokens + " of " + usage.prompt_tokens + " prompt tokens cached");
  if (finish) parts.push(finish);
  stats.textContent = parts.join(" · ");
}

$("form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const text = $("input").value.trim();
  if (!text || controller) return;
  $("input").value = "";
  send(text);
});
$("input").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); $("form").requestSubmit(); }
});
$("stop").addEventListener("click", () => { if (controller) controller.abort(); });
$("clear").addEventListener("click", () => { history = []; log.textContent = ""; });
loadModel();
</script>
</body>
</html>
)HTML";

}  // namespace

std::string_view chat_page_html() { return kPage; }

}  // namespace seam::server
