#pragma once
// The `--source scrape` loop: agents' /metrics over HTTP, fetched concurrently under timeouts
// and fed in order to an Ingestor.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/result.h"
#include "http/client.h"
#include "ingest/ingestor.h"
#include "ingest/source_health.h"
#include "model/consumer.h"

namespace gpuledger::ingest {

// Raw and inflated scrape bodies are capped: a target's body is data, and a few kilobytes that
// inflate to gigabytes (a gzip bomb), or an endless body, must fail that target, not the
// server. 64 MiB is ~40x a real agent's exposition (1.7 MB with 200 containers).
inline constexpr std::size_t kMaxScrapeBodyBytes = 64u << 20;

// How the server reaches its agents: plain HTTP, or HTTPS through a proxy in front of each
// (kube-rbac-proxy: a CA to trust, a bearer token or a client certificate to show).
struct ScrapeAccess {
  std::string scheme = "http";  // or "https"
  http::ClientAuth auth;
};

// GET <scheme>://<target>/metrics (gzip accepted) within `timeout_us` for the whole exchange;
// the body as text, or an error naming the target (connection refused, TLS, HTTP status,
// corrupt gzip, a body, raw or inflated, past `max_bytes`, no complete answer within the
// timeout, an unreadable credential file). A target that is an http:// URL (an inference
// engine) is fetched as it is, without `access`: the agents' credentials are never shown to a
// pod.
Result<std::string> FetchMetrics(const std::string& target, Micros timeout_us,
                                 const ScrapeAccess& access = {},
                                 std::size_t max_bytes = kMaxScrapeBodyBytes);

// Called from the loop's fetch threads, several at once: must be thread-safe, and must return
// (FetchMetrics does, within its timeout); one that outlives the loop's timeout is abandoned
// for its round, and waited for when the loop stops.
using Fetcher = std::function<Result<std::string>(const std::string& target)>;

// An inference engine's metrics endpoint, as the pod that serves it names it (docs/tokens.md,
// server/engine_targets.h).
struct EngineTarget {
  std::string url;  // "http://10.0.0.7:8000/metrics": the target's name in health and /metrics
  ConsumerRef consumer;
  std::string model;  // the pod's gpuledger.io/model; "" where it names none
};

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
  // When set, asked before every round for the inference engines to scrape besides the agents.
  // Their answers are a third party's: parsed leniently (a bad line is skipped, not the scrape)
  // and fed to the token engine (Ingestor::FeedEngine).
  std::function<std::vector<EngineTarget>()> engines;
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
  // Each current target's state, and discovery's (source_health.h). Thread-safe.
  SourcesHealth Health() const;
  std::int64_t rounds() const { return rounds_.load(); }
  // Targets with a state kept (errors, up): the current list's, never more. Thread-safe.
  std::size_t tracked_targets() const;

 private:
  struct Flight;  // one fetch on its own thread
  std::vector<Result<TargetScrape>> FetchAll(const std::vector<std::string>& targets);
  void ReapFlights(bool all);
  // The agents' targets then the engines' URLs, each once (under metrics_mu_).
  std::vector<std::string> AllTargets() const;
  // Feeds a target's scrape (an engine's when `engine` is set) to the ingestor and keeps the
  // target's health.
  void Account(const std::string& target, Result<TargetScrape> scrape,
               const EngineTarget* engine);

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
  // target -> its failed scrapes, last state, last error and last answer (Health(), /metrics);
  // a target's entry is made by its first scrape.
  std::map<std::string, TargetHealth> state_;
  std::int64_t commit_errors_ = 0;
  std::int64_t skipped_values_ = 0;   // CounterLedger::skipped_values after the last round
  std::vector<std::string> targets_;  // guarded by metrics_mu_
  std::vector<EngineTarget> engines_;  // guarded by metrics_mu_: this round's
  std::string discovery_error_;       // guarded by metrics_mu_
  std::mutex flight_mu_;
  std::condition_variable flight_cv_;
  std::map<std::string, std::shared_ptr<Flight>> in_flight_;  // target -> its running fetch
  std::vector<std::pair<std::thread, std::shared_ptr<Flight>>> threads_;  // joined when done
};

}  // namespace gpuledger::ingest
