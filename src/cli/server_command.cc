#include "cli/server_command.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "cli/report_command.h"
#include "io/file_util.h"
#include "common/time_util.h"
#include "cost/catalog.h"
#include "ingest/ingestor.h"
#include "ingest/prometheus_source.h"
#include "sources/k8s_api/endpoints.h"
#include "sources/k8s_api/metadata_snapshot.h"
#include "sources/k8s_api/metadata_source.h"
#include "cost/price_hours.h"
#include "server/api.h"
#include "server/http_server.h"
#include "store/ledger_store.h"

namespace gpuledger::cli {

int ServeLedger(const std::string& db, const std::string& listen, const std::string& token,
                bool fallback_any_port, const std::atomic<bool>& stop, std::ostream& out,
                std::ostream& err, std::function<std::string()> extra_metrics) {
  auto store = store::OpenLedger(db);
  if (!store) {
    err << "error: " << store.error().message << "\n";
    return ExitCodeFor(store.error());
  }
  server::Api api(**store, token);
  if (extra_metrics) api.AddMetrics(std::move(extra_metrics));
  auto http = server::HttpServer::Bind(listen, api);
  if (!http && fallback_any_port) {
    auto colon = listen.rfind(':');
    http = server::HttpServer::Bind(listen.substr(0, colon) + ":0", api);
  }
  if (!http) {
    err << "error: " << http.error().message << "\n";
    return ExitCodeFor(http.error());
  }
  const std::string host = (*http)->host() == "0.0.0.0" ? "127.0.0.1" : (*http)->host();
  out << fmt::format("serving {} at http://{}:{}/  (API: /api/v1/allocation, /api/v1/report, "
                     "/api/v1/devices; Ctrl-C stops)\n",
                     store::DisplayLedgerSpec(db), host, (*http)->port());
  out.flush();
  std::thread serve([&] { (*http)->Serve(); });
  while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  (*http)->Stop();
  serve.join();
  return 0;
}

namespace {

// --cluster, else the ledger's meta "cluster", else "default". Kept in the ledger's meta.
std::string ClusterOf(const ServerOptions& o, store::LedgerStore& store) {
  auto meta = store.ReadMeta();
  if (!o.cluster.empty()) {
    if (!meta.ok() || meta->count("cluster") == 0) (void)store.PutMeta("cluster", o.cluster);
    return o.cluster;
  }
  if (meta.ok() && meta->count("cluster") > 0) return meta->at("cluster");
  return "default";
}

// A stored Prometheus cursor: decimal µs since the epoch, after 2000-01-01.
std::optional<Micros> ParseCursor(const std::string& text) {
  Micros v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 946'684'800'000'000LL)
    return std::nullopt;
  return v;
}

// Wall clock in µs since the epoch.
Micros WallNowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Owners and labels of consumers, labels of nodes (for prices): from the Kubernetes watch when
// one is configured, else from a metadata snapshot (files=DIR/metadata.json) when there is one;
// without either a consumer is just its ref and a node just its name.
struct Metadata {
  std::unique_ptr<k8s::MetadataSource> source;
  std::shared_ptr<const k8s::MetadataView> snapshot;

