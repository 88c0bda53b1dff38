#include "ingest/ingestor.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "io/file_util.h"
#include "prometheus/exposition_parser.h"
#include "prometheus/exposition_writer.h"
#include "prometheus/gzip.h"
#include "prometheus/http_get.h"

namespace gpuledger::ingest {

Ingestor::Ingestor(store::LedgerStore& store, const cost::Catalog& catalog, std::string cluster,
                   std::function<ConsumerInfo(const ConsumerRef&)> describe,
                   std::function<cost::NodeFacts(const std::string& node)> node_facts)
    : store_(store),
      catalog_(catalog),
      cluster_(cluster),
      node_facts_(std::move(node_facts)),
      ledger_(cluster, std::move(describe)),
      findings_(std::move(cluster)) {}

Status Ingestor::Start(Micros observing_since_us) {
  if (Status s = findings_.Restore(store_); !s.ok()) return s;
  auto meta = store_.ReadMeta();
  if (!meta) return meta.error();
  std::map<std::string, std::string> parts;
  for (const auto& [key, value] : *meta)
    if (key.starts_with(kStatePartPrefix))
      parts.emplace(key.substr(kStatePartPrefix.size()), value);
  if (auto it = meta->find(std::string(kStateMetaKey)); it != meta->end()) {
    // The single key of an earlier build: newer than any parts (see the header). It moves to
    // parts at the first commit, which erases it and every part it does not rewrite.
    Status s = ledger_.Restore(it->second);
    if (!s.ok())
      return InvalidArgument(fmt::format("ledger meta '{}': {}", kStateMetaKey, s.error().message));
    migrate_ = true;
    for (const auto& [part, value] : parts) stale_parts_.push_back(part);
    return Status::Ok();
  }
  if (parts.empty()) {
    ledger_.ObserveSince(observing_since_us);
    return Status::Ok();
  }
  // The message names the part as "'ingest_state/<part>': ...".
  if (Status s = ledger_.RestoreParts(parts, kStatePartPrefix); !s.ok())
    return InvalidArgument(fmt::format("ledger meta {}", s.error().message));
  return Status::Ok();
}

Status Ingestor::Commit() {
  std::vector<LedgerHour> hours = ledger_.TakeTouched();
  if (!hours.empty()) {
    if (enrich) {
      if (Status s = enrich(hours); !s.ok()) {
        ledger_.Retouch(hours);
        return s;
      }
    }
    cost::PriceHours(hours, catalog_, node_facts_);
    if (Status s = store_.WriteHours(hours); !s.ok()) {
      ledger_.Retouch(hours);  // written at the next commit
      return s;
    }
    hours_written_ += static_cast<std::int64_t>(hours.size());
  }
  if (ledger_.latest_us() != INT64_MIN) {
    ledger_.Forget(ledger_.latest_us() - keep_open_us);
    ledger_.Prune(ledger_.latest_us() - std::max(retention_us, keep_open_us));
    findings_.Prune(ledger_.latest_us() - std::max(retention_us, keep_open_us));
  }
  // Findings do not wait on the engine's state: their rows are their own state (idempotent).
  if (Status s = findings_.Commit(store_); !s.ok()) return s;
  // Rows first, state second (see the header); only the parts that changed, in one transaction.
  CounterLedger::StateDelta delta = ledger_.PendingState();
  std::map<std::string, std::optional<std::string>> changes;
  for (auto& [part, value] : delta.put)
    changes[std::string(kStatePartPrefix) + part] = std::move(value);
  for (const std::string& part : delta.erase)
    changes[std::string(kStatePartPrefix) + part] = std::nullopt;
  if (migrate_) {
    changes[std::string(kStateMetaKey)] = std::nullopt;
    for (const std::string& part : stale_parts_)
      changes.try_emplace(std::string(kStatePartPrefix) + part, std::nullopt);
  }
  if (changes.empty()) return Status::Ok();
  if (Status s = store_.UpdateMeta(changes); !s.ok()) return s;  // still pending: next commit
  ledger_.StateSaved();
  state_parts_written_ += static_cast<std::int64_t>(delta.put.size());
  migrate_ = false;
  stale_parts_.clear();
  return Status::Ok();
}

Result<std::string> FetchMetrics(const std::string& target, Micros timeout_us,
                                 std::size_t max_bytes) {
  // A target is host:port (an agent), which serves /metrics.
  auto url = prometheus::ParseHttpUrl("http://" + target + "/metrics");
  if (!url || target.find(':') == std::string::npos)
    return InvalidArgument(fmt::format("target '{}': expected host:port", target));
  return prometheus::HttpGet(*url, timeout_us, max_bytes);
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
            } else if (auto parsed = prometheus::ParseExposition(*body); !parsed.ok()) {
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
  {
    std::lock_guard lock(metrics_mu_);
    // Each target once, in the order given: the feed order, so a round is deterministic.
    std::set<std::string> seen;
    std::erase_if(targets_, [&](const std::string& t) { return !seen.insert(t).second; });
    targets = targets_;
    // A target that left the list (an agent's pod gone) leaves its counts: bounded by the list.
    std::erase_if(errors_, [&](const auto& kv) { return !seen.contains(kv.first); });
    std::erase_if(up_, [&](const auto& kv) { return !seen.contains(kv.first); });
  }
  std::vector<Result<TargetScrape>> scrapes = FetchAll(targets);
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const std::string& target = targets[i];
    const bool ok = scrapes[i].ok();
    std::string error = ok ? "" : scrapes[i].error().message;
    if (ok) ingestor_.Feed(*scrapes[i]);
    std::lock_guard lock(metrics_mu_);
    if (!ok) ++errors_[target];
    auto [it, fresh] = up_.try_emplace(target, !ok);  // a first scrape logs either way
    if (fresh || it->second != ok) {
      if (ok)
        log_ << fmt::format("ingest: scraping {}\n", target);
      else
        log_ << fmt::format("ingest: {} (previous state kept; retrying every round)\n", error);
      log_.flush();
      it->second = ok;
    }
  }
  ReapFlights(/*all=*/false);
  Status s = ingestor_.Commit();
  {
    std::lock_guard lock(metrics_mu_);
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

std::size_t ScrapeLoop::tracked_targets() const {
  std::lock_guard lock(metrics_mu_);
  return std::max(errors_.size(), up_.size());
}

std::string ScrapeLoop::RenderMetrics() const {
  std::lock_guard lock(metrics_mu_);
  prometheus::ExpositionWriter w;
  w.Family("gpuledger_server_scrape_errors_total", "Failed scrapes of an agent, by target.",
           prometheus::MetricType::kCounter);
  for (const std::string& t : targets_) {
    auto it = errors_.find(t);
    w.Sample("gpuledger_server_scrape_errors_total", {{"target", t}},
             static_cast<double>(it == errors_.end() ? 0 : it->second));
  }
  w.Family("gpuledger_server_scrape_up", "Whether the last scrape of the target succeeded.",
           prometheus::MetricType::kGauge);
  for (const std::string& t : targets_) {
    auto it = up_.find(t);
    w.Sample("gpuledger_server_scrape_up", {{"target", t}}, it != up_.end() && it->second ? 1 : 0);
  }
  w.Family("gpuledger_server_scrape_rounds_total", "Scrape rounds run.",
           prometheus::MetricType::kCounter);
  w.Sample("gpuledger_server_scrape_rounds_total", static_cast<double>(rounds_.load()));
  return w.Take();
}

namespace {

struct SnapshotFile {
  std::string instance;
  Micros at_us = 0;
  std::string path;
  bool gzip = false;
};

// "<instance>@<unix-ms>.prom" or ".prom.gz".
std::optional<SnapshotFile> ParseSnapshotName(const std::filesystem::path& p) {
  std::string name = p.filename().string();
  SnapshotFile f;
  f.path = p.string();
  if (name.ends_with(".prom.gz")) {
    f.gzip = true;
    name.resize(name.size() - 8);
  } else if (name.ends_with(".prom")) {
    name.resize(name.size() - 5);
  } else {
    return std::nullopt;
  }
  const auto at = name.rfind('@');
  if (at == std::string::npos || at == 0) return std::nullopt;
  std::int64_t ms = 0;
  const char* b = name.data() + at + 1;
  const char* e = name.data() + name.size();
  auto [end, ec] = std::from_chars(b, e, ms);
  if (ec != std::errc() || end != e || b == e) return std::nullopt;
  f.instance = name.substr(0, at);
  f.at_us = ms * 1000;
  return f;
}

}  // namespace

Result<ReplayStats> ReplayFiles(const std::string& dir, Ingestor& ingestor, std::ostream* progress,
                                int commit_every, std::size_t max_bytes) {
  std::error_code ec;
  std::vector<SnapshotFile> files;
  std::int64_t skipped = 0;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    if (auto f = ParseSnapshotName(it->path()))
      files.push_back(std::move(*f));
    else
      ++skipped;
  }
  if (ec) return IoError(fmt::format("files={}: {}", dir, ec.message()));
  if (files.empty())
    return InvalidArgument(fmt::format(
        "files={}: no snapshot files (expected <instance>@<unix-ms>.prom or .prom.gz)", dir));
  std::sort(files.begin(), files.end(), [](const SnapshotFile& a, const SnapshotFile& b) {
    return std::tie(a.at_us, a.path) < std::tie(b.at_us, b.path);
  });
  ReplayStats stats;
  for (const SnapshotFile& f : files) {
    // A snapshot larger than the cap is refused before it is read (a compressed one would
    // inflate to at least about its own size).
    if (auto size = std::filesystem::file_size(f.path, ec); !ec && size > max_bytes)
      return InvalidArgument(
          fmt::format("{}: {} bytes, larger than the limit of {} bytes", f.path, size, max_bytes));
    auto raw = ReadFile(f.path);
    if (!raw) return raw.error();
    std::string text;
    if (f.gzip) {
      auto g = prometheus::Gunzip(*raw, max_bytes);
      if (!g) return InvalidArgument(fmt::format("{}: {}", f.path, g.error().message));
      text = std::move(*g);
    } else {
      text = std::move(*raw);
    }
    auto parsed = prometheus::ParseExposition(text);
    if (!parsed) return InvalidArgument(fmt::format("{}: {}", f.path, parsed.error().message));
    stats.samples += static_cast<std::int64_t>(parsed->samples.size());
    ingestor.Feed(TargetScrape{f.instance, f.at_us, std::move(parsed->samples)});
    ++stats.files;
    if (commit_every > 0 && stats.files % commit_every == 0) {
      if (Status s = ingestor.Commit(); !s.ok()) return s.error();
      if (progress != nullptr) {
        *progress << fmt::format("\rreplayed {}/{} files", stats.files, files.size());
        progress->flush();
      }
    }
  }
  if (Status s = ingestor.Commit(); !s.ok()) return s.error();
  if (progress != nullptr) {
    *progress << fmt::format("\rreplayed {}/{} files ({} samples{})\n", stats.files, files.size(),
                             stats.samples,
                             skipped > 0 ? fmt::format(", {} other files ignored", skipped) : "");
  }
  return stats;
}

}  // namespace gpuledger::ingest
