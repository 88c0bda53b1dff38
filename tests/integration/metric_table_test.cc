// The metric table (prometheus/metric_table.h) against the real expositions: the agent's /metrics
// (a Collector over a simulated node with devices, containers, open and resolved findings and the
// kernel-time reader, plus its HTTP listener's counters) and the server's (the API over a ledger,
// its HTTP listener, the scrape loop, the Prometheus source, guardrail Events and the webhook),
// composed as src/cmd/run_server.cc composes them. Every family exported is in the table with its
// type and exporter, every sample carries the table's labels in the table's order, and every
// family of the table is exported by its process.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "agent/collector.h"
#include "common/clock.h"
#include "cost/catalog.h"
#include "http/server.h"
#include "ingest/ingestor.h"
#include "ingest/scrape_loop.h"
#include "io/file_reader.h"
#include "k8s/api_transport.h"
#include "prometheus/exposition_parser.h"
#include "prometheus/http_stats.h"
#include "prometheus/metric_table.h"
#include "server/api.h"
#include "server/finding_events.h"
#include "server/http_server.h"
#include "server/ingest_source.h"
#include "sim/cluster_run.h"
#include "sim/scenario.h"
#include "sim/simulated_node.h"
#include "sim/simulator.h"
#include "sources/kerneltime/kernel_time_reader.h"
#include "sources/procfs/proc_source.h"
#include "store/ledger_store.h"
#include "temp_dir.h"
#include "test_tls/test_tls.h"
#include "webhook/webhook_server.h"

