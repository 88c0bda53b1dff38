#pragma once
// The server side of ingestion (design section 7): a CounterLedger whose rows are priced and
// written to a ledger store, with its state kept in the store for restarts; the `scrape` loop
// that feeds it from agents over HTTP; the `files=DIR` replay.
//
// Crash safety: each Commit() writes the touched hours first and the engine's state second
// (PutMeta "ingest_state"). A crash between the two leaves a state older than the rows; after
// Restore the same samples are fed again from the older last values, and the rows they produce
// replace the written ones with the same figures: no hour lost, none counted twice.

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "cost/catalog.h"
#include "ingest/counter_ledger.h"
#include "prometheus/exposition_parser.h"
#include "cost/price_hours.h"
#include "store/ledger_store.h"

namespace gpuledger::ingest {

inline constexpr std::string_view kStateMetaKey = "ingest_state";

// Rows the engine produced, priced and written; the engine's state saved beside them.
// `store` and `catalog` must outlive it. Not thread-safe; one owner (the ingest thread).
class Ingestor {
 public:
  Ingestor(store::LedgerStore& store, const cost::Catalog& catalog, std::string cluster,
           std::function<ConsumerInfo(const ConsumerRef&)> describe,
           std::function<cost::NodeFacts(const std::string& node)> node_facts);

  // Restores the engine from the store's "ingest_state" (none: a fresh start). A state this
  // build cannot read is an error naming the key (the operator decides; nothing is dropped).
  // `observing_since_us`: when this ledger started to watch (see CounterLedger::ObserveSince);
  // used only on a fresh start, a restored state keeps its own.
  Status Start(Micros observing_since_us = INT64_MAX);
  void Feed(const TargetScrape& scrape) { ledger_.Feed(scrape); }
  // Writes every touched hour, forgets hours older than `keep_open_us` before the newest
  // sample, and saves the state.
  Status Commit();

  CounterLedger& ledger() { return ledger_; }
  std::int64_t hours_written() const { return hours_written_; }

  Micros keep_open_us = 3 * kMicrosPerHour;

 private:
  store::LedgerStore& store_;
  const cost::Catalog& catalog_;
  std::string cluster_;
  std::function<cost::NodeFacts(const std::string&)> node_facts_;
  CounterLedger ledger_;
  std::int64_t hours_written_ = 0;
};

// GET http://<target>/metrics (gzip accepted) within `timeout_us`; the body as text, or an
// error naming the target (connection refused, HTTP status, corrupt gzip).
Result<std::string> FetchMetrics(const std::string& target, Micros timeout_us);

using Fetcher = std::function<Result<std::string>(const std::string& target)>;

struct ScrapeOptions {
  std::vector<std::string> targets;  // "host:port"; the instance name is the target as given
  Micros interval_us = 15 * kMicrosPerSecond;
  // When set, asked before every round for the current targets (e.g. the addresses behind the
  // agents' Service); an error keeps the last list (logged once per change of state).
  std::function<Result<std::vector<std::string>>()> discover;
};

// The `--source scrape` loop: every interval, scrape each target (strict parse: a malformed
// exposition fails that target's scrape and keeps its previous state), feed, Commit. Failures
// are counted per target and logged once per state change (down / back up).
class ScrapeLoop {
 public:
  // `ingestor` must outlive the loop; `now` is the clock (µs since the epoch).
  ScrapeLoop(Ingestor& ingestor, ScrapeOptions options, Fetcher fetch,
             std::function<Micros()> now, std::ostream& log);
  ~ScrapeLoop();

  void Start();      // runs rounds on its own thread until Stop()
  void Stop();
  void RunRound();   // one round on the caller's thread (tests)

  // gpuledger_server_scrape_* series for the server's /metrics. Thread-safe.
  std::string RenderMetrics() const;
  std::int64_t rounds() const { return rounds_.load(); }

 private:
  Ingestor& ingestor_;
  ScrapeOptions options_;
  Fetcher fetch_;
  std::function<Micros()> now_;
  std::ostream& log_;
  std::thread thread_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::atomic<std::int64_t> rounds_{0};
  mutable std::mutex metrics_mu_;
  std::map<std::string, std::int64_t> errors_;   // target -> failed scrapes
  std::map<std::string, bool> up_;               // target -> last scrape ok
  std::int64_t commit_errors_ = 0;
  std::vector<std::string> targets_;             // guarded by metrics_mu_
  std::string discovery_error_;                  // guarded by metrics_mu_
};

// `files=DIR`: exposition snapshots named <instance>@<unix-ms>.prom or .prom.gz (the instance
// may not contain '@' or '/'), replayed in time order (ties by name) through the ingestor,
// committed every `commit_every` files and at the end. Malformed files fail the replay with
// the file name and line. Progress goes to `progress` when given.
struct ReplayStats {
  std::int64_t files = 0;
  std::int64_t samples = 0;
};
Result<ReplayStats> ReplayFiles(const std::string& dir, Ingestor& ingestor,
                                std::ostream* progress = nullptr, int commit_every = 500);

}  // namespace gpuledger::ingest