  std::function<ConsumerInfo(const ConsumerRef&)> Describe() const {
    if (source) return [m = source.get()](const ConsumerRef& r) { return m->Current()->Describe(r); };
    if (snapshot) return [v = snapshot](const ConsumerRef& r) { return v->Describe(r); };
    return nullptr;
  }
  std::function<cost::NodeFacts(const std::string&)> Facts() const {
    return [m = source.get(), v = snapshot](const std::string& node) {
      cost::NodeFacts f{node, {}, "", ""};
      if (m != nullptr) f.labels = m->Current()->NodeLabels(node);
      else if (v) f.labels = v->NodeLabels(node);
      return f;
    };
  }
};

Result<Metadata> StartMetadataIfConfigured(const ServerOptions& o, std::ostream& err) {
  Metadata m;
  if (o.kubeconfig.empty() && !o.in_cluster && o.api_server.empty()) return m;
  k8s::MetadataConfig config;
  config.kubeconfig = o.kubeconfig;
  config.context = o.kube_context;
  config.in_cluster = o.in_cluster;
  config.api_server = o.api_server;
  auto started = k8s::StartMetadata(config);
  if (!started) return started.error();
  m.source = std::move(*started);
  if (!m.source->WaitForSync(std::chrono::seconds(30)))
    err << "metadata: the API server's lists are not complete after 30 s; continuing, owners and "
           "labels fill in as the watches catch up\n";
  return m;
}

// --source scrape | files=DIR: the ingest runs on its own SQLite connection (WAL lets the API's
// connection read meanwhile) and, for scrape, on its own thread; the API serves throughout.
int RunIngestServer(const ServerOptions& o, const std::string& path, const std::string& token,
                    const cost::Catalog& catalog, const std::atomic<bool>& stop,
                    std::ostream& out, std::ostream& err) {
  const bool scrape = o.source == "scrape";
  std::vector<std::string> targets;
  for (std::size_t at = 0; at <= o.targets.size();) {
    std::size_t comma = std::min(o.targets.find(',', at), o.targets.size());
    if (comma > at) targets.push_back(o.targets.substr(at, comma - at));
    at = comma + 1;
  }
  if (scrape && targets.empty() && o.targets_from.empty()) {
    err << "error: --source scrape needs --targets HOST:PORT[,...] or --targets-from "
           "NAMESPACE/SERVICE[:PORT]\n";
    return 2;
  }
  // Agents discovered from their Service's Endpoints, asked again before every round.
  std::function<Result<std::vector<std::string>>()> discover;
  if (!o.targets_from.empty()) {
    auto service = k8s::ParseServiceRef(o.targets_from);
    if (!service) {
      err << "error: --targets-from " << service.error().message << "\n";
      return 2;
    }
    if (o.kubeconfig.empty() && !o.in_cluster && o.api_server.empty()) {
      err << "error: --targets-from needs the API server: --kubeconfig, --in-cluster or --api-server\n";
      return 2;
    }
    k8s::MetadataConfig mc;
    mc.kubeconfig = o.kubeconfig;
    mc.context = o.kube_context;
    mc.in_cluster = o.in_cluster;
    mc.api_server = o.api_server;
    auto api = k8s::ResolveApiServerConfig(mc, [](const char* name) { return std::getenv(name); });
    if (!api) {
      err << "error: " << api.error().message << "\n";
      return ExitCodeFor(api.error());
    }
    k8s::InitCurlOnce();
    std::shared_ptr<k8s::ApiTransport> transport = k8s::MakeCurlTransport(*api);
    discover = [transport, ref = *service] { return k8s::DiscoverTargets(*transport, ref); };
  }
  if (!scrape && !o.targets.empty()) {
    err << "error: --targets is for --source scrape\n";
    return 2;
  }
  auto interval = ParseDuration(o.scrape_interval);
  if (!interval || *interval <= 0) {
    err << fmt::format("error: --scrape-interval '{}': expected a duration such as 15s\n",
                       o.scrape_interval);
    return 2;
  }
  auto store = store::OpenLedger(path);
  if (!store) {
    err << "error: " << store.error().message << "\n";
    return ExitCodeFor(store.error());
  }
  std::string cluster = ClusterOf(o, **store);
  auto metadata = StartMetadataIfConfigured(o, err);
  if (!metadata) {
    err << "error: " << metadata.error().message << "\n";
    return ExitCodeFor(metadata.error());
  }
  if (!scrape && !metadata->source) {
    const auto file = std::filesystem::path(o.source.substr(6)) / "metadata.json";
    if (std::filesystem::exists(file)) {
      auto text = ReadFile(file.string());
      auto tables = text.ok() ? k8s::ParseMetadataSnapshot(*text, file.string())
                              : Result<k8s::MetadataTables>(text.error());
      if (!tables) {
        err << "error: " << tables.error().message << "\n";
        return ExitCodeFor(tables.error());
      }
      metadata->snapshot = std::make_shared<const k8s::MetadataView>(std::move(*tables));
    }
  }
  ingest::Ingestor ingestor(**store, catalog, cluster, metadata->Describe(), metadata->Facts());
  // Scraping sees agents live from now on; a replay only knows its files.
  if (Status s = ingestor.Start(scrape ? WallNowUs() : INT64_MAX); !s.ok()) {
    err << "error: --ledger '" << store::DisplayLedgerSpec(o.ledger) << "': " << s.error().message
        << "\n";
    return ExitCodeFor(s.error());
  }
  if (!scrape) {
    const std::string dir = o.source.substr(6);
    auto replayed = ingest::ReplayFiles(dir, ingestor, &err);
    if (!replayed) {
      err << "error: " << replayed.error().message << "\n";
      return ExitCodeFor(replayed.error());
    }
    out << fmt::format("replayed {} snapshot files ({} samples) into {}: {} device-hours written\n",
                       replayed->files, replayed->samples, store::DisplayLedgerSpec(path),
                       ingestor.hours_written());
    out.flush();
    if (!o.serve || o.backfill_only) return 0;
    return ServeLedger(path, o.listen, token, false, stop, out, err);
  }
  ingest::ScrapeOptions options{targets, *interval, discover};
  const Micros timeout = std::min<Micros>(*interval, 10 * kMicrosPerSecond);
  ingest::ScrapeLoop loop(
      ingestor, options,
      [timeout](const std::string& target) { return ingest::FetchMetrics(target, timeout); },
      [] {
        return std::chrono::duration_cast<std::chrono::microseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
            .count();
      },
      err);
  loop.Start();
  int rc = ServeLedger(path, o.listen, token, false, stop, out, err,
                       [&loop] { return loop.RenderMetrics(); });
  loop.Stop();
  return rc;
}

// --source prometheus=URL: raw counter samples hour by hour through the HTTP API of Prometheus,
// Thanos, Mimir or VictoriaMetrics, fed to the same exact-delta engine. A cursor in the ledger's
// meta ("prometheus_cursor") says how far it got, so a restart resumes where it stopped.
// Samples younger than `kLag` are left for the next round: a TSDB may still be ingesting them.
int RunPrometheusIngest(const ServerOptions& o, const std::string& path, const std::string& token,
                        const cost::Catalog& catalog, const std::atomic<bool>& stop,
                        std::ostream& out, std::ostream& err) {
  constexpr Micros kLag = 5 * kMicrosPerSecond;
  constexpr std::string_view kCursorKey = "prometheus_cursor";
  const std::string url = o.source.substr(std::string_view("prometheus=").size());
  auto client = ingest::PrometheusClient::Create(url);
  if (!client) {
    err << "error: --source: " << client.error().message << "\n";
    return 2;
  }
  auto since = ParseDuration(o.since);
  if (!since || *since <= 0) {
    err << fmt::format("error: --since '{}': expected a duration such as 24h or 7d\n", o.since);
    return 2;
  }
  auto store = store::OpenLedger(path);
  if (!store) {
    err << "error: " << store.error().message << "\n";
    return ExitCodeFor(store.error());
  }
  std::string cluster = ClusterOf(o, **store);
  Micros cursor = HourStart(WallNowUs() - *since);
  auto meta = (*store)->ReadMeta();
  if (!meta) {
    err << "error: " << meta.error().message << "\n";
    return ExitCodeFor(meta.error());
  }
  if (auto it = meta->find(std::string(kCursorKey)); it != meta->end()) {
    // A corrupt cursor is an error naming the key, never a backfill from 1970.
    auto parsed = ParseCursor(it->second);
    if (!parsed) {
      err << fmt::format("error: --ledger '{}': meta '{}' is '{}': expected µs since the epoch "
                         "after 2000 (fix or delete the key to start again from --since)\n",
                         store::DisplayLedgerSpec(o.ledger), kCursorKey, it->second);
      return 1;
    }
    cursor = *parsed;
  }
  auto metadata = StartMetadataIfConfigured(o, err);
  if (!metadata) {
    err << "error: " << metadata.error().message << "\n";
    return ExitCodeFor(metadata.error());
  }
  ingest::Ingestor ingestor(**store, catalog, cluster, metadata->Describe(), metadata->Facts());
  // The TSDB holds everything since the first cursor: agents that started after it count from
  // their start, as they do when scraped directly.
  if (Status s = ingestor.Start(cursor); !s.ok()) {
    err << "error: --ledger '" << store::DisplayLedgerSpec(o.ledger) << "': " << s.error().message << "\n";
    return ExitCodeFor(s.error());
  }
  const bool tty = ::isatty(2);
  // One round: hour-sized windows from the cursor up to now - kLag.
  auto catch_up = [&]() -> Status {
    const Micros until = WallNowUs() - kLag;
    const Micros first = cursor;
    while (cursor < until && !stop.load()) {
      const Micros end = std::min(HourStart(cursor) + kMicrosPerHour, until);
      auto scrapes = (*client)->Fetch(cursor, end);
      if (!scrapes) return scrapes.status();
      for (const auto& scrape : *scrapes) ingestor.Feed(scrape);
      if (Status s = ingestor.Commit(); !s.ok()) return s;
      cursor = end;
      if (Status s = (*store)->PutMeta(std::string(kCursorKey), std::to_string(cursor)); !s.ok()) return s;
      if (tty && until - first > kMicrosPerHour)
        err << fmt::format("\rbackfill {}: {:5.1f}%  ({} device-hours written)", url,
                           100.0 * static_cast<double>(cursor - first) / static_cast<double>(until - first),
                           ingestor.hours_written())
            << std::flush;
    }
    if (tty && until - first > kMicrosPerHour) err << "\n";
    return Status::Ok();
  };
  if (o.backfill_only) {
    Status s = catch_up();
    if (!s.ok()) {
      err << "error: " << s.error().message << "\n";
      return ExitCodeFor(s.error());
    }
    out << fmt::format("read {} up to {}: {} device-hours written to {}\n", url,
                       FormatRfc3339(cursor), ingestor.hours_written(), store::DisplayLedgerSpec(path));
    return 0;
  }
  // Follow: catch up every 30 s on a thread while the API serves; errors are logged once per
  // change of state and the next round retries.
  std::atomic<bool> loop_stop{false};
  std::thread follower([&] {
    std::string last_error;
    while (!loop_stop.load() && !stop.load()) {
      Status s = catch_up();
      std::string now_error = s.ok() ? "" : s.error().message;
      if (now_error != last_error)
        err << (s.ok() ? "ingest: " + url + " is back\n" : "ingest: " + now_error + "\n");
      last_error = now_error;
      for (int i = 0; i < 300 && !loop_stop.load() && !stop.load(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  int rc = ServeLedger(path, o.listen, token, false, stop, out, err);
  loop_stop = true;
  follower.join();
  return rc;
}

}  // namespace

int RunServer(const ServerOptions& o, const std::atomic<bool>& stop, std::ostream& out,
              std::ostream& err) {
  const bool prometheus = o.source.starts_with("prometheus=");
  const bool ingest = o.source == "scrape" || o.source.starts_with("files=") || prometheus;
  if (o.source.starts_with("files=") && o.source.size() == 6) {
    err << "error: --source files=DIR: give the directory\n";
    return 2;
  }
  if (!o.source.empty() && !ingest) {
    err << fmt::format(
        "error: --source '{}': expected scrape, files=DIR or prometheus=URL; without --source "
        "the server serves an existing ledger\n",
        o.source);
    return 2;
  }
  // A PostgreSQL URL goes to the store as is; an SQLite spec becomes its file's path.
  const bool postgres = store::IsPostgresLedgerSpec(o.ledger);
  std::string path = postgres ? o.ledger : store::SqliteLedgerPath(o.ledger);
  if (path.empty() || (!ingest && !postgres && !std::filesystem::exists(path))) {
    err << fmt::format("error: --ledger '{}': no such ledger file\n", o.ledger);
    return 2;
  }
  cost::Catalog catalog = cost::DefaultCatalog();
  if (!o.catalog.empty()) {
    auto loaded = cost::LoadCatalogFile(o.catalog, cost::DefaultCatalog());
    if (!loaded) {
      err << "error: --catalog: " << loaded.error().message << "\n";
      return 2;
    }
    catalog = std::move(*loaded);
  }
  std::string token;
  if (!o.token_file.empty()) {
    auto t = ReadFile(o.token_file);
    if (!t) {
      err << "error: --token-file: " << t.error().message << "\n";
      return 2;
    }
    token = *t;
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' '))
      token.pop_back();
    if (token.empty()) {
      err << "error: --token-file: the file is empty\n";
      return 2;
    }
  }
  if (prometheus) return RunPrometheusIngest(o, path, token, catalog, stop, out, err);
  if (ingest) return RunIngestServer(o, path, token, catalog, stop, out, err);
  return ServeLedger(path, o.listen, token, false, stop, out, err);
}

}  // namespace gpuledger::cli
