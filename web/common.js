// Shared by the pages: API calls, DOM building (text only: stored text is
// never parsed as HTML), number formats, filters kept in the URL.

export const FILTERS = ["model", "target", "mode", "kind", "status", "dtype",
  "torch_version", "transformers_version", "sweep_id"];

export async function api(path, params = {}, signal = undefined) {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== "" && v != null) query.set(k, v);
  const url = query.size ? `${path}?${query}` : path;
  const res = await fetch(url, { signal });
  const body = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
  if (!res.ok) throw new Error(body.error || `HTTP ${res.status}`);
  return body;
}

// The run objects of a {fields, rows} answer (search, model); `current` (the
// answer's mark: no later run of its cell on its stack) is added to each.
export function runsOf(table) {
  return table.rows.map((row, r) => ({
    ...Object.fromEntries(table.fields.map((f, i) => [f, row[i]])),
    current: table.current ? table.current[r] : undefined,
  }));
}

export function currentMark(run) {
  if (run.current === undefined) return DASH;
  return el("span", { class: run.current ? "mark current" : "mark superseded" },
    run.current ? "current" : "superseded");
}

// el("td", {class: "x"}, "text", child): an element; strings become text nodes.
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v == null || v === false) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c == null) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

export const DASH = "—";
const isNum = (v) => typeof v === "number" && Number.isFinite(v);

export function seconds(v) {
  if (!isNum(v)) return DASH;
  if (v < 1e-3) return `${(v * 1e6).toFixed(0)} µs`;
  if (v < 1) return `${(v * 1e3).toFixed(v < 0.01 ? 2 : 1)} ms`;
  return `${v.toFixed(v < 10 ? 2 : 1)} s`;
}

// A timing figure as shown (doc/results-schema.md, "Noise"): one timed while the
// machine was busy carries the mark "~" and its reason on hover, as compatlab's
// tables do (src/query/noise_mark.h). `noisy` true, `reason` the stored words.
export function markedFigure(figure, noisy, reason) {
  if (!noisy || figure === DASH) return figure;
  return el("span", { class: "noisy", title: `noisy: ${reason || "the machine was busy"} (timed while the machine was busy: likely slower than the stack is)` }, `~${figure}`);
}

// A run's (or a matrix cell's) steady median, marked when its steady phase was noisy.
export function steadyFigure(run) {
  return markedFigure(seconds(run.steady_median_s), run.noisy === 1 || run.noisy === true, run.noisy_reason);
}

// Its first call's time, marked by the first call's verdict (a row before schema 13: the
// steady phase's).
export function prepareFigure(run) {
  const noisy = run.prepare_noisy == null ? run.noisy : run.prepare_noisy;
  const reason = run.prepare_noisy == null ? run.noisy_reason : run.prepare_noisy_reason;
  return markedFigure(seconds(run.prepare_s), noisy === 1 || noisy === true, reason);
}

export function bytes(v) {
  if (!isNum(v)) return DASH;
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return `${v.toFixed(i ? 1 : 0)} ${units[i]}`;
}

export function number(v, digits = 3) {
  return isNum(v) ? String(Number(v.toPrecision(digits))) : DASH;
}

export function percent(v) {
  return isNum(v) ? `${(v * 100).toFixed(1)}%` : DASH;
}

export function text(v) {
  return v == null || v === "" ? DASH : String(v);
}

// Peak memory: the device's when the result has it, else the test's own host memory
// (doc/results-schema.md, "Host memory"), else (older rows) the host process's peak.
export function memory(run) {
  if (isNum(run.device_peak_bytes)) return `${bytes(run.device_peak_bytes)} device`;
  if (isNum(run.host_mem_bytes)) return `${bytes(run.host_mem_bytes)} host`;
  if (isNum(run.host_peak_rss_bytes)) return `${bytes(run.host_peak_rss_bytes)} host`;
  return DASH;
}

export function accuracy(run) {
  // Not measured (doc/accuracy.md, "Not measured"): the reason, never a verdict.
  if (run.acc_not_measured) return `not measured: ${String(run.acc_not_measured).replaceAll("_", " ")}`;
  if (run.acc_rule == null && run.acc_max_abs_err == null && run.acc_cosine == null) return DASH;
  const parts = [];
  if (run.acc_rule) parts.push(run.acc_rule);
  // CPU eager rows: the gap to float64; ill-conditioned when it fails the kind's rule.
  if (run.ill_conditioned === 1) parts.push("ill-conditioned");
  if (isNum(run.acc_max_abs_err)) parts.push(`max |err| ${number(run.acc_max_abs_err, 2)}`);
  if (isNum(run.acc_cosine)) parts.push(`cos ${number(run.acc_cosine, 4)}`);
  if (run.acc_ref_dtype && run.acc_ref_dtype !== "float64") parts.push(`vs ${run.acc_ref_dtype}`);
  return parts.join(", ") || DASH;
}

