// What the browser tests of one store share (not a test itself): the store made by
// make_store.py with the real binary, served by `compatlab serve` on a free port, a
// headless Debian chromium, and `until`.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const bin = process.env.COMPATLAB_BIN || path.join(repo, "build/compatlab");
const python = process.env.COMPATLAB_PYTHON || path.join(repo, ".venv/bin/python");

// make_store.py's store of `kind` (offline), served: {base, browser, close}.
export async function serveStore(kind) {
  const work = mkdtempSync(path.join(tmpdir(), `compatlab-web-${kind}-`));
  const db = execFileSync(python, [path.join(repo, "tests/web/make_store.py"), bin, work, kind],
    { encoding: "utf8", env: { ...process.env, HF_HUB_OFFLINE: "1", TRANSFORMERS_OFFLINE: "1" } }).trim();
  const server = spawn(bin, ["serve", "--db", db, "--port", "0"], { stdio: ["ignore", "ignore", "pipe"] });
  const base = await new Promise((resolve, reject) => {
    let err = "";
    server.stderr.on("data", (d) => {
      err += d;
      const m = err.match(/on (http:\/\/127\.0\.0\.1:\d+)\//);
      if (m) resolve(m[1]);
    });
    server.on("exit", (code) => reject(new Error(`compatlab serve exited ${code}: ${err}`)));
  });
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"] });
  const close = async () => {
    await browser.close();
    server.kill("SIGTERM");
    rmSync(work, { recursive: true, force: true });
  };
  return { base, browser, close };
}

// Waits until `fn(arg)` is true in the page.
export async function until(page, fn, arg, timeout = 20000) {
  const end = Date.now() + timeout;
  while (!(await page.evaluate(fn, arg))) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${fn}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
