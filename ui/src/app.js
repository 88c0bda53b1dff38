// The page: one form of choices (window, grouping, policy, idle) shared by its views, the view
// shown, and the state of both kept in the URL's fragment, so a view can be linked to. Every
// figure a view shows it reads from the REST API (api.js).
import { $, getJson, UNLABELLED } from "./api.js";
import { renderCost } from "./cost.js";
import { renderDevices } from "./devices.js";
import { renderTokens, tokenGrouping, TOKEN_GROUPINGS } from "./tokens.js";
import { renderWaste } from "./waste.js";
import { renderWorkloads } from "./workloads.js";

const VIEWS = {
  cost: renderCost,
  devices: renderDevices,
  workloads: renderWorkloads,
  waste: renderWaste,
  tokens: (q, current) => renderTokens(q, current, tokenGrouping($("tokens-by").value, labelKey())),
};
// The choices each view reads (the others are hidden there).
const USES = {
  cost: ["aggregate", "policy", "idle", "cluster", "team"],
  devices: ["policy", "idle"],
  workloads: ["policy", "idle", "cluster", "team"],
  waste: [],
  tokens: ["policy", "idle"],
};
const CONTROLS = ["window", "aggregate", "label-key", "cluster", "team", "policy", "idle"];

let view = "cost";
let linkedWorkload = "";  // the workload the address named, until the view lists them
let generation = 0;
const teamLists = new Map();  // "window|key" -> the values the label has in that window
const clusterLists = new Map();  // window -> the clusters with rows in it

// The label a "By label" grouping and the team filter read ("team" unless changed).
function labelKey() {
  return $("label-key").value.trim() || "team";
}

function aggregateParam() {
  const by = $("aggregate").value;
  return by === "label" ? `label:${labelKey()}` : by;
}

// The team filter: the consumers whose label has the chosen value; the report's "unlabelled"
// group is those without the label ("" in the API's filter).
function teamFilter() {
  const team = $("team").value;
  if (!team) return "";
  return `label[${labelKey()}]:"${team === UNLABELLED ? "" : team}"`;
}

// The cluster filter: one cluster's consumers, where several write the ledger (issue 64).
function clusterFilter() {
  const cluster = $("cluster").value;
  return cluster ? `cluster:"${cluster}"` : "";
}

function query() {
  const q = {
    window: $("window").value,
    aggregate: aggregateParam(),
    policy: $("policy").value,
    idle: $("idle").value,
  };
  const parts = [USES[view].includes("cluster") ? clusterFilter() : "",
                 USES[view].includes("team") ? teamFilter() : ""];
  const filter = parts.filter((f) => f).join("+");
  if (filter) q.filter = filter;
  return q;
}

// The cluster choices: the clusters with rows in the window (a report by cluster), read once per
// window after the view is drawn. Shown where there are several, or one was chosen.
async function fillClusters() {
  const window = $("window").value;
  if (!clusterLists.has(window)) {
    const report = await getJson("/api/v1/report", { window, aggregate: "cluster" });
    clusterLists.set(window, report.rows.map((r) => r.key));
  }
  const select = $("cluster");
  const chosen = select.value;
  const clusters = clusterLists.get(window);
  select.replaceChildren(new Option("every cluster", ""),
                         ...clusters.map((c) => new Option(c, c)));
  offer("cluster", chosen);
  $("cluster-field").hidden = !USES[view].includes("cluster") || (clusters.length < 2 && !chosen);
}

// Makes `value` one of the choices of select `id` (a linked team or cluster, before the
// window's are read).
function offer(id, value) {
  const select = $(id);
  if (value && ![...select.options].some((o) => o.value === value)) {
    select.append(new Option(value, value));
  }
  select.value = value;
}

// The team choices: the label's values in the window (the groups of a report by the label),
// read once per window and key, after the view is drawn so they never delay it.
async function fillTeams() {
  const window = $("window").value;
  const key = labelKey();
  $("team-key").textContent = key;
  const id = `${window}|${key}`;
  if (!teamLists.has(id)) {
    const report = await getJson("/api/v1/report", { window, aggregate: `label:${key}` });
    teamLists.set(id, report.rows.map((r) => r.key));
  }
  const select = $("team");
  const chosen = select.value;
  select.replaceChildren(new Option("everyone", ""),
                         ...teamLists.get(id).map((team) => new Option(team, team)));
  offer("team", chosen);
}

function showError(error) {
  const box = $("error");
  box.hidden = false;
  box.textContent = error.message;
  // A fresh install: nothing to draw yet, and no dates of 1970 to draw it with.
  if (/the ledger is empty/.test(error.message)) {
    box.textContent = "Nothing recorded yet: the ledger is empty. The server writes an hour " +
      "once it closes; until then every window is empty. The agents' scrapes are on /metrics " +
      "(gpuledger_server_scrape_*).";
    document.body.dataset.empty = "true";
  }
  if (error.status === 401) {
    $("token-field").hidden = false;
    box.textContent = `${error.message}: this server asks for its API token.`;
  }
}

