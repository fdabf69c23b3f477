// Op coverage (/api/ops, doc/ops.md): one op sweep per target and mode, its counts by
// category and its cases, sortable and filterable; the choice is kept in the URL.
import { api, el, number, showError, DASH } from "/common.js";

const CATEGORIES = ["native", "fallback", "fail", "error", "timeout", "crash", "skipped"];
const url = new URLSearchParams(location.search);
const state = {
  op_sweep: url.get("op_sweep") || "", target: url.get("target") || "", mode: url.get("mode") || "",
  category: url.get("category") || "", q: url.get("q") || "", sort: url.get("sort") || "-models",
};
const note = document.getElementById("count");
const countsTable = document.getElementById("counts");
const table = document.getElementById("ops");
const sweepSelect = document.getElementById("sweep");
const query = document.getElementById("q");
const categorySelect = document.getElementById("category");
let cases = [];

function writeState() {
  const out = new URLSearchParams();
  for (const [k, v] of Object.entries(state)) if (v) out.set(k, v);
  history.replaceState(null, "", out.size ? `?${out}` : location.pathname);
}

const COLUMNS = [
  ["key", "op"], ["dtype", "dtype"], ["category", "category"], ["models", "models"],
  ["passed", "passed"], ["failed", "failed"], ["errored", "errored"], ["max_abs_err", "max abs err"],
  ["fallback_ops", "fallback ops"], ["detail", "detail"],
];

function value(c, key) {
  if (key === "fallback_ops") return Object.keys(c.fallback_ops || {}).join(" ");
  if (key === "detail") return c.skip_source ? `[${c.skip_source}] ${c.skip_reason}` : (c.first_failure || c.detail);
  if (key === "category") return CATEGORIES.indexOf(c.category);
  return c[key];
}

function sorted() {
  const desc = state.sort.startsWith("-");
  const key = desc ? state.sort.slice(1) : state.sort;
  const out = [...cases].sort((a, b) => {
    const x = value(a, key) ?? -Infinity;
    const y = value(b, key) ?? -Infinity;
    const c = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
    return c || a.key.localeCompare(b.key) || a.dtype.localeCompare(b.dtype);
  });
  return desc ? out.reverse() : out;
}

function header(key, label) {
  const active = state.sort === key || state.sort === `-${key}`;
  const arrow = active ? (state.sort.startsWith("-") ? " ▼" : " ▲") : "";
  return el("th", { "data-sort": key }, el("button", {
    type: "button", class: "sort",
    onclick: () => { state.sort = state.sort === key ? `-${key}` : key; writeState(); render(); },
  }, label, arrow));
}

function render() {
  table.tHead.replaceChildren(el("tr", {}, COLUMNS.map(([k, label]) => header(k, label))));
  table.tBodies[0].replaceChildren(...sorted().map((c) => el("tr", { "data-key": c.key, "data-category": c.category },
    el("td", { class: "op" }, c.key),
    el("td", {}, c.dtype),
    el("td", { class: `category ${c.category}` }, c.category, c.stale_skip ? el("span", { class: "mark" }, " stale skip") : null),
    el("td", { class: "num" }, String(c.models)),
    el("td", { class: "num" }, String(c.passed)),
    el("td", { class: "num" }, String(c.failed)),
    el("td", { class: "num" }, String(c.errored)),
    el("td", { class: "num" }, c.max_abs_err == null ? DASH : number(c.max_abs_err)),
    el("td", {}, value(c, "fallback_ops") || DASH),
    el("td", { class: "detail" }, value(c, "detail") || DASH))));
}

function renderCounts(counts) {
  countsTable.tHead.replaceChildren(el("tr", {}, CATEGORIES.map((c) => el("th", {}, c)), el("th", {}, "total")));
  countsTable.tBodies[0].replaceChildren(el("tr", {},
    CATEGORIES.map((c) => el("td", { class: "num", "data-category": c }, el("button", {
      type: "button", class: "link",
      onclick: () => { state.category = state.category === c ? "" : c; categorySelect.value = state.category; writeState(); load(); },
    }, String(counts.categories[c])))),
    el("td", { class: "num" }, String(counts.total))));
}

function fillSweeps(sweeps, chosen) {
  sweepSelect.replaceChildren(...sweeps.map((s) => el("option", { value: s.op_sweep_id },
    `${s.target} ${s.mode}${s.backend ? ` (${s.backend})` : ""}, ${s.dtypes}, torch ${s.torch_version}, ${s.created_at} (${s.op_sweep_id})`)));
  if (chosen) sweepSelect.value = chosen.op_sweep_id;
}

async function load() {
  try {
    const index = await api("/api/ops");
    if (!index.op_sweeps.length) {
      note.textContent = "no op sweep in this store: run compatlab ops run";
      return;
    }
    const named = state.op_sweep || state.target || state.mode;
    const page = await api("/api/ops", named
      ? { op_sweep: state.op_sweep, target: state.target, mode: state.mode, category: state.category, q: state.q, limit: 20000 }
      : { op_sweep: index.op_sweeps.at(-1).op_sweep_id, category: state.category, q: state.q, limit: 20000 });
    fillSweeps(page.op_sweeps, page.op_sweep);
    cases = page.cases;
    const s = page.op_sweep;
    note.textContent = `op sweep ${s.op_sweep_id}: target ${s.target}, mode ${s.mode}, torch ${s.torch_version}: `
      + `${page.counts.total} cases, ${page.matching} matching the filter${page.truncated ? `, showing ${cases.length}` : ""}`;
    renderCounts(page.counts);
    render();
  } catch (e) {
    showError(note, e);
  }
}

categorySelect.append(...CATEGORIES.map((c) => el("option", { value: c }, c)));
categorySelect.value = state.category;
query.value = state.q;
sweepSelect.addEventListener("change", () => {
  state.op_sweep = sweepSelect.value;
  state.target = state.mode = "";
  writeState();
  load();
});
categorySelect.addEventListener("change", () => { state.category = categorySelect.value; writeState(); load(); });
let timer = null;
query.addEventListener("input", () => {
  state.q = query.value;
  writeState();
  clearTimeout(timer);
  timer = setTimeout(load, 150);
});
document.getElementById("op-filters").addEventListener("submit", (e) => e.preventDefault());
api("/api/health").then((h) => {
  document.getElementById("health").textContent = `${h.runs} results, ${h.models} models`;
}, () => {});
load();
