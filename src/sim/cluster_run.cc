#include "sim/cluster_run.h"

#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "agent/collector.h"
#include "common/clock.h"
#include "io/file_util.h"
#include "k8s/metadata_snapshot.h"
#include "prometheus/exposition_parser.h"
#include "sim/engine_exposition.h"
#include "sim/metadata_snapshot_writer.h"
#include "sim/simulated_node.h"
#include "sources/procfs/proc_source.h"

namespace gpuledger::sim {
namespace {

// One node: its world in memory and the real agent reading it.
struct Node {
  explicit Node(const std::string& name, const Clock& clock)
      : world(name),
        procs(world),
        collector(agent::CollectorOptions{name, 0, 3600 * kMicrosPerSecond, true}, world, procs,
                  &world, &world, clock) {}
  sim::SimulatedNode world;
  procfs::ProcSource procs;
  agent::Collector collector;
};

// An inference pod (a workload with `inference:`): its engine, scraped with its node's agent
// from its start until a collection after its end has read its last counts.
struct EnginePod {
  ConsumerRef ref;
  const InferenceSpec* spec = nullptr;
  Micros start_us = 0, end_us = 0;
};

std::map<std::string, std::vector<EnginePod>> EnginePodsByNode(const Scenario& scenario) {
  std::map<std::string, std::vector<EnginePod>> out;
  for (const WorkloadSpec& w : scenario.workloads) {
    if (!w.inference) continue;
    for (const PodPlan& pod : w.pods)
      if (pod.node >= 0)
        out[scenario.nodes[static_cast<std::size_t>(pod.node)].name].push_back(
            {ConsumerRef{w.namespace_name, pod.name, PodUid(pod.uid), w.container},
             &*w.inference, scenario.start_us + w.start_us, scenario.start_us + w.end_us});
  }
  return out;
}

}  // namespace

Result<std::shared_ptr<const k8s::MetadataView>> ScenarioMetadata(const sim::Simulator& simulator) {
  auto tables = k8s::ParseMetadataSnapshot(
      sim::MetadataSnapshotJson(simulator.scenario(), simulator.consumers()), "scenario metadata");
  if (!tables) return tables.error();
  return std::make_shared<const k8s::MetadataView>(std::move(*tables));
}

Result<RunStats> RunThroughAgents(sim::Simulator& simulator, ingest::Ingestor& ingestor,
                                  const RunOptions& options) {
  const sim::Scenario& scenario = simulator.scenario();
  if (options.collect_every_us <= 0 || kMicrosPerHour % options.collect_every_us != 0)
    return InvalidArgument("collect_every must divide an hour");
  const bool write = !options.expositions_dir.empty();
  if (write) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(options.expositions_dir) / "engines",
                                        ec);
    if (ec) return IoError(fmt::format("{}: {}", options.expositions_dir, ec.message()));
    Status s =
        WriteFile((std::filesystem::path(options.expositions_dir) / "metadata.json").string(),
                  sim::MetadataSnapshotJson(scenario, simulator.consumers()));
    if (!s.ok()) return s.error();
  }
  // The agents' clock is simulated time: the end of the interval each one is cycling.
  ManualClock clock(scenario.start_us, scenario.start_us);
  std::map<std::string, std::unique_ptr<Node>> nodes;
  for (const auto& n : scenario.nodes) nodes[n.name] = std::make_unique<Node>(n.name, clock);
  RunStats stats;
  std::map<std::string, Micros> last_collected;
  Status failed;
  // Engines that start in the scenario are watched from its start: their whole lives count.
  ingestor.tokens().ObserveSince(scenario.start_us);
  const auto engines = EnginePodsByNode(scenario);
  // An inference engine, scraped as the server scrapes the pods that opt in.
  auto scrape_engine = [&](const EnginePod& e, Micros at) -> Status {
    at -= at % 1000;  // as collect's
    auto truth = simulator.truth().find(e.ref);
    const EngineCounts counts =
        EngineCountsOf(*e.spec, truth != simulator.truth().end() ? truth->second : Truth{});
    const std::string text = EngineExposition(*e.spec, counts, e.start_us);
    if (write) {  // named as a replay reads them (ingest/replay_files.h)
      const auto file = std::filesystem::path(options.expositions_dir) / "engines" /
                        fmt::format("{}.{}@{}.prom", e.ref.namespace_name, e.ref.pod, at / 1000);
      if (Status s = WriteFile(file.string(), text); !s.ok()) return s;
    }
    auto parsed = prometheus::ParseExposition(text);
    if (!parsed)
      return Internal(fmt::format("engine of {}: {}", e.ref.Key(), parsed.error().message));
    ingestor.FeedEngine({e.ref, e.spec->model, at, std::move(parsed->samples)});
    return Status::Ok();
  };
  // The node's engines with each collection: from their start until one after their end has
  // read their last counts.
  auto scrape_engines = [&](const std::string& name, Micros at) -> Status {
    auto it = engines.find(name);
    if (it == engines.end()) return Status::Ok();
    for (const EnginePod& e : it->second)
      if (at >= e.start_us && at <= e.end_us + options.collect_every_us)
        if (Status s = scrape_engine(e, at); !s.ok()) return s;
    return Status::Ok();
  };
  // And as each starts (the node's intervals are cut there): a server scrapes a new pod within
  // a round, so an engine that says no start time (TGI, Triton) loses no token before its first.
  auto scrape_started = [&](const std::string& name, Micros at) -> Status {
    auto it = engines.find(name);
    if (it == engines.end() || at % options.collect_every_us == 0) return Status::Ok();
    for (const EnginePod& e : it->second)
      if (e.start_us == at)
        if (Status s = scrape_engine(e, at); !s.ok()) return s;
    return Status::Ok();
  };
  auto collect = [&](const std::string& name, Node& node, Micros at) -> Status {
    at -= at % 1000;  // file names carry milliseconds: feed what a replay will read
    const std::string text = node.collector.Exposition()->text;
    if (write) {
      const auto file = std::filesystem::path(options.expositions_dir) /
                        fmt::format("{}@{}.prom", name, at / 1000);
      if (Status s = WriteFile(file.string(), text); !s.ok()) return s;
    }
    auto parsed = prometheus::ParseExposition(text);
    if (!parsed)
      return InvalidArgument(fmt::format("node {} at {}: {}", name, at, parsed.error().message));
    stats.samples += static_cast<std::int64_t>(parsed->samples.size());
    ingestor.Feed(ingest::TargetScrape{name, at, std::move(parsed->samples)});
    ++stats.collections;
    last_collected[name] = at;
    return scrape_engines(name, at);
  };
  // A baseline before any cycle: the agents' counters start at zero with the scenario.
  for (auto& [name, node] : nodes)
    if (Status s = collect(name, *node, scenario.start_us); !s.ok()) return s.error();
  Micros committed_hour = HourStart(scenario.start_us);
  simulator.Run([&](const NodeSnapshot& snap) {
    if (!failed.ok()) return;
    if (options.stop != nullptr && options.stop->load()) {
      failed = Unavailable("interrupted: the simulation stopped before the scenario's end");
      return;
    }
    if (options.observe) options.observe(snap);
    auto it = nodes.find(snap.node);
    if (it == nodes.end()) return;
    clock.Set(snap.end_us);
    it->second->world.Show(snap);
    it->second->collector.Cycle();
    if (snap.end_us % options.collect_every_us == 0)
      failed = collect(snap.node, *it->second, snap.end_us);
    else
      failed = scrape_started(snap.node, snap.end_us);
    // Commit once per simulated hour: rows replace, so how often changes nothing but memory.
    if (failed.ok() && HourStart(snap.end_us) > committed_hour) {
      committed_hour = HourStart(snap.end_us);
      failed = ingestor.Commit();
    }
  });
  if (!failed.ok()) return failed.error();
  for (auto& [name, node] : nodes) {
    const Micros at = std::max(scenario.start_us + 1, node->collector.Exposition()->at_us);
    if (last_collected[name] < at)
      if (Status s = collect(name, *node, at); !s.ok()) return s.error();
  }
  if (Status s = ingestor.Commit(); !s.ok()) return s.error();
  stats.hours_written = ingestor.hours_written();
  return stats;
}

Result<RunStats> BuildLedger(sim::Simulator& simulator, store::LedgerStore& store,
                             const cost::Catalog& catalog, const RunOptions& options) {
  auto view = ScenarioMetadata(simulator);
  if (!view) return view.error();
  const std::string& cluster = simulator.scenario().cluster;
  if (Status s = store.PutMeta("cluster", cluster); !s.ok()) return s.error();
  ingest::Ingestor ingestor(
      store, catalog, cluster, [v = *view](const ConsumerRef& r) { return v->Describe(r); },
      [v = *view](const std::string& node) {
        return cost::NodeFacts{node, v->NodeLabels(node), "", ""};
      });
  if (Status s = ingestor.Start(); !s.ok()) return s.error();
  return RunThroughAgents(simulator, ingestor, options);
}

}  // namespace gpuledger::sim
