#pragma once
// The ingesting server (design section 7): one ledger, one ingest source, the API. Start-up
// is an ordered list of steps, and teardown runs them backwards whatever happens:
//
//   1. open the ledger store (the ingest's own connection; the API opens its own)
//   2. the cluster name: the configured one (kept in the ledger's meta), else the ledger's,
//      else "default"; and the currency: the catalog's must be the ledger's (kept in its meta
//      by the first writer), or the server stops here
//   3. restore the ingestor from the ledger (Ingestor::Start; a state it cannot read stops
//      here, naming the key), observing from the source's start (IngestSource::ObservingSince)
//   4. catch up on the caller's thread when the source does not follow (files) or when only a
//      backfill was asked for; or start following on the source's thread
//   5. serve the API until `stop` (`serve`, given the source's /metrics series)
//   6. stop the source: its last round commits; a last Commit for anything left pending
//   7. close the store
//
// The API itself (server::Api over per-request connections) is whoever `serve` runs.

#include <atomic>
#include <functional>
#include <ostream>
#include <string>

#include "common/result.h"
#include "cost/catalog.h"
#include "cost/price_hours.h"
#include "model/ledger.h"
#include "server/ingest_source.h"

namespace gpuledger::server {

struct IngestServerConfig {
  std::string ledger;                      // a ledger spec (store::OpenLedger)
  std::string cluster;                     // empty: the ledger's meta "cluster", else "default"
  const cost::Catalog* catalog = nullptr;  // required; outlives the run
  std::function<ConsumerInfo(const ConsumerRef&)> describe;       // may be null
  std::function<cost::NodeFacts(const std::string&)> node_facts;  // required
  bool backfill_only = false;  // catch up, print the summary, return (no API)
  bool serve = true;           // a source that does not follow: serve after catching up?
  Micros keep_open_us = 3 * kMicrosPerHour;  // Ingestor::keep_open_us
  Micros retention_us = 6 * kMicrosPerHour;  // Ingestor::retention_us
};

// Serves the API until `stop`, with the source it follows meanwhile (nullptr: none, nothing
// more to ingest): its series appended to /metrics, its health at /api/v1/sources; returns the
// process exit code.
using ServeFn = std::function<int(const IngestSource* following)>;

// Runs the steps above. The summary of a catch-up goes to `out`. Returns serve's exit code (0
// when nothing was served), or the error of the step that failed; errors about the ledger's
// contents name the ledger and the meta key.
Result<int> RunIngestServer(const IngestServerConfig& config, IngestSource& source,
                            const std::atomic<bool>& stop, const ServeFn& serve, std::ostream& out);

}  // namespace gpuledger::server
