// What every view shares: reading the API with its integers exact, and printing them.

const NANOS_PER_UNIT = 1000000000n;
const GPU_US_PER_HOUR = 3.6e9;

// The group a report by a label gives what lacks the label.
export const UNLABELLED = "unlabelled";

// The page's element of that id.
export const $ = (id) => document.getElementById(id);

// A chart's value scale: from zero (a bar's height is its value), to a little above the top.
export function fromZero(u, min, max) {
  return [0, max > 0 ? max * 1.05 : 1];
}

// The step a view's chart sums by: hours over the last 24 hours, days beyond.
export function stepFor(window) {
  return window === "24h" ? "1h" : "1d";
}

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

// A whole number's digits with thousands separators: "913488239" -> "913,488,239".
export function groupThousands(n) {
  return n.toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

// Nanos as currency units, exact: "1,234.5", "0.000000001", "-3.25".
export function formatMoney(nanos) {
  const negative = nanos < 0n;
  const n = negative ? -nanos : nanos;
  let fraction = (n % NANOS_PER_UNIT).toString().padStart(9, "0").replace(/0+$/, "");
  if (fraction.length < 2) fraction = fraction.padEnd(2, "0");
  const whole = groupThousands(n / NANOS_PER_UNIT);
  return `${negative ? "-" : ""}${whole}.${fraction}`;
}

// GPU-µs as GPU-hours, two decimals.
export function gpuHours(us) {
  return (Number(us) / GPU_US_PER_HOUR).toFixed(2);
}

// part / whole as a percentage with one decimal; "" when whole is 0.
export function percent(part, whole) {
  if (whole === 0n) return "";
  return `${(Number((part * 100000n) / whole) / 1000).toFixed(1)}%`;
}

// GET path?params from the API, with the token the user gave (if any). An error answer
// throws an Error with the API's message and its status.
export async function getJson(path, params) {
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

// A table row of cells, each [field, text]; the first is the row's header cell.
export function tableRow(cells, attributes = {}) {
  const tr = document.createElement("tr");
  Object.assign(tr.dataset, attributes);
  cells.forEach(([field, content], i) => {
    const cell = document.createElement(i === 0 ? "th" : "td");
    if (i === 0) cell.scope = "row";
    cell.dataset.field = field;
    if (content instanceof Node) {
      cell.append(content);
    } else {
      cell.textContent = content;
    }
    tr.append(cell);
  });
  return tr;
}
