#include "cli/demo_command.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "attribution/attribute.h"
#include "cli/demo_sections.h"
#include "cli/exit_code.h"
#include "cli/format.h"
#include "cli/report_command.h"
#include "common/text_columns.h"
#include "common/time_util.h"
#include "cost/catalog.h"
#include "cost/price_hours.h"
#include "io/file_util.h"
#include "io/terminal.h"
#include "ledger/findings.h"
#include "ledger/read_service.h"
#include "ledger/rightsize.h"
#include "model/compute_band.h"
#include "server/serve_ledger.h"
#include "sim/cluster_run.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "store/ledger_store.h"

namespace gpuledger::cli {
namespace {

struct Inputs {
  sim::Scenario scenario;
  Micros step_us = 0;
  cost::Catalog catalog;
};

// Everything the user gave is parsed before anything on disk changes.
Result<Inputs> ParseInputs(const DemoOptions& o) {
  Inputs in;
  auto scenario = o.scenario.empty()
                      ? sim::ParseScenario(sim::ExampleScenarioYaml(), "<built-in demo>")
                      : sim::LoadScenarioFile(o.scenario);
  // A scenario file that cannot be read is the user's argument that is wrong: exit 2.
  if (!scenario) return InvalidArgument(scenario.error().message);
  in.scenario = std::move(*scenario);
  if (!o.hours.empty()) {
    auto hours = ParseDuration(
        o.hours.find_first_not_of("0123456789.") == std::string::npos ? o.hours + "h" : o.hours);
    if (!hours || *hours <= 0 || *hours > sim::kMaxScenarioUs ||
        in.scenario.start_us + *hours > kMaxInstantUs)
      return InvalidArgument(
          fmt::format("--hours '{}': expected a positive number of hours, at most {} (ten years)",
                      o.hours, sim::kMaxScenarioUs / kMicrosPerHour));
    in.scenario.duration_us = *hours;
  }
  auto step = ParseDuration(o.step);
  if (!step || *step < kMicrosPerSecond)
    return InvalidArgument(
        fmt::format("--step '{}': expected seconds >= 1 (e.g. 60, 30s, 5m)", o.step));
  in.step_us = *step;
  in.catalog = cost::DefaultCatalog();
  if (!o.catalog.empty()) {
    auto catalog = cost::LoadCatalogFile(o.catalog, in.catalog);
    if (!catalog) return catalog.error();
    in.catalog = std::move(*catalog);
  }
  return in;
}

// An SQLite ledger's files gone, whether there or not.
void RemoveLedger(const std::string& db) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix, ec);
}

// The demo's own ledger, `db` in --out, new: one already there may be someone's, so it is
// replaced only with --force (and says so on `err`).
Result<std::unique_ptr<store::LedgerStore>> OpenFreshLedger(const DemoOptions& o,
                                                            const std::string& db,
                                                            std::ostream& err) {
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec) return InvalidArgument(fmt::format("--out '{}': {}", o.out_dir, ec.message()));
  if (std::filesystem::exists(db, ec)) {
    if (!o.force)
      return InvalidArgument(fmt::format(
          "--out '{}' already holds a ledger ({}); give another --out, or --force to replace it",
          o.out_dir, db));
    err << fmt::format("gpuledger demo: replacing {} (--force)\n", db);
  }
  RemoveLedger(db);
  return store::OpenSqliteLedger(db);
}

// Runs the scenario through the agents and the ingest engine into `store`; on a terminal
// (o.progress) says on `err` how many simulated hours are done, rewritten in place as they pass.
Result<sim::RunStats> Simulate(const DemoOptions& o, sim::Simulator& simulator,
                               store::LedgerStore& store, const cost::Catalog& catalog,
                               const std::atomic<bool>& stop, std::ostream& err) {
  const std::int64_t total_hours =
      (simulator.scenario().duration_us + kMicrosPerHour - 1) / kMicrosPerHour;
  std::int64_t hours_done = -1;
  auto progress = [&](Micros at_us) {
    const std::int64_t done = (at_us - simulator.scenario().start_us) / kMicrosPerHour;
    if (!o.progress || done == hours_done) return;
    hours_done = done;
    err << fmt::format("\rsimulating through the agents and the ingest engine: {} of {} hours",
                       std::min(done, total_hours), total_hours)
        << std::flush;
  };
  sim::RunOptions run;
  run.expositions_dir = o.expositions;
  run.stop = &stop;
  run.observe = [&](const NodeSnapshot& snap) { progress(snap.end_us); };
  auto ran = sim::BuildLedger(simulator, store, catalog, run);
  if (o.progress && hours_done >= 0) err << "\n";
  return ran;
}

// Each node of the scenario priced from its labels (cost::ResolvePrice), by "node|model".
Result<std::map<std::string, cost::NodePrice>> NodePrices(const sim::Simulator& simulator,
                                                          const cost::Catalog& catalog) {
  auto metadata = sim::ScenarioMetadata(simulator);
  if (!metadata) return metadata.error();
  std::shared_ptr<const k8s::MetadataView> view = *metadata;
  std::map<std::string, cost::NodePrice> prices;
  for (const sim::NodeSpec& node : simulator.scenario().nodes)
    prices.try_emplace(
        node.name + "|" + node.gpu_model,
        cost::ResolvePrice(catalog, cost::NodeFacts{node.name, view->NodeLabels(node.name), "", ""},
                           node.gpu_model));
  return prices;
}

}  // namespace

