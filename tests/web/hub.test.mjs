// Browser test of the search by Hub id (doc/api.md, "Search"): a store of one Hub model
// read from a Hub cache (make_store.py hub), served by the real binary.
//   node --test tests/web/hub.test.mjs
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { serveStore, until } from "./harness.mjs";

let served, browser, base;

before(async () => {
  served = await serveStore("hub");
  ({ browser, base } = served);
});

after(async () => {
  await served?.close();
});

test("search by Hub id finds every commit; an empty search says what there is and what to run", async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${base}/runs.html?model=${encodeURIComponent("hub:testorg/TINY-encoder")}`);
  await until(page, () => document.querySelectorAll("#results tbody tr").length === 1);
  const link = page.locator("#results tbody tr td.model a");
  assert.match(await link.textContent(), /^hub:testorg\/tiny-encoder@[0-9a-f]{40}$/);
  // The model page of the id without a commit groups every commit, with source and size.
  await page.goto(`${base}/model.html?${new URLSearchParams({ model_id: "hub:testorg/tiny-encoder" })}`);
  await until(page, () => /reduced/.test(document.getElementById("summary").textContent));
  const summary = await page.locator("#summary").textContent();
  assert.match(summary, /Hub testorg\/tiny-encoder at [0-9a-f]{12}, [\d,]+ parameters, reduced/);

  await page.goto(`${base}/runs.html?model=${encodeURIComponent("testorg/tiny-encoder-v2")}`);
  await until(page, () => /no results for/.test(document.getElementById("count").textContent));
  const id = await hubId(page);
  assert.equal(await page.locator("#count").textContent(),
    `no results for testorg/tiny-encoder-v2; ${id} has 1 result; ` +
    "run `compatlab sweep --models hub:testorg/tiny-encoder-v2`");
  assert.deepEqual(errors, []);
});

// The Hub model's stored id (with its commit), from the API itself.
async function hubId(page) {
  return page.evaluate(async () => {
    const t = await (await fetch("/api/search?model=hub:testorg/tiny-encoder")).json();
    return t.rows[0][t.fields.indexOf("model_id")];
  });
}

test("a model page compares the model with its baseline, test by test (/api/compare)", async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${base}/runs.html`);
  const id = await hubId(page);
  await page.goto(`${base}/model.html?${new URLSearchParams({ model_id: id })}`);
  // The other side defaults to the architecture's baseline; submitting compares.
  await until(page, () => document.getElementById("compare-other").value === "hf:bert");
  await page.locator("#compare-form button").click();
  await until(page, () => document.querySelectorAll("#compare tbody tr").length === 1);
  const cells = await page.locator("#compare tbody tr td").allTextContents();
  assert.deepEqual(cells.slice(0, 7), ["cpu", "eager", "forward", "float32", "1x32", "pass", "pass"]);
  // steady head/base [the range its intervals allow], marked "~" when either row was noisy
  assert.match(cells[10], /^~?[\d.]+x \[[\d.]+–[\d.]+\]$/);
  assert.match(await page.locator("#compare-note").textContent(),
    new RegExp(`^base model=hf:bert, head model=${id}: 1 compared, 0 only in base, 0 only in head; \\d+ regressions, \\d+ improvements$`));
  // From the baseline's page, the same pair the other way round.
  await page.goto(`${base}/model.html?${new URLSearchParams({ model_id: "hf:bert", compare: id })}`);
  await until(page, () => document.querySelectorAll("#compare tbody tr").length === 1);
  assert.match(await page.locator("#compare-note").textContent(), /^base model=hub:testorg/);
  assert.deepEqual(errors, []);
});
