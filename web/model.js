import {
  api, runsOf, el, seconds, text, memory, accuracy, fallbacksText, statusBadge, showError, copyButton, DASH,
  matrixCell, columnName, currentMark, number, prepareFigure, steadyFigure, markedFigure,
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
  showCachePull(runId);
  try {
    script = (await api("/api/repro", { run_id: runId })).script;
    pre.textContent = script;
  } catch (e) {
    pre.textContent = `no script: ${e.message}`;
  }
  section.scrollIntoView();
}

// Beside the script: the command that pulls a compiled run's artifacts from the served
// compile store remote (/api/run's cache_pull; doc/compile-cache.md), when there is one.
async function showCachePull(runId) {
  const line = document.getElementById("cache-pull-line");
  line.hidden = true;
  try {
    const pull = (await api("/api/run", { run_id: runId })).cache_pull;
    document.getElementById("cache-pull").textContent = pull;
    line.hidden = !pull;
  } catch (e) {
    line.hidden = true;
  }
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
      + (stacks ? ` A cell marked * changed from ${stacks.split(",")[0]}'s by diff's rule.` : "")
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
    el("td", { class: "num" }, seconds(r.wall_s)), el("td", { class: "num" }, prepareFigure(r)),
    el("td", { class: "num" }, steadyFigure(r)), el("td", { class: "num" }, memory(r)),
    el("td", {}, accuracy(r)), el("td", { class: "fallbacks" }, fallbacksText(r)), el("td", { class: "num" }, text(r.graph_breaks)),
    el("td", { title: r.started_at }, (r.started_at || "").replace("T", " ").slice(0, 16)), el("td", {}, currentMark(r)),
    el("td", {},
      el("button", { type: "button", class: "script", onclick: () => showScript(r.run_id) }, "script"), " ",
      el("button", { type: "button", class: "details", onclick: () => showDetails(r.run_id) }, "details")))));
}

// Kind load (doc/probe.md, "Kind load"): the current passing rows of one test (target,
// mode, dtype, shape, stack, workload), one per scenario and rate: a table, throughput and
// goodput against the arrival rate, and the latency distributions (from each run's own
// bounded distribution fields, which lists leave out: /api/run).
const charts = {};
function draw(id, config) {
  charts[id]?.destroy();
  if (typeof Chart === "undefined") return;  // the library is missing: the table only
  charts[id] = new Chart(document.getElementById(id), config);
}

const SCENARIO_ORDER = { single_stream: 0, offline: 1, server: 2 };
const loadParams = (r) => JSON.parse(r.kind_params || "{}");
const rateOf = (r) => parseFloat(loadParams(r).rate || "0");

function loadGroupKey(r) {
  const { scenario, rate, ...workload } = loadParams(r);
  return `${r.target} ${r.mode} ${r.dtype} ${r.batch_size}×${r.seq_len} · torch ${r.torch_version} · `
    + Object.entries(workload).map(([k, v]) => `${k} ${v}`).join(", ");
}

async function loadSection(runs) {
  const rows = runs.filter((r) => r.kind === "load" && r.status === "pass" && r.current !== false);
  if (!rows.length) return;
  const groups = new Map();
  for (const r of rows) {
    const key = loadGroupKey(r);
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(r);
  }
  const select = document.getElementById("load-group");
  const keys = [...groups.keys()].sort();
  select.replaceChildren(...keys.map((k) => el("option", { value: k }, k)));
  document.getElementById("load-section").hidden = false;
  const show = () => loadGroup(groups.get(select.value)).catch(
    (e) => showError(document.getElementById("load-note"), e));
  select.onchange = show;
  await show();
}

