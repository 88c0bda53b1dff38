// The cost view: every figure is read from the REST API (/api/v1/report for the window's rows
// and total, /api/v1/allocation with a step for the chart) and shown exactly as it answers:
// money is integer nanos, parsed as BigInt and printed to the nano, never rounded through a
// double. The page's state (window, grouping, policy, idle) lives in the URL's fragment, so a
// view can be linked to.

const NANOS_PER_UNIT = 1000000000n;
const GPU_US_PER_HOUR = 3.6e9;
const TOP_GROUPS = 7;  // the chart's groups; the rest are summed into "other"
const COLORS = ["#3266cc", "#e07b24", "#2e9e5b", "#c43d5c", "#8459c1", "#1f9fae", "#b59a1b",
                "#7a7a7a"];
const IDLE_COLOR = "#c8c8c8";
const UNATTRIBUTED_COLOR = "#5b5b5b";

const $ = (id) => document.getElementById(id);
const controls = ["window", "aggregate", "label-key", "policy", "idle"];

// JSON with every integer as a BigInt (the API's integers are exact to the nano or the µs,
// past what a double holds).
export function parseExact(text) {
  return JSON.parse(text, (key, value, context) => {
    if (typeof value === "number" && context && /^-?\d+$/.test(context.source)) {
      return BigInt(context.source);
    }
    return value;
  });
}

// Nanos as currency units, exact: "1,234.5", "0.000000001", "-3.25".
export function formatMoney(nanos) {
  const negative = nanos < 0n;
  const n = negative ? -nanos : nanos;
  let fraction = (n % NANOS_PER_UNIT).toString().padStart(9, "0").replace(/0+$/, "");
  if (fraction.length < 2) fraction = fraction.padEnd(2, "0");
  const whole = (n / NANOS_PER_UNIT).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return `${negative ? "-" : ""}${whole}.${fraction}`;
}

function gpuHours(us) {
  return (Number(us) / GPU_US_PER_HOUR).toFixed(2);
}

function percent(part, whole) {
  if (whole === 0n) return "";
  return `${(Number((part * 100000n) / whole) / 1000).toFixed(1)}%`;
}

function aggregateParam() {
  const by = $("aggregate").value;
  return by === "label" ? `label:${$("label-key").value.trim() || "team"}` : by;
}

function query() {
  return {
    window: $("window").value,
    aggregate: aggregateParam(),
    policy: $("policy").value,
    idle: $("idle").value,
  };
}

// One step a set: hours over a day or two, days beyond.
function stepFor(window) {
  return window === "24h" ? "1h" : "1d";
}

async function getJson(path, params) {
  const url = `${path}?${new URLSearchParams(params)}`;
  const headers = {};
  const token = sessionStorage.getItem("gpuledger-token");
  if (token) headers.Authorization = `Bearer ${token}`;
  const response = await fetch(url, { headers });
  const text = await response.text();
  if (!response.ok) {
    let message = `${response.status} from ${path}`;
    try {
      message = parseExact(text).error || message;
    } catch {
      // not JSON: keep the status
    }
    const error = new Error(message);
    error.status = response.status;
    throw error;
  }
  return parseExact(text);
}

function showError(error) {
  const box = $("error");
  box.hidden = false;
  box.textContent = error.message;
  if (error.status === 401) {
    $("token-field").hidden = false;
    box.textContent = `${error.message}: this server asks for its API token.`;
  }
}

