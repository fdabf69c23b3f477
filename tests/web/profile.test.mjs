// Browser test of the model page's profile section (doc/results-schema.md, "Profile"): a
// tiny gpt2's forward under --profile (make_store.py profile), served by the real binary;
// the page draws the time by category, lists the top ops and source lines, and links the
// trace, which /api/trace serves as the gzip file its row's digest names.
//   node --test tests/web/profile.test.mjs
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { gunzipSync } from "node:zlib";
import { serveStore, until } from "./harness.mjs";

let served, browser, base;

before(async () => {
  served = await serveStore("profile");
  ({ browser, base } = served);
});

after(async () => {
  await served?.close();
});

test("the API gives the profile's summary and serves the trace its digest names", async () => {
  const model = await (await fetch(`${base}/api/model?model_id=hf%3Agpt2`)).json();
  const row = model.rows[0];
  const runId = row[model.fields.indexOf("run_id")];
  const { run } = await (await fetch(`${base}/api/run?run_id=${runId}`)).json();
  assert.equal(run.profile, "steady");
  assert.equal(run.profile_calls, 5);
  assert.ok(run.profile_compute_s > 0 && run.profile_median_s > 0);
  assert.ok(JSON.parse(run.profile_top_ops).length > 0);
  const res = await fetch(`${base}/api/trace?run_id=${runId}`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "application/gzip");
  const body = Buffer.from(await res.arrayBuffer());
  assert.equal(body.length, run.profile_trace_bytes);
  assert.equal(createHash("sha256").update(body).digest("hex"), run.profile_trace_sha256);
  assert.ok(Array.isArray(JSON.parse(gunzipSync(body)).traceEvents));
  assert.equal((await fetch(`${base}/api/trace?run_id=nosuchrun`)).status, 404);
});

test("the model page shows where the time goes: the breakdown, top ops and lines, the trace", async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${base}/model.html?model_id=hf%3Agpt2`);
  await until(page, () => !document.getElementById("profile-section").hidden
    && document.querySelectorAll("#profile-ops tbody tr").length > 0);
  await until(page, () => Chart.getChart(document.getElementById("profile-breakdown")));
  const bars = await page.evaluate(() => Chart.getChart(document.getElementById("profile-breakdown"))
    .data.datasets.map((d) => ({ label: d.label, values: d.data })));
  assert.deepEqual(bars.map((d) => d.label), ["compute", "copy", "fallback", "framework", "idle"]);
  assert.ok(bars[0].values[0] > 0 && bars.every((d) => d.values.every((v) => Number.isFinite(v) && v >= 0)));
  const ops = await page.locator("#profile-ops tbody tr td:first-child").allTextContents();
  assert.ok(ops.length > 0 && ops.every((name) => name.startsWith("aten::")), ops.join(", "));
  const lines = await page.locator("#profile-lines tbody tr td:first-child").allTextContents();
  // The model's own frames (transformers' code or its modules), never only the framework's.
  assert.ok(lines.some((l) => l.startsWith("transformers/")) && lines.every((l) => !l.startsWith("torch/")),
    lines.join(", "));
  assert.match(await page.locator("#profile-overhead").textContent(), /profiler overhead ×/);
  const link = page.locator("#profile-download");
  assert.match(await link.getAttribute("href"), /^\/api\/trace\?run_id=/);
  assert.match(await page.locator("#profile-trace").textContent(), /Perfetto/);
  assert.deepEqual(errors, []);
});
