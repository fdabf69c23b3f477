// The landing page: models x (target, mode), one current verdict per cell
// (/api/matrix), filters and sort in the URL.
import {
  api, el, count, matrixCell, columnName, modelLink, readFilters, startListPage, writeFilters, showError, DASH,
} from "/common.js";

const table = document.getElementById("matrix");
const note = document.getElementById("count");
const more = document.getElementById("more");
const filters = readFilters(["stack", "stacks", "sort"]);
let columns = [];
let rows = [];  // the rows loaded so far
let nextOffset = 0;
let inFlight = null;

// Verdicts in sort order: the ones that need attention first.
const RANK = { fail: 0, could_not_test: 1, pass: 2, not_measured: 3 };

function sortKey(row, key) {
  if (key === "model") return row.name;
  if (key === "params") return row.param_count ?? -1;
  const c = columns.findIndex((col) => columnName(col) === key);
  if (c < 0) return row.name;
  const cell = row.cells[c];
  return `${RANK[cell.verdict]}|${cell.status || ""}`;
}

function sorted() {
  const spec = filters.sort || "model";
  const desc = spec.startsWith("-");
  const key = desc ? spec.slice(1) : spec;
  const out = [...rows].sort((a, b) => {
    const x = sortKey(a, key);
    const y = sortKey(b, key);
    const c = typeof x === "number" ? x - y : String(x).localeCompare(String(y));
    return c || a.name.localeCompare(b.name) || a.test.localeCompare(b.test);
  });
  return desc ? out.reverse() : out;
}

function header(key, label, title = "") {
  const spec = filters.sort || "model";
  const active = spec === key || spec === `-${key}`;
  const arrow = active ? (spec.startsWith("-") ? " ▼" : " ▲") : "";
  return el("th", { title, "data-sort": key, "aria-sort": active ? (spec.startsWith("-") ? "descending" : "ascending") : null },
    el("button", {
      type: "button", class: "sort",
      onclick: () => {
        filters.sort = spec === key ? `-${key}` : key;
        writeFilters(filters);
        render();
      },
    }, label, arrow));
}

function render() {
  const multiTest = new Set(rows.map((r) => r.model_id)).size !== rows.length;
  table.tHead.replaceChildren(el("tr", {},
    header("model", "model"), header("params", "params", "parameter count"),
    el("th", {}, "size"), el("th", {}, "test"),
    columns.map((c) => {
      const th = header(columnName(c), columnName(c));
      th.append(el("a", { class: "ops-link", title: "op coverage of this target and mode",
        href: `/ops.html?${new URLSearchParams({ target: c.target, mode: c.mode })}` }, "ops"));
      return th;
    })));
  table.tBodies[0].replaceChildren(...sorted().map((row) => el("tr", { "data-model-id": row.model_id },
    el("td", { class: "model", title: row.model_id },
      modelLink(row.model_id, row.name, filters.stacks), row.model_type && row.name !== `hf:${row.model_type}`
        ? el("div", { class: "note" }, row.model_type) : null),
    el("td", { class: "num" }, count(row.param_count)),
    el("td", {}, row.size || DASH),
    el("td", { class: multiTest ? "test" : "test note" }, row.test),
    row.cells.map((cell) => matrixCell(cell, row.model_id)))));
}

// The API's parameters: named stacks side by side (`stacks`) replace the `stack` selection.
function apiFilters() {
  const { sort, ...rest } = filters;
  if (rest.stacks) rest.stack = "";
  return rest;
}

async function load(append) {
  inFlight?.abort();
  inFlight = new AbortController();
  try {
    const page = await api("/api/matrix", { ...apiFilters(), offset: append ? nextOffset : "" }, inFlight.signal);
    columns = page.columns;
    rows = append ? [...rows, ...page.rows] : page.rows;
    nextOffset = page.next_offset;
    more.hidden = !page.has_more;
    const changed = rows.reduce((n, r) => n + r.cells.filter((c) => c.changes?.length).length, 0);
    note.textContent = page.total_rows === 0 ? "no results"
      : `${page.stack.description}: ${page.total_rows} models × ${columns.length} `
        + `${filters.stacks ? "stack/target/mode" : "target/mode"} columns, `
        + `${page.current} current results, ${page.superseded} superseded`
        + (filters.stacks ? `; ${changed} cells changed (*) from ${filters.stacks.split(",")[0]}` : "")
        + (page.has_more ? `; showing ${rows.length}` : "");
    render();
  } catch (e) {
    if (e.name !== "AbortError") showError(note, e);
  }
}

startListPage(filters, load, note);
