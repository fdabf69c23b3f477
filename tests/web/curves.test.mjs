// Browser test of the model page's curves (doc/api.md; doc/dataset.md, "List columns"): a
// tiny llama's train and generate runs, exported to Parquet and imported back
// (make_store.py curves), served by the real binary; the page draws the loss and
// gradient-norm curves and the match and decode-time curves from /api/run's arrays.
//   node --test tests/web/curves.test.mjs
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { serveStore, until } from "./harness.mjs";

let served, browser, base;

before(async () => {
  served = await serveStore("curves");
  ({ browser, base } = served);
});

after(async () => {
  await served?.close();
});

test("the API gives curves as arrays, run lists leave them out", async () => {
  const model = await (await fetch(`${base}/api/model?model_id=hf%3Allama`)).json();
  assert.ok(!model.fields.includes("train_loss") && !model.fields.includes("gen_decode_curve"));
  const train = model.rows.find((r) => r[model.fields.indexOf("kind")] === "train");
  const runId = train[model.fields.indexOf("run_id")];
  const { run } = await (await fetch(`${base}/api/run?run_id=${runId}`)).json();
  assert.equal(run.train_loss.length, 20);
  assert.equal(run.train_ref_loss.length, 20);
  assert.equal(run.train_eager_loss, null);  // the CPU eager row is CPU eager itself
  assert.ok(run.train_grad_norm.every((v) => v > 0));
});

test("the model page plots loss and gradient norm of a train run, match and decode time of a generate run",
  async () => {
    const page = await browser.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(`${base}/model.html?model_id=hf%3Allama`);
    await until(page, () => !document.getElementById("curves-section").hidden);
    // Chart.js keeps each chart on its canvas: the datasets it draws.
    const drawn = (id) => page.evaluate((canvasId) => {
      const chart = Chart.getChart(document.getElementById(canvasId));
      return chart && chart.data.datasets.map((d) => ({ label: d.label, n: d.data.length,
        finite: d.data.every((p) => Number.isFinite(p.x) && Number.isFinite(p.y)) }));
    }, id);
    await until(page, () => ["train-loss", "train-grad", "gen-match", "gen-decode"].every(
      (id) => Chart.getChart(document.getElementById(id))));
    const loss = await drawn("train-loss");
    assert.deepEqual(loss.map((d) => d.n), [20, 20]);  // target and reference (no eager curve)
    assert.match(loss[0].label, /^target \(cpu eager\)$/);
    assert.equal(loss[1].label, "CPU float64 reference");
    assert.ok(loss.every((d) => d.finite));
    const grad = await drawn("train-grad");
    assert.deepEqual(grad.map((d) => d.n), [20, 20]);
    const match = await drawn("gen-match");
    assert.ok(match[0].n >= 1 && match[0].finite, JSON.stringify(match));  // N = 64: one point
    const decode = await drawn("gen-decode");
    assert.ok(decode[0].n >= 8 && decode[0].finite, JSON.stringify(decode));
    for (const id of ["train-loss", "gen-decode"]) {
      const box = await page.locator(`#${id}`).boundingBox();
      assert.ok(box.width > 100 && box.height > 50, `${id} is drawn: ${JSON.stringify(box)}`);
    }
    assert.deepEqual(errors, []);
  });
