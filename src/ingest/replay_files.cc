#include "ingest/replay_files.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "http/gzip.h"
#include "io/file_util.h"
#include "prometheus/exposition_parser.h"

namespace gpuledger::ingest {

namespace {

struct SnapshotFile {
  std::string instance;  // a node's; an engine's "<namespace>.<pod>"
  Micros at_us = 0;
  std::string path;
  bool gzip = false;
  bool engine = false;
};

// "<instance>@<unix-ms>.prom" or ".prom.gz": nullopt for another name; an error for a snapshot
// name whose time is not a plausible instant (not_after_us: see ReplayOptions).
Result<std::optional<SnapshotFile>> ParseSnapshotName(const std::filesystem::path& p,
                                                      Micros not_after_us) {
  const std::optional<SnapshotFile> not_a_snapshot;
  std::string name = p.filename().string();
  SnapshotFile f;
  f.path = p.string();
  if (name.ends_with(".prom.gz")) {
    f.gzip = true;
    name.resize(name.size() - 8);
  } else if (name.ends_with(".prom")) {
    name.resize(name.size() - 5);
  } else {
    return not_a_snapshot;
  }
  const auto at = name.rfind('@');
  if (at == std::string::npos || at == 0) return not_a_snapshot;
  std::int64_t ms = 0;
  const char* b = name.data() + at + 1;
  const char* e = name.data() + name.size();
  if (b == e || (*b != '-' && (*b < '0' || *b > '9'))) return not_a_snapshot;
  auto [end, ec] = std::from_chars(b, e, ms);
  if (end != e && ec != std::errc::result_out_of_range) return not_a_snapshot;
  Result<Micros> at_us = ec == std::errc() ? InstantFromUnixMillis(ms)
                                           : InvalidArgument("beyond 64 bits of milliseconds");
  if (!at_us)
    return InvalidArgument(
        fmt::format("{}: the time in its name: {}", f.path, at_us.error().message));
  if (*at_us > not_after_us)
    return InvalidArgument(fmt::format(
        "{}: stamped {}, after the replay started ({}): a snapshot cannot come from the future",
        f.path, FormatRfc3339(*at_us), FormatRfc3339(not_after_us)));
  f.instance = name.substr(0, at);
  f.at_us = *at_us;
  return std::optional<SnapshotFile>(std::move(f));
}

// The engines by the name their pods' files carry, "<namespace>.<pod>".
std::map<std::string, const EngineTarget*> EnginesByInstance(
    const std::vector<EngineTarget>& engines) {
  std::map<std::string, const EngineTarget*> out;
  for (const EngineTarget& e : engines)
    out.emplace(e.consumer.namespace_name + "." + e.consumer.pod, &e);
  return out;
}

}  // namespace

Result<ReplayStats> ReplayFiles(const std::string& dir, Ingestor& ingestor,
                                const ReplayOptions& options) {
  std::ostream* const progress = options.progress;
  const int commit_every = options.commit_every;
  const std::size_t max_bytes = options.max_bytes;
  std::vector<SnapshotFile> files;
  std::int64_t skipped = 0;
  // The snapshots of `folder` (engines' when `engine`: named <namespace>.<pod>@...).
  auto list = [&](const std::filesystem::path& folder, bool engine) -> Status {
    std::error_code ec;
    for (std::filesystem::directory_iterator it(folder, ec), end; !ec && it != end;
         it.increment(ec)) {
      if (!it->is_regular_file()) continue;
      auto f = ParseSnapshotName(it->path(), options.not_after_us);
      if (!f) return f.error();
      if (*f && (!engine || (*f)->instance.find('.') != std::string::npos)) {
        (*f)->engine = engine;
        files.push_back(std::move(**f));
      } else {
        ++skipped;
      }
    }
    if (ec) return IoError(fmt::format("files={}: {}", folder.string(), ec.message()));
    return Status::Ok();
  };
  if (Status s = list(dir, false); !s.ok()) return s.error();
  std::error_code ec;
  if (std::filesystem::is_directory(std::filesystem::path(dir) / "engines", ec))
    if (Status s = list(std::filesystem::path(dir) / "engines", true); !s.ok()) return s.error();
  if (files.empty())
    return InvalidArgument(fmt::format(
        "files={}: no snapshot files (expected <instance>@<unix-ms>.prom or .prom.gz)", dir));
  std::sort(files.begin(), files.end(), [](const SnapshotFile& a, const SnapshotFile& b) {
    return std::tie(a.at_us, a.path) < std::tie(b.at_us, b.path);
  });
  ReplayStats stats;
  const std::map<std::string, const EngineTarget*> engines = EnginesByInstance(options.engines);
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
      auto g = http::Gunzip(*raw, max_bytes);
      if (!g) return InvalidArgument(fmt::format("{}: {}", f.path, g.error().message));
      text = std::move(*g);
    } else {
      text = std::move(*raw);
    }
    auto parsed = prometheus::ParseExposition(text);
    if (!parsed) return InvalidArgument(fmt::format("{}: {}", f.path, parsed.error().message));
    stats.samples += static_cast<std::int64_t>(parsed->samples.size());
    ++stats.files;
    if (f.engine) {
      ++stats.engine_files;
      auto target = engines.find(f.instance);
      if (target == engines.end())
        ++stats.unmatched_engine_files;
      else
        ingestor.FeedEngine(
            {target->second->consumer, target->second->model, f.at_us, std::move(parsed->samples)});
    } else {
      ingestor.Feed(TargetScrape{f.instance, f.at_us, std::move(parsed->samples)});
    }
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
