// Streamed tool calls through the official OpenAI client (npm `openai`):
// `seam serve` runs a parrot model (parrot_model.mjs) whose greedy answer is
// "Let me check." and then a Hermes tool call, so the stream's exact shape is
// known: the text goes out token by token before the call, then the call as
// index, id and name, then its arguments in fragments as they are generated.
// Usage: node openai_tool_stream_test.mjs SEAM_BINARY TEMPLATE
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { writeParrotModel } from "./parrot_model.mjs";

const require = createRequire(new URL("./node/package.json", import.meta.url));
const OpenAI = require("openai").default ?? require("openai");

const [binary, template] = process.argv.slice(2);
const SCRIPT = ["Let", "\u2581me", "\u2581check.", "<tool_call>", "{\"name\":\u2581\"", "get_weather",
                "\",\u2581\"arguments\":\u2581{\"", "city", "\":\u2581\"", "Paris", "\"}}",
                "</tool_call>", "<|im_end|>"];
const tools = [{ type: "function", function: {
  name: "get_weather", description: "Weather in a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];
const ask = [{ role: "user", content: "What is the weather in Paris?" }];
let dir, server, client;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "seam-parrot-"));
  const model = writeParrotModel(join(dir, "parrot.gguf"), SCRIPT);
  server = spawn(binary, ["serve", "--port", "0", "-m", model, "--template", template,
                          "--parallel", "2", "-c", "2048", "-t", "1"],
                 { stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  const port = await new Promise((resolve, reject) => {
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
  client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "none", maxRetries: 0 });
});

after(async () => {
  const exited = new Promise((resolve) => server.on("exit", (code) => resolve(code)));
  server.kill("SIGTERM");
  assert.equal(await exited, 0, "seam serve exits 0 on SIGTERM");
  rmSync(dir, { recursive: true, force: true });
});

test("text before a call streams token by token, then the call as id, name, fragments", async () => {
  const stream = await client.chat.completions.create(
      { model: "x", messages: ask, tools, temperature: 0, max_tokens: 32, stream: true });
  const seen = [];  // what each chunk carried, in order
  let id, finish;
  for await (const chunk of stream) {
    id ??= chunk.id;
    assert.equal(chunk.id, id, "one id for the whole stream");
    const c = chunk.choices[0];
    if (!c) continue;
    if (c.finish_reason) finish = c.finish_reason;
    if (c.delta.content) seen.push({ content: c.delta.content });
    for (const tc of c.delta.tool_calls ?? []) seen.push(tc);
  }
  assert.equal(finish, "tool_calls");
  const firstCall = seen.findIndex((e) => e.index !== undefined);
  assert.ok(firstCall > 0, "content before the call");
  // One content chunk per generated token, all before the call: the text
  // was not held back until the answer ended.
  assert.deepEqual(seen.slice(0, firstCall).map((e) => e.content), ["Let", " me", " check."]);
  assert.ok(seen.slice(firstCall).every((e) => e.content === undefined), "no content after the call");
  const head = seen[firstCall];
  assert.equal(head.index, 0);
  assert.match(head.id, /^call_/);
  assert.equal(head.type, "function");
  assert.equal(head.function.name, "get_weather");
  const fragments = seen.slice(firstCall + 1).map((e) => {
    assert.equal(e.index, 0);
    assert.equal(e.id, undefined, "the id comes once, with the name");
    return e.function.arguments;
  });
  // The arguments arrive as the model writes them: one fragment per token.
  assert.deepEqual(fragments, ["{\"", "city", "\": \"", "Paris", "\"}"]);
  assert.deepEqual(JSON.parse((head.function.arguments ?? "") + fragments.join("")), { city: "Paris" });
});

test("streamed tool-call round trip with the client's stream helper", async () => {
  const final = await client.chat.completions.stream(
      { model: "x", messages: ask, tools, temperature: 0, max_tokens: 32 }).finalChatCompletion();
  const m = final.choices[0].message;
  assert.equal(final.choices[0].finish_reason, "tool_calls");
  assert.equal(m.content, "Let me check.");
  assert.equal(m.tool_calls.length, 1);
  const call = m.tool_calls[0];
  assert.equal(call.function.name, "get_weather");
  assert.deepEqual(JSON.parse(call.function.arguments), { city: "Paris" });

  // The same answer unstreamed.
  const whole = await client.chat.completions.create(
      { model: "x", messages: ask, tools, temperature: 0, max_tokens: 32 });
  assert.equal(whole.choices[0].message.content, m.content);
  assert.equal(whole.choices[0].message.tool_calls[0].function.name, "get_weather");
  assert.deepEqual(JSON.parse(whole.choices[0].message.tool_calls[0].function.arguments),
                   { city: "Paris" });

  // The call and its result go back: the server takes the client's own
  // assembled message, and the result lengthens the prompt.
  const history = [...ask, m, { role: "tool", tool_call_id: call.id, content: "sunny, 22 C" }];
  const next = await client.chat.completions.stream(
      { model: "x", messages: history, tools, temperature: 0, max_tokens: 32 }).finalChatCompletion();
  assert.ok(next.usage === undefined || next.usage === null ||
            next.usage.prompt_tokens > whole.usage.prompt_tokens);
  const again = await client.chat.completions.create(
      { model: "x", messages: history, tools, temperature: 0, max_tokens: 32 });
  assert.ok(again.usage.prompt_tokens > whole.usage.prompt_tokens + 10);
  assert.equal(next.choices[0].finish_reason, "tool_calls");
});

test("without tools the same answer is plain text, streamed as it comes", async () => {
  const stream = await client.chat.completions.create(
      { model: "x", messages: ask, temperature: 0, max_tokens: 32, stream: true });
  let text = "", chunks = 0;
  for await (const chunk of stream) {
    const d = chunk.choices[0]?.delta;
    if (d?.content) { text += d.content; chunks++; }
    assert.equal(d?.tool_calls, undefined);
  }
  assert.equal(text, "Let me check.<tool_call>{\"name\": \"get_weather\", \"arguments\": " +
                     "{\"city\": \"Paris\"}}</tool_call>");
  assert.equal(chunks, SCRIPT.length - 1);
});
