#pragma once
// The server side of ingestion (design section 7): a CounterLedger whose rows are priced and
// written to a ledger store, with its state kept in the store for restarts; the `scrape` loop
// that feeds it from agents over HTTP; the `files=DIR` replay.
//
// Crash safety: each Commit() writes the touched hours first and the engine's state second. A
// crash between the two leaves a state older than the rows; after Restore the same samples are
// fed again from the older last values, and the rows they produce replace the written ones
// with the same figures: no hour lost, none counted twice.
//
// The state is kept in the ledger's meta in parts, "ingest_state/engine",
// "ingest_state/instance/<name>" and "ingest_state/hour/<hour_us>/<gpu>" (CounterLedger::
// PendingState), and a commit writes only the parts that changed, in one transaction so the
// parts always agree. Ledgers written by earlier builds hold the whole state in one key,
// "ingest_state": it is read once and replaced by parts at the first commit (in that same
// transaction). When both exist the single key is the newer (only an earlier build writes it,
// and it ignores the parts), so it wins.

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
#include "cost/price_hours.h"
#include "ingest/counter_ledger.h"
#include "ingest/finding_ingest.h"
#include "prometheus/exposition_parser.h"
#include "prometheus/gzip.h"
#include "store/ledger_store.h"

namespace gpuledger::ingest {

inline constexpr std::string_view kStateMetaKey = "ingest_state";      // earlier builds: whole
inline constexpr std::string_view kStatePartPrefix = "ingest_state/";  // this one: in parts

// Raw and inflated scrape bodies are capped: a target's body is data, and a few kilobytes that
// inflate to gigabytes (a gzip bomb), or an endless body, must fail that target, not the
// server. 64 MiB is ~40x a real agent's exposition (1.7 MB with 200 containers).
inline constexpr std::size_t kMaxScrapeBodyBytes = 64u << 20;

// Rows the engine produced, priced and written; the engine's state saved beside them.
// `store` and `catalog` must outlive it. Not thread-safe; one owner (the ingest thread).
class Ingestor {
 public:
  Ingestor(store::LedgerStore& store, const cost::Catalog& catalog, std::string cluster,
           std::function<ConsumerInfo(const ConsumerRef&)> describe,
           std::function<cost::NodeFacts(const std::string& node)> node_facts);

  // Restores the engine from the store's state (none: a fresh start). A state this build cannot
  // read is an error naming the meta key (the operator decides; nothing is dropped).
  // `observing_since_us`: when this ledger started to watch (see CounterLedger::ObserveSince);
  // used only on a fresh start, a restored state keeps its own.
  Status Start(Micros observing_since_us = INT64_MAX);
  // The scrape's counters to the engine, its guardrail findings to the findings' history.
  void Feed(const TargetScrape& scrape) {
    ledger_.Feed(scrape);
    findings_.Feed(scrape);
  }
  // Writes every touched hour, forgets hours older than `keep_open_us` before the newest
  // sample, prunes agents silent for `retention_us`, saves the state parts that changed, and
  // writes the findings that changed (those of agents silent for `retention_us` resolved).
  Status Commit();

  CounterLedger& ledger() { return ledger_; }
  std::int64_t hours_written() const { return hours_written_; }
  std::int64_t state_parts_written() const { return state_parts_written_; }

  Micros keep_open_us = 3 * kMicrosPerHour;
  // Agents (instances) not scraped, and their devices and attribution entries not seen, for
  // this long before the newest sample are dropped from the state (CounterLedger::Prune).
  // Twice the keep-open window: an agent silent for longer can only add to the newest
  // keep-open hours when it comes back, and as a new agent it does nearly that (counted from
  // its start, the older part dropped as late either way); the margin covers a server that was
  // itself down for a while. Memory is then the agents of the last 6 h, whatever the churn.
  // Never less than keep_open_us.
  Micros retention_us = 6 * kMicrosPerHour;
  // Runs on the touched hours before they are priced and written (the Prometheus source fills
  // dcgm-exporter activity there); an error leaves them touched for the next commit.
  std::function<Status(std::vector<LedgerHour>&)> enrich;

