#include "cli/demo_sections.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "attribution/attribute.h"
#include "cli/format.h"
#include "cli/tokens_command.h"
#include "common/money.h"
#include "common/text_columns.h"
#include "ledger/findings.h"
#include "ledger/read_service.h"
#include "ledger/rightsize.h"
#include "ledger/tokens.h"
#include "model/compute_band.h"
#include "report/token_json.h"

namespace gpuledger::cli {
namespace {

// Measured figures must match the truth this closely (the acceptance bound).
constexpr double kMeasuredTolerance = 0.02;

double RelativeError(double got, double want) {
  if (want == 0) return got == 0 ? 0 : 1;
  return (got - want) / want;
}

// One line when it fits in `width`, else `name` on a line of its own and the figures under it
// (at most `width` too: `figures` cut before `optional`, the part that may go).
std::string NameAndFigures(const std::string& name, std::size_t name_width,
                           const std::string& figures, const std::string& optional,
                           std::size_t width) {
  const std::string whole = figures + optional;
  if (4 + std::max(DisplayWidth(name), name_width) + 1 + DisplayWidth(whole) <= width)
    return "    " + PadRight(name, std::max(DisplayWidth(name), name_width)) + " " + whole + "\n";
  const std::string under = 6 + DisplayWidth(whole) <= width ? whole : figures;
  return "    " + Ellipsize(name, width - 4) + "\n      " + under + "\n";
}

}  // namespace

void PrintNodePrices(const std::map<std::string, cost::NodePrice>& node_prices, std::size_t width,
                     std::ostream& out) {
  out << "node prices (per GPU-hour, GPU part; how):\n";
  for (const auto& [key, np] : node_prices) {
    out << fmt::format("  {:<18} {:>12} {}\n", key.substr(0, key.find('|')),
                       np.priced ? DisplayMoney(np.gpu_hourly_nanos) : "unpriced",
                       np.pricing_class);
    // How it was priced, one step a line ("region ... from LABEL; class ... from LABEL; ..."),
    // split at the "; " between steps, not at one inside a step's parentheses.
    std::size_t begin = 0;
    int depth = 0;
    for (std::size_t i = 0; i <= np.method.size(); ++i) {
      const char c = i < np.method.size() ? np.method[i] : ';';
      depth += c == '(' ? 1 : c == ')' ? -1 : 0;
      if (c == ';' && depth <= 0 && (i == np.method.size() || np.method[i + 1] == ' ')) {
        out << Wrap(std::string_view(np.method).substr(begin, i - begin), "      ", width);
        begin = i + 2;
      }
    }
  }
}

void PrintChargeback(const report::Report& r, std::string_view title, std::size_t width,
                     std::ostream& out) {
  constexpr std::size_t kFigures = 49;    // indent, and alloc, used, cost, quality with spaces
  constexpr std::size_t kPerDevice = 29;  // " |  " and the per-device used and cost
  std::size_t longest = DisplayWidth("total (the bill)");
  for (const auto& row : r.rows) longest = std::max(longest, DisplayWidth(row.key));
  const bool per_device = width >= kFigures + kPerDevice + 16;
  const std::size_t fixed = kFigures + (per_device ? kPerDevice : 0);
  const std::size_t key = std::min(longest, width > fixed + 8 ? width - fixed : 8);
  auto line = [&](std::string_view name, const std::string& alloc, const std::string& used,
                  const std::string& cost, std::string_view quality, const std::string& pd_used,
                  const std::string& pd_cost) {
    std::string text = fmt::format("  {} {:>11} {:>11} {:>12} {:>9}", PadRight(name, key), alloc,
                                   used, cost, quality);
    if (per_device && !(pd_used.empty() && pd_cost.empty()))
      text += fmt::format("  |  {:>11} {:>12}", pd_used, pd_cost);
    while (!text.empty() && text.back() == ' ') text.pop_back();
    if (!text.empty()) out << text << "\n";
  };
  out << "\n"
      << Wrap(fmt::format("{} (policy {}, idle {})", title, cost::ToString(r.policy),
                          cost::ToString(r.idle_handling)),
              "", width);
  line("", "alloc GPU-h", "used GPU-h", "cost", "quality", "per-device", "per-device");
  line("", "", "", "", "", "used GPU-h", "cost");
  GpuMicros per_device_used = 0;
  Nanos per_device_cost = 0;
  for (const auto& row : r.rows) {
    per_device_used += row.figures.naive_compute_gpu_us;
    per_device_cost += row.figures.naive_cost_nanos;
    line(row.key, GpuHours(row.figures.allocated_gpu_us), GpuHours(row.figures.compute_gpu_us),
         DisplayMoney(row.figures.cost_nanos), ToString(row.figures.quality),
         GpuHours(row.figures.naive_compute_gpu_us), DisplayMoney(row.figures.naive_cost_nanos));
  }
  line("(idle)", GpuHours(r.idle.allocated_gpu_us), "", DisplayMoney(r.idle.cost_nanos), "", "",
       "");
  line("(unattributed)", "", GpuHours(r.unattributed.compute_gpu_us),
       DisplayMoney(r.unattributed.cost_nanos), "", "", "");
  line("total (the bill)", GpuHours(r.total.metered_us), GpuHours(r.total.busy_us),
       DisplayMoney(r.total.device_cost_nanos), "", GpuHours(per_device_used),
       DisplayMoney(per_device_cost));
  if (r.total.device_cost_nanos > 0 && r.total.busy_us > 0)
    out << Wrap(
        fmt::format(
            "the per-device method reports {:.2f}x the GPU time really used and "
            "bills {:.2f}x the real bill",
            static_cast<double>(per_device_used) / static_cast<double>(r.total.busy_us),
            static_cast<double>(per_device_cost) / static_cast<double>(r.total.device_cost_nanos)),
        "  ", width);
}

bool PrintAccuracy(const report::Report& by_container,
                   const std::map<ConsumerRef, sim::Truth>& truth, Micros duration_us,
                   std::size_t width, std::ostream& out) {
  std::map<std::string, const report::Figures*> attributed;
  for (const auto& row : by_container.rows) attributed[row.key] = &row.figures;
  int measured = 0, measured_ok = 0, alloc_exact = 0, total = 0;
  std::int64_t max_alloc_diff = 0;
  // At most one µs per hour row, for each of up to 8 GPUs a container holds.
  const std::int64_t row_rounding_bound = 8 * (duration_us / kMicrosPerHour + 2);
  double worst_measured = 0;
  std::string estimated_lines, failures;
  for (const auto& [ref, t] : truth) {
    ++total;
    auto it = attributed.find(ref.Key());
    report::Figures f = it == attributed.end() ? report::Figures{} : *it->second;
    // The ledger rounds allocation once per device-hour row (< 1 µs each); the truth once.
    const std::int64_t alloc_diff = std::llabs(f.allocated_gpu_us - t.AllocatedUs());
    max_alloc_diff = std::max(max_alloc_diff, alloc_diff);
    if (alloc_diff <= row_rounding_bound) ++alloc_exact;
    double e = RelativeError(static_cast<double>(f.compute_gpu_us), t.compute_gpu_us);
    const double per_device_e =
        RelativeError(static_cast<double>(f.naive_compute_gpu_us), t.compute_gpu_us);
    if (f.quality == Quality::kMeasured) {
      ++measured;
      // A container that used (almost) nothing is judged on absolute error: 2% of nothing.
      bool ok = std::abs(e) <= kMeasuredTolerance ||
                std::abs(f.compute_gpu_us - t.compute_gpu_us) <= 0.0005 * kMicrosPerHour;
      if (ok)
        ++measured_ok;
      else
        failures += fmt::format("    {} {:+.2f}%\n", ref.Key(), 100 * e);
      if (t.compute_gpu_us > 0.0005 * kMicrosPerHour)
        worst_measured = std::max(worst_measured, std::abs(e));
    } else if (f.quality == Quality::kEstimated) {
      // A container name longer than its column gets a line of its own.
      estimated_lines +=
          NameAndFigures(ref.Key(), 26,
                         fmt::format("{:>7} true {:>7} attributed  error {:+.1f}%",
                                     GpuHours(static_cast<GpuMicros>(t.compute_gpu_us)),
                                     GpuHours(f.compute_gpu_us), 100 * e),
                         fmt::format("  (per-device {:+.0f}%)", 100 * per_device_e), width);
      // Each estimate says which rule made it and why nothing measured it.
      std::stringstream rules(f.compute_rule);
      for (std::string rule; std::getline(rules, rule, '+');)
        if (auto why = attribution::ExplainComputeRule(rule); !why.empty())
          estimated_lines += Wrap(fmt::format("{}: {}", rule, why), "      ", width);
    }
  }
  out << "\n"
      << Wrap("Attribution against the simulator's truth (per container, compute GPU-hours)", "",
              width)
      << Wrap(fmt::format("measured:  {}/{} containers within {:.0f}% of the truth (worst {:.2f}%)",
                          measured_ok, measured, 100 * kMeasuredTolerance, 100 * worst_measured),
              "  ", width);
  out << failures;
  out << Wrap("estimated (split by a rule, not measured per container; each says which and why):",
              "  ", width)
      << estimated_lines;
  out << Wrap(fmt::format("allocation: {}/{} containers exact (largest difference {} µs: rows "
                          "are rounded once per device-hour, < 1 µs each)",
                          alloc_exact, total, max_alloc_diff),
              "  ", width);
  // What the estimates above mean for the cost policies, from the bands a real GPU showed.
  out << Wrap(
      fmt::format("cost policies: allocation and memory are exact on real GPUs; compute (and "
                  "hybrid's compute part) is an estimate on shared GPUs, up to {:.0f}% off per "
                  "container time-sliced and {:.0f}% under MPS on an H200 (docs/attribution.md)",
                  100 * MeasuredComputeBand("process-samples").value_or(0),
                  100 * MeasuredComputeBand("mps-thread-share").value_or(0)),
      "  ", width);
  return measured_ok == measured && alloc_exact == total;
}

Status PrintFindings(store::LedgerStore& store, std::size_t width, std::ostream& out) {
  ledger::FindingsQuery all_findings;
  all_findings.window = "all";
  ledger::ReadService reads;
  auto findings =
      ledger::ReadFindingsDocument(store, reads, all_findings, guardrails::DefaultPolicy());
  if (!findings) return findings.error();
  out << "\n"
      << Wrap(fmt::format("Guardrails: {} findings, {} of GPU time taken or held without use",
                          findings->findings.size(), DisplayMoney(findings->total_cost_nanos)),
              "", width);
  for (const guardrails::PricedFinding& p : findings->findings)
    out << fmt::format("  {:<25} {}\n", ToString(p.finding.kind), ToString(p.finding.severity))
        << Wrap(guardrails::Summary(p), "    ", width);
  return Status::Ok();
}

Status PrintTokens(store::LedgerStore& store, std::size_t width, std::ostream& out) {
  auto answer = ledger::ReadTokens(store, nullptr, ledger::TokenRequest{});
  if (!answer) return answer.error();
  if (answer->report.groups.empty()) return Status::Ok();
  auto table = TokensTableFromJson(
      report::TokenReportToJson(answer->report, answer->scope.currency), width);
  if (!table) return table.error();
  out << "\n"
      << Wrap("What a token cost: the serving pods' GPU cost (the allocation policy, shared GPUs "
              "split as above) over the tokens their engines counted (`gpuledger tokens`, "
              "docs/tokens.md):",
              "", width)
      << *table;
  return Status::Ok();
}

Status PrintRightsizing(store::LedgerStore& store, const cost::Catalog& catalog, std::size_t width,
                        std::ostream& out) {
  recommendations::RightsizeQuery all_window;
  all_window.window = "all";
  auto rightsize = ledger::ReadRightsizePlan(store, nullptr, all_window, catalog);
  if (!rightsize) return rightsize.error();
  out << "\n"
      << Wrap(fmt::format("Rightsizing: {} a month could be saved ({})",
                          DisplayMoney(rightsize->plan.total_monthly_saving_nanos),
                          rightsize->plan.total_basis),
              "", width);
  int shown = 0;
  for (const recommendations::WorkloadAdvice& a : rightsize->plan.workloads) {
    const rightsizing::Recommendation& best = a.ranked.front();
    if (best.monthly_saving_nanos <= 0 || ++shown > 5) continue;
    out << Wrap(a.summary.usage.workload, "  ", width)
        << Wrap(fmt::format("{:<13} {:<22} -> {:<9} {:>11}/month  {}", ToString(best.action),
                            recommendations::FormatGpus(a.summary.usage.gpus_held_ppd) + " " +
                                a.summary.usage.gpu_model,
                            best.target, DisplayMoney(best.monthly_saving_nanos), best.confidence),
                "      ", width);
  }
  for (const rightsizing::ConsolidationPlan& p : rightsize->plan.consolidation)
    out << Wrap(fmt::format("or consolidate {} ({}): {} workloads onto {} GPU{}, {}/month",
                            p.gpu_model, p.pool, p.moves.size(), p.gpus_after,
                            p.gpus_after == 1 ? "" : "s", DisplayMoney(p.monthly_saving_nanos)),
                "  ", width);
  return Status::Ok();
}

}  // namespace gpuledger::cli
