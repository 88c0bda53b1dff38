#include "ingest/ingestor.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <optional>
#include <tuple>

#include <fmt/format.h>
#include <httplib.h>

#include "io/file_util.h"
#include "prometheus/exposition_parser.h"
#include "prometheus/exposition_writer.h"
#include "prometheus/gzip.h"

namespace gpuledger::ingest {

Ingestor::Ingestor(store::LedgerStore& store, const cost::Catalog& catalog, std::string cluster,
                   std::function<ConsumerInfo(const ConsumerRef&)> describe,
                   std::function<cost::NodeFacts(const std::string& node)> node_facts)
    : store_(store),
      catalog_(catalog),
      cluster_(cluster),
      node_facts_(std::move(node_facts)),
      ledger_(std::move(cluster), std::move(describe)) {}

Status Ingestor::Start(Micros observing_since_us) {
  auto meta = store_.ReadMeta();
  if (!meta) return meta.error();
  auto it = meta->find(std::string(kStateMetaKey));
  if (it == meta->end()) {
    ledger_.ObserveSince(observing_since_us);
    return Status::Ok();
  }
  Status s = ledger_.Restore(it->second);
  if (!s.ok())
    return InvalidArgument(fmt::format("ledger meta '{}': {}", kStateMetaKey, s.error().message));
  return Status::Ok();
}

Status Ingestor::Commit() {
  std::vector<LedgerHour> hours = ledger_.TakeTouched();
  if (!hours.empty()) {
    cost::PriceHours(hours, catalog_, node_facts_);
    if (Status s = store_.WriteHours(hours); !s.ok()) return s;
    hours_written_ += static_cast<std::int64_t>(hours.size());
  }
  if (ledger_.latest_us() != INT64_MIN) ledger_.Forget(ledger_.latest_us() - keep_open_us);
  // Rows first, state second (see the header).
  return store_.PutMeta(std::string(kStateMetaKey), ledger_.State());
}

Result<std::string> FetchMetrics(const std::string& target, Micros timeout_us) {
  const auto colon = target.rfind(':');
  int port = 0;
  if (colon == std::string::npos ||
      std::from_chars(target.data() + colon + 1, target.data() + target.size(), port).ec != std::errc() ||
      port <= 0 || port > 65535)
    return InvalidArgument(fmt::format("target '{}': expected host:port", target));
  httplib::Client http(target.substr(0, colon), port);
  const auto sec = static_cast<time_t>(timeout_us / kMicrosPerSecond);
  const auto usec = static_cast<time_t>(timeout_us % kMicrosPerSecond);
  http.set_connection_timeout(sec, usec);
  http.set_read_timeout(sec, usec);
  http.set_write_timeout(sec, usec);
  auto r = http.Get("/metrics", {{"Accept-Encoding", "gzip"}});
  if (!r) return Unavailable(fmt::format("scrape {}: {}", target, httplib::to_string(r.error())));
  if (r->status != 200)
    return Unavailable(fmt::format("scrape {}: HTTP {}", target, r->status));
  // cpp-httplib built with zlib already inflates a gzip body and leaves the header: inflate
  // only what still starts with gzip's magic bytes.
  const bool still_gzipped = r->body.size() >= 2 && static_cast<unsigned char>(r->body[0]) == 0x1f &&
                             static_cast<unsigned char>(r->body[1]) == 0x8b;
  if (r->get_header_value("Content-Encoding") == "gzip" && still_gzipped) {
    auto text = prometheus::Gunzip(r->body);
    if (!text) return Unavailable(fmt::format("scrape {}: {}", target, text.error().message));
    return std::move(*text);
  }
  return std::move(r->body);
}

ScrapeLoop::ScrapeLoop(Ingestor& ingestor, ScrapeOptions options, Fetcher fetch,
                       std::function<Micros()> now, std::ostream& log)
    : ingestor_(ingestor),
      options_(std::move(options)),
      fetch_(std::move(fetch)),
      now_(std::move(now)),
      log_(log) {}

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
      log_ << (error.empty() ? std::string("ingest: target discovery works again\n")
                             : "ingest: target discovery: " + error + " (keeping the last targets)\n");
      log_.flush();
      discovery_error_ = error;
    }
    if (found.ok()) targets_ = std::move(*found);
  }
  {
    std::lock_guard lock(metrics_mu_);
    targets = targets_;
  }
  for (const std::string& target : targets) {
    auto body = fetch_(target);
    Result<prometheus::Exposition> parsed = body.ok() ? prometheus::ParseExposition(*body)
                                          : Result<prometheus::Exposition>(body.error());
    const bool ok = parsed.ok();
    if (ok) {
      // Observed when the response arrived: the agent's counters are at most one of its
      // cycles older, and every target's series use this same rule.
      ingestor_.Feed(TargetScrape{target, now_(), std::move(parsed->samples)});
    }
    std::lock_guard lock(metrics_mu_);
    if (!ok) ++errors_[target];
    auto [it, fresh] = up_.try_emplace(target, !ok);  // a first scrape logs either way
    if (fresh || it->second != ok) {
      if (ok)
        log_ << fmt::format("ingest: scraping {}\n", target);
      else
        log_ << fmt::format("ingest: {} (previous state kept; retrying every round)\n",
                            parsed.error().message.starts_with("scrape")
                                ? parsed.error().message
                                : fmt::format("scrape {}: {}", target, parsed.error().message));
      log_.flush();
      it->second = ok;
    }
  }
  Status s = ingestor_.Commit();
  {
    std::lock_guard lock(metrics_mu_);
    if (!s.ok()) {
      if (commit_errors_++ == 0) log_ << "ingest: writing the ledger: " << s.error().message << "\n";
    } else if (commit_errors_ > 0) {
      log_ << "ingest: writing the ledger works again\n";
      commit_errors_ = 0;
    }
    log_.flush();
  }
  ++rounds_;
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
  w.Family("gpuledger_server_scrape_rounds_total", "Scrape rounds run.", prometheus::MetricType::kCounter);
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
                                int commit_every) {
  std::error_code ec;
  std::vector<SnapshotFile> files;
  std::int64_t skipped = 0;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    if (auto f = ParseSnapshotName(it->path())) files.push_back(std::move(*f));
    else ++skipped;
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
    auto raw = ReadFile(f.path);
    if (!raw) return raw.error();
    std::string text;
    if (f.gzip) {
      auto g = prometheus::Gunzip(*raw);
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
