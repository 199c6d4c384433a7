// The official OpenAI client library (npm `openai`) against `seam serve`:
// chat, streaming, logprobs, a tool-call round trip, legacy completions,
// and errors surfacing as the client's typed exceptions.
// Usage: node openai_client_test.mjs SEAM_BINARY MODEL TEMPLATE
import { spawn } from "node:child_process";
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";

const require = createRequire(new URL("./node/package.json", import.meta.url));
const OpenAI = require("openai").default ?? require("openai");

const [binary, model, template] = process.argv.slice(2);
const KEY = "test-key-123";
let server, port, client;

before(async () => {
  server = spawn(binary, ["serve", "--port", "0", "-m", model, "--template", template,
                          "--api-key", KEY, "--parallel", "2", "-c", "4096"],
                 { stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no port printed: " + err)), 30000);
    server.stderr.on("data", (d) => {
      err += d;
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(err);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    server.on("exit", (code) => reject(new Error("seam serve exited " + code + ": " + err)));
  });
  for (let i = 0; i < 300; i++) {
    try { if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) break; } catch (e) {}
    await new Promise((r) => setTimeout(r, 20));
  }
  client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: KEY, maxRetries: 0 });
});

after(async () => {
  const exited = new Promise((resolve) => server.on("exit", (code) => resolve(code)));
  server.kill("SIGTERM");
  assert.equal(await exited, 0, "seam serve exits 0 on SIGTERM");
});

const messages = [{ role: "system", content: "You tell stories." },
                  { role: "user", content: "Tell me about a cat." }];

test("models.list names the served model", async () => {
  const page = await client.models.list();
  assert.equal(page.data.length, 1);
  assert.equal(page.data[0].id, "stories260K.gguf");
  assert.equal(page.data[0].object, "model");
});

test("chat, streamed and not, gives the same answer at temperature 0", async () => {
  const whole = await client.chat.completions.create(
      { model: "x", messages, max_tokens: 12, temperature: 0 });
  assert.equal(whole.object, "chat.completion");
  assert.equal(whole.choices[0].message.role, "assistant");
  assert.equal(typeof whole.choices[0].message.content, "string");
  assert.ok(["stop", "length"].includes(whole.choices[0].finish_reason));
  assert.equal(whole.usage.total_tokens, whole.usage.prompt_tokens + whole.usage.completion_tokens);

  const stream = await client.chat.completions.create(
      { model: "x", messages, max_tokens: 12, temperature: 0, stream: true,
        stream_options: { include_usage: true } });
  let text = "", role = null, finish = null, usage = null, ids = new Set();
  for await (const chunk of stream) {
    ids.add(chunk.id);
    if (chunk.usage) usage = chunk.usage;
    const c = chunk.choices[0];
    if (!c) continue;
    if (c.delta.role) role = c.delta.role;
    if (c.delta.content) text += c.delta.content;
    if (c.finish_reason) finish = c.finish_reason;
  }
  assert.equal(ids.size, 1, "one id for the whole stream");
  assert.equal(role, "assistant");
  assert.equal(text, whole.choices[0].message.content);
  assert.equal(finish, whole.choices[0].finish_reason);
  assert.equal(usage.completion_tokens, whole.usage.completion_tokens);
  // The same conversation again reuses the cached prompt.
  assert.ok(usage.prompt_tokens_details.cached_tokens > 0);
});

test("the client's stream helper assembles the message", async () => {
  const runner = client.chat.completions.stream(
      { model: "x", messages, max_tokens: 6, temperature: 0 });
  const final = await runner.finalChatCompletion();
  assert.equal(final.choices[0].message.role, "assistant");
  assert.equal(typeof final.choices[0].message.content, "string");
});

test("logprobs: one entry per token with its alternatives", async () => {
  const r = await client.chat.completions.create(
      { model: "x", messages, max_tokens: 5, temperature: 0, logprobs: true, top_logprobs: 2 });
  const lp = r.choices[0].logprobs.content;
  assert.equal(lp.length, r.usage.completion_tokens);
  for (const e of lp) {
    assert.ok(e.logprob <= 0);
    assert.equal(e.top_logprobs.length, 2);
    assert.equal(e.top_logprobs[0].token, e.token);  // greedy takes the most likely
  }
});

test("tool-call round trip: an assistant call and its result go back to the model", async () => {
  const tools = [{ type: "function", function: {
    name: "get_weather", description: "Weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];
  const history = [{ role: "user", content: "What is the weather in Paris?" },
                   { role: "assistant", content: null, tool_calls: [{
                     id: "call_abc", type: "function",
                     function: { name: "get_weather", arguments: JSON.stringify({ city: "Paris" }) } }] },
                   { role: "tool", tool_call_id: "call_abc", content: "sunny, 22 C" }];
  const r = await client.chat.completions.create(
      { model: "x", messages: history, tools, max_tokens: 6, temperature: 0 });
  const m = r.choices[0].message;
  assert.equal(m.role, "assistant");
  // The tiny model writes no call, so the answer is content, finished normally.
  assert.ok(["stop", "length", "tool_calls"].includes(r.choices[0].finish_reason));
  if (r.choices[0].finish_reason === "tool_calls") {
    for (const c of m.tool_calls) JSON.parse(c.function.arguments);
  }
  // The result was rendered into the prompt: it is longer than without it.
  const shorter = await client.chat.completions.create(
      { model: "x", messages: history.slice(0, 1), tools, max_tokens: 1, temperature: 0 });
  assert.ok(r.usage.prompt_tokens > shorter.usage.prompt_tokens + 10);
  // Streaming with tools ends with a finish_reason and assembles cleanly.
  const final = await client.chat.completions.stream(
      { model: "x", messages: history, tools, max_tokens: 6, temperature: 0 }).finalChatCompletion();
  assert.equal(final.choices[0].message.content ?? "", m.content ?? "");
});

test("legacy completions", async () => {
  const r = await client.completions.create(
      { model: "x", prompt: "Once upon a time", max_tokens: 8, temperature: 0, logprobs: 1 });
  assert.equal(r.object, "text_completion");
  assert.equal(typeof r.choices[0].text, "string");
  assert.equal(r.choices[0].logprobs.tokens.length, r.usage.completion_tokens);
});

test("errors arrive as the client's typed exceptions", async () => {
  await assert.rejects(
      client.chat.completions.create({ model: "x", messages, temperature: -1 }),
      (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === "temperature");
  await assert.rejects(
      client.chat.completions.create({ model: "x", messages: [] }),
      (e) => e instanceof OpenAI.BadRequestError && /messages/.test(e.message));
  await assert.rejects(
      client.chat.completions.create({ model: "x", messages, n: 3 }),
      (e) => e instanceof OpenAI.BadRequestError);
  await assert.rejects(
      client.chat.completions.create(
          { model: "x", messages, response_format: { type: "json_object" } }),
      (e) => e instanceof OpenAI.BadRequestError && /json_object/.test(e.message));
  const bad = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "wrong", maxRetries: 0 });
  await assert.rejects(bad.models.list(),
      (e) => e instanceof OpenAI.AuthenticationError && e.status === 401 && e.code === "invalid_api_key");
  await assert.rejects(client.models.retrieve("no-such-model"),
      (e) => e instanceof OpenAI.NotFoundError && e.status === 404);
  const long = "once upon a time ".repeat(2000);
  await assert.rejects(client.completions.create({ model: "x", prompt: long }),
      (e) => e instanceof OpenAI.BadRequestError && e.code === "context_length_exceeded");
});
