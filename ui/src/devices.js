// The devices view: each GPU (/api/v1/devices) with its sharing mode, granted vs used vs idle
// GPU time and its cost; opening one lists the containers on it with their figures and where
// each came from (/api/v1/allocation grouped by device and container over the whole window, for
// the same policy and idle handling, filtered to the GPU's node: read when opened, so a fleet of
// 10,000 GPUs does not send every container up front, and summed over that node's devices
// alone).
import { $, formatMoney, getJson, gpuHours, percent, tableRow } from "./api.js";

function band(value) {
  return value == null ? "not measured" : `±${(Number(value) * 100).toFixed(0)}%`;
}

function containerTable(gpu, rows) {
  const table = document.createElement("table");
  table.className = "containers";
  table.dataset.gpu = gpu;
  const caption = table.createCaption();
  caption.textContent = `Containers on ${gpu}: measured, estimated (by which rule, and how far ` +
    "that rule was off on a real GPU) or allocated";
  const head = table.createTHead().insertRow();
  for (const name of ["Container", "Cost", "GPU-hours granted", "GPU-hours used", "Quality",
                      "Source", "Error band"]) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = name;
    head.append(th);
  }
  const body = table.createTBody();
  for (const r of rows) {
    const container = r.name.slice(gpu.length + 1);
    body.append(tableRow([
      ["container", container],
      ["cost", formatMoney(r.cost_nanos)],
      ["granted", gpuHours(r.allocated_gpu_us)],
      ["used", gpuHours(r.compute_gpu_us)],
      ["quality", r.quality],
      ["source", r.compute_source],
      ["band", band(r.compute_error_band)],
    ], { key: container }));
  }
  if (rows.length === 0) {
    const td = body.insertRow().insertCell();
    td.colSpan = 7;
    td.textContent = "no container was granted or used this GPU in the window";
  }
  return table;
}

// Opens or closes a GPU's row; the first opening reads its containers.
async function toggle(button, detail, device, query) {
  const open = button.getAttribute("aria-expanded") !== "true";
  button.setAttribute("aria-expanded", String(open));
  detail.hidden = !open;
  if (!open || detail.dataset.state) return;
  detail.dataset.state = "loading";
  const cell = detail.cells[0];
  try {
    const allocation = await getJson("/api/v1/allocation", {
      ...query, aggregate: "device,container", filter: `node:"${device.node}"`, accumulate: "true",
    });
    // The report's order: cost, highest first, then name.
    const rows = Object.values(allocation.data[0] || {})
      .filter((e) => e.name.startsWith(`${device.gpu_uuid}/`))
      .sort((a, b) => (a.cost_nanos !== b.cost_nanos ? (a.cost_nanos > b.cost_nanos ? -1 : 1)
        : (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)));
    cell.replaceChildren(containerTable(device.gpu_uuid, rows));
    button.textContent = `${rows.length} container${rows.length === 1 ? "" : "s"}`;
    detail.dataset.state = "ready";
  } catch (error) {
    cell.textContent = `could not read the containers: ${error.message}`;
    delete detail.dataset.state;  // the next opening tries again
  }
}

// GPUs drawn at a time: a fleet's list paints in a second, the rest a button press away. The
// address may ask for another number (`rows=N`).
const PAGE_ROWS = 500;

function pageRows() {
  const asked = Number(new URLSearchParams(location.hash.slice(1)).get("rows"));
  return Number.isInteger(asked) && asked > 0 ? asked : PAGE_ROWS;
}

// Draws devices [from, from + count) and, when more remain, the button that draws the next.
function appendRows(devices, from, count, query) {
  const body = $("devices").tBodies[0];
  const to = Math.min(devices.length, from + count);
  for (let index = from; index < to; index++) {
    const d = devices[index];
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = "containers";
    button.setAttribute("aria-expanded", "false");
    const granted = d.metered_us - d.unallocated_us;
    body.append(tableRow([
      ["gpu", d.gpu_uuid],
      ["model", d.gpu_model],
      ["node", d.node],
      ["sharing", d.sharing_mode],
      ["layout", d.layouts.join(" then ")],
      ["granted", gpuHours(granted)],
      ["used", gpuHours(d.busy_us)],
      ["idle", gpuHours(d.idle_us)],
      ["busy", percent(d.busy_us, d.metered_us)],
      ["cost", formatMoney(d.cost_nanos)],
      ["containers", button],
    ], { gpu: d.gpu_uuid, index: String(index) }));
    const detail = body.insertRow();
    detail.id = `device-detail-${index}`;
    detail.className = "detail-row";
    detail.hidden = true;
    detail.insertCell().colSpan = 11;
    button.setAttribute("aria-controls", detail.id);
    button.addEventListener("click", () => toggle(button, detail, d, query));
  }
  const more = $("devices-more");
  more.hidden = to >= devices.length;
  more.textContent = `Show ${Math.min(count, devices.length - to)} more of ${devices.length - to}`;
  more.onclick = () => {
    appendRows(devices, to, count, query);
    // Keyboard users land on the first row drawn.
    const next = body.querySelector(`tr[data-index="${to}"] button`);
    if (next) next.focus();
  };
}

function renderTable(devices, query) {
  $("devices").tBodies[0].replaceChildren();
  const total = devices.data.reduce((sum, d) => sum + d.cost_nanos, 0n);
  appendRows(devices.data, 0, pageRows(), query);
  $("devices-total").textContent = formatMoney(total);
  $("devices-detail").textContent = `${devices.data.length} GPUs`;
}

// Reads and draws the view for `query`; returns false when a newer render started meanwhile.
export async function renderDevices(query, current) {
  const devices = await getJson("/api/v1/devices", { window: query.window });
  if (!current()) return false;
  renderTable(devices, query);
  return true;
}
