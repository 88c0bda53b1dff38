// The web UI in a real headless browser (Debian's chromium, driven by playwright-core) against a
// gpuledger server over the demo ledger: the page loads without a console error, every figure
// of the cost table and the total equals what /api/v1/report answers for the same choice (read
// here with exact integers, formatted here independently), switching the policy, the grouping
// (a team label) and the idle handling changes them accordingly; the devices view lists every
// GPU as /api/v1/devices does and opens one (by keyboard) onto its containers as the report
// by device and container has them; every control is reached with the keyboard. Screenshots of
// each view go to OUT_DIR.
//
// With GUARDED_URL and TOKEN (the same ledger behind `--token-file`): the page's files load
// without the token, the first API answer (401) brings up the token field, and the token typed
// there brings the figures, which equal the API's with that token.
//
// With EMPTY_URL (a server over a ledger with nothing recorded yet, a fresh install, scraping a
// target that answers nothing): every view says the ledger is empty, draws no date of 1969 or
// 1970, and names the failing target.
//
// With DEMO_LOG and CLI_REPORT in the environment (what `gpuledger demo` printed while writing this
// ledger, and `gpuledger report --by namespace --window 7d --format json` of it): one figure
// everywhere, the demo's chargeback by namespace, the CLI's report, the API's and this page's
// name the same costs and GPU-hours, each group's and the per-device method's.
//
// Usage: node ui_test.mjs BASE_URL OUT_DIR [GUARDED_URL TOKEN [EMPTY_URL]]
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [base, outDir, guardedBase, token, emptyBase] = process.argv.slice(2);
if (!base || !outDir) {
  console.error("usage: node ui_test.mjs BASE_URL OUT_DIR");
  process.exit(2);
}
mkdirSync(outDir, { recursive: true });

const failures = [];
function check(ok, what) {
  if (!ok) failures.push(what);
}

