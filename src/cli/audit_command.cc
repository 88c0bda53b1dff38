#include "cli/audit_command.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/exit_code.h"
#include "cli/format.h"
#include "cli/open_ledger.h"
#include "cli/server_client.h"
#include "common/json_text.h"
#include "guardrails/policy_yaml.h"
#include "ledger/findings.h"
#include "ledger/read_service.h"
#include "store/ledger_store.h"

namespace gpuledger::cli {
namespace {

// The findings document, from the ledger or from the server's /api/v1/findings (the same one).
Result<nlohmann::json> FindingsDocumentJson(const AuditOptions& o) {
  if (o.db.empty()) {  // --server, or through the API server (server_client.h)
    std::vector<std::pair<std::string, std::string>> params{{"window", o.since}};
    if (!o.kind.empty()) params.emplace_back("kind", o.kind);
    if (!o.namespace_name.empty()) params.emplace_back("namespace", o.namespace_name);
    if (!o.workload.empty()) params.emplace_back("workload", o.workload);
    if (!o.severity.empty()) params.emplace_back("severity", o.severity);
    if (o.open_only) params.emplace_back("state", "open");
    auto body = GetFromServer(o.Server(), "/api/v1/findings", params);
    if (!body) return body.error();
    // The API's envelope fields are not part of the document.
    auto doc = nlohmann::json::parse(*body, nullptr, false);
    if (doc.is_discarded() || !doc.is_object() || !doc.contains("findings"))
      return Unavailable("the server's /api/v1/findings: not a findings document");
    doc.erase("code");
    doc.erase("status");
    return doc;
  }
  guardrails::Policy policy = guardrails::DefaultPolicy();
  if (!o.policy.empty()) {
    auto loaded = guardrails::LoadPolicyFile(o.policy);
    if (!loaded) return InvalidArgument(loaded.error().message);
    policy = std::move(*loaded);
  }
  ledger::FindingsQuery q;
  q.window = o.since;
  q.namespace_name = o.namespace_name;
  q.workload = o.workload;
  q.open_only = o.open_only;
  auto kind = ledger::ParseKindFilter(o.kind);
  if (!kind) return InvalidArgument("--" + kind.error().message);
  q.kind = *kind;
  auto severity = ledger::ParseSeverityFilter(o.severity);
  if (!severity) return InvalidArgument("--" + severity.error().message);
  q.min_severity = *severity;
  auto store = OpenExistingLedger("--db", o.db);
  if (!store) return store.error();
  ledger::ReadService reads;
  auto doc = ledger::ReadFindingsDocument(**store, reads, q, policy);
  if (!doc) {
    if (doc.error().code == ErrorCode::kInvalidArgument)
      return InvalidArgument("--since: " + doc.error().message);
    return doc.error();
  }
  return ledger::FindingsObject(*doc);
}

std::string Subject(const nlohmann::json& f) {
  const std::string ns = f.value("namespace", "");
  if (ns.empty()) return "(the device)";
  if (ns == kHostNamespace) return f.value("pod", "") + " (no pod)";
  return ns + "/" + f.value("pod", "") + "/" + f.value("container", "");
}

std::string Duration(double seconds) {
  const auto s = static_cast<std::int64_t>(seconds);
  if (s >= 86400) return fmt::format("{}d{}h", s / 86400, s % 86400 / 3600);
  if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, s % 3600 / 60);
  return fmt::format("{}m{:02}s", s / 60, s % 60);
}

// One row per finding within `columns` (the subject, and a kind where it must, cut with "…"
// there, whole in the summary), then its summary, where and since when, its remedy and its
// evidence, wrapped; the totals at the end.
std::string RenderTable(const nlohmann::json& doc, std::size_t columns) {
  std::string out =
      fmt::format("findings {} .. {} (cluster {})\n\n", doc["window"].value("from", ""),
                  doc["window"].value("to", ""), doc.value("cluster", ""));
  // The other columns and their separators: severity, state, duration, GPU-hours, cost.
  constexpr std::size_t kOthers = 1 + 8 + 1 + 8 + 1 + 1 + 8 + 1 + 7 + 1 + 10;
  constexpr std::size_t kMinSubject = 12;
  std::size_t kind_width = 24;
  for (const auto& f : doc["findings"])
    kind_width = std::max(kind_width, DisplayWidth(f.value("kind", "")));
  kind_width = std::min(kind_width, columns - std::min(columns, kOthers + kMinSubject));
  const std::size_t subject_width =
      std::max(kMinSubject, columns - std::min(columns, kOthers + kind_width));
  auto row = [&](std::string_view kind, std::string_view severity, std::string_view state,
                 std::string_view subject, std::string_view duration, std::string_view hours,
                 std::string_view cost) {
    return fmt::format("{} {} {} {} {} {} {}\n", PadRight(kind, kind_width), PadRight(severity, 8),
                       PadRight(state, 8), PadRight(subject, subject_width), PadLeft(duration, 8),
                       PadLeft(hours, 7), PadLeft(cost, 10));
  };
  out += row("KIND", "SEVERITY", "STATE", "SUBJECT", "DURATION", "GPU-H", "COST");
  for (const auto& f : doc["findings"]) {
    out += row(f.value("kind", ""), f.value("severity", ""), f.value("state", ""), Subject(f),
               Duration(f.value("duration_seconds", 0.0)),
               fmt::format("{:.2f}", f.value("gpu_seconds", 0.0) / 3600),
               DisplayMoney(f.value("cost_nanos", Nanos{0})));
    out += Wrap(f.value("summary", ""), "    ", columns);
    out += Wrap(fmt::format("since {} on {}; remedy: {}", f.value("first_seen", ""),
                            f.value("gpu_uuid", ""), f.value("remedy", "")),
                "    ", columns);
    std::string evidence = "evidence:";
    for (const auto& [k, v] : f["evidence"].items())
      evidence += " " + k + "=" + v.get<std::string>();
    out += Wrap(evidence, "    ", columns);
  }
  out += fmt::format("\n{:<24} {:>8} {:>6} {:>9} {:>11}\n", "BY KIND", "FINDINGS", "OPEN",
                     "GPU-HOURS", "COST");
  for (const auto& [kind, k] : doc["by_kind"].items())
    out += fmt::format("{:<24} {:>8} {:>6} {:>9.2f} {:>11}\n", kind, k.value("findings", 0),
                       k.value("open", 0), k.value("gpu_seconds", 0.0) / 3600,
                       DisplayMoney(k.value("cost_nanos", Nanos{0})));
  out += fmt::format("\n{} findings, {:.2f} GPU-hours, {} in all ({})\n", doc["findings"].size(),
                     doc.value("total_gpu_seconds", 0.0) / 3600,
                     DisplayMoney(doc.value("total_cost_nanos", Nanos{0})),
                     doc.value("currency", "USD"));
  return out;
}

}  // namespace

int RunAudit(const AuditOptions& o, std::ostream& out, std::ostream& err) {
  if (Status flags = CheckReadFlags(o.db, o.server, o.format); !flags.ok())
    return Fail(err, flags.error());
  auto doc = FindingsDocumentJson(o);
  if (!doc) return Fail(err, doc.error());
  if (o.format == "json") {
    out << JsonText(*doc, 2) << "\n";
  } else {
    out << RenderTable(*doc, TerminalColumns());
  }
  return 0;
}

}  // namespace gpuledger::cli