async function loadGroup(group) {
  const rows = [...group].sort((a, b) => SCENARIO_ORDER[a.load_scenario] - SCENARIO_ORDER[b.load_scenario]
    || rateOf(a) - rateOf(b));
  document.getElementById("load-note").textContent =
    `${rows.length} scenarios; goodput objective TTFT ≤ ${seconds(rows[0].load_slo_ttft_s)}, `
    + `mean ITL ≤ ${seconds(rows[0].load_slo_itl_s)} (${rows[0].load_slo_source})`;
  const name = (r) => (r.load_scenario === "server" ? `server ${loadParams(r).rate}` : r.load_scenario);
  document.querySelector("#load tbody").replaceChildren(...rows.map((r) => el("tr", { "data-run-id": r.run_id },
    el("td", {}, r.load_scenario), el("td", { class: "num" },
      r.load_scenario === "server" ? `${loadParams(r).rate} = ${number(r.load_arrival_rate_per_s)}/s` : DASH),
    el("td", {}, text(r.load_engine)),
    el("td", { class: "num" }, number(r.load_requests_per_s)), el("td", { class: "num" }, number(r.load_goodput_per_s)),
    el("td", { class: "num" }, number(r.load_output_tokens_per_s)),
    ...["load_ttft_p50_s", "load_ttft_p90_s", "load_ttft_p99_s", "load_itl_p50_s", "load_itl_p99_s", "load_e2e_p99_s"]
      .map((f) => el("td", { class: "num" }, seconds(r[f]))),
    el("td", { class: "num" }, text(r.load_max_concurrency)), el("td", { class: "num" }, text(r.load_recompiles)),
    el("td", { class: "num" }, memory(r)))));
  // by arrival rate: each server row measured its own offline throughput, so the rates need
  // not follow the multiples
  const server = rows.filter((r) => r.load_scenario === "server")
    .sort((a, b) => a.load_arrival_rate_per_s - b.load_arrival_rate_per_s);
  const offline = rows.find((r) => r.load_scenario === "offline");
  const xs = server.map((r) => r.load_arrival_rate_per_s);
  draw("load-rate", {
    type: "scatter",
    data: { datasets: [
      { label: "throughput (requests/s)", showLine: true, data: server.map((r) => ({ x: r.load_arrival_rate_per_s, y: r.load_requests_per_s })) },
      { label: "goodput (requests/s)", showLine: true, data: server.map((r) => ({ x: r.load_arrival_rate_per_s, y: r.load_goodput_per_s })) },
      ...(offline && xs.length ? [{ label: "offline throughput", showLine: true, borderDash: [6, 4], pointRadius: 0,
        data: [{ x: Math.min(...xs), y: offline.load_requests_per_s }, { x: Math.max(...xs), y: offline.load_requests_per_s }] }] : []),
      { label: "TTFT p99 (ms)", showLine: true, yAxisID: "ms", data: server.map((r) => ({ x: r.load_arrival_rate_per_s, y: r.load_ttft_p99_s * 1e3 })) },
    ] },
    options: { animation: false, scales: {
      x: { title: { display: true, text: "arrival rate (requests/s)" } },
      y: { min: 0, title: { display: true, text: "requests/s" } },
      ms: { position: "right", min: 0, title: { display: true, text: "TTFT p99 (ms)" }, grid: { drawOnChartArea: false } } } },
  });
  const details = await Promise.all(rows.map((r) => api("/api/run", { run_id: r.run_id }).then((d) => d.run)));
  const cdf = (field) => details.map((d, i) => {
    const values = d[field] || [];  // a list field: a JSON array in /api/run
    return { label: name(rows[i]), showLine: true, pointRadius: 0,
      data: values.map((v, k) => ({ x: v * 1e3, y: (k + 1) / values.length })) };
  });
  for (const [id, field, label, of] of [["load-ttft", "load_ttft_dist", "TTFT (ms)", "requests"],
    ["load-itl", "load_itl_dist", "inter-token latency (ms)", "token gaps"]]) {
    draw(id, {
      type: "scatter",
      data: { datasets: cdf(field) },
      options: { animation: false, scales: {
        x: { type: "logarithmic", title: { display: true, text: label } },
        y: { min: 0, max: 1, title: { display: true, text: `fraction of ${of} at or below` } } } },
    });
  }
}

// Curves (doc/results-schema.md): a train row's loss and gradient-norm curves against the
// CPU float64 reference (and CPU eager at the test's dtype), a generate row's match rate and
// decode time against position. Lists leave the curves out: /api/run has them as arrays.
const runLabel = (r) => `${r.target} ${r.mode} ${r.dtype} ${r.batch_size}×${r.seq_len} `
  + `${Object.entries(JSON.parse(r.kind_params || "{}")).map(([k, v]) => `${k}=${v}`).join(" ")} · `
  + `${r.status} · ${(r.started_at || "").replace("T", " ").slice(0, 16)}`;

function curveSelect(id, rows, show) {
  const select = document.getElementById(id);
  select.replaceChildren(...rows.map((r) => el("option", { value: r.run_id }, runLabel(r))));
  select.disabled = !rows.length;
  select.onchange = () => show(select.value).catch((e) => showError(document.getElementById("curves-note"), e));
  return rows.length ? show(rows[0].run_id) : Promise.resolve();
}

