// Browser tests of `compatlab serve`: Debian's chromium, headless, driven by
// playwright-core (no browser download), against the real binary serving a
// store built by make_store.py with the real binary.
//   node --test tests/web/   (COMPATLAB_BIN, COMPATLAB_PYTHON override the paths)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const bin = process.env.COMPATLAB_BIN || path.join(repo, "build/compatlab");
const python = process.env.COMPATLAB_PYTHON || path.join(repo, ".venv/bin/python");
const work = mkdtempSync(path.join(tmpdir(), "compatlab-web-"));
let server, context, base;

// make_store.py's store (`...extra`: its other stores), served by `compatlab serve`:
// {server, base}.
async function serveStore(...extra) {
  const db = execFileSync(python, [path.join(repo, "tests/web/make_store.py"), bin, work, ...extra],
    { encoding: "utf8", env: { ...process.env, HF_HUB_OFFLINE: "1", TRANSFORMERS_OFFLINE: "1" } }).trim();
  // The compile store remote the page names in its pull commands (doc/compile-cache.md).
  const proc = spawn(bin, ["serve", "--db", db, "--port", "0", "--cache-remote", "hub:lab/compile-cache"],
    { stdio: ["ignore", "ignore", "pipe"] });
  const url = await new Promise((resolve, reject) => {
    let err = "";
    proc.stderr.on("data", (d) => {
      err += d;
      const m = err.match(/on (http:\/\/127\.0\.0\.1:\d+)\//);
      if (m) resolve(m[1]);
    });
    proc.on("exit", (code) => reject(new Error(`compatlab serve exited ${code}: ${err}`)));
  });
  return { server: proc, base: url };
}

before(async () => {
  ({ server, base } = await serveStore());
  // A fresh profile directory each run (playwright passes it as --user-data-dir).
  context = await chromium.launchPersistentContext(path.join(work, "profile"), {
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
});

after(async () => {
  await context?.close();
  server?.kill("SIGTERM");
  rmSync(work, { recursive: true, force: true });
});

// A page that fails the test on any dialog (alert, confirm), page error or
// Content-Security-Policy violation (the server's CSP stays in force).
async function open(url, origin = base) {
  const page = await context.newPage();
  const problems = [];
  page.on("dialog", (d) => { problems.push(`dialog: ${d.message()}`); d.dismiss(); });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (/Content Security Policy/i.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  await page.goto(origin + url);
  return { page, problems };
}

// Waits until fn(arg) is true in the page. (page.waitForFunction evaluates a
// string, which the page's CSP forbids; page.evaluate does not.)
async function until(page, fn, arg, timeout = 20000) {
  const end = Date.now() + timeout;
  while (!(await page.evaluate(fn, arg))) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${fn}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const rowCount = (page) => page.locator("#results tbody tr").count();

// bert's runs: this machine's, the older stack on cpu and cuda, cpu compile, the
// test device eager and compile, and the older run imported after this machine's.
const BERT_RUNS = 7;

test("search as you type: results follow the typed text and the URL keeps it", async () => {
  const { page, problems } = await open("/runs.html");
  await until(page, () => document.querySelectorAll("#results tbody tr").length > 0);
  assert.ok((await rowCount(page)) >= 5);
  await page.locator("#q").pressSequentially("hf:ber", { delay: 30 });
  await until(page, () => [...document.querySelectorAll("#results tbody tr")]
    .every((tr) => tr.cells[0].textContent === "hf:bert"));
  assert.equal(await rowCount(page), BERT_RUNS);
  assert.match(page.url(), /\?model=hf%3Aber$/);
  assert.match(await page.locator("#count").textContent(), new RegExp(`^${BERT_RUNS} results$`));
  assert.deepEqual(problems, []);
});

test("filters: a status filter narrows the table and lives in the URL", async () => {
  const { page, problems } = await open("/runs.html?model=hf:bert");
  await until(page, () => document.querySelectorAll("#results tbody tr").length === 7);
  await page.locator('select[data-filter="status"]').selectOption("fail_to_run");
  await until(page, () => document.querySelectorAll("#results tbody tr").length === 1);
  assert.equal(await page.locator("#results tbody tr td").nth(1).textContent(), "cuda");
  assert.match(page.url(), /model=hf%3Abert&status=fail_to_run/);
  // The shared URL opens the same view.
  const again = await open("/runs.html?model=hf:bert&status=fail_to_run");
  await until(again.page, () => document.querySelectorAll("#results tbody tr").length === 1);
  assert.equal(await again.page.locator('select[data-filter="status"]').inputValue(), "fail_to_run");
  assert.deepEqual([...problems, ...again.problems], []);
});

test("a model page: history across stacks, targets side by side, a script copied", async () => {
  const { page, problems } = await open("/runs.html?model=hf:bert");
  await until(page, (n) => document.querySelectorAll("#results tbody tr").length === n, BERT_RUNS);
  await page.locator("#results tbody a").first().click();
  await page.waitForURL(/model\.html\?model_id=hf%3Abert/);
  await until(page, (n) => document.querySelectorAll("#history tbody tr").length === n, BERT_RUNS);
  assert.equal(await page.locator("#title").textContent(), "hf:bert");
  const stacks = await page.locator("#history tbody tr td:first-child").allTextContents();
  assert.equal(new Set(stacks).size, 2);  // this machine's torch and the planted older one
  assert.ok(stacks.includes("2.12.0+cpu"));
  // The matrix's cells of this model, on the newest stack (cuda ran only on the older one).
  await until(page, () => document.querySelectorAll("#targets tbody td.cell").length === 4);
  assert.deepEqual(await page.locator("#targets thead th").allTextContents(),
    ["test", "cpu eager", "cpu compile", "ctest eager", "ctest compile"]);
  assert.deepEqual(await page.locator("#targets tbody td.cell").evaluateAll(
    (cells) => cells.map((c) => c.dataset.verdict)), ["pass", "pass", "pass", "fail"]);
  assert.match(await page.locator("#errors").textContent(), /no CUDA device on this machine/);
  // The reproduction script of this machine's run, then the copy button.
  const mine = await page.evaluate(() => [...document.querySelectorAll("#history tbody tr")].findIndex(
    (tr) => tr.cells[0].textContent !== "2.12.0+cpu" && tr.cells[2].textContent === "cpu"
      && tr.cells[3].textContent === "eager" && tr.cells[6].textContent === "pass"));
  assert.ok(mine >= 0);
  await page.locator("#history tbody tr").nth(mine).locator("button.script").click();
  await until(page, () => document.getElementById("script").textContent.includes("import torch"),
    null, 60000);
  const script = await page.locator("#script").textContent();
  await page.getByRole("button", { name: "copy script" }).click();
  await until(page, () => document.querySelector('[data-role="copy-note"]').textContent !== "");
  assert.equal(await page.locator('[data-role="copy-note"]').textContent(), "copied");
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), script);
  assert.ok(await page.locator("#cache-pull-line").isHidden());  // an eager run: nothing compiled
  // A compiled run whose compile was kept: the command that pulls it, beside its script.
  const compiled = await page.evaluate(() => [...document.querySelectorAll("#history tbody tr")].findIndex(
    (tr) => tr.cells[0].textContent !== "2.12.0+cpu" && tr.cells[2].textContent === "cpu"
      && tr.cells[3].textContent === "compile"));
  assert.ok(compiled >= 0);
  await page.locator("#history tbody tr").nth(compiled).locator("button.script").click();
  await until(page, () => !document.getElementById("cache-pull-line").hidden);
  assert.match(await page.locator("#cache-pull").textContent(),
    /^compatlab cache pull hub:lab\/compile-cache --key [0-9a-f]{64}$/);
  assert.deepEqual(problems, []);
});

const MARKUP = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script><b onmouseover="window.__xss=3">bold</b>';

test("stored markup is shown as text and nothing in it runs", async () => {
  const { page, problems } = await open("/runs.html?model=markup");
  await until(page, () => document.querySelectorAll("#results tbody tr").length === 1);
  const cell = page.locator("#results tbody td.msg");
  assert.equal(await cell.locator("summary").textContent(), `${MARKUP.slice(0, 60)}…`);
  await cell.locator("summary").click();  // the whole text on demand
  assert.equal(await cell.locator(".err-full").textContent(), MARKUP);
  assert.equal(await page.locator("#results img, #results script, #results b").count(), 0);
  await cell.hover();
  // The model page shows it too: the error group, the details with the traceback.
  const model = await open("/model.html?model_id=hf%3Amarkup_model");
  await until(model.page, () => document.querySelectorAll("#history tbody tr").length === 1);
  assert.match(await model.page.locator("#errors").textContent(), /<img src=x onerror=/);
  await model.page.locator("button.details").click();
  await until(model.page, () => document.getElementById("details").textContent.includes("Traceback: <img"));
  assert.equal(await model.page.locator("main img, main script:not([src]), main b").count(), 0);
  for (const p of [page, model.page]) assert.equal(await p.evaluate(() => window.__xss), undefined);
  assert.deepEqual([...problems, ...model.problems], []);
});

test("the dashboard draws its plots with the charting library", async () => {
  const { page, problems } = await open("/dashboard.html");
  await until(page, () => document.querySelectorAll("#stacks tbody tr").length === 2);
  assert.equal(await page.evaluate(() => typeof Chart), "function");
  const drawn = await page.evaluate(() => ["pass-rate", "prepare-steady", "seq-len", "memory"]
    .map((id) => Chart.getChart(document.getElementById(id)) !== undefined));
  assert.deepEqual(drawn, [true, true, true, true]);
  assert.deepEqual(problems, []);
});

test("a model page under load: figures per scenario, rate and distribution plots", async () => {
  const load = await serveStore("load");
  try {
    const { page, problems } = await open("/model.html?model_id=hf%3Allama", load.base);
    await until(page, () => document.querySelectorAll("#load tbody tr").length === 4, null, 60000);
    assert.deepEqual(await page.locator("#load tbody tr td:first-child").allTextContents(),
      ["single_stream", "offline", "server", "server"]);
    assert.match(await page.locator("#load tbody tr").nth(3).locator("td").nth(1).textContent(), /^1\.5x = /);
    await until(page, () => ["load-rate", "load-ttft", "load-itl"].every(
      (id) => Chart.getChart(document.getElementById(id)) !== undefined));
    const series = await page.evaluate(() => ["load-rate", "load-ttft"].map(
      (id) => Chart.getChart(document.getElementById(id)).data.datasets.map((d) => [d.label, d.data.length])));
    assert.deepEqual(series[0], [["throughput (requests/s)", 2], ["goodput (requests/s)", 2],
      ["offline throughput", 2], ["TTFT p99 (ms)", 2]]);
    // one TTFT per request of each row
    assert.deepEqual(series[1], [["single_stream", 6], ["offline", 6], ["server 0.5x", 6], ["server 1.5x", 6]]);
    assert.deepEqual(problems, []);
  } finally {
    load.server.kill("SIGTERM");
  }
});

// The matrix rows of the landing page: {model, cells: [verdict, ...]} by model id.
async function matrixRows(page) {
  return page.evaluate(() => Object.fromEntries([...document.querySelectorAll("#matrix tbody tr")]
    .map((tr) => [tr.dataset.modelId, [...tr.querySelectorAll("td.cell")].map((td) => ({
      verdict: td.dataset.verdict, text: td.querySelector(".verdict").textContent,
      href: td.querySelector("a.verdict")?.getAttribute("href") ?? null,
      runId: td.dataset.runId ?? null,
    }))])));
}

// Issue 46: a noisy run's timing figures carry the mark "~" and its reason on hover on the
// matrix and the model page. Screenshots in build/web-shots/ (out of git).
test("a noisy run's figures are marked with their reason on the matrix and model pages", async () => {
  const shots = path.join(repo, "build", "web-shots");
  mkdirSync(shots, { recursive: true });
  const { page, problems } = await open("/");
  await page.setViewportSize({ width: 1400, height: 900 });
  await until(page, () => document.querySelectorAll('#matrix tr[data-model-id="hf:bert"] td.cell').length === 4);
  const cells = page.locator('#matrix tr[data-model-id="hf:bert"] td.cell');
  // cpu compile: noisy in its steady phase only (make_store.py): steady marked, prepare not.
  const figures = cells.nth(1).locator(".figures");
  assert.equal(await figures.locator(".noisy").count(), 1);
  assert.match(await figures.locator(".noisy").textContent(), /^~\d/);
  assert.match(await figures.locator(".noisy").getAttribute("title"), /1\.4 other runnable tasks > 0 free cores/);
  assert.match(await figures.textContent(), /^\d[^~]* \/ ~\d/);
  assert.equal(await cells.nth(2).locator(".noisy").count(), 0);  // ctest eager: quiet
  await page.screenshot({ path: path.join(shots, "matrix-noisy.png"), fullPage: true });
  const model = await open("/model.html?model_id=hf%3Abert");
  await model.page.setViewportSize({ width: 1400, height: 900 });
  await until(model.page, () => document.querySelectorAll("#targets tbody td.cell").length === 4);
  await until(model.page, (n) => document.querySelectorAll("#history tbody tr").length === n, BERT_RUNS);
  assert.equal(await model.page.locator("#targets tbody td.cell").nth(1).locator(".noisy").count(), 1);
  const row = model.page.locator('#history tbody tr[data-run-id^="matrix-compile-"] .noisy');
  assert.equal(await row.count(), 1);
  assert.match(await row.textContent(), /^~\d/);
  assert.match(await row.getAttribute("title"), /1\.4 other runnable tasks > 0 free cores/);
  assert.equal(await model.page.locator(
    '#history tbody tr[data-run-id^="matrix-ctest-"]:not([data-run-id^="matrix-ctest-compile-"]) .noisy').count(), 0);
  await model.page.screenshot({ path: path.join(shots, "model-noisy.png"), fullPage: true });
  assert.deepEqual([...problems, ...model.problems], []);
});

test("the landing page is the matrix: one current verdict per cell, each linking to its run", async () => {
  const { page, problems } = await open("/");
  await page.setViewportSize({ width: 1400, height: 900 });
  await until(page, () => document.querySelectorAll("#matrix tbody tr").length === 3);
  // Each target and mode column heads its name and a link to its op coverage page.
  const headings = await page.locator("#matrix thead th").evaluateAll(
    (ths) => ths.map((th) => th.firstChild.textContent));
  assert.deepEqual(headings,
    ["model ▲", "params", "size", "test", "cpu eager", "cpu compile", "ctest eager", "ctest compile"]);
  assert.deepEqual(await page.locator("#matrix thead th a.ops-link").evaluateAll(
    (links) => links.map((a) => a.getAttribute("href"))),
  ["/ops.html?target=cpu&mode=eager", "/ops.html?target=cpu&mode=compile",
    "/ops.html?target=ctest&mode=eager", "/ops.html?target=ctest&mode=compile"]);
  const rows = await matrixRows(page);
  assert.deepEqual(Object.keys(rows).sort(), ["ckpt:" + "ab".repeat(32), "hf:bert", "hf:markup_model"]);
  const bert = rows["hf:bert"];
  // cpu eager: this machine's pass, not the older timeout imported after it.
  assert.deepEqual(bert.map((c) => c.text), ["pass", "pass", "pass", "fail_to_compile"]);
  assert.deepEqual(rows["hf:markup_model"].map((c) => c.verdict),
    ["fail", "not_measured", "not_measured", "not_measured"]);
  for (const c of Object.values(rows).flat()) {
    assert.equal(c.href === null, c.verdict === "not_measured");
    if (c.href) assert.match(c.href, new RegExp(`run_id=${encodeURIComponent(c.runId)}`));
  }
  const cells = page.locator('#matrix tr[data-model-id="hf:bert"] td.cell');
  assert.match(await cells.nth(2).textContent(), /2 ops fell back/);
  assert.match(await page.locator("#count").textContent(),
    /newest of 2 stacks\): 3 models × 4 target\/mode columns, 6 current results, 1 superseded/);
  // Readable at 1,400 px: no column pushed off screen by a checkpoint hash.
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 1400));
  // The long error is cut, the whole text on a click.
  const failed = cells.nth(3);
  assert.match(await failed.locator("summary").textContent(), /…$/);
  await failed.locator("summary").click();
  assert.match(await failed.locator(".err-full").textContent(), /and 3 more ops\nsecond line$/);
  // A cell's link opens its run.
  const runId = bert[0].runId;
  await cells.nth(0).locator("a.verdict").click();
  await page.waitForURL(/model\.html\?model_id=hf%3Abert&run_id=/);
  await until(page, (id) => document.getElementById("details").textContent.includes(id), runId);
  assert.match(await page.locator("#details").textContent(), /status\s*pass/);
  assert.deepEqual(problems, []);
});