// The API's JSON with its integers kept exact: each integer value is quoted before parsing
// (this Node.js's JSON.parse has no access to a number's source text).
function parseExact(text) {
  return JSON.parse(text.replace(/(":\s*)(-?\d+)(?=\s*[,}\]])/g, '$1"$2"'));
}

// Nanos (a decimal string) as the page must print them: thousands separated, a point, then the
// fraction without trailing zeros but at least two digits.
function money(nanosText) {
  const negative = nanosText.startsWith("-");
  const digits = (negative ? nanosText.slice(1) : nanosText).padStart(10, "0");
  const whole = digits.slice(0, -9).replace(/^0+(?=\d)/, "");
  let fraction = digits.slice(-9).replace(/0+$/, "");
  while (fraction.length < 2) fraction += "0";
  const grouped = whole.split("").reverse().join("").match(/\d{1,3}/g).join(",")
    .split("").reverse().join("");
  return `${negative ? "-" : ""}${grouped}.${fraction}`;
}

function hours(usText) {
  return (Number(usText) / 3.6e9).toFixed(2);
}

async function apiReport(params) {
  const response = await fetch(`${base}/api/v1/report?${new URLSearchParams(params)}`);
  check(response.ok, `/api/v1/report ${JSON.stringify(params)}: ${response.status}`);
  return parseExact(await response.text());
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox"],
});
const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
page.on("console", (m) => {
  if (m.type() === "error" || m.type() === "warning") failures.push(`console ${m.type()}: ${m.text()}`);
});
page.on("pageerror", (e) => failures.push(`page error: ${e.message}`));
page.on("requestfailed", (r) => failures.push(`request failed: ${r.url()}`));
page.on("response", (r) => {
  if (r.status() >= 400) failures.push(`${r.status()} for ${r.url()}`);
});

// The table rows `selector` names as the page shows them: the text of each of a row's cells by
// field (data-field), and its data attributes (which name the row: they win over a cell).
function shownRows(selector) {
  return page.$$eval(selector, (trs) => trs.map((tr) => {
    const row = {};
    for (const cell of tr.querySelectorAll(":scope > [data-field]")) {
      row[cell.dataset.field] = cell.textContent;
    }
    return { ...row, ...tr.dataset };
  }));
}

async function ready() {
  await page.waitForFunction(() => document.body.dataset.state === "ready", null, { timeout: 30000 });
}

// The page's table and total against the API's report for the same parameters.
async function compare(view, params) {
  await ready();
  await page.screenshot({ path: join(outDir, `${view}.png`), fullPage: true });
  const report = await apiReport(params);
  const shown = await shownRows("#rows tbody tr");
  const byKey = new Map(shown.map((r) => [r.key, r]));
  check(report.rows.length > 1, `${view}: the API answered ${report.rows.length} rows`);
  for (const row of report.rows) {
    const got = byKey.get(row.key);
    check(got !== undefined, `${view}: row ${row.key} is not on the page`);
    if (!got) continue;
    check(got.cost === money(row.cost_nanos),
          `${view}: ${row.key} cost ${got.cost}, the API says ${money(row.cost_nanos)}`);
    check(got.granted === hours(row.allocated_gpu_us), `${view}: ${row.key} granted ${got.granted}`);
    check(got.used === hours(row.compute_gpu_us), `${view}: ${row.key} used ${got.used}`);
    check(got.quality === row.quality, `${view}: ${row.key} quality ${got.quality}`);
  }
  const idle = byKey.get("idle");
  if (BigInt(report.idle.cost_nanos) !== 0n) {
    check(idle && idle.cost === money(report.idle.cost_nanos), `${view}: idle ${idle && idle.cost}`);
  }
  const total = await page.textContent("#total");
  check(total === money(report.total.device_cost_nanos),
        `${view}: total ${total}, the API says ${money(report.total.device_cost_nanos)}`);
  const sum = report.rows.reduce((s, r) => s + BigInt(r.cost_nanos), 0n) +
              BigInt(report.idle.cost_nanos) + BigInt(report.unattributed.cost_nanos);
  check(sum === BigInt(report.total.device_cost_nanos), `${view}: the API's rows do not add up`);
  check((await page.textContent("#total-detail")).endsWith("every nano accounted for"),
        `${view}: the page does not say every nano is accounted for`);
  check(await page.$("#chart canvas") !== null, `${view}: no chart drawn`);
  // Beside the per-device method: each group's naive figures as the API has them.
  const naive = await shownRows("#naive tbody tr");
  check(naive.length === report.rows.length, `${view}: ${naive.length} naive rows`);
  for (const [i, row] of report.rows.entries()) {
    const got = naive[i] || {};
    check(got.key === row.key && got["naive-used"] === hours(row.per_device.compute_gpu_us) &&
          got["naive-cost"] === money(row.per_device.cost_nanos),
          `${view}: naive ${row.key} ${got["naive-used"]} ${got["naive-cost"]}`);
  }
  return report;
}

await page.goto(`${base}/`);
const allocation = await compare("cost-namespace-allocation",
                                 { window: "7d", aggregate: "namespace", policy: "allocation", idle: "keep" });

// Nanos rounded half up to cents, as the demo prints them: "$2,488.52".
function cents(nanosText) {
  const n = BigInt(nanosText);
  const c = ((n < 0n ? -n : n) + 5000000n) / 10000000n;
  const whole = (c / 100n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return `${n < 0n ? "-" : ""}$${whole}.${(c % 100n).toString().padStart(2, "0")}`;
}

// One figure everywhere: the CLI's report and the demo's printout of the same ledger say what
// the API says (and the page, compared above).
if (process.env.CLI_REPORT) {
  const cli = parseExact(readFileSync(process.env.CLI_REPORT, "utf8"));
  const byKey = new Map(cli.rows.map((r) => [r.key, r]));
  check(cli.rows.length === allocation.rows.length,
        `the CLI has ${cli.rows.length} namespaces, the API ${allocation.rows.length}`);
  for (const row of allocation.rows) {
    const c = byKey.get(row.key) || { per_device: {} };
    for (const [what, a, b] of [["cost", row.cost_nanos, c.cost_nanos],
                                ["granted", row.allocated_gpu_us, c.allocated_gpu_us],
                                ["used", row.compute_gpu_us, c.compute_gpu_us],
                                ["per-device cost", row.per_device.cost_nanos, c.per_device.cost_nanos],
                                ["per-device used", row.per_device.compute_gpu_us,
                                 c.per_device.compute_gpu_us]])
      check(a === b, `CLI and API differ on ${row.key}'s ${what}: ${b} against ${a}`);
  }
  check(cli.total.device_cost_nanos === allocation.total.device_cost_nanos,
        `CLI total ${cli.total.device_cost_nanos}, API ${allocation.total.device_cost_nanos}`);
}
if (process.env.DEMO_LOG) {
  const log = readFileSync(process.env.DEMO_LOG, "utf8");
  const section = log.slice(log.indexOf("Chargeback by namespace"));
  const lines = section.slice(0, section.indexOf("\n\n")).split("\n");
  const demo = new Map();
  for (const line of lines) {
    const m = line.match(/^ {2}(\S.*?) +([\d.]+) +([\d.]+) +(\$[\d,.]+) +\w* *\| +([\d.]+) +(\$[\d,.]+)$/);
    if (m) demo.set(m[1], m.slice(2));
  }
  check(demo.size === allocation.rows.length + 1,
        `the demo printed ${demo.size} namespace lines: ${[...demo.keys()]}`);
  for (const row of allocation.rows) {
    const want = [hours(row.allocated_gpu_us), hours(row.compute_gpu_us), cents(row.cost_nanos),
                  hours(row.per_device.compute_gpu_us), cents(row.per_device.cost_nanos)];
    check(JSON.stringify(demo.get(row.key)) === JSON.stringify(want),
          `the demo printed ${row.key} as ${demo.get(row.key)}, the API says ${want}`);
  }
  // The per-device method's total is its rows' sum (it bills more than the bill).
  const perDevice = allocation.rows.reduce((s, r) => s + BigInt(r.per_device.cost_nanos), 0n);
  const total = demo.get("total (the bill)") || [];
  check(total[2] === cents(allocation.total.device_cost_nanos) &&
        total[4] === cents(perDevice.toString()),
        `the demo's total ${total}, the API's ${cents(allocation.total.device_cost_nanos)} and ` +
        `${cents(perDevice.toString())}`);
}

await page.selectOption("#policy", "compute");
const compute = await compare("cost-namespace-compute",
                              { window: "7d", aggregate: "namespace", policy: "compute", idle: "keep" });
check(JSON.stringify(compute.rows) !== JSON.stringify(allocation.rows),
      "switching the policy changed no figure");

await page.selectOption("#aggregate", "label");
check(await page.isVisible("#label-key"), "the label key field is hidden for a label grouping");
const team = await compare("cost-team-compute",
                           { window: "7d", aggregate: "label:team", policy: "compute", idle: "keep" });
check(team.rows.every((r) => !r.key.includes("/")), "team rows look like namespaces");

await page.selectOption("#idle", "share");
await compare("cost-team-compute-share",
              { window: "7d", aggregate: "label:team", policy: "compute", idle: "share" });

// Only one team: the rows are its consumers' (the API's report with the label filter), the total
// theirs beside the window's, no idle or unattributed row; the address keeps the team, and the
// workloads view lists only the team's workloads.
await page.selectOption("#aggregate", "namespace");
await ready();
await page.selectOption("#team", "inference");
await ready();
await page.screenshot({ path: join(outDir, "cost-one-team.png"), fullPage: true });
const teamParams = { window: "7d", aggregate: "namespace", policy: "compute", idle: "share",
                     filter: 'label[team]:"inference"' };
const teamReport = await apiReport(teamParams);
const teamRows = await shownRows("#rows tbody tr");
check(teamReport.rows.length > 0 && teamRows.length === teamReport.rows.length,
      `one team: ${teamRows.length} rows on the page, the API has ${teamReport.rows.length}`);
for (const [i, row] of teamReport.rows.entries()) {
  const got = teamRows[i] || {};
  check(got.key === row.key && got.cost === money(row.cost_nanos) &&
        got.used === hours(row.compute_gpu_us), `one team: row ${i} ${JSON.stringify(got)}`);
}
const theirs = teamReport.rows.reduce((sum, r) => sum + BigInt(r.cost_nanos), 0n);
check(await page.textContent("#total") === money(String(theirs)),
      `one team: total ${await page.textContent("#total")}, the API's rows sum to ${theirs}`);
check((await page.textContent("#total-detail")).endsWith(money(teamReport.total.device_cost_nanos)),
      "one team: the window's whole cost is not beside the team's");
check(new URLSearchParams(new URL(page.url()).hash.slice(1)).get("team") === "inference",
      "one team: the address does not keep the team");
await page.click("#workloads-link");
await ready();
const teamWorkloads = await apiReport({ ...teamParams, aggregate: "controller" });
const listed = await page.$$eval("#workload option", (os) => os.map((o) => o.value));
check(listed.length > 0 && listed.join() === teamWorkloads.rows.map((r) => r.key).join(),
      `one team: workloads ${listed.join()}`);
await page.selectOption("#team", "");
await ready();

// A window past what the ledger holds says so (its zeros are "not recorded"); one inside, not.
await page.goto(`${base}/#view=cost&window=30d&aggregate=namespace`);
await page.reload();
await ready();
const reach = await page.textContent("#reach");
check(/^The ledger holds \S+ to \S+; this window reaches before it/.test(reach) &&
      await page.isVisible("#reach"), `30d on a week's ledger: ${reach}`);
await page.goto(`${base}/#view=cost&window=7d&aggregate=namespace`);
await page.reload();
await ready();
check(!(await page.isVisible("#reach")), "7d on a week's ledger: a reach note");
// The glossary the footer links to is served by the server itself.
const glossary = await page.request.get(`${base}/ui/glossary.md`);
check(glossary.ok() && /per-device method/i.test(await glossary.text()),
      `the glossary: ${glossary.status()}`);

// A link keeps the view: the fragment holds the choice.
await page.goto(`${base}/#window=24h&aggregate=gpu_model&policy=allocation&idle=keep`);
await page.reload();
await compare("cost-model-24h", { window: "24h", aggregate: "gpu_model", policy: "allocation", idle: "keep" });

// The devices view: each GPU's row as /api/v1/devices answers it; opening one (by keyboard)
// shows its containers as /api/v1/report grouped by device and container answers them.
await page.goto(`${base}/#view=devices&window=7d&policy=allocation&idle=keep&rows=5`);
await page.reload();
await ready();
// Drawn 5 at a time (a fleet's thousands are drawn a page at a time): the rest by the button.
check(await page.$$eval("#devices > tbody > tr[data-gpu]", (trs) => trs.length) === 5,
      "devices: not 5 rows drawn first");
while (await page.isVisible("#devices-more")) await page.click("#devices-more");
await page.screenshot({ path: join(outDir, "devices.png"), fullPage: true });
const devices = parseExact(await (await fetch(`${base}/api/v1/devices?window=7d`)).text()).data;
const containers = await apiReport({ window: "7d", aggregate: "device,container", policy: "allocation",
                                     idle: "keep" });
const shownDevices = await shownRows("#devices > tbody > tr[data-gpu]");
check(shownDevices.length === devices.length && devices.length > 0,
      `devices: ${shownDevices.length} rows on the page, the API has ${devices.length}`);
for (const [i, d] of devices.entries()) {
  const got = shownDevices[i] || {};
  check(got.gpu === d.gpu_uuid, `devices: row ${i} is ${got.gpu}, the API says ${d.gpu_uuid}`);
  check(got.model === d.gpu_model && got.sharing === d.sharing_mode &&
        got.layout === d.layouts.join(" then "), `devices: ${d.gpu_uuid} placement`);
  check(got.cost === money(d.cost_nanos), `devices: ${d.gpu_uuid} cost ${got.cost}`);
  check(got.granted === hours(String(BigInt(d.metered_us) - BigInt(d.unallocated_us))),
        `devices: ${d.gpu_uuid} granted ${got.granted}`);
  check(got.used === hours(d.busy_us) && got.idle === hours(d.idle_us), `devices: ${d.gpu_uuid} used/idle`);
}
// Each GPU's layout came from its agent's device_info through the ledger: the demo scenario's
// (src/sim/example_scenario.yaml) MIG instances, largest first, and advertised replicas.
const layoutsOn = (node) => JSON.stringify(devices.filter((d) => d.node === node).map((d) => d.layouts));
check(layoutsOn("gpu-h200-mig-0") === JSON.stringify([["3g.71gb+2g.35gb+1g.18gb+1g.18gb"]]),
      `devices: the MIG H200's layouts ${layoutsOn("gpu-h200-mig-0")}`);
check(layoutsOn("gpu-a100-ts-0") === JSON.stringify([["4 replicas"], ["4 replicas"]]),
      `devices: the time-sliced A100s' layouts ${layoutsOn("gpu-a100-ts-0")}`);
check(layoutsOn("gpu-l4-mps-0") === JSON.stringify([["4 replicas"]]),
      `devices: the MPS L4's layouts ${layoutsOn("gpu-l4-mps-0")}`);
const shared = devices.find((d) => d.sharing_mode === "time-slicing") || devices[0];
const opener = `#devices tr[data-gpu="${shared.gpu_uuid}"] button`;
await page.focus(opener);
await page.keyboard.press("Enter");
check(await page.getAttribute(opener, "aria-expanded") === "true", "devices: Enter did not open the GPU");
await page.waitForSelector(`#devices tr.detail-row[data-state="ready"] table.containers`);
await page.screenshot({ path: join(outDir, "device-open.png"), fullPage: true });
const onIt = containers.rows.filter((r) => r.key.startsWith(`${shared.gpu_uuid}/`));
const shownContainers =
  await shownRows(`table.containers[data-gpu="${shared.gpu_uuid}"] tbody tr[data-key]`);
check(onIt.length > 1 && shownContainers.length === onIt.length,
      `device ${shared.gpu_uuid}: ${shownContainers.length} containers shown, the API has ${onIt.length}`);
for (const [i, r] of onIt.entries()) {
  const got = shownContainers[i] || {};
  check(got.key === r.key.slice(shared.gpu_uuid.length + 1), `device: container ${i} is ${got.key}`);
  check(got.cost === money(r.cost_nanos), `device: ${r.key} cost ${got.cost}`);
  check(got.quality === r.quality && got.source === r.compute_source, `device: ${r.key} quality/source`);
}

// A workload's page, opened from a link: its class and reason as the report by controller has
// them, and each step's granted and used GPU-hours, activity and class as the allocation by
// controller with a step has them; then another workload chosen from the list.
for (const workload of ["research/Job/vision-finetune", "research/Job/llm-pretrain"]) {
  if (workload.endsWith("vision-finetune")) {
    await page.goto(`${base}/#view=workloads&window=7d&workload=${encodeURIComponent(workload)}`);
    await page.reload();
  } else {
    await page.selectOption("#workload", workload);
  }
  await ready();
  await page.screenshot({ path: join(outDir, `workload-${workload.split("/").pop()}.png`), fullPage: true });
  const controllers = await apiReport({ window: "7d", aggregate: "controller", policy: "allocation",
                                        idle: "keep" });
  const row = controllers.rows.find((r) => r.key === workload);
  check(row !== undefined, `workload ${workload}: not in the report by controller`);
  if (!row) continue;
  check(await page.inputValue("#workload") === workload, `workload ${workload}: not the one shown`);
  check(await page.textContent("#workload-class") === row.utilization.class,
        `workload ${workload}: class ${await page.textContent("#workload-class")}`);
  check((await page.textContent("#workload-reason")).startsWith(row.utilization.reason),
        `workload ${workload}: reason`);
  const steps = parseExact(await (await fetch(`${base}/api/v1/allocation?${new URLSearchParams(
    { window: "7d", aggregate: "controller", policy: "allocation", idle: "keep", step: "1d" })}`)).text())
    .data.map((set) => set[workload]).filter((e) => e);
  const shownSteps = await shownRows("#workload-steps tbody tr");
  check(steps.length > 1 && shownSteps.length === steps.length,
        `workload ${workload}: ${shownSteps.length} steps shown, the API has ${steps.length}`);
  for (const [i, e] of steps.entries()) {
    const got = shownSteps[i] || {};
    check(got.start === e.start && got.used === hours(e.compute_gpu_us) &&
          got.sm === hours(e.activity.sm_active_gpu_us) && got.class === e.utilization.class,
          `workload ${workload}: step ${e.start} ${JSON.stringify(got)}`);
  }
}

// Findings and savings: each finding's cost and the total as /api/v1/findings has them, each
// workload's monthly saving and the total as /api/v1/recommendations has them.
await page.click("#waste-link");
await ready();
const findings = parseExact(await (await fetch(`${base}/api/v1/findings?window=7d`)).text());
const plan = parseExact(await (await fetch(`${base}/api/v1/recommendations?window=7d`)).text());
const shownFindings = await shownRows("#findings tbody tr");
check(findings.findings.length > 3 && shownFindings.length === findings.findings.length,
      `findings: ${shownFindings.length} on the page, the API has ${findings.findings.length}`);
for (const [i, f] of findings.findings.entries()) {
  const got = shownFindings[i] || {};
  check(got.kind === f.kind && got.cost === money(f.cost_nanos), `findings: row ${i} ${got.kind} ${got.cost}`);
}
check(await page.textContent("#findings-total") === money(findings.total_cost_nanos), "findings: total");
const shownPlan = await shownRows("#recommendations tbody tr");
check(plan.recommendations.length > 3 && shownPlan.length === plan.recommendations.length,
      `recommendations: ${shownPlan.length} on the page, the API has ${plan.recommendations.length}`);
for (const [i, r] of plan.recommendations.entries()) {
  const got = shownPlan[i] || {};
  check(got.workload === r.workload && got.saving === money(r.monthly_saving_nanos),
        `recommendations: row ${i} ${got.workload} ${got.saving}`);
  // The replay: the hours it would have fit of those it held, as the API counts them.
  const fits = r.replay === null ? "-"
    : `${r.replay.risky ? "risky: " : ""}${r.replay.hours - r.replay.misfit_hours} of ${r.replay.hours} h`;
  check(got.replay === fits, `recommendations: row ${i} replay '${got.replay}', expected '${fits}'`);
}
check(await page.textContent("#savings-total") === money(plan.total_monthly_saving_nanos),
      "recommendations: total");
// The consolidation plans, as the API has them: GPUs held and needed, the saving.
const shownPlans = await shownRows("#consolidation tbody tr");
check(plan.consolidation.length > 0 && shownPlans.length === plan.consolidation.length,
      `consolidation: ${shownPlans.length} on the page, the API has ${plan.consolidation.length}`);
for (const [i, p] of plan.consolidation.entries()) {
  const got = shownPlans[i] || {};
  check(got.pool === `${p.gpu_model}/${p.pool}` && got.now === `${p.gpus_now.toFixed(2)} GPUs` &&
        got.saving === money(p.monthly_saving_nanos) && got.workloads === String(p.moves.length),
        `consolidation: row ${i} ${got.pool} ${got.now} ${got.saving}`);
}
// A workload's reasons open by keyboard.
await page.focus("#recommendations tbody tr:first-child summary");
await page.keyboard.press("Enter");
check(await page.$eval("#recommendations tbody tr:first-child details", (d) => d.open),
      "recommendations: Enter did not open the reasons");
await page.screenshot({ path: join(outDir, "findings-and-savings.png"), fullPage: true });

// The tokens view: each group's figures as /api/v1/tokens answers them (by model under the
// allocation policy, then by model and namespace under compute, from a link), the blended cost of all of
// them on top; the address keeps the grouping. And one figure everywhere: the demo's printout
// of what a token cost names the API's GPU cost per model.
const grouped = (text) => text.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
const orDash = (v, f) => (v === null ? "-" : f(v));
async function compareTokens(name, params) {
  await ready();
  await page.screenshot({ path: join(outDir, `${name}.png`), fullPage: true });
  const api = parseExact(await (await fetch(`${base}/api/v1/tokens?${new URLSearchParams(params)}`)).text());
  const shown = await shownRows("#tokens tbody tr");
  check(api.groups.length > 1 && shown.length === api.groups.length,
        `${name}: ${shown.length} groups on the page, the API has ${api.groups.length}`);
  for (const [i, g] of api.groups.entries()) {
    const got = shown[i] || {};
    const per = g.per_million_tokens;
    const want = {
      key: g.key, input: grouped(g.input_tokens), output: grouped(g.output_tokens),
      "input-per-million": orDash(per.input_nanos, money),
      "output-per-million": orDash(per.output_nanos, money),
      "blended-per-million": orDash(per.blended_nanos, money), cost: money(g.cost_nanos),
      "tokens-per-gpu-hour": orDash(g.tokens_per_gpu_hour.allocated, grouped),
    };
    for (const [field, value] of Object.entries(want)) {
      check(got[field] === value, `${name}: ${g.key} ${field} '${got[field]}', the API says '${value}'`);
    }
    check(got.quality.startsWith(g.compute_source), `${name}: ${g.key} quality '${got.quality}'`);
  }
  const total = await page.textContent("#tokens-total");
  check(total === `${money(api.total.per_million_tokens.blended_nanos)} ${api.currency} per 1M tokens`,
        `${name}: total '${total}'`);
  return api;
}
await page.click("#tokens-link");
await compareTokens("tokens-model", { window: "7d", aggregate: "model", policy: "allocation", idle: "keep" });
check(new URLSearchParams(new URL(page.url()).hash.slice(1)).get("tokens-by") === "model",
      "tokens: the address does not keep the grouping");
await page.goto(`${base}/#view=tokens&window=7d&tokens-by=model%2Cnamespace&policy=compute&idle=keep`);
await page.reload();
const byNamespace = await compareTokens("tokens-model-namespace-compute",
                                        { window: "7d", aggregate: "model,namespace", policy: "compute",
                                          idle: "keep" });
// Under compute a group's cost inherits its compute figure's band, and the page says it.
const bandsShown = await shownRows("#tokens tbody tr");
let banded = 0;
for (const [i, g] of byNamespace.groups.entries()) {
  const band = g.compute_error_band === null ? 0 : Number(g.compute_error_band);
  if (band === 0) continue;
  banded++;
  check((bandsShown[i] || {}).quality === `${g.compute_source} (±${Math.round(band * 100)}%)`,
        `tokens: ${g.key} quality '${(bandsShown[i] || {}).quality}' without its band ${band}`);
}
check(banded > 0, "tokens: no group under compute carries a band");
if (process.env.DEMO_LOG) {
  const log = readFileSync(process.env.DEMO_LOG, "utf8");
  const section = log.slice(log.indexOf("What a token cost"));
  const lines = section.slice(0, section.indexOf("\n\n")).split("\n");
  const all = parseExact(await (await fetch(`${base}/api/v1/tokens?window=all`)).text());
  for (const g of all.groups) {
    // The demo's table shortens a long key to fit the terminal ("meta-llama/Llama-3…").
    const line = lines.find((l) => l.startsWith(g.key + " ") ||
                                   (l.includes("…") && g.key.startsWith(l.slice(0, l.indexOf("…")))));
    check(line !== undefined && line.includes(` ${cents(g.cost_nanos)} `),
          `tokens: the demo printed ${g.key} as '${line}', the API's cost is ${cents(g.cost_nanos)}`);
  }
}

// One ledger, one cluster: no cluster selector. Two (MULTI_URL: the demo's and us-infer's): the
// selector lists both, and choosing one shows its consumers as the API's report filtered to it;
// the address keeps the cluster.
check(await page.isHidden("#cluster-field"), "one cluster: the cluster selector is shown");
if (process.env.MULTI_URL) {
  const multi = process.env.MULTI_URL;
  // A page of its own: the main page's requests in flight are not cut by a navigation.
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  page.on("pageerror", (e) => failures.push(`clusters: page error: ${e.message}`));
  const ready = () => page.waitForFunction(() => document.body.dataset.state === "ready", null,
                                           { timeout: 30000 });
  const shownRows = (selector) => page.$$eval(selector, (trs) => trs.map((tr) => {
    const row = {};
    for (const cell of tr.querySelectorAll(":scope > [data-field]")) row[cell.dataset.field] = cell.textContent;
    return { ...row, ...tr.dataset };
  }));
  await page.goto(`${multi}/#view=cost&window=7d&aggregate=namespace`);
  await ready();
  await page.waitForFunction(() => !document.getElementById("cluster-field").hidden, null,
                             { timeout: 30000 });
  const offered = await page.$$eval("#cluster option", (os) => os.map((o) => o.value));
  check(JSON.stringify(offered) === JSON.stringify(["", "demo", "us-infer"]),
        `clusters: offered ${JSON.stringify(offered)}`);
  await page.selectOption("#cluster", "us-infer");
  await ready();
  await page.screenshot({ path: join(outDir, "cost-one-cluster.png"), fullPage: true });
  const params = { window: "7d", aggregate: "namespace", policy: "allocation", idle: "keep",
                   filter: 'cluster:"us-infer"' };
  const theirs = parseExact(await (await fetch(
    `${multi}/api/v1/report?${new URLSearchParams(params)}`)).text());
  const shown = await shownRows("#rows tbody tr");
  check(theirs.rows.length > 0 && shown.length === theirs.rows.length &&
        theirs.rows.every((r, i) => shown[i].key === r.key && shown[i].cost === money(r.cost_nanos)),
        `one cluster: ${JSON.stringify(shown)} against ${JSON.stringify(theirs.rows.map((r) => r.key))}`);
  check(new URLSearchParams(new URL(page.url()).hash.slice(1)).get("cluster") === "us-infer",
        "one cluster: the address does not keep the cluster");
  await page.close();
}

// Every control is reached with Tab from the top of the page.
await page.goto(`${base}/#view=cost&aggregate=label:team`);
await page.reload();
await ready();
const reached = new Set();
for (let i = 0; i < 20; i++) {
  await page.keyboard.press("Tab");
  reached.add(await page.evaluate(() => document.activeElement && document.activeElement.id));
}
for (const id of ["window", "aggregate", "label-key", "team", "policy", "idle"]) {
  check(reached.has(id), `the keyboard never reaches #${id}`);
}
// And changed with it: the policy by arrow keys.
await page.focus("#policy");
await page.keyboard.press("ArrowDown");
await ready();
check(await page.inputValue("#policy") !== "allocation", "the policy did not change by keyboard");

// Behind a token: the 401 is expected (and the console's report of it); nothing else may fail.
if (guardedBase) {
  const guarded = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const unexpected = [];
  guarded.on("pageerror", (e) => unexpected.push(`page error: ${e.message}`));
  guarded.on("response", (r) => {
    if (r.status() >= 400 && r.status() !== 401) unexpected.push(`${r.status()} for ${r.url()}`);
  });
  await guarded.goto(`${guardedBase}/#view=cost&window=7d&aggregate=namespace`);
  await guarded.waitForFunction(() => document.body.dataset.state === "error", null, { timeout: 30000 });
  check(await guarded.isVisible("#token"), "token: no token field after the API asked for one");
  check((await guarded.textContent("#error")).includes("API token"), "token: the page does not say why");
  await guarded.fill("#token", token);
  await guarded.press("#token", "Enter");
  await guarded.waitForFunction(() => document.body.dataset.state === "ready", null, { timeout: 30000 });
  const response = await fetch(`${guardedBase}/api/v1/report?window=7d&aggregate=namespace`,
                               { headers: { Authorization: `Bearer ${token}` } });
  const report = parseExact(await response.text());
  check(await guarded.textContent("#total") === money(report.total.device_cost_nanos),
        "token: the total behind the token is not the API's");
  check(!(await guarded.isVisible("#error")), "token: the error stays after the token was given");
  await guarded.screenshot({ path: join(outDir, "token.png"), fullPage: true });
  failures.push(...unexpected);
}

if (emptyBase) {
  for (const view of ["cost", "devices", "workloads", "waste", "tokens"]) {
    const empty = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    empty.on("pageerror", (e) => failures.push(`empty ${view}: page error: ${e.message}`));
    await empty.goto(`${emptyBase}/#view=${view}&window=7d`);
    await empty.waitForFunction(() => ["error", "ready"].includes(document.body.dataset.state),
                                null, { timeout: 30000 });
    const said = await empty.textContent("#error");
    check(said.includes("Nothing recorded yet"), `empty ${view}: the page does not say so: ${said}`);
    const text = await empty.textContent("body");
    check(!/1969|1970|\/69\b|\/70\b/.test(text), `empty ${view}: a date before the ledger was made`);
    // Its one scrape target answers nothing: the page says which and why (/api/v1/sources).
    await empty.waitForFunction(() => !document.getElementById("sources").hidden, null,
                                { timeout: 30000 }).catch(() => {});
    const sources = await empty.textContent("#sources");
    check(/1 of 1 scrape targets failing: 127\.0\.0\.1:1 \(/.test(sources),
          `empty ${view}: the failing scrape target is not shown: ${sources}`);
    if (view === "cost") await empty.screenshot({ path: join(outDir, "empty.png"), fullPage: true });
    await empty.close();
  }
}

await browser.close();
if (failures.length > 0) {
  console.error(`FAIL: ${failures.length} problem(s):\n  ${failures.join("\n  ")}`);
  process.exit(1);
}
console.log(`ok: 5 cost views, one team's, the devices, a device's containers, two workloads, findings and ` +
            `savings, two tokens views compared with the API; ` +
            `screenshots in ${outDir}`);
