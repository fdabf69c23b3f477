// Screenshots of the page for the README (a tool, not a test):
//   node tests/web/screenshots.mjs BASE_URL OUT_DIR
// (a running `compatlab serve`; Debian's chromium, headless, through playwright-core).
// The curve shots show llama's newest train and generate runs: the README's
// train-biased-curves.png is train-curves.png taken again after the biased-backend sweep.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";

const [base, out] = process.argv.slice(2);
const profile = mkdtempSync(path.join(tmpdir(), "compatlab-shots-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1400, height: 900 },
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const shots = [
  ["matrix.png", "/", "#matrix tbody tr"],
  ["search.png", "/runs.html?model=llama", "#results tbody tr"],
  ["model.png", "/model.html?model_id=hf%3Allama", "#history tbody tr"],
  ["dashboard.png", "/dashboard.html", "#stacks tbody tr"],
  // kind load's table and plots (a store with load runs of llama; skipped otherwise)
  ["load.png", "/model.html?model_id=hf%3Allama", "#load tbody tr", "#load-section"],
  // the curves of a train and a generate run (a store with such runs of llama; skipped otherwise)
  ["train-curves.png", "/model.html?model_id=hf%3Allama", "#train-loss-box:not([hidden])", "#train-curves"],
  ["generate-curves.png", "/model.html?model_id=hf%3Allama", "#gen-decode-box:not([hidden])", "#gen-curves"],
];
for (const [file, url, ready, part] of shots) {
  const page = await context.newPage();
  await page.goto(base + url);
  try {
    await page.locator(ready).first().waitFor({ timeout: 20000 });
  } catch {
    console.log(`${file}: skipped (${ready} did not appear)`);
    continue;
  }
  await page.waitForTimeout(800);  // plots and the last fetches
  const target = part ? page.locator(part) : page;
  await target.screenshot({ path: path.join(out, file), ...(part ? {} : { fullPage: true }) });
  console.log(path.join(out, file));
}
await context.close();
rmSync(profile, { recursive: true, force: true });
