// The cost view: the window's groups (table and total) and their cost per step (the chart),
// both from one /api/v1/report answer with a step.
import { $, formatMoney, fromZero, getJson, gpuHours, percent, stepFor, tableRow } from "./api.js";

const TOP_GROUPS = 7;  // the chart's groups; the rest are summed into "other"
const COLORS = ["#3266cc", "#e07b24", "#2e9e5b", "#c43d5c", "#8459c1", "#1f9fae", "#b59a1b",
                "#7a7a7a"];
const IDLE_COLOR = "#c8c8c8";
const UNATTRIBUTED_COLOR = "#5b5b5b";

// The table of groups and the total. Filtered (a team), the rows are that team's consumers and
// the total theirs, beside the window's whole cost; idle and unattributed time are nobody's.
function renderTable(report, filtered) {
  const body = $("rows").tBodies[0];
  body.replaceChildren();
  const total = report.total.device_cost_nanos;
  const rows = report.rows.map((r) => ({ ...r, name: r.key }));
  if (!filtered) {
    rows.push({ ...report.idle, name: "idle", kind: "idle" });
    rows.push({ ...report.unattributed, name: "unattributed", kind: "unattributed" });
  }
  for (const r of rows) {
    if (r.kind && r.cost_nanos === 0n && r.allocated_gpu_us === 0n && r.compute_gpu_us === 0n) {
      continue;
    }
    const tr = tableRow([
      ["name", r.name],
      ["cost", formatMoney(r.cost_nanos)],
      ["share", percent(r.cost_nanos, total)],
      ["granted", gpuHours(r.allocated_gpu_us)],
      ["used", gpuHours(r.compute_gpu_us)],
      ["quality", r.quality],
    ], { key: r.name });
    if (r.kind) tr.classList.add(r.kind);
    body.append(tr);
  }
  const groups = report.rows.reduce((sum, r) => sum + r.cost_nanos, 0n);
  $("total-label").textContent = filtered ? "Theirs" : "Total";
  if (filtered) {
    $("total").textContent = formatMoney(groups);
    $("total-detail").textContent =
      `${percent(groups, total)} of the window's ${formatMoney(total)}`;
    return;
  }
  const accounted = groups + report.idle.cost_nanos + report.unattributed.cost_nanos;
  $("total").textContent = formatMoney(total);
  $("total-detail").textContent =
    `groups ${formatMoney(groups)} + idle ${formatMoney(report.idle.cost_nanos)} + ` +
    `unattributed ${formatMoney(report.unattributed.cost_nanos)}` +
    (accounted === total ? ": every nano accounted for" : ": does not add up");
}

// Each group's figures beside what the per-device method would have said (the rows'
// "per_device").
function renderNaive(report, filtered) {
  const body = $("naive").tBodies[0];
  body.replaceChildren();
  let naiveUsed = 0n;
  let naiveCost = 0n;
  for (const r of report.rows) {
    naiveUsed += r.per_device.compute_gpu_us;
    naiveCost += r.per_device.cost_nanos;
    body.append(tableRow([
      ["name", r.key],
      ["used", gpuHours(r.compute_gpu_us)],
      ["naive-used", gpuHours(r.per_device.compute_gpu_us)],
      ["cost", formatMoney(r.cost_nanos)],
      ["naive-cost", formatMoney(r.per_device.cost_nanos)],
    ], { key: r.key }));
  }
  // Against the devices' busy time and cost; for one team, against what it was attributed.
  const sum = (of) => report.rows.reduce((s, r) => s + of(r), 0n);
  const busy = filtered ? sum((r) => r.compute_gpu_us) : report.total.busy_us;
  const billed = filtered ? sum((r) => r.cost_nanos) : report.total.device_cost_nanos;
  const truth = filtered ? "gpuledger attributes to them" : "the devices were busy";
  $("naive-summary").textContent = busy > 0n && billed !== 0n
    ? `The per-device method reports ${(Number(naiveUsed) / Number(busy)).toFixed(2)}x the GPU ` +
      `time ${truth} (${gpuHours(naiveUsed)} GPU-hours for ${gpuHours(busy)}) and ` +
      `bills ${(Number(naiveCost) / Number(billed)).toFixed(2)}x ` +
      `${filtered ? "what they were charged" : "their cost"} ` +
      `(${formatMoney(naiveCost)} for ${formatMoney(billed)}).`
    : "";
}

