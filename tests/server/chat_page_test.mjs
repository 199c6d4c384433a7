// The chat page GET / serves, in headless Chromium: it loads without console
// errors, sends a message with the API key, shows streamed text and the
// per-answer figures, and its Stop button aborts a long answer (the server
// counts the cancellation).
// Usage: node chat_page_test.mjs SEAM_BINARY MODEL CHROMIUM
import { spawn } from "node:child_process";
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";

const require = createRequire(new URL("./node/package.json", import.meta.url));
const puppeteer = require("puppeteer-core");

const [binary, model, chromium] = process.argv.slice(2);
const KEY = "page-key";
let server, port, browser;

before(async () => {
  server = spawn(binary, ["serve", "--port", "0", "-m", model, "--api-key", KEY, "-c", "32768", "-t", "1"],
                 { stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no port printed: " + err)), 30000);
    server.stderr.on("data", (d) => {
      err += d;
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(err);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
  });
  for (let i = 0; i < 300; i++) {
    try { if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) break; } catch (e) {}
    await new Promise((r) => setTimeout(r, 20));
  }
  browser = await puppeteer.launch({
    executablePath: chromium, headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
});

after(async () => {
  if (browser) await browser.close();
  const exited = new Promise((resolve) => server.on("exit", (code) => resolve(code)));
  server.kill("SIGTERM");
  assert.equal(await exited, 0);
});

async function cancelledCount() {
  const r = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { Authorization: "Bearer " + KEY } });
  const m = /seam_requests_finished_total\{reason="cancelled"\} (\d+)/.exec(await r.text());
  return m ? Number(m[1]) : 0;
}

test("chat page: streams an answer, then stops a long one", async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on("console", (msg) => { if (msg.type() === "error") errors.push(msg.text()); });
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(`http://127.0.0.1:${port}/`, { waitUntil: "load" });
  assert.equal(await page.title(), "seam chat");

  // The key goes in its field; temperature 0 makes the answers repeatable.
  await page.type("#api_key", KEY);
  await page.$eval("#api_key", (el) => el.dispatchEvent(new Event("change")));
  await page.$eval("#temperature", (el) => { el.value = "0"; });
  await page.$eval("#max_tokens", (el) => { el.value = "12"; });
  await page.type("#system", "Speak plainly.");
  await page.type("#input", "And God said");
  await page.click("#send");
  await page.waitForFunction(() => {
    const s = document.querySelector(".assistant .stats");
    return s && s.textContent.includes("tokens");
  }, { timeout: 20000 });
  const first = await page.$eval(".assistant .body", (el) => el.textContent);
  const stats = await page.$eval(".assistant .stats", (el) => el.textContent);
  assert.ok(first.length > 0, "streamed text appeared");
  assert.match(stats, /12 tokens/);
  assert.match(stats, /prompt tokens cached/);

  // A long answer (the bundled model at temperature 0 runs to max tokens):
  // stop it once text streams in. It must outlast a slow click on a loaded
  // machine: 3,000 tokens once ended first (the model decodes ~7,000 tokens/s),
  // 30,000 on one thread still ran after a 20 s pause before the click.
  const before = await cancelledCount();
  await page.$eval("#max_tokens", (el) => { el.value = "30000"; });
  await page.type("#input", "Tell me a long story");
  await page.click("#send");
  await page.waitForFunction(() => {
    const all = document.querySelectorAll(".assistant .body");
    return all.length === 2 && all[1].textContent.length > 20;
  }, { timeout: 20000 });
  await page.click("#stop");
  await page.waitForFunction(() => {
    const all = document.querySelectorAll(".assistant .stats");
    return all.length === 2 && all[1].textContent.includes("stopped");
  }, { timeout: 10000 });
  assert.equal(await page.$eval("#send", (el) => el.disabled), false);
  let after = before;
  for (let i = 0; i < 100 && after === before; i++) {
    await new Promise((r) => setTimeout(r, 50));
    after = await cancelledCount();
  }
  assert.equal(after, before + 1, "the server cancelled the aborted request");

  // Code fences render as <pre><code>, and text never as HTML.
  const rendered = await page.evaluate(() => {
    const el = document.createElement("div");
    render(el, "see <b>this</b>:\n```js\nlet x = 1;\n```\ndone");
    return { pre: el.querySelectorAll("pre code").length, code: el.querySelector("code").textContent,
             bold: el.querySelectorAll("b").length };
  });
  assert.deepEqual(rendered, { pre: 1, code: "let x = 1;\n", bold: 0 });
  assert.deepEqual(errors, []);
});
