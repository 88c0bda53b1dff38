// The workload view: one workload (a controller) over the window: its utilization class and
// why (/api/v1/report grouped by controller), and per step its granted and used GPU time with
// the SM, tensor and DRAM activity behind it and each step's class (/api/v1/allocation with the
// same grouping and a step).
import { $, formatMoney, fromZero, getJson, gpuHours, stepFor, tableRow } from "./api.js";

const SERIES = [
  ["granted", "#c8c8c8", (e) => e.allocated_gpu_us],
  ["used", "#3266cc", (e) => e.compute_gpu_us],
  ["SM active", "#e07b24", (e) => e.activity.sm_active_gpu_us],
  ["tensor active", "#2e9e5b", (e) => e.activity.tensor_active_gpu_us],
  ["DRAM active", "#8459c1", (e) => e.activity.dram_active_gpu_us],
];

function fillChoices(report, wanted) {
  const select = $("workload");
  const keys = report.rows.map((r) => r.key);
  select.replaceChildren(...keys.map((key) => new Option(key, key)));
  select.value = keys.includes(wanted) ? wanted : keys[0] || "";
  return select.value;
}

function renderSummary(row) {
  const u = row.utilization;
  $("workload-class").textContent = u.class;
  $("workload-reason").textContent = `${u.reason} (from ${u.basis})`;
  const signals = Object.entries(u.signals).map(([k, v]) => `${k} ${(v * 100).toFixed(1)}%`);
  $("workload-figures").textContent =
    `cost ${formatMoney(row.cost_nanos)}; ${gpuHours(row.allocated_gpu_us)} GPU-hours granted, ` +
    `${gpuHours(row.compute_gpu_us)} used (${row.compute_source}); activity from ` +
    `${row.activity.source}${signals.length ? `; ${signals.join(", ")}` : ""}`;
}

let chart = null;

function renderSteps(key, allocation) {
  const steps = allocation.data.map((set) => set[key]).filter((e) => e);
  const body = $("workload-steps").tBodies[0];
  body.replaceChildren();
  for (const e of steps) {
    body.append(tableRow([
      ["start", e.start],
      ["granted", gpuHours(e.allocated_gpu_us)],
      ["used", gpuHours(e.compute_gpu_us)],
      ["sm", gpuHours(e.activity.sm_active_gpu_us)],
      ["tensor", gpuHours(e.activity.tensor_active_gpu_us)],
      ["class", e.utilization.class],
    ], { start: e.start }));
  }
  const xs = steps.map((e) => Date.parse(e.start) / 1000);
  const options = {
    width: Math.max(320, $("workload-chart").clientWidth || 800),
    height: 240,
    scales: { x: { time: true }, y: { range: fromZero } },
    axes: [{}, { label: "GPU-hours", size: 60 }],
    series: [{}, ...SERIES.map(([label, color]) => ({ label, stroke: color, width: 2 }))],
  };
  const data = [xs, ...SERIES.map(([, , of]) => steps.map((e) => Number(of(e)) / 3.6e9))];
  if (chart) chart.destroy();
  chart = new uPlot(options, data, $("workload-chart"));
  $("workload-chart").setAttribute("aria-label",
    `${key} per step: GPU-hours granted, used, SM, tensor and DRAM active`);
}

// The allocation filter that selects one controller ("namespace/Kind/name").
function controllerFilter(key) {
  const [ns, kind, ...name] = key.split("/");
  return `namespace:"${ns}"+controllerKind:"${kind}"+controllerName:"${name.join("/")}"`;
}

// Reads and draws the view for `query` and the workload the address names (the costliest one
// when it names none); returns false when a newer render started meanwhile. Only the chosen
// workload's steps are read: a fleet has thousands of workloads.
export async function renderWorkloads(query, current) {
  const params = { ...query, aggregate: "controller" };
  const steps = (key) => getJson("/api/v1/allocation",
    { ...params, step: stepFor(query.window),
      filter: [query.filter, controllerFilter(key)].filter((f) => f).join("+") });
  // A workload the address names is read beside the list (a linked page waits for one answer,
  // not two in turn); unneeded if the list does not have it.
  const wanted = new URLSearchParams(location.hash.slice(1)).get("workload");
  const early = wanted ? steps(wanted).catch(() => null) : null;
  const report = await getJson("/api/v1/report", params);
  if (!current()) return false;
  const key = fillChoices(report, wanted);
  const row = report.rows.find((r) => r.key === key);
  if (!row) return true;
  const allocation = (key === wanted && (await early)) || (await steps(key));
  if (!current()) return false;
  renderSummary(row);
  renderSteps(key, allocation);
  return true;
}