// "aten::foo ×3, aten::bar ×1" from fallback_ops (JSON object text op -> count).
export function fallbacks(run) {
  if (run.fallback_ops == null || run.fallback_ops === "") {
    return run.fallback_audit ? String(run.fallback_audit) : DASH;
  }
  try {
    const ops = Object.entries(JSON.parse(run.fallback_ops));
    if (!ops.length) return "none";
    ops.sort((a, b) => b[1] - a[1]);
    return ops.map(([op, n]) => `${op} ×${n}`).join(", ");
  } catch {
    return String(run.fallback_ops);
  }
}

export function devices(run) {
  if (run.devices != null) return String(run.devices);
  if (run.device_count != null) return `${run.device_count} × ${run.target}`;
  return isNum(run.torch_num_threads) ? `${run.target}, ${run.torch_num_threads} threads` : run.target;
}

export function statusBadge(run) {
  const label = run.status_detail && run.status !== "pass"
    ? `${run.status} (${run.status_detail})` : run.status;
  // A failure blamed on compatlab (its reduction, reference, the harness: core/blame.h) is not
  // the model's; a reduction's names the rerun that proved it; the environment's names the
  // packages it lacks (missing_packages).
  if (run.blame === "environment") {
    return el("span", { class: `status status-${run.status}`, title: label },
      `not tested here: needs ${run.missing_packages || "a package"}: ${label}`);
  }
  if (run.blame && run.blame !== "model") {
    const rerun = run.rerun_status ? `; rerun at ${run.rerun_size} size: ${run.rerun_status}` : "";
    return el("span", { class: `status status-${run.status}`, title: label + rerun },
      `compatlab could not test this (${run.blame}): ${label}`);
  }
  return el("span", { class: `status status-${run.status}` }, label);
}

// `stacks` (named stacks side by side, "default,t5") is carried to the model page's comparison.
export function modelLink(modelId, label = modelId, stacks = "") {
  const query = stacks ? { model_id: modelId, stacks } : { model_id: modelId };
  return el("a", { href: `/model.html?${new URLSearchParams(query)}` }, label);
}

// The filters (and any other `extra` view parameters, like the matrix's
// stack) from the address bar.
export function readFilters(extra = []) {
  const url = new URLSearchParams(location.search);
  const out = {};
  for (const f of [...FILTERS, ...extra]) out[f] = url.get(f) || "";
  return out;
}

// Puts `filters` (every key set) in the address bar (shareable), without a reload.
export function writeFilters(filters) {
  const url = new URLSearchParams();
  for (const [f, v] of Object.entries(filters)) if (v) url.set(f, v);
  const query = url.toString();
  history.replaceState(null, "", query ? `?${query}` : location.pathname);
}

// Builds the filter controls named by `form`'s data-filters ("model" is a
// text box searched as you type, the others lists from /api/facets), sets them
// from `filters`, and calls onChange(filters) on every edit.
export async function setUpFilters(form, filters, onChange) {
  const facets = await api("/api/facets");
  for (const name of form.dataset.filters.split(" ")) {
    let control;
    if (name === "model") {
      control = el("input", { id: "q", type: "search", placeholder: "model id or type, e.g. llama", autofocus: true });
    } else if (name === "stacks") {
      control = el("input", {
        type: "search", placeholder: "stacks side by side, e.g. default,t5",
        title: "named stacks (compatlab stack ls), comma-separated: a column per stack, target and mode; "
          + "cells changed from the first stack's by diff's rule are marked *",
      });
    } else if (name === "stack") {
      control = el("select", {}, el("option", { value: "" }, "newest stack"),
        el("option", { value: "all" }, "latest on any stack"));
    } else {
      control = el("select", {}, el("option", { value: "" }, `any ${name.replace("_", " ")}`),
        (facets.values[name] || []).map((v) => el("option", { value: v }, v || "(empty)")));
    }
    control.dataset.filter = name;
    control.value = filters[name];
    control.addEventListener(control.tagName === "INPUT" ? "input" : "change", () => {
      filters[name] = control.value;
      writeFilters(filters);
      onChange(filters);
    });
    form.append(control);
  }
  form.querySelector("#q")?.focus();
  return facets;
}

// The wiring of a list page (#filters, #more, #health): filters searched as
// you type (the `filters` object is edited in place), load(append) on every
// edit and on "more", the store's size in the header.
export function startListPage(filters, load, note) {
  const form = document.getElementById("filters");
  document.getElementById("more").addEventListener("click", () => load(true));
  form.addEventListener("submit", (e) => e.preventDefault());
  let timer = null;
  setUpFilters(form, filters, () => {
    clearTimeout(timer);
    timer = setTimeout(() => load(false), 120);
  }).then(() => load(false), (e) => showError(note, e));
  api("/api/health").then((h) => {
    document.getElementById("health").textContent = `${h.runs} results, ${h.models} models`;
  }, () => {});
}