// Where the window reaches past what the ledger holds, its zeros there mean "not recorded",
// not "not used": the report's "ledger" says so.
function renderReach(report) {
  const box = $("reach");
  box.hidden = !report.ledger;
  if (!report.ledger) return;
  const { start, end, window_reaches: reaches } = report.ledger;
  box.textContent = `The ledger holds ${start} to ${end}; this window reaches ${reaches} it, ` +
    "where nothing is recorded.";
}

let chart = null;

function renderChart(report, aggregate, filtered) {
  const sets = report.steps.map((step) => step.cost_nanos);
  const top = report.rows.slice(0, TOP_GROUPS).map((r) => r.key);
  const named = new Set(top);
  const series = top.map((key, i) => ({ label: key, color: COLORS[i % COLORS.length], keys: [key] }));
  const others = new Set();
  for (const set of sets) {
    for (const key of Object.keys(set)) {
      if (!named.has(key) && !key.startsWith("__")) others.add(key);
    }
  }
  if (others.size > 0) series.push({ label: "other", color: COLORS[7], keys: [...others] });
  if (!filtered) {
    series.push({ label: "idle", color: IDLE_COLOR, keys: ["__idle__"] });
    series.push({ label: "unattributed", color: UNATTRIBUTED_COLOR, keys: ["__unattributed__"] });
  }

  const xs = report.steps.map((step) => Date.parse(step.start) / 1000);
  const own = series.map((s) => sets.map((set) =>
    s.keys.reduce((sum, k) => sum + (set[k] !== undefined ? Number(set[k]) : 0), 0) / 1e9));
  // Stacked: series i is drawn at the sum of series 0..i, the tallest first.
  const stacked = own.map((_, i) => xs.map((_, j) => own.slice(0, i + 1).reduce((a, s) => a + s[j], 0)));
  const order = series.map((_, i) => series.length - 1 - i);
  const bars = uPlot.paths.bars({ size: [0.8, 64] });
  const options = {
    width: Math.max(320, $("chart").clientWidth || 800),
    height: 280,
    scales: { x: { time: true }, y: { range: fromZero } },
    axes: [{}, { label: "cost", size: 70 }],
    series: [
      {},
      ...order.map((i) => ({
        label: series[i].label,
        fill: series[i].color,
        stroke: series[i].color,
        paths: bars,
        points: { show: false },
        value: (u, v, si, idx) => (idx == null ? "" : own[order[si - 1]][idx].toFixed(2)),
      })),
    ],
  };
  if (chart) chart.destroy();
  chart = new uPlot(options, [xs, ...order.map((i) => stacked[i])], $("chart"));
  $("chart").setAttribute("aria-label",
    `Cost by ${aggregate} per step, stacked: ${series.map((s) => s.label).join(", ")}`);
}

// Reads and draws the view for `query` (window, aggregate, policy, idle, a team's filter);
// returns false when a newer render started meanwhile (`current` says which is newest).
export async function renderCost(query, current) {
  // One answer: the window's groups and each step's cost, summed by the server in one pass.
  const report = await getJson("/api/v1/report", { ...query, step: stepFor(query.window) });
  if (!current()) return false;
  const filtered = Boolean(query.filter);
  renderTable(report, filtered);
  renderReach(report);
  renderChart(report, query.aggregate, filtered);
  renderNaive(report, filtered);
  return true;
}
