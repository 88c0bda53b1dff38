#include "ingest/scrape_loop.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "prometheus/exposition_parser.h"
#include "prometheus/exposition_writer.h"
#include "prometheus/http_get.h"
#include "prometheus/metric_table.h"

namespace gpuledger::ingest {
namespace {

// Agents are named host:port, engines by their URL.
bool IsEngineUrl(std::string_view target) { return target.starts_with("http://"); }

}  // namespace

Result<std::string> FetchMetrics(const std::string& target, Micros timeout_us,
                                 const ScrapeAccess& access, std::size_t max_bytes) {
  if (IsEngineUrl(target)) {
    auto url = prometheus::ParseHttpUrl(target);
    if (!url) return InvalidArgument(fmt::format("engine '{}': {}", target, url.error().message));
    return prometheus::HttpGet(*url, timeout_us, max_bytes, {});
  }
  // A target is host:port (an agent, or the proxy in front of it), which serves /metrics.
  auto url = prometheus::ParseHttpUrl(access.scheme + "://" + target + "/metrics");
  if (!url || target.find(':') == std::string::npos)
    return InvalidArgument(fmt::format("target '{}': expected host:port", target));
  return prometheus::HttpGet(*url, timeout_us, max_bytes, access.auth);
}

// One fetch and parse on its own thread; its fields are guarded by the loop's flight_mu_.
struct ScrapeLoop::Flight {
  std::string target;
  bool done = false;
  std::optional<Result<TargetScrape>> result;
};

ScrapeLoop::ScrapeLoop(Ingestor& ingestor, ScrapeOptions options, Fetcher fetch,
                       std::function<Micros()> now, std::ostream& log)
    : ingestor_(ingestor),
      options_(std::move(options)),
      fetch_(std::move(fetch)),
      now_(std::move(now)),
      log_(log) {
  options_.max_concurrent = std::max(options_.max_concurrent, 1);
}

ScrapeLoop::~ScrapeLoop() { Stop(); }

void ScrapeLoop::Start() {
  thread_ = std::thread([this] {
    for (;;) {
      const auto started = std::chrono::steady_clock::now();
      RunRound();
      std::unique_lock lock(stop_mu_);
      if (stop_cv_.wait_until(lock, started + std::chrono::microseconds(options_.interval_us),
                              [this] { return stopping_; }))
        return;
    }
  });
}

void ScrapeLoop::Stop() {
  {
    std::lock_guard lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  ReapFlights(/*all=*/true);
}

void ScrapeLoop::ReapFlights(bool all) {
  std::vector<std::thread> finished;
  {
    std::lock_guard lock(flight_mu_);
    std::erase_if(threads_, [&](auto& t) {
      if (!all && !t.second->done) return false;
      finished.push_back(std::move(t.first));
      return true;
    });
  }
  // Outside the lock: a thread still running takes it to finish.
  for (std::thread& t : finished) t.join();
}

std::vector<Result<TargetScrape>> ScrapeLoop::FetchAll(const std::vector<std::string>& targets) {
  using Clock = std::chrono::steady_clock;
  const std::size_t n = targets.size();
  std::vector<std::optional<Result<TargetScrape>>> out(n);
  std::vector<std::shared_ptr<Flight>> mine(n);
  std::vector<Clock::time_point> deadline(n);
  const auto timeout = std::chrono::microseconds(options_.timeout_us);
  std::unique_lock lock(flight_mu_);
  for (std::size_t next = 0;;) {
    // Collect answers and give up on flights past their deadline (their threads run on, and
    // keep the target out of later rounds until they end).
    int running = 0;
    auto wake = Clock::time_point::max();
    const auto now = Clock::now();
    for (std::size_t i = 0; i < next; ++i) {
      if (out[i]) continue;
      if (mine[i]->done) {
        out[i] = std::move(mine[i]->result);
      } else if (now >= deadline[i]) {
        out[i] = Unavailable(fmt::format("scrape {}: no answer within {} ms", targets[i],
                                         options_.timeout_us / 1000));
      } else {
        ++running;
        wake = std::min(wake, deadline[i]);
      }
    }
    for (; next < n && running < options_.max_concurrent; ++next) {
      const std::string& target = targets[next];
      if (in_flight_.contains(target)) {
        out[next] = Unavailable(
            fmt::format("scrape {}: the previous scrape is still running (no answer)", target));
        continue;
      }
      auto flight = std::make_shared<Flight>();
      flight->target = target;
      in_flight_[target] = flight;
      mine[next] = flight;
      deadline[next] = Clock::now() + timeout;
      wake = std::min(wake, deadline[next]);
      ++running;
      threads_.emplace_back(
          std::thread([this, flight] {
            auto body = fetch_(flight->target);
            // Observed when the response arrived: the agent's counters are at most one of its
            // cycles older, and every target's series use this same rule.
            const Micros at = now_();
            Result<TargetScrape> scrape = Unavailable("");
            if (!body.ok()) {
              const std::string& m = body.error().message;
              scrape = Unavailable(
                  m.starts_with("scrape") ? m : fmt::format("scrape {}: {}", flight->target, m));
            } else if (auto parsed = prometheus::ParseExposition(
                           *body, {.skip_bad_lines = IsEngineUrl(flight->target)});
                       !parsed.ok()) {
              scrape = InvalidArgument(
                  fmt::format("scrape {}: {}", flight->target, parsed.error().message));
            } else {
              scrape = TargetScrape{flight->target, at, std::move(parsed->samples)};
            }
            std::lock_guard guard(flight_mu_);
            flight->result = std::move(scrape);
            flight->done = true;
            if (auto it = in_flight_.find(flight->target);
                it != in_flight_.end() && it->second == flight)
              in_flight_.erase(it);
            flight_cv_.notify_all();  // under the lock: Stop() may destroy the loop right after
          }),
          flight);
    }
    if (next == n && running == 0) break;
    flight_cv_.wait_until(lock, wake);
  }
  std::vector<Result<TargetScrape>> results;
  results.reserve(n);
  for (auto& r : out) results.push_back(std::move(*r));
  return results;
}

void ScrapeLoop::RunRound() {
  std::vector<std::string> targets;
  {
    std::lock_guard lock(metrics_mu_);
    if (targets_.empty()) targets_ = options_.targets;
  }
  if (options_.discover) {
    auto found = options_.discover();
    std::lock_guard lock(metrics_mu_);
    const std::string error = found.ok() ? "" : found.error().message;
    if (error != discovery_error_) {
      log_ << (error.empty()
                   ? std::string("ingest: target discovery works again\n")
                   : "ingest: target discovery: " + error + " (keeping the last targets)\n");
      log_.flush();
      discovery_error_ = error;
    }
    if (found.ok()) targets_ = std::move(*found);
  }
  std::vector<EngineTarget> engines;
  if (options_.engines) engines = options_.engines();
  std::map<std::string, const EngineTarget*> engine_of;
  {
    std::lock_guard lock(metrics_mu_);
    // Each target once, in the order given: the feed order, so a round is deterministic.
    std::set<std::string> seen;
    std::erase_if(targets_, [&](const std::string& t) { return !seen.insert(t).second; });
    std::erase_if(engines, [&](const EngineTarget& e) { return !seen.insert(e.url).second; });
    engines_ = engines;
    targets = AllTargets();
    // A target that left the list (an agent's pod gone) leaves its counts: bounded by the list.
    std::erase_if(state_, [&](const auto& kv) { return !seen.contains(kv.first); });
  }
  for (const EngineTarget& e : engines) engine_of[e.url] = &e;
  std::vector<Result<TargetScrape>> scrapes = FetchAll(targets);
  for (std::size_t i = 0; i < targets.size(); ++i) {
    auto engine = engine_of.find(targets[i]);
    Account(targets[i], std::move(scrapes[i]),
            engine == engine_of.end() ? nullptr : engine->second);
  }
  ReapFlights(/*all=*/false);
  Status s = ingestor_.Commit();
  {
    std::lock_guard lock(metrics_mu_);
    skipped_values_ = ingestor_.ledger().skipped_values() + ingestor_.tokens().skipped_values();
    if (!s.ok()) {
      if (commit_errors_++ == 0)
        log_ << "ingest: writing the ledger: " << s.error().message << "\n";
    } else if (commit_errors_ > 0) {
      log_ << "ingest: writing the ledger works again\n";
      commit_errors_ = 0;
    }
    log_.flush();
  }
  ++rounds_;
}

std::vector<std::string> ScrapeLoop::AllTargets() const {
  std::vector<std::string> all = targets_;
  for (const EngineTarget& e : engines_) all.push_back(e.url);
  return all;
}

void ScrapeLoop::Account(const std::string& target, Result<TargetScrape> scrape,
                         const EngineTarget* engine) {
  const bool ok = scrape.ok();
  std::string error = ok ? "" : scrape.error().message;
  if (ok && engine != nullptr)
    ingestor_.FeedEngine(
        {engine->consumer, engine->model, scrape->at_us, std::move(scrape->samples)});
  else if (ok)
    ingestor_.Feed(*scrape);
  std::lock_guard lock(metrics_mu_);
  auto [it, fresh] = state_.try_emplace(target);
  TargetHealth& state = it->second;
  if (fresh || state.up != ok) {  // a first scrape logs either way
    if (ok)
      log_ << fmt::format("ingest: scraping {}{}\n", target,
                          engine != nullptr ? fmt::format(" (engine of {}/{})",
                                                          engine->consumer.namespace_name,
                                                          engine->consumer.pod)
                                            : "");
    else
      log_ << fmt::format("ingest: {} (previous state kept; retrying every round)\n", error);
    log_.flush();
  }
  state.target = target;
  state.up = ok;
  state.last_error = error;
  if (ok)
    state.last_success_us = now_();
  else
    ++state.failures;
}

std::size_t ScrapeLoop::tracked_targets() const {
  std::lock_guard lock(metrics_mu_);
  return state_.size();
}

SourcesHealth ScrapeLoop::Health() const {
  std::lock_guard lock(metrics_mu_);
  SourcesHealth h;
  h.source = "scrape";
  h.discovery_error = discovery_error_;
  for (const std::string& t : AllTargets()) {
    auto it = state_.find(t);
    h.targets.push_back(it != state_.end() ? it->second : TargetHealth{.target = t});
  }
  return h;
}

std::string ScrapeLoop::RenderMetrics() const {
  std::lock_guard lock(metrics_mu_);
  using prometheus::kServerIngestSkippedSamplesTotal;
  using prometheus::kServerScrapeErrorsTotal;
  using prometheus::kServerScrapeRoundsTotal;
  using prometheus::kServerScrapeUp;
  prometheus::ExpositionWriter w;
  // A target not scraped yet: no failure, not up.
  static const TargetHealth kNotYet;
  auto state = [&](const std::string& t) -> const TargetHealth& {
    auto it = state_.find(t);
    return it != state_.end() ? it->second : kNotYet;
  };
  const std::vector<std::string> targets = AllTargets();
  w.Family(kServerScrapeErrorsTotal);
  for (const std::string& t : targets)
    w.Sample(kServerScrapeErrorsTotal.name, {{"target", t}},
             static_cast<double>(state(t).failures));
  w.Family(kServerScrapeUp);
  for (const std::string& t : targets)
    w.Sample(kServerScrapeUp.name, {{"target", t}}, state(t).up ? 1 : 0);
  w.Family(kServerScrapeRoundsTotal);
  w.Sample(kServerScrapeRoundsTotal.name, static_cast<double>(rounds_.load()));
  w.Family(kServerIngestSkippedSamplesTotal);
  w.Sample(kServerIngestSkippedSamplesTotal.name, static_cast<double>(skipped_values_));
  return w.Take();
}

}  // namespace gpuledger::ingest