namespace gpuledger {
namespace {

using prometheus::MetricDef;
using prometheus::MetricType;

constexpr Micros kS = kMicrosPerSecond;

// One exclusive node: a granted pod, a pod that uses a GPU it was not granted (an open finding)
// and one that did so for its first 30 minutes (a resolved one). 100 minutes, so the last
// cycle has memory peaks of the current hour and of the one before.
constexpr char kScenario[] = R"(
name: metric-table
start: "2026-11-23T00:00:00Z"
duration: 100m
seed: 7
nodes:
  - {name: n1, gpu_model: A100-80GB, gpus: 2, sharing: exclusive}
workloads:
  - {namespace: ml, name: ok, compute: {profile: constant, duty: 0.3}, memory: {bytes: 4GiB}}
  - {namespace: ml, name: debug, owner_kind: Pod, request: none, uses_gpu: {node: n1, index: 0},
     visible_devices: all, compute: {profile: constant, duty: 0.1}, memory: {bytes: 2GiB}}
  - {namespace: ml, name: brief, owner_kind: Pod, request: none, end: 30m,
     uses_gpu: {node: n1, index: 1}, visible_devices: all,
     compute: {profile: constant, duty: 0.1}, memory: {bytes: 1GiB}}
)";

const MetricDef* Find(std::string_view name) {
  for (const MetricDef& def : prometheus::MetricTable())
    if (def.name == name) return &def;
  return nullptr;
}

// A sample line's metric name and label names in the order written (the parser sorts them).
struct SampleLine {
  std::string name;
  std::vector<std::string> labels;
};

std::vector<SampleLine> SampleLines(const std::string& text) {
  std::vector<SampleLine> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    SampleLine s;
    std::size_t i = line.find_first_of("{ ");
    s.name = line.substr(0, i);
    if (i != std::string::npos && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const std::size_t eq = line.find('=', i);
        s.labels.push_back(line.substr(i, eq - i));
        i = eq + 2;  // past ="
        while (i < line.size() && line[i] != '"') i += line[i] == '\\' ? 2 : 1;
        ++i;  // past the closing quote
        if (i < line.size() && line[i] == ',') ++i;
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

// The family a sample belongs to: its own name, or a histogram's name before the suffix.
const MetricDef* FamilyOf(const std::string& sample) {
  if (const MetricDef* def = Find(sample)) return def;
  for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
    if (!sample.ends_with(suffix)) continue;
    const MetricDef* def = Find(std::string_view(sample).substr(0, sample.size() - suffix.size()));
    if (def != nullptr && def->type == MetricType::kHistogram) return def;
  }
  return nullptr;
}

// Checks `text`, the /metrics of `process` ("agent", "server" or "webhook"), against the table
// and returns the families it declares (and, in `sampled`, those with a sample).
std::set<std::string> CheckExposition(const std::string& text, std::string_view process,
                                      std::set<std::string>* sampled = nullptr) {
  std::set<std::string> families;
  auto parsed = prometheus::ParseExposition(text);  // strict: a family declared twice fails
  EXPECT_TRUE(parsed) << process << ": " << parsed.error().message;
  if (!parsed) return families;
  for (const auto& [name, type] : parsed->types) {
    families.insert(name);
    const MetricDef* def = Find(name);
    if (def == nullptr) {
      ADD_FAILURE() << process << " exports " << name << ", which is not in the metric table";
      continue;
    }
    EXPECT_EQ(prometheus::MetricTypeName(def->type), type) << name;
    const std::vector<std::string> exporters = prometheus::SplitNames(def->exporter);
    EXPECT_NE(std::find(exporters.begin(), exporters.end(), process), exporters.end())
        << name << " is on the " << process << "'s /metrics, but its exporter is \""
        << def->exporter << "\"";
  }
  for (const SampleLine& s : SampleLines(text)) {
    const MetricDef* def = FamilyOf(s.name);
    if (def == nullptr) {
      ADD_FAILURE() << process << ": sample " << s.name << " of no family in the table";
      continue;
    }
    std::vector<std::string> labels = s.labels;
    if (s.name.ends_with("_bucket") && !labels.empty() && labels.back() == "le") labels.pop_back();
    EXPECT_EQ(labels, prometheus::SplitNames(def->labels)) << s.name;
    if (sampled != nullptr) sampled->insert(std::string(def->name));
  }
  return families;
}

// The agent's /metrics after the scenario's last cycle: the collector's exposition and the
// HTTP listener's counters (agent/http_endpoint.cc).
std::string AgentMetrics() {
  auto scenario = sim::ParseScenario(kScenario, "metric-table.yaml");
  EXPECT_TRUE(scenario.ok()) << scenario.error().message;
  if (!scenario.ok()) return "";
  sim::Simulator simulator(*scenario, 60 * kS);
  ManualClock clock(scenario->start_us, scenario->start_us);
  sim::SimulatedNode world("n1");
  procfs::ProcSource procs(world);
  testing::TempDir root("gpuledger-metric-table");
  auto files = MakePosixFileReader(root.path().string());
  kerneltime::KernelTimeReader reader(*files);
  agent::Collector collector(agent::CollectorOptions{"n1", 0, 3 * 3600 * kS, true}, world, procs,
                             &world, &world, clock, &reader);
  simulator.Run([&](const NodeSnapshot& snap) {
    clock.Set(snap.end_us);
    world.Show(snap);
    collector.Cycle();
  });
  const http::ServerStats stats;
  return collector.Exposition()->text +
         prometheus::RenderHttpStats(stats, prometheus::kAgentHttpStats);
}

TEST(MetricTable, AgentExpositionIsTheTablesAgentFamilies) {
  const std::string text = AgentMetrics();
  std::set<std::string> sampled;
  const std::set<std::string> families = CheckExposition(text, "agent", &sampled);
  // Source errors need a failing source; everything else has a sample here.
  const std::set<std::string_view> no_sample = {prometheus::kAgentSourceErrorsTotal.name};
  for (const MetricDef& def : prometheus::MetricTable()) {
    if (def.exporter != prometheus::kExporterAgent) continue;
    EXPECT_TRUE(families.contains(std::string(def.name))) << def.name << " is not exported";
    if (!no_sample.contains(def.name)) {
      EXPECT_TRUE(sampled.contains(std::string(def.name))) << def.name << " has no sample";
    }
  }
}

// Events that are never sent: FindingEvents only counts here.
class NoApiServer : public k8s::ApiTransport {
 public:
  Result<k8s::HttpResponse> Get(const std::string& target, const std::function<bool()>&) override {
    return Unavailable("no API server: " + target);
  }
  Result<k8s::StreamEnd> Stream(const std::string& target,
                                const std::function<bool(std::string_view)>&,
                                const std::function<bool()>&) override {
    return Unavailable("no API server: " + target);
  }
  Result<k8s::HttpResponse> Post(const std::string& target, const std::string&) override {
    return Unavailable("no API server: " + target);
  }
};

// A TSDB with nothing in it.
class EmptyTsdb : public ingest::PrometheusClient {
 public:
  Result<std::vector<ingest::TargetScrape>> Fetch(Micros, Micros) override {
    return std::vector<ingest::TargetScrape>{};
  }
  std::int64_t skipped_not_finite() const override { return 0; }
};

TEST(MetricTable, ServerExpositionIsTheTablesServerFamilies) {
  testing::TempDir dir("gpuledger-metric-table-server");
  const std::string path = (dir.path() / "l.db").string();
  auto scenario = sim::ParseScenario(kScenario, "metric-table.yaml");
  ASSERT_TRUE(scenario.ok()) << scenario.error().message;
  auto store = store::OpenSqliteLedger(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  const cost::Catalog catalog = cost::DefaultCatalog();
  {
    sim::Simulator simulator(*scenario, 600 * kS);
    auto built = sim::BuildLedger(simulator, **store, catalog);
    ASSERT_TRUE(built.ok()) << built.error().message;
  }

  // The API and its HTTP listener (whose counters it appends).
  server::Api api([path] { return store::OpenSqliteLedger(path); }, "");
  auto listener = server::HttpServer::Bind("127.0.0.1:0", api);
  ASSERT_TRUE(listener.ok()) << listener.error().message;
  // `--source scrape`: one round against an agent that does not answer.
  ingest::Ingestor ingestor(**store, catalog, "c1", nullptr, [](const std::string& node) {
    return cost::NodeFacts{node, {}, "", "on-demand"};
  });
  ASSERT_TRUE(ingestor.Start().ok());
  std::ostringstream log;
  ingest::ScrapeLoop loop(
      ingestor, {{"n1:9400"}, 15 * kS, {}},
      [](const std::string& target) -> Result<std::string> {
        return Unavailable("no agent at " + target);
      },
      [&] { return scenario->start_us; }, log);
  loop.RunRound();
  api.AddMetrics([&loop] { return loop.RenderMetrics(); });
  // Guardrail Events and the admission webhook (`--webhook`).
  NoApiServer no_api_server;
  server::FindingEvents events(no_api_server, guardrails::DefaultPolicy(),
                               [&] { return scenario->start_us; });
  api.AddMetrics([&events] { return events.RenderMetrics(); });
  auto certs = webhook::testing::MakeTestCertificates(dir.path().string());
  ASSERT_TRUE(certs) << certs.error().message;
  auto webhook = webhook::WebhookServer::Bind(
      {"127.0.0.1:0", certs->cert_file, certs->key_file, guardrails::DefaultPolicy()});
  ASSERT_TRUE(webhook) << webhook.error().message;
  api.AddMetrics([&webhook] { return (*webhook)->Metrics(); });

  ASSERT_EQ(api.Handle("/api/v1/devices", {}, "").status, 200);
  // The hour's cost is read in the background after a first scrape (server/hour_cost.h).
  server::ApiResponse metrics = api.Handle("/metrics", {}, "");
  for (int i = 0; i < 200 && metrics.body.find("gpuledger_server_hour_cost{") == std::string::npos;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    metrics = api.Handle("/metrics", {}, "");
  }
  ASSERT_EQ(metrics.status, 200);
  std::set<std::string> families = CheckExposition(metrics.body, "server");
  CheckExposition((*webhook)->Metrics(), "webhook");

  // `--source prometheus=URL` in place of the scrape source: its families are the server's too.
  server::PrometheusSourceConfig pc;
  pc.url = "http://tsdb:9090";
  pc.client = std::make_unique<EmptyTsdb>();
  pc.now = [&] { return scenario->start_us; };
  pc.log = &log;
  auto tsdb = server::MakePrometheusSource(std::move(pc));
  families.merge(CheckExposition(tsdb->RenderMetrics(), "server"));

  for (const MetricDef& def : prometheus::MetricTable()) {
    if (def.exporter == prometheus::kExporterAgent) continue;
    EXPECT_TRUE(families.contains(std::string(def.name))) << def.name << " is not exported";
  }
}

}  // namespace
}  // namespace gpuledger
