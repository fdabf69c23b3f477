// Browser test of named stacks side by side (doc/stacks.md, doc/matrix.md "Stacks side by
// side"): bert on the cpu, eager and compile, on the stacks default and t5 (eager newly
// fails on t5) and on a stack `other` not asked for (make_store.py stacks), served by the
// real binary.
//   node --test tests/web/stacks.test.mjs
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { serveStore, until } from "./harness.mjs";

let served, browser, base;

before(async () => {
  served = await serveStore("stacks");
  ({ browser, base } = served);
});

after(async () => {
  await served?.close();
});

test("the matrix and the model page show a column per stack, target and mode, changed cells marked", async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${base}/?stacks=default,t5`);
  await until(page, () => document.querySelectorAll("#matrix tbody td.cell").length === 4);
  // The column's name (its heading's first node; an "ops" link follows it).
  const headings = await page.locator("#matrix thead th").evaluateAll(
    (ths) => ths.map((th) => th.firstChild.textContent));
  assert.deepEqual(headings.slice(4), ["default: cpu eager", "t5: cpu eager", "default: cpu compile", "t5: cpu compile"]);
  const cells = page.locator('#matrix tr[data-model-id="hf:bert"] td.cell');
  assert.deepEqual(await cells.evaluateAll((tds) => tds.map((td) => td.dataset.verdict)),
    ["pass", "fail", "pass", "pass"]);
  // Only t5's eager cell changed from default's, by diff's rule; its changes show on hover.
  assert.deepEqual(await cells.evaluateAll((tds) => tds.map((td) => td.dataset.changed ?? "")),
    ["", "newly failing", "", ""]);
  const mark = cells.nth(1).locator(".changed-mark");
  assert.equal(await mark.textContent(), "* ");
  assert.match(await mark.getAttribute("title"), /^newly failing: .*t5 breaks bert's forward \[status\]/);
  assert.equal(await page.locator("#matrix .changed-mark").count(), 1);
  assert.match(await page.locator("#count").textContent(), /stacks default, t5 side by side.*1 cells changed \(\*\) from default/);

  // The typed stacks live in the URL; the model link carries them to the model page.
  const link = page.locator('#matrix tr[data-model-id="hf:bert"] td.model a');
  assert.equal(new URL(await link.getAttribute("href"), base).searchParams.get("stacks"), "default,t5");
  await link.click();
  await until(page, () => document.querySelectorAll("#targets tbody td.cell").length === 4);
  assert.deepEqual(await page.locator("#targets thead th").allTextContents(),
    ["test", "default: cpu eager", "t5: cpu eager", "default: cpu compile", "t5: cpu compile"]);
  assert.deepEqual(await page.locator("#targets tbody td.cell").evaluateAll(
    (tds) => tds.map((td) => td.dataset.changed ?? "")), ["", "newly failing", "", ""]);
  assert.match(await page.locator("#targets-stack").textContent(), /marked \* changed from default's/);

  // Without stacks the matrix is the newest stack pair's, one column per target and mode.
  await page.goto(`${base}/`);
  await until(page, () => document.querySelectorAll("#matrix tbody td.cell").length > 0);
  assert.equal(await page.locator("#matrix .changed-mark").count(), 0);
  assert.ok((await page.locator("#matrix thead th").allTextContents()).every((h) => !h.includes(":")));
  assert.deepEqual(errors, []);
});
