// The tokens view: what a million tokens cost per model, team or workload (/api/v1/tokens), from
// the GPU cost the serving pods truly used under the chosen policy and idle handling and the
// inference engines' own token counters (docs/tokens.md).
import { $, formatMoney, getJson, groupThousands as count, tableRow } from "./api.js";

// The groupings the view offers, as /api/v1/tokens names them; "label" reads the label key.
export const TOKEN_GROUPINGS = ["model", "namespace", "label", "controller", "model,namespace"];

// A per-unit figure the API may not have (nothing to divide by: null).
function perUnit(value, format) {
  return value === null || value === undefined ? "-" : format(value);
}

// GPU-µs per 1,000 tokens as GPU-seconds, mJ per 1,000 tokens as joules.
const gpuSeconds = (us) => (Number(us) / 1e6).toFixed(3);
const joules = (mj) => (Number(mj) / 1e3).toFixed(1);

// What the cost rests on: the compute figure's origin and, where the policy weighs it, how far
// its rule was measured to be off on real hardware.
function quality(g, policy) {
  const band = g.compute_error_band;
  const weighsCompute = policy === "compute" || policy.startsWith("hybrid");
  if (!weighsCompute || band === null || band === undefined || band === 0) return g.compute_source;
  return `${g.compute_source} (±${Math.round(band * 100)}%)`;
}

function row(g, policy, attributes) {
  const per = g.per_million_tokens;
  return tableRow([
    ["key", g.key],
    ["input", count(g.input_tokens)],
    ["output", count(g.output_tokens)],
    ["input-per-million", perUnit(per.input_nanos, formatMoney)],
    ["output-per-million", perUnit(per.output_nanos, formatMoney)],
    ["blended-per-million", perUnit(per.blended_nanos, formatMoney)],
    ["cost", formatMoney(g.cost_nanos)],
    ["gpu-seconds-per-1k", perUnit(g.per_1k_tokens.compute_gpu_us, gpuSeconds)],
    ["joules-per-1k", perUnit(g.per_1k_tokens.energy_mj, joules)],
    ["tokens-per-gpu-hour", perUnit(g.tokens_per_gpu_hour.allocated, count)],
    ["quality", quality(g, policy)],
  ], attributes);
}

// The /api/v1/tokens grouping the view's own choice names (a label reads the page's label key).
export function tokenGrouping(choice, labelKey) {
  return choice === "label" ? `label:${labelKey}` : choice;
}

// Reads and draws the view for `query` grouped by `grouping`; returns false when a newer
// render started meanwhile.
export async function renderTokens(query, current, grouping) {
  const params = { window: query.window, aggregate: grouping, policy: query.policy,
                   idle: query.idle };
  const answer = await getJson("/api/v1/tokens", params);
  if (!current()) return false;
  const body = $("tokens").tBodies[0];
  body.replaceChildren(...answer.groups.map((g) => row(g, answer.policy, { key: g.key })));
  const t = answer.total;
  const blended = t.per_million_tokens.blended_nanos;
  $("tokens-none").hidden = answer.groups.length > 0;
  $("tokens-total").textContent =
    blended === null ? "-" : `${formatMoney(blended)} ${answer.currency} per 1M tokens`;
  $("tokens-detail").textContent = answer.groups.length === 0 ? "" :
    `${count(t.input_tokens)} tokens in and ${count(t.output_tokens)} out, ` +
    `${count(t.requests)} requests, for ${formatMoney(t.cost_nanos)} of GPU time; ` +
    `input ${perUnit(t.per_million_tokens.input_nanos, formatMoney)} and output ` +
    `${perUnit(t.per_million_tokens.output_nanos, formatMoney)} per 1M, split by ` +
    `${t.split === "prefill-decode-time" ? "the engines' prefill and decode time"
      : t.split === "token-count" ? "token count" : "prefill and decode time where reported, " +
      "else token count"}`;
  const orphans = answer.engines_without_gpu;
  $("tokens-orphans").hidden = orphans.length === 0;
  $("tokens-orphans").textContent = orphans.length === 0 ? "" :
    `Counted at no GPU cost (no GPU row of the window explains them): ${orphans.join(", ")}`;
  return true;
}