const steps = (values) => (values || []).map((y, i) => ({ x: i + 1, y }));
const line = (label, data, extra = {}) => ({ label, data, showLine: true, pointRadius: 0, borderWidth: 1.5, ...extra });

async function trainCurves(runId) {
  const { run } = await api("/api/run", { run_id: runId });
  document.getElementById("train-loss-box").hidden = false;
  document.getElementById("train-grad-box").hidden = false;
  const x = { title: { display: true, text: "step" } };
  draw("train-loss", {
    type: "scatter",
    data: { datasets: [
      line(`target (${run.target} ${run.mode})`, steps(run.train_loss)),
      line("CPU float64 reference", steps(run.train_ref_loss), { borderDash: [6, 4] }),
      ...(run.train_eager_loss ? [line(`CPU eager ${run.dtype}`, steps(run.train_eager_loss), { borderDash: [2, 3] })] : []),
    ] },
    options: { animation: false, scales: { x, y: { title: { display: true, text: "loss" } } } },
  });
  draw("train-grad", {
    type: "scatter",
    data: { datasets: [
      line(`target (${run.target} ${run.mode})`, steps(run.train_grad_norm)),
      line("CPU float64 reference", steps(run.train_ref_grad_norm), { borderDash: [6, 4] }),
    ] },
    options: { animation: false, scales: { x, y: { type: "logarithmic", title: { display: true, text: "global gradient norm" } } } },
  });
}

async function generateCurves(runId) {
  const { run } = await api("/api/run", { run_id: runId });
  const points = (pairs, scale = 1) => (pairs || []).map(([x, y]) => ({ x, y: y * scale }));
  const x = { min: 0, title: { display: true, text: "position (new token)" } };
  const match = document.getElementById("gen-match-box");
  match.hidden = !run.gen_match_curve;
  if (run.gen_match_curve) {
    draw("gen-match", {
      type: "scatter",
      data: { datasets: [line("match rate of new tokens before the position", points(run.gen_match_curve), { pointRadius: 3, clip: false })] },
      options: { animation: false, scales: { x, y: { min: 0, max: 1, title: { display: true, text: "match rate" } } } },
    });
  }
  document.getElementById("gen-decode-box").hidden = false;
  draw("gen-decode", {
    type: "scatter",
    data: { datasets: [line("median decode step (ms)", points(run.gen_decode_curve, 1e3), { pointRadius: 2 })] },
    options: { animation: false, scales: { x, y: { min: 0, title: { display: true, text: "ms per token" } } } },
  });
}

async function curvesSection(runs) {
  const newest = (a, b) => (b.started_at || "").localeCompare(a.started_at || "");
  const train = runs.filter((r) => r.kind === "train" && r.train_steps > 1).sort(newest);
  const generate = runs.filter((r) => r.kind === "generate" && r.gen_new_tokens > 0).sort(newest);
  if (!train.length && !generate.length) return;
  document.getElementById("curves-section").hidden = false;
  document.getElementById("curves-note").textContent =
    `${train.length} train and ${generate.length} generate results with curves, newest first`;
  await Promise.all([curveSelect("train-run", train, trainCurves), curveSelect("gen-run", generate, generateCurves)]);
}

// Where the time goes (--profile; doc/results-schema.md, "Profile"): each profiled result's
// time per call by category as a stacked bar, then the chosen result's top ops and source
// lines (JSON text in /api/run, read defensively: stored text is data) and its trace.
const PROFILE_CATEGORIES = ["compute", "copy", "fallback", "framework", "idle"];

function profileRows(value) {
  try {
    const rows = JSON.parse(value || "[]");
    return Array.isArray(rows) ? rows.slice(0, 50) : [];
  } catch {
    return [];
  }
}