// The sources the server ingests from that fail (/api/v1/sources): a scrape that fails leaves
// hours without figures, and the page says so before a report shows the hole.
async function showSources() {
  const box = $("sources");
  let data;
  try {
    ({ data } = await getJson("/api/v1/sources", {}));
  } catch {
    return;  // an older server, or no token yet: the views say what is wrong
  }
  const down = data.targets.filter((t) => !t.up);
  const lines = [];
  if (down.length > 0) {
    const named = down.slice(0, 3).map((t) =>
      `${t.target} (${t.last_error || "no answer yet"}${t.last_success ? `; last answered ${t.last_success}` : ""})`);
    lines.push(`${down.length} of ${data.targets.length} ${data.source} targets failing: ` +
               `${named.join("; ")}${down.length > 3 ? "; ..." : ""}. Their hours have no ` +
               "figures until they answer again.");
  }
  if (data.discovery_error) {
    lines.push(`Finding the targets fails (the last list is kept): ${data.discovery_error}`);
  }
  box.textContent = lines.join(" ");
  box.hidden = lines.length === 0;
}

async function refresh() {
  const mine = ++generation;
  const q = query();
  // The choices replace theirs in the address; what a view reads itself (workload, rows) stays.
  const state = new URLSearchParams(location.hash.slice(1));
  for (const [key, value] of Object.entries({ view, ...q })) state.set(key, value);
  const workload = $("workload").value || linkedWorkload;
  if (view === "workloads" && workload) state.set("workload", workload);
  if (view === "tokens") state.set("tokens-by", $("tokens-by").value);
  for (const id of ["team", "cluster"]) {
    if ($(id).value) {
      state.set(id, $(id).value);
    } else {
      state.delete(id);
    }
  }
  history.replaceState(null, "", `#${state}`);
  for (const name of Object.keys(VIEWS)) {
    $(`${name}-view`).hidden = name !== view;
    const link = $(`${name}-link`);
    if (name === view) {
      link.setAttribute("aria-current", "page");
    } else {
      link.removeAttribute("aria-current");
    }
  }
  for (const id of ["aggregate", "policy", "idle", "team"]) {
    $(`${id}-field`).hidden = !USES[view].includes(id);
  }
  if (!USES[view].includes("cluster")) $("cluster-field").hidden = true;
  $("label-key-field").hidden = !(view === "cost" && $("aggregate").value === "label") &&
                                !(view === "tokens" && $("tokens-by").value === "label");
  document.body.dataset.state = "loading";
  showSources();
  try {
    if (!(await VIEWS[view](q, () => mine === generation))) return;
    $("error").hidden = true;
    delete document.body.dataset.empty;
    document.body.dataset.state = "ready";
    if (USES[view].includes("team")) {
      fillTeams().catch((error) => {
        if (mine === generation) showError(error);
      });
    }
    if (USES[view].includes("cluster")) {
      fillClusters().catch((error) => {
        if (mine === generation) showError(error);
      });
    }
  } catch (error) {
    if (mine !== generation) return;
    showError(error);
    document.body.dataset.state = "error";
  }
}

function restoreFromUrl() {
  const saved = new URLSearchParams(location.hash.slice(1));
  view = VIEWS[saved.get("view")] ? saved.get("view") : "cost";
  linkedWorkload = saved.get("workload") || "";
  if (TOKEN_GROUPINGS.includes(saved.get("tokens-by"))) $("tokens-by").value = saved.get("tokens-by");
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
  offer("team", saved.get("team") || "");
  offer("cluster", saved.get("cluster") || "");
}

function start() {
  restoreFromUrl();
  // Another label key: its values are other teams.
  $("label-key").addEventListener("change", () => offer("team", ""));
  for (const id of CONTROLS) $(id).addEventListener("change", refresh);
  $("workload").addEventListener("change", refresh);
  $("tokens-by").addEventListener("change", refresh);
  for (const name of Object.keys(VIEWS)) {
    $(`${name}-link`).addEventListener("click", (event) => {
      event.preventDefault();
      view = name;
      refresh();
    });
  }
  // The token is taken when it is changed or Enter is pressed in its field.
  const useToken = () => {
    sessionStorage.setItem("gpuledger-token", $("token").value);
    refresh();
  };
  $("token").addEventListener("change", useToken);
  $("token").addEventListener("keydown", (event) => {
    if (event.key === "Enter") useToken();
  });
  $("controls").addEventListener("submit", (event) => {
    event.preventDefault();
    refresh();
  });
  refresh();
}

start();