function renderTable(report) {
  const body = $("rows").tBodies[0];
  body.replaceChildren();
  const total = report.total.device_cost_nanos;
  const rows = report.rows.map((r) => ({ ...r, name: r.key }));
  rows.push({ ...report.idle, name: "idle", kind: "idle" });
  rows.push({ ...report.unattributed, name: "unattributed", kind: "unattributed" });
  for (const r of rows) {
    if (r.kind && r.cost_nanos === 0n && r.allocated_gpu_us === 0n && r.compute_gpu_us === 0n) {
      continue;
    }
    const tr = document.createElement("tr");
    tr.dataset.key = r.name;
    if (r.kind) tr.classList.add(r.kind);
    const cells = [
      ["name", r.name],
      ["cost", formatMoney(r.cost_nanos)],
      ["share", percent(r.cost_nanos, total)],
      ["granted", gpuHours(r.allocated_gpu_us)],
      ["used", gpuHours(r.compute_gpu_us)],
      ["quality", r.quality],
    ];
    for (const [field, text] of cells) {
      const td = document.createElement(field === "name" ? "th" : "td");
      if (field === "name") td.scope = "row";
      td.dataset.field = field;
      td.textContent = text;
      tr.append(td);
    }
    body.append(tr);
  }
  const groups = report.rows.reduce((sum, r) => sum + r.cost_nanos, 0n);
  const accounted = groups + report.idle.cost_nanos + report.unattributed.cost_nanos;
  $("total").textContent = formatMoney(total);
  $("total-detail").textContent =
    `groups ${formatMoney(groups)} + idle ${formatMoney(report.idle.cost_nanos)} + ` +
    `unattributed ${formatMoney(report.unattributed.cost_nanos)}` +
    (accounted === total ? ": every nano accounted for" : ": does not add up");
}

let chart = null;

function renderChart(report, allocation) {
  const sets = allocation.data;
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
  series.push({ label: "idle", color: IDLE_COLOR, keys: ["__idle__"] });
  series.push({ label: "unattributed", color: UNATTRIBUTED_COLOR, keys: ["__unattributed__"] });

  const xs = sets.map((set) => {
    const first = Object.values(set)[0];
    return first ? Date.parse(first.start) / 1000 : 0;
  });
  const own = series.map((s) =>
    sets.map((set) => s.keys.reduce((sum, k) => sum + (set[k] ? Number(set[k].cost_nanos) : 0), 0) / 1e9));
  // Stacked: series i is drawn at the sum of series 0..i, the tallest first.
  const stacked = own.map((_, i) => xs.map((_, j) => own.slice(0, i + 1).reduce((a, s) => a + s[j], 0)));
  const order = series.map((_, i) => series.length - 1 - i);
  const data = [xs, ...order.map((i) => stacked[i])];
  const bars = uPlot.paths.bars({ size: [0.8, 64] });
  const options = {
    width: Math.max(320, $("chart").clientWidth || 800),
    height: 280,
    scales: { x: { time: true } },
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
  chart = new uPlot(options, data, $("chart"));
  $("chart").setAttribute(
    "aria-label",
    `Cost by ${allocation.aggregate || "group"} per step, stacked: ${series.map((s) => s.label).join(", ")}`);
}

let generation = 0;

async function refresh() {
  const mine = ++generation;
  const q = query();
  history.replaceState(null, "", `#${new URLSearchParams({ ...q, labelKey: $("label-key").value })}`);
  $("label-key-field").hidden = $("aggregate").value !== "label";
  document.body.dataset.state = "loading";
  try {
    const [report, allocation] = await Promise.all([
      getJson("/api/v1/report", q),
      getJson("/api/v1/allocation", { ...q, step: stepFor(q.window) }),
    ]);
    if (mine !== generation) return;  // a newer choice is on its way
    $("error").hidden = true;
    renderTable(report);
    renderChart(report, allocation);
    document.body.dataset.state = "ready";
  } catch (error) {
    if (mine !== generation) return;
    showError(error);
    document.body.dataset.state = "error";
  }
}

function restoreFromUrl() {
  const saved = new URLSearchParams(location.hash.slice(1));
  for (const id of ["window", "policy", "idle"]) {
    if (saved.has(id)) $(id).value = saved.get(id);
  }
  const aggregate = saved.get("aggregate");
  if (aggregate && aggregate.startsWith("label:")) {
    $("aggregate").value = "label";
    $("label-key").value = aggregate.slice("label:".length);
  } else if (aggregate) {
    $("aggregate").value = aggregate;
  }
}

function start() {
  restoreFromUrl();
  for (const id of controls) $(id).addEventListener("change", refresh);
  $("token").addEventListener("change", () => {
    sessionStorage.setItem("gpuledger-token", $("token").value);
    refresh();
  });
  $("controls").addEventListener("submit", (event) => {
    event.preventDefault();
    refresh();
  });
  refresh();
}

start();
