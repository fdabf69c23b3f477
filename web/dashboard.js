import { api, el, seconds, bytes, number, percent, readFilters, setUpFilters, showError, DASH } from "/common.js";

const charts = {};
let filters = readFilters();
let timer = null;

function draw(id, config) {
  charts[id]?.destroy();
  if (typeof Chart === "undefined") return;  // the library is missing: tables only
  charts[id] = new Chart(document.getElementById(id), config);
}

const stackName = (g) => `${g.torch_version} / ${g.transformers_version}`;
const metric = (g, name, stat) => g.passing?.[name]?.count ? g.passing[name][stat] : null;

function stacksTable(groups) {
  document.querySelector("#stacks tbody").replaceChildren(...groups.map((g) => el("tr", {},
    el("td", {}, g.torch_version || DASH), el("td", {}, g.transformers_version || DASH),
    el("td", { class: "num" }, g.runs), el("td", { class: "num" }, g.not_model || DASH),
    el("td", { class: "num" }, percent(g.pass_rate)),
    el("td", { class: "num" }, g.passing?.speedup?.geomean ? `${number(g.passing.speedup.geomean)}×` : DASH),
    el("td", { class: "num" }, seconds(metric(g, "prepare_s", "p50"))),
    el("td", { class: "num" }, seconds(metric(g, "prepare_s", "p90"))),
    el("td", { class: "num" }, seconds(metric(g, "steady_median_s", "p50"))),
    el("td", { class: "num" }, bytes(metric(g, "host_peak_rss_bytes", "p50"))),
    el("td", { class: "num" }, bytes(metric(g, "device_peak_bytes", "p50"))))));
}

function targetsTable(groups) {
  const stacks = [...new Set(groups.map((g) => g.torch_version))].sort();
  const rows = new Map();
  for (const g of groups) {
    const key = `${g.target} ${g.mode}`;
    if (!rows.has(key)) rows.set(key, {});
    rows.get(key)[g.torch_version] = g;
  }
  const table = document.getElementById("targets");
  table.tHead.replaceChildren(el("tr", {}, el("th", {}, "target, mode"), stacks.map((s) => el("th", {}, `torch ${s}`))));
  table.tBodies[0].replaceChildren(...[...rows.entries()].sort().map(([key, by]) => el("tr", {},
    el("td", {}, key),
    stacks.map((s) => el("td", { class: "num" }, by[s] ? modelRate(by[s]) : DASH)))));
}

// "80.0% of 5" (the tested runs blamed on the model), and "(+1 compatlab could not
// test)" when runs were blamed on compatlab; skipped runs count in neither.
function modelRate(g) {
  const others = g.not_model || 0;
  const text = `${percent(g.pass_rate)} of ${g.model_runs}`;
  return others ? `${text} (+${others} compatlab could not test)` : text;
}

function plots(s) {
  const labels = s.by_stack.map(stackName);
  draw("pass-rate", {
    type: "bar",
    data: { labels, datasets: [{ label: "pass rate (%)", data: s.by_stack.map((g) => g.pass_rate * 100) }] },
    options: { animation: false, scales: { y: { min: 0, max: 100 } } },
  });
  draw("prepare-steady", {
    type: "scatter",
    data: { datasets: [{ label: "passing tests", pointRadius: 2,
      data: s.points.filter((p) => p.prepare_s > 0 && p.steady_median_s > 0)
        .map((p) => ({ x: p.prepare_s, y: p.steady_median_s * 1e3, model: p.model_id })) }] },
    options: { animation: false, scales: {
      x: { type: "logarithmic", title: { display: true, text: "prepare (s)" } },
      y: { type: "logarithmic", title: { display: true, text: "steady median (ms)" } } },
      plugins: { tooltip: { callbacks: { label: (c) => `${c.raw.model}: prepare ${seconds(c.raw.x)}, steady ${c.raw.y.toFixed(2)} ms` } } } },
  });
  const series = new Map();
  for (const g of s.by_seq_len) {
    const v = metric(g, "steady_median_s", "p50");
    if (v == null) continue;
    const key = `${g.target} ${g.mode} ${g.kind}`;
    if (!series.has(key)) series.set(key, []);
    series.get(key).push({ x: Number(g.seq_len), y: v * 1e3 });
  }
  draw("seq-len", {
    type: "line",
    data: { datasets: [...series.entries()].map(([label, data]) => ({ label, data: data.sort((a, b) => a.x - b.x) })) },
    options: { animation: false, scales: {
      x: { type: "logarithmic", title: { display: true, text: "sequence length (tokens)" } },
      y: { type: "logarithmic", title: { display: true, text: "steady p50 (ms)" } } } },
  });
  const mib = (v) => (v == null ? null : v / 2 ** 20);
  const memoryField = s.by_stack.some((g) => metric(g, "device_peak_bytes", "p50") != null)
    ? "device_peak_bytes" : "host_peak_rss_bytes";
  draw("memory", {
    type: "bar",
    data: { labels, datasets: [
      { label: `${memoryField} p50 (MiB)`, data: s.by_stack.map((g) => mib(metric(g, memoryField, "p50"))) },
      { label: `${memoryField} max (MiB)`, data: s.by_stack.map((g) => mib(metric(g, memoryField, "max"))) }] },
    options: { animation: false },
  });
}

async function load() {
  try {
    const s = await api("/api/summary", filters);
    document.getElementById("count").textContent = `${s.runs} results`;
    stacksTable(s.by_stack);
    targetsTable(s.by_target);
    plots(s);
  } catch (e) {
    showError(document.getElementById("count"), e);
  }
}

setUpFilters(document.getElementById("filters"), filters, (f) => {
  filters = f;
  clearTimeout(timer);
  timer = setTimeout(load, 200);
}).then(load, (e) => showError(document.getElementById("count"), e));
