// Browser test of the op coverage page (doc/ops.md, /api/ops): a store of one op sweep on
// ctest (make_store.py ops), served by the real binary: counts by category, cases sortable
// and filterable, the choice kept in the URL, and the page reachable from the matrix.
//   node --test tests/web/ops.test.mjs
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { serveStore, until } from "./harness.mjs";

let served, browser, base;

before(async () => {
  served = await serveStore("ops");
  ({ browser, base } = served);
});

after(async () => {
  await served?.close();
});

const keys = (page) => page.evaluate(() =>
  [...document.querySelectorAll("#ops tbody tr")].map((r) => r.dataset.key));

test("the op page counts cases by category and sorts and filters them", async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${base}/`);
  await page.locator("header a[href='/ops.html']").click();
  await until(page, () => document.querySelectorAll("#ops tbody tr").length === 6);
  assert.match(await page.locator("#count").textContent(), /target ctest, mode eager, torch .*: 6 cases/);
  const count = (c) => page.locator(`#counts td[data-category=${c}]`).textContent();
  assert.equal(await count("native"), "3");  // add, mul, mm: ctest kernels
  assert.equal(await count("fallback"), "2");  // tanh, neg
  assert.equal(await count("skipped"), "1");  // bernoulli, by PyTorch
  const skipped = page.locator("#ops tbody tr[data-key=bernoulli] td.detail");
  assert.match(await skipped.textContent(), /^\[pytorch\] DecorateInfo skip .*non-deterministic/);

  await page.locator("#ops th[data-sort=key] button").click();
  assert.deepEqual(await keys(page), ["add", "bernoulli", "mm", "mul", "neg", "tanh"]);
  await page.locator("#ops th[data-sort=key] button").click();
  assert.deepEqual(await keys(page), ["tanh", "neg", "mul", "mm", "bernoulli", "add"]);
  assert.match(page.url(), /sort=-key/);

  await page.selectOption("#category", "fallback");
  await until(page, () => document.querySelectorAll("#ops tbody tr").length === 2);
  assert.deepEqual((await keys(page)).sort(), ["neg", "tanh"]);
  assert.match(page.url(), /category=fallback/);
  await page.selectOption("#category", "");
  await page.fill("#q", "m");
  await until(page, () => document.querySelectorAll("#ops tbody tr").length === 2);
  assert.deepEqual((await keys(page)).sort(), ["mm", "mul"]);
  assert.deepEqual(errors, []);
});

test("/api/ops lists the op sweeps and refuses an unknown category", async () => {
  const page = await browser.newPage();
  await page.goto(`${base}/ops.html`);
  const answer = await page.evaluate(async () => {
    const index = await (await fetch("/api/ops")).json();
    const bad = await fetch("/api/ops?target=ctest&category=great");
    return { index, bad: bad.status, error: (await bad.json()).error };
  });
  assert.equal(answer.index.op_sweeps.length, 1);
  assert.equal(answer.index.op_sweeps[0].counts.total, 6);
  assert.equal(answer.bad, 400);
  assert.match(answer.error, /category/);
});
