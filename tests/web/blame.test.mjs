// Browser test of the runs compatlab could not test (doc/results-schema.md, "Blame"): a
// store where bert's reduced failure was proven the reduction's by a rerun, gpt2 fails at
// every size and llama passes (make_store.py blame), served by the real binary.
//   node --test tests/web/blame.test.mjs
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const bin = process.env.COMPATLAB_BIN || path.join(repo, "build/compatlab");
const python = process.env.COMPATLAB_PYTHON || path.join(repo, ".venv/bin/python");
const work = mkdtempSync(path.join(tmpdir(), "compatlab-web-blame-"));
let server, browser, base;

before(async () => {
  const db = execFileSync(python, [path.join(repo, "tests/web/make_store.py"), bin, work, "blame"],
    { encoding: "utf8", env: { ...process.env, HF_HUB_OFFLINE: "1" } }).trim();
  server = spawn(bin, ["serve", "--db", db, "--port", "0"], { stdio: ["ignore", "ignore", "pipe"] });
  base = await new Promise((resolve, reject) => {
    let err = "";
    server.stderr.on("data", (d) => {
      err += d;
      const m = err.match(/on (http:\/\/127\.0\.0\.1:\d+)\//);
      if (m) resolve(m[1]);
    });
    server.on("exit", (code) => reject(new Error(`compatlab serve exited ${code}: ${err}`)));
  });
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"] });
});

after(async () => {
  await browser?.close();
  server?.kill("SIGTERM");
  rmSync(work, { recursive: true, force: true });
});

async function until(page, fn, arg, timeout = 20000) {
  const end = Date.now() + timeout;
  while (!(await page.evaluate(fn, arg))) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${fn}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test("the dashboard leaves a reduction's failure out of the pass rate; the run says compatlab could not test it", async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${base}/dashboard.html`);
  await until(page, () => document.querySelectorAll("#stacks tbody tr").length === 1);
  const cells = await page.locator("#stacks tbody tr td").allTextContents();
  assert.equal(cells[2], "3");        // results
  assert.equal(cells[3], "1");        // compatlab could not test (bert)
  assert.equal(cells[4], "50.0%");    // llama passes, gpt2 fails: bert is not counted
  assert.match(await page.locator("#targets tbody").textContent(), /50\.0% of 2 \(\+1 compatlab could not test\)/);

  await page.goto(`${base}/runs.html?model=bert`);
  await until(page, () => document.querySelectorAll("#results tbody tr").length === 1);
  const badge = page.locator("#results tbody tr span.status");
  assert.match(await badge.textContent(), /^compatlab could not test this \(reduction\): fail_to_run/);
  assert.match(await badge.getAttribute("title"), /rerun at milder size: pass$/);
  await page.goto(`${base}/runs.html?model=gpt2`);
  await until(page, () => document.querySelectorAll("#results tbody tr").length === 1);
  assert.match(await page.locator("#results tbody tr span.status").textContent(), /^fail_to_run/);
  assert.deepEqual(errors, []);
});