async function profileRun(runId) {
  const { run } = await api("/api/run", { run_id: runId });
  const ratio = run.profile_median_s > 0 && run.steady_median_s > 0
    ? ` (profiler overhead ×${number(run.profile_median_s / run.steady_median_s)})` : "";
  document.getElementById("profile-overhead").textContent =
    `${text(run.profile)}: ${text(run.profile_calls)} calls, median ${seconds(run.profile_median_s)} under the `
    + `profiler, ${seconds(run.steady_median_s)} without${ratio}`;
  const trace = document.getElementById("profile-trace");
  trace.replaceChildren(run.profile_trace_sha256
    ? el("span", {}, el("a", { href: `/api/trace?run_id=${encodeURIComponent(run.run_id)}`, download: "", id: "profile-download" },
      `download the trace (${Number(run.profile_trace_bytes).toLocaleString("en")} bytes, gzip Chrome trace JSON)`),
    " · open it in Perfetto (ui.perfetto.dev, \"Open trace file\") or chrome://tracing; the file stays on your machine")
    : "no trace kept for this result");
  const share = (v) => (typeof v === "number" ? `${(v * 100).toFixed(1)}%` : DASH);
  document.getElementById("profile-ops").tBodies[0].replaceChildren(...profileRows(run.profile_top_ops).map((op) =>
    el("tr", {}, el("td", {}, text(op.name)), el("td", { class: "note" }, text(op.shapes)), el("td", {}, number(op.calls)),
      el("td", {}, seconds(op.self_s)), el("td", {}, share(op.share)))));
  document.getElementById("profile-lines").tBodies[0].replaceChildren(...profileRows(run.profile_top_lines).map((row) =>
    el("tr", {}, el("td", {}, text(row.line)), el("td", {}, seconds(row.self_s)), el("td", {}, share(row.share)))));
}

async function profileSection(runs) {
  const newest = (a, b) => (b.started_at || "").localeCompare(a.started_at || "");
  const profiled = runs.filter((r) => r.profile_calls > 0).sort(newest).slice(0, 20);
  if (!profiled.length) return;
  document.getElementById("profile-section").hidden = false;
  document.getElementById("profile-note").textContent =
    `${profiled.length} profiled results, newest first: where each call's time went`;
  draw("profile-breakdown", {
    type: "bar",
    data: {
      labels: profiled.map((r) => `${r.target} ${r.mode} ${r.kind} ${(r.started_at || "").slice(5, 16)}`),
      datasets: PROFILE_CATEGORIES.map((c) => ({ label: c, data: profiled.map((r) => (r[`profile_${c}_s`] ?? 0) * 1e3) })),
    },
    options: { animation: false, indexAxis: "y", scales: { x: { stacked: true, title: { display: true, text: "ms per call" } }, y: { stacked: true } } },
  });
  const select = document.getElementById("profile-run");
  select.replaceChildren(...profiled.map((r) => el("option", { value: r.run_id }, runLabel(r))));
  select.onchange = () => profileRun(select.value).catch((e) => showError(document.getElementById("profile-note"), e));
  await profileRun(profiled[0].run_id);
}

// The compare section (/api/compare, doc/compare.md): this model against another selector,
// as head (the variant) or as base; one row per paired test, diff's changes in the last column.
// "2.00x [1.64–2.44]": the ratio and the range its figures' intervals allow (doc/compare.md).
function ratio(v, range) {
  if (v == null) return DASH;
  const spread = range && (range[0] !== v || range[1] !== v) ? ` [${number(range[0], 3)}–${number(range[1], 3)}]` : "";
  return `${number(v, 3)}x${spread}`;
}

// Which side of a compared test was noisy in `flag`'s phase, with its reason.
function noisySide(t, flag) {
  return ["base", "head"].filter((side) => t[side][flag] === 1)
    .map((side) => `${side}: ${t[side][`${flag}_reason`] || "noisy"}`).join("; ");
}

function pairText(base, head, format = (v) => text(v)) {
  const b = format(base);
  const h = format(head);
  return b === h ? b : `${b} → ${h}`;
}

function accText(maxAbs, cosine) {
  return maxAbs == null && cosine == null ? DASH : `${text(maxAbs)} / cos ${text(cosine)}`;
}

