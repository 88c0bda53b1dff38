#pragma once
// A simulated cluster run through the path that ships (design section 7, "one engine"): every
// node of the scenario behind the agent's real source interfaces (sim::SimulatedNode), a real
// agent::Collector per node cycling once per simulated interval, its exposition text collected
// on the hour (and at the end) as a scrape would, parsed by the server's parser and fed to the
// server's exact-delta engine (ingest::Ingestor), which prices and writes the ledger. The demo,
// its --expositions replay and the end-to-end tests all read ledgers made this way.

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "common/result.h"
#include "ingest/ingestor.h"
#include "k8s/metadata_view.h"
#include "model/snapshot.h"
#include "sim/simulator.h"

namespace gpuledger::sim {

struct RunOptions {
  // Collections (scrapes) happen where a node's interval ends on a multiple of this, and at the
  // end. It must divide an hour; the simulator cuts every node's intervals on the hour.
  Micros collect_every_us = kMicrosPerHour;
  // When set, every collection is also written there as <node>@<unix-ms>.prom, the layout
  // `server --source files=DIR` replays, with metadata.json (sim::MetadataSnapshotJson).
  std::string expositions_dir;
  // Sees every snapshot as the simulator made it, before the agent does (the naive tally).
  std::function<void(const NodeSnapshot&)> observe;
  // When set and it turns true (SIGINT, SIGTERM), the run stops at the next interval and fails
  // with "interrupted"; what was committed stays in the ledger.
  const std::atomic<bool>* stop = nullptr;
};

struct RunStats {
  std::int64_t collections = 0;
  std::int64_t samples = 0;
  std::int64_t hours_written = 0;
};

// The scenario's metadata as the server would see it from a snapshot file: the same objects,
// parsed by the same code (k8s::ParseMetadataSnapshot).
Result<std::shared_ptr<const k8s::MetadataView>> ScenarioMetadata(const sim::Simulator& simulator);

// Runs the whole scenario. `ingestor` must have been Start()ed (with INT64_MAX: an agent's first
// collection is its baseline, as in a replay of its files; each node's first collection is at
// the scenario's start, before any cycle, so nothing is lost). Commits as it goes and at the end.
Result<RunStats> RunThroughAgents(sim::Simulator& simulator, ingest::Ingestor& ingestor,
                                  const RunOptions& options);

// RunThroughAgents into `store` with an Ingestor of its own whose owners, labels and node labels
// come from ScenarioMetadata, as a replay of the expositions gets them from metadata.json. The
// store's meta "cluster" is set to the scenario's.
Result<RunStats> BuildLedger(sim::Simulator& simulator, store::LedgerStore& store,
                             const cost::Catalog& catalog, const RunOptions& options = {});

}  // namespace gpuledger::sim