export function showError(container, error) {
  container.replaceChildren(el("p", { class: "error" }, `error: ${error.message}`));
}

// A "copy" button for `getText()`; says what happened next to itself.
export function copyButton(getText, label = "copy") {
  const note = el("span", { class: "note", "data-role": "copy-note" });
  const button = el("button", {
    type: "button",
    onclick: async () => {
      try {
        await navigator.clipboard.writeText(getText());
        note.textContent = "copied";
      } catch (e) {
        note.textContent = `cannot copy: ${e.message}`;
      }
    },
  }, label);
  return el("span", {}, button, " ", note);
}

// The API's short form of a parameter count: 213k, 1.2M, 7.0B.
export function count(v) {
  if (!isNum(v)) return DASH;
  if (v >= 1e9) return `${(v / 1e9).toFixed(1)}B`;
  if (v >= 1e6) return `${(v / 1e6).toFixed(1)}M`;
  if (v >= 1e3) return `${Math.round(v / 1e3)}k`;
  return String(v);
}

// The link to a run: its model page, which opens the run's details.
export function runHref(modelId, runId) {
  return `/model.html?${new URLSearchParams({ model_id: modelId, run_id: runId })}`;
}

// An error message cut to one short line, the whole text on demand (a click
// opens it; `more`, shown with the whole text, links to the run).
export function errorText(message, more = null, cls = "err") {
  if (!message) return DASH;
  const line = message.split("\n")[0];
  const short = line.length > 60 ? `${line.slice(0, 60)}…` : line;
  if (short === message) return el("span", { class: cls }, message);
  return el("details", { class: cls }, el("summary", {}, short),
    el("span", { class: "err-full" }, message), more ? [" ", more] : []);
}

// The fallen-back ops of a run, cut like an error (a long list on demand).
export function fallbacksText(run) {
  return errorText(fallbacks(run), null, "long");
}

const VERDICT_LABEL = { pass: "pass", could_not_test: "could not test", not_measured: "not measured" };

// A matrix cell (/api/matrix): a verdict badge linking to its run, with the
// figures (prepare / steady, fallen-back ops) or the error.
export function matrixCell(cell, modelId) {
  if (cell.verdict === "not_measured") {
    return el("td", { class: "cell", "data-verdict": cell.verdict },
      el("span", { class: "verdict verdict-not_measured" }, VERDICT_LABEL.not_measured));
  }
  const label = cell.verdict === "fail" ? cell.status
    : cell.verdict === "could_not_test" ? `could not test: ${cell.status}` : VERDICT_LABEL[cell.verdict];
  const badge = el("a", {
    class: `verdict verdict-${cell.verdict} status-${cell.status}`, href: runHref(modelId, cell.run_id),
    title: `run ${cell.run_id}, finished ${cell.finished_at}, torch ${cell.torch_version}, transformers ${cell.transformers_version}`,
  }, label);
  const parts = [badge];
  if (cell.verdict === "pass") {
    const fb = cell.fallback_ops > 0 ? `, ${cell.fallback_ops} op${cell.fallback_ops > 1 ? "s" : ""} fell back` : "";
    parts.push(el("div", { class: "figures", title: "prepare (first call, compilation included) / steady (median)" },
      prepareFigure(cell), " / ", steadyFigure(cell), fb));
  } else if (cell.error_message) {
    parts.push(errorText(cell.error_message,
      cell.error_truncated ? el("a", { href: runHref(modelId, cell.run_id) }, "whole message") : null));
  }
  const changes = cell.changes || [];
  if (changes.length) {
    parts.unshift(el("span", {
      class: "changed-mark",
      title: changes.map((c) => `${c.kind}: ${c.detail} [${c.rule}]`).join("\n"),
    }, "* "));
  }
  return el("td", {
    class: changes.length ? "cell changed" : "cell", "data-verdict": cell.verdict, "data-run-id": cell.run_id,
    "data-changed": changes.length ? changes.map((c) => c.kind).join(", ") : null,
  }, parts);
}

// "cpu eager": a matrix column's name, as the CLI's (query/matrix.cc ColumnName): "cpu eager
// 2 ranks" for a test over ranks, "cpu compile dynamic=true" for a dynamic-shapes test,
// "default: cpu eager" for a named stack's column (/api/matrix?stacks=...).
export function columnName(column) {
  let name = `${column.target} ${column.mode}`;
  if (column.ranks && column.ranks !== 1) name += ` ${column.ranks} ranks`;
  if (column.dynamic) name += ` dynamic=${column.dynamic}`;
  return column.stack ? `${column.stack}: ${name}` : name;
}
