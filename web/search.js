import {
  api, runsOf, el, seconds, text, memory, accuracy, fallbacksText, devices, statusBadge, modelLink,
  readFilters, startListPage, showError, currentMark, errorText, runHref, prepareFigure, steadyFigure,
} from "/common.js";

const body = document.querySelector("#results tbody");
const count = document.getElementById("count");
const more = document.getElementById("more");
const filters = readFilters();
let cursor = null;
let inFlight = null;

function row(run) {
  return el("tr", { "data-run-id": run.run_id, class: run.current === false ? "superseded" : null },
    el("td", { class: "model", title: run.model_id }, modelLink(run.model_id)),
    el("td", {}, run.target), el("td", {}, run.mode), el("td", {}, run.kind),
    el("td", {}, `${run.batch_size}×${run.seq_len} ${run.dtype}`),
    el("td", {}, statusBadge(run)),
    el("td", {}, devices(run)),
    el("td", { class: "num" }, seconds(run.wall_s)),
    el("td", { class: "num" }, prepareFigure(run)),
    el("td", { class: "num" }, steadyFigure(run)),
    el("td", { class: "num" }, memory(run)),
    el("td", {}, accuracy(run)),
    el("td", { class: "fallbacks" }, fallbacksText(run)),
    el("td", { class: "num" }, text(run.graph_breaks)),
    el("td", {}, `torch ${text(run.torch_version)}, transformers ${text(run.transformers_version)}`),
    el("td", {}, currentMark(run)),
    el("td", { class: "msg" }, errorText(run.error_message,
      el("a", { href: runHref(run.model_id, run.run_id) }, "run details"))));
}

async function load(append) {
  inFlight?.abort();
  inFlight = new AbortController();
  try {
    const page = await api("/api/search", { ...filters, cursor: append ? cursor : "" }, inFlight.signal);
    if (!append) body.replaceChildren();
    body.append(...runsOf(page).map(row));
    cursor = page.next_cursor;
    more.hidden = !page.has_more;
    // A search that found nothing says what the store has and the command to test it.
    count.textContent = page.total === 0 ? (page.hint || "no results")
      : `${page.total}${page.total_capped ? "+" : ""} results`;
  } catch (e) {
    if (e.name !== "AbortError") showError(count, e);
  }
}

startListPage(filters, load, count);
