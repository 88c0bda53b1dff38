#pragma once
// Where the server's ingested samples come from (design section 7, docs/ingest.md): `scrape`
// (the agents over HTTP), `files=DIR` (exposition snapshots, replayed), `prometheus=URL` (a
// TSDB's raw samples, caught up hour by hour and then followed). The ingest server
// (server/ingest_server.h) drives every source the same way:
//
//   ObservingSince(store, cluster)  before the ingestor is restored
//   CatchUp(...)               backfill on the caller's thread (files, --backfill-only)
//   Start(...) ... Stop()      follow on the source's own thread while the API serves
//
// Every round a source runs ends with Ingestor::Commit, so when Stop() returns everything it
// fed is in the ledger. A source is used by one server at a time; RenderMetrics is thread-safe.

#include <atomic>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "common/result.h"
#include "ingest/ingestor.h"
#include "ingest/prometheus_source.h"
#include "ingest/replay_files.h"
#include "ingest/scrape_loop.h"
#include "ingest/source_health.h"
#include "store/ledger_store.h"

namespace gpuledger::server {

class IngestSource {
 public:
  virtual ~IngestSource() = default;

  // When this source starts to watch agents, for a fresh ledger (Ingestor::Start): agents that
  // started after it count from their start. May read what the source keeps in the ledger for
  // `cluster` (a cursor); a value it cannot read is an error naming the key, never a silent
  // restart.
  virtual Result<Micros> ObservingSince(store::LedgerStore& store, const std::string& cluster) = 0;

  // Ingests what is there now, on the caller's thread, and commits: every snapshot (files),
  // everything up to now (prometheus), one round (scrape). Returns a one-line summary.
  // Returns early, with what it did, once `stop` is set.
  virtual Result<std::string> CatchUp(ingest::Ingestor& ingestor, store::LedgerStore& store,
                                      const std::atomic<bool>& stop) = 0;

  // Whether the source has new data to follow after catching up (scrape, prometheus: yes;
  // files: no, a replay is done when its files are).
  virtual bool follows() const = 0;
  // Follows on the source's own thread until Stop(); errors are logged (once per change of
  // state) and the next round retries. `ingestor` and `store` must outlive Stop().
  virtual void Start(ingest::Ingestor& ingestor, store::LedgerStore& store) = 0;
  // Ends the rounds and waits for them: the last one is committed. Idempotent.
  virtual void Stop() = 0;

  // The source's own series for the server's /metrics (empty when none).
  virtual std::string RenderMetrics() const { return {}; }
  // How its targets fared (/api/v1/sources); a replay has none. Thread-safe.
  virtual ingest::SourcesHealth Health() const { return {}; }
};

// `--source scrape`: the agents' /metrics every interval (ingest::ScrapeLoop: concurrent
// fetches with a per-target timeout, fed in target order). Agents are watched from `now()`
// at start. `fetch` defaults to ingest::FetchMetrics within options.timeout_us, over `access`.
struct ScrapeSourceConfig {
  ingest::ScrapeOptions options;
  ingest::ScrapeAccess access;
  ingest::Fetcher fetch;        // null: FetchMetrics
  std::function<Micros()> now;  // wall clock, µs since the epoch
  std::ostream* log = nullptr;  // required
};
std::unique_ptr<IngestSource> MakeScrapeSource(ScrapeSourceConfig config);

// `--source files=DIR`: replays DIR's snapshots once (ingest::ReplayFiles), progress to
// `progress` when given; a snapshot stamped after `not_after_us` (now, with a skew) is refused.
// A replay knows only its files: no agent or engine counts from its start. `engines`: the pods
// whose DIR/engines snapshots are booked as tokens (from DIR/metadata.json's annotations).
std::unique_ptr<IngestSource> MakeFilesSource(std::string dir, std::string ledger_display,
                                              std::ostream* progress,
                                              Micros not_after_us = kMaxInstantUs,
                                              std::vector<ingest::EngineTarget> engines = {});

// `--source prometheus=URL`: raw counter samples hour by hour from a Prometheus-compatible
// HTTP API. A cursor in the ledger's meta ("cluster/<name>/prometheus_cursor", µs since the
// epoch) says how far the cluster's ingest got; a fresh ledger starts `since_us` before now.
// Samples younger than 5 s are left for the next round (a TSDB may still be ingesting them);
// following catches up every 30 s.
struct PrometheusSourceConfig {
  std::string url;
  std::unique_ptr<ingest::PrometheusClient> client;
  Micros since_us = 24 * kMicrosPerHour;
  std::string ledger_display;
  std::function<Micros()> now;              // wall clock, µs since the epoch
  std::ostream* progress = nullptr;         // backfill progress (a terminal), when given
  std::ostream* log = nullptr;              // required: follow-mode errors
  const std::atomic<bool>* stop = nullptr;  // ends a long catch-up early; may be null
  // Fill rows without activity from dcgm-exporter's series in the same Prometheus
  // (ingest::FillActivityFromPrometheusDcgm; docs/ingest.md).
  bool dcgm_from_prometheus = false;
};
inline constexpr std::string_view kPrometheusCursorKey = "prometheus_cursor";
std::unique_ptr<IngestSource> MakePrometheusSource(PrometheusSourceConfig config);

}  // namespace gpuledger::server
