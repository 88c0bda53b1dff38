// The waste view: guardrail findings with what each cost (/api/v1/findings) and the rightsizing
// plan with what each change would save a month (/api/v1/recommendations), for the window.
import { $, formatMoney, getJson, tableRow } from "./api.js";

// A cell that shows `summary` and opens onto `lines` (the API's own explanation).
function explained(summary, lines) {
  const details = document.createElement("details");
  const head = document.createElement("summary");
  head.textContent = summary;
  details.append(head);
  for (const line of lines) {
    const p = document.createElement("p");
    p.textContent = line;
    details.append(p);
  }
  return details;
}

function renderFindings(findings) {
  const body = $("findings").tBodies[0];
  body.replaceChildren();
  for (const f of findings.findings) {
    const subject = [f.namespace, f.pod, f.container].filter((s) => s).join("/") || "(host)";
    const evidence = Object.entries(f.evidence || {}).map(([k, v]) => `${k}: ${v}`);
    body.append(tableRow([
      ["kind", f.kind],
      ["severity", f.severity],
      ["subject", explained(subject, [f.summary, `cost basis: ${f.cost_basis}`, ...evidence])],
      ["gpu", f.gpu_uuid || ""],
      ["first", f.first_seen],
      ["state", f.state],
      ["cost", formatMoney(f.cost_nanos)],
    ], { kind: f.kind, subject }));
  }
  $("findings-total").textContent = formatMoney(findings.total_cost_nanos);
  $("findings-detail").textContent =
    `${findings.findings.length} findings, ${findings.findings.filter((f) => f.state === "open").length} open`;
}

// What the replay found, in a few words: "168 of 168 h" it would have fit, "risky" past the
// percentile's allowance, "-" for keep (nothing moves).
function replayText(replay) {
  if (!replay) return "-";
  const fit = `${replay.hours - replay.misfit_hours} of ${replay.hours} h`;
  return replay.risky ? `risky: ${fit}` : fit;
}

function renderPlan(plan) {
  const body = $("recommendations").tBodies[0];
  body.replaceChildren();
  for (const r of plan.recommendations) {
    body.append(tableRow([
      ["workload", explained(r.workload, r.reasons)],
      ["from", r.from],
      ["to", `${r.action}: ${r.to}`],
      ["replay", replayText(r.replay)],
      ["confidence", r.confidence],
      ["saving", formatMoney(r.monthly_saving_nanos)],
    ], { workload: r.workload }));
  }
  const plans = $("consolidation").tBodies[0];
  plans.replaceChildren();
  for (const p of plan.consolidation) {
    // The reasons say what was held and needed hour by hour; the moves, where each goes.
    const moves = p.moves.map((m) => `${m.workload} -> GPU ${m.to_gpu}${m.profile ? ` as ${m.profile}` : ""}`);
    plans.append(tableRow([
      ["pool", explained(`${p.gpu_model} in ${p.pool}`, [...p.reasons, ...moves])],
      ["now", `${p.gpus_now.toFixed(2)} GPUs`],
      ["after", `${p.gpus_after} GPU${Number(p.gpus_after) === 1 ? "" : "s"}`],
      ["workloads", String(p.moves.length)],
      ["saving", formatMoney(p.monthly_saving_nanos)],
    ], { pool: `${p.gpu_model}/${p.pool}` }));
  }
  $("consolidation").hidden = plan.consolidation.length === 0;
  $("savings-total").textContent = formatMoney(plan.total_monthly_saving_nanos);
  $("savings-detail").textContent =
    `a month, ${plan.total_basis}; ${plan.recommendations.length} workloads`;
}

// Reads and draws the view for `query`; returns false when a newer render started meanwhile.
export async function renderWaste(query, current) {
  const [findings, plan] = await Promise.all([
    getJson("/api/v1/findings", { window: query.window }),
    getJson("/api/v1/recommendations", { window: query.window }),
  ]);
  if (!current()) return false;
  renderFindings(findings);
  renderPlan(plan);
  return true;
}
