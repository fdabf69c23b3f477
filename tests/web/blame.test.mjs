// Browser test of the runs compatlab could not test (doc/results-schema.md, "Blame"): a
// store where bert's reduced failure was proven the reduction's by a rerun, gpt2 fails at
// every size and llama passes (make_store.py blame), served by the real binary.
//   node --test tests/web/blame.test.mjs
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { serveStore, until } from "./harness.mjs";

let served, browser, base;

before(async () => {
  served = await serveStore("blame");
  ({ browser, base } = served);
});

after(async () => {
  await served?.close();
});

test("the dashboard leaves a reduction's and a missing package's failures out of the pass rate; the runs say compatlab could not test them", async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${base}/dashboard.html`);
  await until(page, () => document.querySelectorAll("#stacks tbody tr").length === 1);
  const cells = await page.locator("#stacks tbody tr td").allTextContents();
  assert.equal(cells[2], "4");        // results
  assert.equal(cells[3], "2");        // compatlab could not test (bert, needs_natten)
  assert.equal(cells[4], "50.0%");    // llama passes, gpt2 fails: bert and needs_natten are not counted
  assert.match(await page.locator("#targets tbody").textContent(), /50\.0% of 2 \(\+2 compatlab could not test\)/);

  await page.goto(`${base}/runs.html?model=bert`);
  await until(page, () => document.querySelectorAll("#results tbody tr").length === 1);
  const badge = page.locator("#results tbody tr span.status");
  assert.match(await badge.textContent(), /^compatlab could not test this \(reduction\): fail_to_run/);
  assert.match(await badge.getAttribute("title"), /rerun at milder size: pass$/);
  await page.goto(`${base}/runs.html?model=gpt2`);
  await until(page, () => document.querySelectorAll("#results tbody tr").length === 1);
  assert.match(await page.locator("#results tbody tr span.status").textContent(), /^fail_to_run/);
  // A package the environment lacks (blame environment): not tested here, the package named.
  await page.goto(`${base}/runs.html?model=needs_natten`);
  await until(page, () => document.querySelectorAll("#results tbody tr").length === 1);
  assert.match(await page.locator("#results tbody tr span.status").textContent(),
    /^not tested here: needs natten: fail_to_run/);
  assert.deepEqual(errors, []);
});
