#include "server/ingest_source.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "common/time_util.h"
#include "prometheus/exposition_writer.h"
#include "prometheus/metric_table.h"

namespace gpuledger::server {
namespace {

class ScrapeSource final : public IngestSource {
 public:
  explicit ScrapeSource(ScrapeSourceConfig c) : c_(std::move(c)) {
    if (!c_.fetch)
      c_.fetch = [timeout = c_.options.timeout_us, access = c_.access](const std::string& target) {
        return ingest::FetchMetrics(target, timeout, access);
      };
  }
  ~ScrapeSource() override { Stop(); }

  // Scraping sees agents live from now on.
  Result<Micros> ObservingSince(store::LedgerStore&, const std::string&) override {
    return c_.now();
  }

  Result<std::string> CatchUp(ingest::Ingestor& ingestor, store::LedgerStore&,
                              const std::atomic<bool>&) override {
    ingest::ScrapeLoop loop(ingestor, c_.options, c_.fetch, c_.now, *c_.log);
    loop.RunRound();
    return fmt::format("scraped {} targets once", c_.options.targets.size());
  }

  bool follows() const override { return true; }

  void Start(ingest::Ingestor& ingestor, store::LedgerStore&) override {
    std::lock_guard lock(mu_);
    loop_ = std::make_unique<ingest::ScrapeLoop>(ingestor, c_.options, c_.fetch, c_.now, *c_.log);
    loop_->Start();
  }

  void Stop() override {
    std::lock_guard lock(mu_);
    if (loop_) loop_->Stop();  // the round in progress finishes and commits
  }

  std::string RenderMetrics() const override {
    std::lock_guard lock(mu_);
    return loop_ ? loop_->RenderMetrics() : std::string();
  }

  ingest::SourcesHealth Health() const override {
    std::lock_guard lock(mu_);
    return loop_ ? loop_->Health() : ingest::SourcesHealth{};
  }

 private:
  ScrapeSourceConfig c_;
  mutable std::mutex mu_;  // guards loop_ (not its rounds: the loop is thread-safe there)
  std::unique_ptr<ingest::ScrapeLoop> loop_;
};

class FilesSource final : public IngestSource {
 public:
  FilesSource(std::string dir, std::string ledger_display, std::ostream* progress,
              Micros not_after_us, std::vector<ingest::EngineTarget> engines)
      : dir_(std::move(dir)),
        ledger_display_(std::move(ledger_display)),
        progress_(progress),
        not_after_us_(not_after_us),
        engines_(std::move(engines)) {}

  // A replay only knows its files: every agent's first snapshot is a baseline.
  Result<Micros> ObservingSince(store::LedgerStore&, const std::string&) override {
    return INT64_MAX;
  }

  Result<std::string> CatchUp(ingest::Ingestor& ingestor, store::LedgerStore&,
                              const std::atomic<bool>&) override {
    auto replayed = ingest::ReplayFiles(
        dir_, ingestor,
        {.progress = progress_, .not_after_us = not_after_us_, .engines = engines_});
    if (!replayed) return replayed.error();
    const std::int64_t skipped = ingestor.ledger().skipped_values();
    std::string engines;
    if (replayed->engine_files > 0)
      engines = fmt::format(
          "; {} engine snapshots, {} token-hours written{}", replayed->engine_files,
          ingestor.token_hours_written(),
          replayed->unmatched_engine_files == 0
              ? ""
              : fmt::format(" ({} of pods that metadata.json names no engine for: not booked)",
                            replayed->unmatched_engine_files));
    return fmt::format(
        "replayed {} snapshot files ({} samples{}) into {}: {} device-hours written{}",
        replayed->files, replayed->samples,
        skipped > 0 ? fmt::format(", {} counter samples NaN, infinite or negative skipped", skipped)
                    : "",
        ledger_display_, ingestor.hours_written(), engines);
  }