 private:
  store::LedgerStore& store_;
  const cost::Catalog& catalog_;
  std::string cluster_;
  std::function<cost::NodeFacts(const std::string&)> node_facts_;
  CounterLedger ledger_;
  FindingIngest findings_;
  std::int64_t hours_written_ = 0;
  std::int64_t state_parts_written_ = 0;
  // Migrating from the single key: erased, with every stored part not rewritten, at the first
  // commit.
  bool migrate_ = false;
  std::vector<std::string> stale_parts_;
};

// GET http://<target>/metrics (gzip accepted) within `timeout_us` for the whole exchange; the
// body as text, or an error naming the target (connection refused, HTTP status, corrupt gzip,
// a body, raw or inflated, past `max_bytes`, no complete answer within the timeout).
Result<std::string> FetchMetrics(const std::string& target, Micros timeout_us,
                                 std::size_t max_bytes = kMaxScrapeBodyBytes);

// Called from the loop's fetch threads, several at once: must be thread-safe, and must return
// (FetchMetrics does, within its timeout); one that outlives the loop's timeout is abandoned
// for its round, and waited for when the loop stops.
using Fetcher = std::function<Result<std::string>(const std::string& target)>;

struct ScrapeOptions {
  std::vector<std::string> targets;  // "host:port"; the instance name is the target as given
  Micros interval_us = 15 * kMicrosPerSecond;
  // When set, asked before every round for the current targets (e.g. the addresses behind the
  // agents' Service); an error keeps the last list (logged once per change of state).
  std::function<Result<std::vector<std::string>>()> discover;
  // A target with no answer this long after its fetch started fails for the round; the round
  // goes on without it. A target whose previous fetch still runs is not fetched again (it
  // fails the round too), so a hung agent holds one thread, never one per round.
  Micros timeout_us = 10 * kMicrosPerSecond;
  // Fetches in flight at once (not counting abandoned ones): a round of N targets takes about
  // ceil(N / max_concurrent) answer times, at most that many timeouts.
  int max_concurrent = 16;
};

// The `--source scrape` loop: every interval, fetch and parse every target concurrently (strict
// parse: a malformed exposition fails that target's scrape and keeps its previous state), then
// feed the ingestor in the targets' order (it is single-threaded, and the order makes rounds
// deterministic) and Commit. Failures are counted per target and logged once per state change
// (down / back up); a target that leaves the list leaves the counts too.
class ScrapeLoop {
 public:
  // `ingestor` must outlive the loop; `now` is the clock (µs since the epoch), read on the
  // fetch threads when each answer arrives (thread-safe).
  ScrapeLoop(Ingestor& ingestor, ScrapeOptions options, Fetcher fetch, std::function<Micros()> now,
             std::ostream& log);
  ~ScrapeLoop();

  void Start();     // runs rounds on its own thread until Stop()
  void Stop();      // ends the rounds and waits for every fetch thread
  void RunRound();  // one round on the caller's thread (tests)

  // gpuledger_server_scrape_* series for the server's /metrics. Thread-safe.
  std::string RenderMetrics() const;
  std::int64_t rounds() const { return rounds_.load(); }
  // Targets with a state kept (errors, up): the current list's, never more. Thread-safe.
  std::size_t tracked_targets() const;

 private:
  struct Flight;  // one fetch on its own thread
  std::vector<Result<TargetScrape>> FetchAll(const std::vector<std::string>& targets);
  void ReapFlights(bool all);

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
  std::map<std::string, std::int64_t> errors_;  // target -> failed scrapes
  std::map<std::string, bool> up_;              // target -> last scrape ok
  std::int64_t commit_errors_ = 0;
  std::vector<std::string> targets_;  // guarded by metrics_mu_
  std::string discovery_error_;       // guarded by metrics_mu_
  std::mutex flight_mu_;
  std::condition_variable flight_cv_;
  std::map<std::string, std::shared_ptr<Flight>> in_flight_;  // target -> its running fetch
  std::vector<std::pair<std::thread, std::shared_ptr<Flight>>> threads_;  // joined when done
};

// `files=DIR`: exposition snapshots named <instance>@<unix-ms>.prom or .prom.gz (the instance
// may not contain '@' or '/'), replayed in time order (ties by name) through the ingestor,
// committed every `commit_every` files and at the end. Malformed files fail the replay with
// the file name and line; a .prom.gz inflating past `max_bytes` fails it naming the file.
// Progress goes to `progress` when given.
struct ReplayStats {
  std::int64_t files = 0;
  std::int64_t samples = 0;
};
Result<ReplayStats> ReplayFiles(const std::string& dir, Ingestor& ingestor,
                                std::ostream* progress = nullptr, int commit_every = 500,
                                std::size_t max_bytes = prometheus::kMaxGunzipBytes);

}  // namespace gpuledger::ingest