test("the matrix: other stacks on request, sorting and filters in the URL", async () => {
  const { page, problems } = await open("/?stack=all&model=hf:bert");
  await until(page, () => document.querySelectorAll("#matrix thead th").length === 9);
  assert.equal(await page.locator('select[data-filter="stack"]').inputValue(), "all");
  const bert = (await matrixRows(page))["hf:bert"];
  assert.deepEqual(bert.map((c) => c.text), ["pass", "pass", "pass", "fail_to_compile", "fail_to_run"]);
  const all = await open("/");
  await until(all.page, () => document.querySelectorAll("#matrix tbody tr").length === 3);
  await all.page.locator('th[data-sort="params"] button').click();
  await all.page.locator('th[data-sort="params"] button').click();
  assert.match(all.page.url(), /sort=-params/);
  assert.equal(await all.page.locator('#matrix th[data-sort="params"]').getAttribute("aria-sort"), "descending");
  await all.page.locator('th[data-sort="cpu eager"] button').click();  // failures first
  assert.equal(await all.page.locator("#matrix tbody tr").first().getAttribute("data-model-id"), "hf:markup_model");
  assert.deepEqual([...problems, ...all.problems], []);
});

test("the matrix shows stored markup as text; the run list marks superseded runs", async () => {
  const { page, problems } = await open("/");
  await until(page, () => document.querySelectorAll("#matrix tbody tr").length === 3);
  const ckpt = page.locator(`#matrix tr[data-model-id="ckpt:${"ab".repeat(32)}"] td.model a`);
  assert.equal(await ckpt.textContent(), MARKUP.replaceAll("/", "|"));
  const markup = page.locator('#matrix tr[data-model-id="hf:markup_model"] td.cell').first();
  await markup.locator("summary").click();
  assert.equal(await markup.locator(".err-full").textContent(), MARKUP);
  assert.equal(await page.locator("#matrix img, #matrix script, #matrix b").count(), 0);
  assert.equal(await page.evaluate(() => window.__xss), undefined);
  const runs = await open("/runs.html?model=hf:bert&target=cpu&mode=eager");
  await until(runs.page, () => document.querySelectorAll("#results tbody tr").length === 3);
  const marks = await runs.page.evaluate(() => [...document.querySelectorAll("#results tbody tr")]
    .map((tr) => `${tr.cells[5].textContent} ${tr.querySelector(".mark").textContent}`).sort());
  // The older stack's run is current on its own stack.
  assert.deepEqual(marks, ["pass current", "pass current", "timeout superseded"]);
  assert.deepEqual([...problems, ...runs.problems], []);
});