  bool follows() const override { return false; }
  void Start(ingest::Ingestor&, store::LedgerStore&) override {}
  void Stop() override {}

 private:
  std::string dir_;
  std::string ledger_display_;
  std::ostream* progress_;
  Micros not_after_us_;
  std::vector<ingest::EngineTarget> engines_;
};

// A stored Prometheus cursor: decimal µs since the epoch, after 2000-01-01.
std::optional<Micros> ParseCursor(const std::string& text) {
  Micros v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 946'684'800'000'000LL)
    return std::nullopt;
  return v;
}

class PrometheusSource final : public IngestSource {
 public:
  static constexpr Micros kLag = 5 * kMicrosPerSecond;
  static constexpr auto kFollowEvery = std::chrono::seconds(30);

  explicit PrometheusSource(PrometheusSourceConfig c) : c_(std::move(c)) {}
  ~PrometheusSource() override { Stop(); }

  Result<Micros> ObservingSince(store::LedgerStore& store, const std::string& cluster) override {
    cursor_ = HourStart(c_.now() - c_.since_us);
    cursor_key_ = ingest::ClusterMetaKey(cluster, kPrometheusCursorKey);
    auto meta = store.ReadMeta();
    if (!meta) return meta.error();
    if (auto it = meta->find(cursor_key_); it != meta->end()) {
      // A corrupt cursor is an error naming the key, never a backfill from 1970.
      auto parsed = ParseCursor(it->second);
      if (!parsed)
        return Internal(fmt::format(
            "meta '{}' is '{}': expected µs since the epoch after 2000 (fix or delete the key "
            "to start again from --since)",
            cursor_key_, it->second));
      cursor_ = *parsed;
    }
    // The TSDB holds everything since the first cursor: agents that started after it count
    // from their start, as they do when scraped directly.
    return cursor_;
  }

  Result<std::string> CatchUp(ingest::Ingestor& ingestor, store::LedgerStore& store,
                              const std::atomic<bool>& stop) override {
    if (Status s = CatchUpOnce(ingestor, store, stop); !s.ok()) return s.error();
    const std::int64_t skipped = SkippedSamples();
    return fmt::format("read {} up to {}: {} device-hours written to {}{}", c_.url,
                       FormatRfc3339(cursor_), ingestor.hours_written(), c_.ledger_display,
                       skipped > 0 ? fmt::format(" ({} samples skipped as NaN, infinite or "
                                                 "negative; gpuledger_server_ingest_skipped_"
                                                 "samples_total)",
                                                 skipped)
                                   : "");
  }

  // The same series as the scrape source's, for samples read from the TSDB: counter samples
  // the engine skipped and dcgm-exporter averages that were not finite.
  std::string RenderMetrics() const override {
    prometheus::ExpositionWriter w;
    w.Family(prometheus::kServerIngestSkippedSamplesTotal);
    w.Sample(prometheus::kServerIngestSkippedSamplesTotal.name,
             static_cast<double>(SkippedSamples()));
    return w.Take();
  }

  bool follows() const override { return true; }

  ingest::SourcesHealth Health() const override {
    ingest::SourcesHealth h;
    h.source = "prometheus";
    std::lock_guard lock(health_mu_);
    h.targets.push_back(health_);
    h.targets.back().target = c_.url;
    return h;
  }

  void Start(ingest::Ingestor& ingestor, store::LedgerStore& store) override {
    thread_ = std::thread([this, &ingestor, &store] {
      static const std::atomic<bool> kNever{false};
      const std::atomic<bool>& stop = c_.stop != nullptr ? *c_.stop : kNever;
      std::string last_error;
      std::unique_lock lock(mu_);
      while (!stopping_ && !stop.load()) {
        lock.unlock();
        Status s = CatchUpOnce(ingestor, store, stop);
        const std::string error = s.ok() ? "" : s.error().message;
        {
          std::lock_guard health(health_mu_);
          health_.up = s.ok();
          health_.last_error = error;
          if (s.ok())
            health_.last_success_us = c_.now();
          else
            ++health_.failures;
        }
        if (error != last_error) {
          *c_.log << (s.ok() ? "ingest: " + c_.url + " is back\n" : "ingest: " + error + "\n");
          c_.log->flush();
        }
        last_error = error;
        lock.lock();
        cv_.wait_for(lock, kFollowEvery, [&] { return stopping_; });
      }
    });
  }

