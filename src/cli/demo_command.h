#pragma once
// `gpuledger demo`: simulate a cluster, run it through the path that ships (a real agent
// Collector per simulated node, its exposition text, the server's ingest engine and ledger:
// sim::RunThroughAgents), print the chargeback beside what the naive per-device method
// would say, and check every container's figures against the simulator's truth.

#include <atomic>
#include <ostream>
#include <string>

namespace gpuledger::cli {

struct DemoOptions {
  std::string scenario;     // empty: the built-in mixed cluster
  std::string hours;        // empty: the scenario's duration
  std::string step = "60";  // seconds (or a duration: "30s", "5m")
  std::string out_dir = "gpuledger-demo";
  std::string truth;        // CSV of the simulator's true per-container figures
  std::string expositions;  // also write every node's collections here (files=DIR)
  std::string catalog;      // price catalog YAML on top of the built-in one
  bool no_serve = false;    // else the ledger's API is served until Ctrl-C
  bool force = false;       // replace a ledger already in out_dir (else refused: exit 2)
  bool progress = false;    // say on `err` how far the simulation is (a terminal watches)
  std::string listen = "127.0.0.1:8080";
};

int RunDemo(const DemoOptions& options, const std::atomic<bool>& stop, std::ostream& out,
            std::ostream& err);

}  // namespace gpuledger::cli
