import {
  api, runsOf, el, seconds, text, memory, accuracy, fallbacksText, statusBadge, showError, copyButton, DASH,
  matrixCell, columnName, currentMark,
} from "/common.js";

const modelId = new URLSearchParams(location.search).get("model_id") || "";
const runId = new URLSearchParams(location.search).get("run_id") || "";
const title = document.getElementById("title");
title.textContent = modelId || "no model";
document.title = `compatlab: ${modelId}`;
let script = "";

async function showScript(runId) {
  const section = document.getElementById("script-section");
  const pre = document.getElementById("script");
  section.hidden = false;
  document.getElementById("script-run").textContent = `run ${runId}`;
  pre.textContent = "generating…";
  script = "";
  try {
    script = (await api("/api/repro", { run_id: runId })).script;
    pre.textContent = script;
  } catch (e) {
    pre.textContent = `no script: ${e.message}`;
  }
  section.scrollIntoView();
}

// Every field of the run, as stored (new fields appear as they are added).
async function showDetails(runId) {
  const section = document.getElementById("details-section");
  const list = document.getElementById("details");
  section.hidden = false;
  document.getElementById("details-run").textContent = runId;
  try {
    const { run, known_error: known } = await api("/api/run", { run_id: runId });
    list.replaceChildren();
    for (const [k, v] of Object.entries(run)) list.append(el("dt", {}, k), el("dd", {}, text(v)));
    if (known) list.append(el("dt", {}, "known error"), el("dd", {}, `[${known.id}] ${known.explanation}`));
  } catch (e) {
    showError(list, e);
  }
  section.scrollIntoView();
}

function testKey(r) {
  return `${r.mode}|${r.kind}|${r.dtype}|${r.batch_size}x${r.seq_len}|${r.kind_params}`;
}

// The model's rows of the matrix (/api/matrix): the same cells as the landing page.
function sideBySide(m) {
  const table = document.getElementById("targets");
  document.getElementById("targets-stack").textContent = m.rows.length
    ? `The current result of each test on each target and mode, on ${m.stack.description}; `
      + `${m.superseded} earlier results superseded.`
    : "No results on this stack.";
  table.tHead.replaceChildren(el("tr", {}, el("th", {}, "test"), m.columns.map((c) => el("th", {}, columnName(c)))));
  table.tBodies[0].replaceChildren(...m.rows.map((row) => el("tr", {},
    el("td", { class: "test" }, row.test), row.cells.map((cell) => matrixCell(cell, row.model_id)))));
}

function errors(groups) {
  const box = document.getElementById("errors");
  if (!groups.length) return box.replaceChildren(el("p", { class: "note" }, "no failures"));
  box.replaceChildren(...groups.map((g) => el("div", { class: "error-group" },
    el("p", {}, el("strong", {}, `${g.status}, ${g.runs} run${g.runs > 1 ? "s" : ""}: `),
      el("span", { class: "signature" }, g.signature || DASH)),
    el("p", { class: "note" }, `stages ${g.stages.join(", ") || DASH}; stacks ${g.stacks.map(
      (s) => `torch ${s.torch_version}, transformers ${s.transformers_version}`).join("; ")}; seen ${g.first_seen} .. ${g.last_seen}`),
    g.known
      ? el("div", { class: "known" }, el("p", {}, el("strong", {}, `[${g.known.id}] `), g.known.explanation),
        el("p", {}, el("em", {}, "cause: "), g.known.cause), el("p", {}, el("em", {}, "workaround: "), g.known.workaround))
      : el("p", { class: "note" }, "not in the knowledge base"),
    el("button", { type: "button", onclick: () => showScript(g.example_run_id) }, "script of the latest"))));
}

function history(runs) {
  const sorted = [...runs].sort((a, b) =>
    (b.torch_version + b.transformers_version).localeCompare(a.torch_version + a.transformers_version)
    || testKey(a).localeCompare(testKey(b)) || a.target.localeCompare(b.target));
  document.querySelector("#history tbody").replaceChildren(...sorted.map((r) => el("tr", { "data-run-id": r.run_id },
    el("td", {}, text(r.torch_version)), el("td", {}, text(r.transformers_version)),
    el("td", {}, r.target), el("td", {}, r.mode), el("td", {}, r.kind),
    el("td", {}, `${r.batch_size}×${r.seq_len} ${r.dtype}`),
    el("td", { title: r.error_message || "" }, statusBadge(r)),
    el("td", { class: "num" }, seconds(r.wall_s)), el("td", { class: "num" }, seconds(r.prepare_s)),
    el("td", { class: "num" }, seconds(r.steady_median_s)), el("td", { class: "num" }, memory(r)),
    el("td", {}, accuracy(r)), el("td", { class: "fallbacks" }, fallbacksText(r)), el("td", { class: "num" }, text(r.graph_breaks)),
    el("td", { title: r.started_at }, (r.started_at || "").replace("T", " ").slice(0, 16)), el("td", {}, currentMark(r)),
    el("td", {},
      el("button", { type: "button", class: "script", onclick: () => showScript(r.run_id) }, "script"), " ",
      el("button", { type: "button", class: "details", onclick: () => showDetails(r.run_id) }, "details")))));
}

document.getElementById("copy").append(copyButton(() => script, "copy script"));

api("/api/model", { model_id: modelId }).then((m) => {
  const runs = runsOf(m);
  const passes = runs.filter((r) => r.status === "pass").length;
  document.getElementById("summary").textContent =
    `${m.model_type ? `type ${m.model_type}, ` : ""}${runs.length}${m.truncated ? "+" : ""} results, ${passes} passing`;
  history(runs);
}, (e) => showError(document.getElementById("summary"), e));

const stack = new URLSearchParams(location.search).get("stack") || "";
api("/api/matrix", { model_id: modelId, stack, limit: 200 }).then(sideBySide,
  (e) => showError(document.getElementById("targets-stack"), e));
if (runId) showDetails(runId);

api("/api/errors", { model_id: modelId }).then((e) => errors(e.groups),
  (e) => showError(document.getElementById("errors"), e));