  void Stop() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  // Hour-sized windows from the cursor up to now - kLag, each fed, committed, and then the
  // cursor saved (rows and state first: a crash re-reads the window, idempotently).
  Status CatchUpOnce(ingest::Ingestor& ingestor, store::LedgerStore& store,
                     const std::atomic<bool>& stop) {
    if (c_.dcgm_from_prometheus && !ingestor.enrich) {
      ingestor.enrich = [client = c_.client.get()](std::vector<LedgerHour>& hours) -> Status {
        auto filled = ingest::FillActivityFromPrometheusDcgm(*client, hours);
        return filled.ok() ? Status::Ok() : filled.status();
      };
    }
    const Micros until = c_.now() - kLag;
    const Micros first = cursor_;
    const bool show = c_.progress != nullptr && until - first > kMicrosPerHour;
    while (cursor_ < until && !stop.load() && !Stopping()) {
      const Micros end = std::min(HourStart(cursor_) + kMicrosPerHour, until);
      auto scrapes = c_.client->Fetch(cursor_, end);
      if (!scrapes) return scrapes.status();
      for (const auto& scrape : *scrapes) ingestor.Feed(scrape);
      auto engines = c_.client->FetchEngines(cursor_, end);
      if (!engines) return engines.status();
      for (const auto& engine : *engines) ingestor.FeedEngine(engine);
      if (Status s = ingestor.Commit(); !s.ok()) return s;
      skipped_counter_samples_ = ingestor.ledger().skipped_values();
      cursor_ = end;
      if (Status s = store.PutMeta(cursor_key_, std::to_string(cursor_)); !s.ok()) return s;
      if (show)
        *c_.progress << fmt::format("\rbackfill {}: {:5.1f}%  ({} device-hours written)", c_.url,
                                    100.0 * static_cast<double>(cursor_ - first) /
                                        static_cast<double>(until - first),
                                    ingestor.hours_written())
                     << std::flush;
    }
    if (show) *c_.progress << "\n";
    return Status::Ok();
  }

  bool Stopping() {
    std::lock_guard lock(mu_);
    return stopping_;
  }

  std::int64_t SkippedSamples() const {
    return skipped_counter_samples_.load() + c_.client->skipped_not_finite();
  }

  PrometheusSourceConfig c_;
  std::atomic<std::int64_t> skipped_counter_samples_{0};  // the engine's count after a commit
  Micros cursor_ = 0;  // touched only by the thread running rounds
  std::string cursor_key_;  // the cluster's (ingest::ClusterMetaKey)
  std::thread thread_;
  std::mutex mu_;
  mutable std::mutex health_mu_;  // guards health_, kept by the following thread
  ingest::TargetHealth health_;
  std::condition_variable cv_;
  bool stopping_ = false;
};

}  // namespace

std::unique_ptr<IngestSource> MakeScrapeSource(ScrapeSourceConfig config) {
  return std::make_unique<ScrapeSource>(std::move(config));
}

std::unique_ptr<IngestSource> MakeFilesSource(std::string dir, std::string ledger_display,
                                              std::ostream* progress, Micros not_after_us,
                                              std::vector<ingest::EngineTarget> engines) {
  return std::make_unique<FilesSource>(std::move(dir), std::move(ledger_display), progress,
                                       not_after_us, std::move(engines));
}

std::unique_ptr<IngestSource> MakePrometheusSource(PrometheusSourceConfig config) {
  return std::make_unique<PrometheusSource>(std::move(config));
}

}  // namespace gpuledger::server