int RunDemo(const DemoOptions& o, const std::atomic<bool>& stop, std::ostream& out,
            std::ostream& err) {
  const auto started = std::chrono::steady_clock::now();
  const std::size_t width = TerminalColumns();  // every line fits it
  auto inputs = ParseInputs(o);
  if (!inputs) return Fail(err, inputs.error());
  const std::string db = (std::filesystem::path(o.out_dir) / "gpuledger.db").string();
  auto store = OpenFreshLedger(o, db, err);
  if (!store) return Fail(err, store.error());

  const sim::Scenario& scenario = inputs->scenario;
  sim::Simulator simulator(scenario, inputs->step_us);
  // How each node is priced, shown below: the ledger's own prices come from the ingest engine
  // through the same facts.
  auto node_prices = NodePrices(simulator, inputs->catalog);
  if (!node_prices) {
    err << "error: " << node_prices.error().message << "\n";
    return 1;
  }
  out << Wrap(
      fmt::format(
          "gpuledger demo: scenario '{}', {} nodes, {} workloads, {} from {}, step {}s",
          scenario.name, scenario.nodes.size(), scenario.workloads.size(),
          fmt::format("{:.0f}h", static_cast<double>(scenario.duration_us) / kMicrosPerHour),
          FormatRfc3339(scenario.start_us), inputs->step_us / kMicrosPerSecond),
      "", width);
  out.flush();
  auto ran = Simulate(o, simulator, **store, inputs->catalog, stop, err);
  if (!ran) {
    // A week cut short is not a ledger to read as one (issue 58): it goes, and says so.
    store->reset();
    RemoveLedger(db);
    err << "error: " << ran.error().message << "\n"
        << fmt::format("gpuledger demo: removed the unfinished ledger {}\n", db);
    return stop.load() ? 130 : 1;  // 128 + SIGINT, as a shell reports an interrupted command
  }
  (void)(*store)->PutMeta("scenario", scenario.name);
  (void)(*store)->PutMeta("currency", inputs->catalog.currency);
  // The demo wrote the ledger, so it keeps its days summed, as a server's keeper does: readers
  // (the reports below, `gpuledger report`) never write, and find them kept.
  server::KeepEndedDays(**store, server::ServeLedgerOptions{}.keep_days,
                        TheSystemClock().Now().wall_us, stop, err);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  out << Wrap(fmt::format("ledger: {} ({} device-hours written from {} agent collections "
                          "through the ingest engine) built in {:.1f}s",
                          db, ran->hours_written, ran->collections, seconds),
              "", width);
  if (!o.expositions.empty())
    out << Wrap(fmt::format("expositions: {} (replay: gpuledger server --source files={} "
                            "--ledger sqlite:PATH --backfill-only)",
                            o.expositions, o.expositions),
                "", width);
  PrintNodePrices(*node_prices, width, out);

  // Chargeback by namespace and by team, with the per-device method beside it.
  for (const auto& [by, title] :
       {std::pair<std::string, std::string>{"namespace", "Chargeback by namespace"},
        {"label:team", "Chargeback by team (label team, inherited from the namespace)"}}) {
    ReportOptions ro;
    ro.group_by = by;
    auto r = BuildReportFromStore(**store, ro);
    if (!r) {
      err << "error: " << r.error().message << "\n";
      return 1;
    }
    PrintChargeback(*r, title, width, out);
  }

  // Accuracy against the simulator's truth, per container.
  ReportOptions by_container;
  by_container.group_by = "container";
  auto rc = BuildReportFromStore(**store, by_container);
  if (!rc) {
    err << "error: " << rc.error().message << "\n";
    return 1;
  }
  const bool accurate = PrintAccuracy(*rc, simulator.truth(), scenario.duration_us, width, out);

  Status shown = PrintFindings(**store, width, out);
  if (shown) shown = PrintTokens(**store, width, out);
  if (shown) shown = PrintRightsizing(**store, inputs->catalog, width, out);
  if (!shown) {
    err << "error: " << shown.error().message << "\n";
    return 1;
  }

  if (!o.truth.empty()) {
    if (Status s = WriteFile(o.truth, sim::TruthCsv(simulator.truth(), /*with_activity=*/true));
        !s.ok()) {
      err << "error: --truth: " << s.error().message << "\n";
      return 1;
    }
    out << Wrap("truth written to " + o.truth, "", width);
  }
  out << "\nnext:\n"
      << Wrap(fmt::format("gpuledger report --db {} --by label:team --policy compute", db), "  ",
              width)
      << Wrap(fmt::format("gpuledger audit --db {} --since all", db), "  ", width)
      << Wrap(fmt::format("gpuledger rightsize --db {} --window all", db), "  ", width);
  const int code = accurate ? 0 : 1;
  if (o.no_serve) return code;
  store->reset();  // the server opens its own connection
  out << "\n";
  server::ServeLedgerOptions serve;
  serve.db = db;
  serve.listen = o.listen;
  serve.fallback_any_port = true;
  if (Status served = server::ServeLedger(std::move(serve), stop, out, err); !served.ok()) {
    err << "error: " << served.error().message << "\n";
    return code != 0 ? code : ExitCodeFor(served.error());
  }
  return code;
}

}  // namespace gpuledger::cli