async function compare(other, asBase) {
  const note = document.getElementById("compare-note");
  const table = document.getElementById("compare");
  if (!other) return;
  const [base, head] = asBase ? [modelId, other] : [other, modelId];
  note.textContent = "comparing…";
  try {
    const r = await api("/api/compare", { base, head });
    note.textContent = `base ${r.base}, head ${r.head}: ${r.compared} compared, ${r.only_in_base.length} only in base, `
      + `${r.only_in_head.length} only in head; ${r.regressions} regressions, ${r.improvements} improvements`;
    const mib = (v) => (v == null ? DASH : `${(v / 1048576).toFixed(1)} MiB`);
    table.tBodies[0].replaceChildren(...r.tests.map((t) => el("tr", {},
      el("td", {}, t.target), el("td", {}, t.mode), el("td", {}, t.kind), el("td", {}, t.dtype),
      el("td", {}, `${t.batch_size}x${t.seq_len}`), el("td", {}, t.base.status), el("td", {}, t.head.status),
      el("td", { class: "num" }, accText(t.head.acc_max_abs_err, t.head.acc_cosine)),
      el("td", { class: "num" }, accText(t.head.baseline_max_abs_err, t.head.baseline_cosine)),
      el("td", { class: "num" }, markedFigure(ratio(t.prepare_ratio, t.prepare_ratio_interval),
        t.base.prepare_noisy === 1 || t.head.prepare_noisy === 1, noisySide(t, "prepare_noisy"))),
      el("td", { class: "num" }, markedFigure(ratio(t.steady_ratio, t.steady_ratio_interval),
        t.base.noisy === 1 || t.head.noisy === 1, noisySide(t, "noisy"))),
      el("td", { class: "num" }, pairText(t.base.tokens_per_s, t.head.tokens_per_s, (v) => number(v, 4))),
      el("td", { class: "num" }, pairText(t.base.graph_breaks, t.head.graph_breaks)),
      el("td", { class: "num" }, pairText(t.base.fallback_op_count, t.head.fallback_op_count)),
      el("td", { class: "num" }, pairText(t.base.memory_bytes, t.head.memory_bytes, mib)),
      el("td", { class: "changes" }, t.changes.length ? t.changes.map((c) => `${c.kind} ${c.detail}`.trim()).join("; ") : "none"))));
    table.hidden = false;
  } catch (e) {
    table.hidden = true;
    showError(note, e);
  }
}

document.getElementById("compare-form").addEventListener("submit", (event) => {
  event.preventDefault();
  compare(document.getElementById("compare-other").value.trim(), document.getElementById("compare-as-base").checked);
});

// Where the model came from (the newest run that says): source, commit or content hash,
// parameter count, reduced or full size; each commit of a hub: id when the page groups them.
function sourceText(runs) {
  const run = runs.find((r) => r.model_source);
  if (!run) return "";
  const commits = [...new Set(runs.map((r) => r.hub_commit).filter(Boolean))];
  const origin = run.model_source === "hub"
    ? `Hub ${run.hub_repo_id} at ${commits.map((c) => c.slice(0, 12)).join(", ")}`
    : run.model_source === "ckpt" ? `checkpoint ${run.model_id.slice(0, 17)}`
      : run.model_source === "code" ? `own code ${run.model_path}` : `hf defaults (${run.model_type})`;
  const size = run.reduced === 1 ? "reduced" : run.reduced === 0 ? "full size" : "";
  const params = run.param_count != null ? `${Number(run.param_count).toLocaleString("en")} parameters` : "";
  return "; " + [origin, params, size].filter(Boolean).join(", ");
}

document.getElementById("copy").append(copyButton(() => script, "copy script"));

api("/api/model", { model_id: modelId }).then((m) => {
  const runs = runsOf(m);
  const passes = runs.filter((r) => r.status === "pass").length;
  document.getElementById("summary").textContent =
    `${m.model_type ? `type ${m.model_type}, ` : ""}${runs.length}${m.truncated ? "+" : ""} results, ${passes} passing`
    + sourceText(runs);
  history(runs);
  // A variant's natural other side is its architecture's baseline (hf:TYPE); ?compare=SEL asks.
  const asked = new URLSearchParams(location.search).get("compare");
  const other = document.getElementById("compare-other");
  other.value = asked || (m.model_type && !modelId.startsWith("hf:") ? `hf:${m.model_type}` : "");
  if (asked) compare(asked, false);
  return Promise.all([loadSection(runs), curvesSection(runs).catch(
    (e) => showError(document.getElementById("curves-note"), e)), profileSection(runs).catch(
    (e) => showError(document.getElementById("profile-note"), e))]);
}, (e) => showError(document.getElementById("summary"), e));

// `stacks` (named stacks side by side, from the matrix page) replaces `stack`.
const stacks = new URLSearchParams(location.search).get("stacks") || "";
const stack = stacks ? "" : new URLSearchParams(location.search).get("stack") || "";
api("/api/matrix", { model_id: modelId, stack, stacks, limit: 200 }).then(sideBySide,
  (e) => showError(document.getElementById("targets-stack"), e));
if (runId) showDetails(runId);

api("/api/errors", { model_id: modelId }).then((e) => errors(e.groups),
  (e) => showError(document.getElementById("errors"), e));
