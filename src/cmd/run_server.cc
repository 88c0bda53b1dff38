#include "cmd/run_server.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "cli/exit_code.h"
#include "common/clock.h"
#include "common/time_util.h"
#include "cost/catalog.h"
#include "cost/price_hours.h"
#include "guardrails/policy_yaml.h"
#include "ingest/ingestor.h"
#include "ingest/prometheus_source.h"
#include "io/file_util.h"
#include "k8s/endpoints.h"
#include "k8s/metadata_snapshot.h"
#include "k8s/metadata_source.h"
#include "server/engine_targets.h"
#include "server/finding_events_loop.h"
#include "server/ingest_server.h"
#include "server/ingest_source.h"
#include "server/serve_ledger.h"
#include "store/ledger_store.h"
#include "webhook/webhook_server.h"

namespace gpuledger::cmd {

namespace {

// Wall clock in µs since the epoch: scrape and cursor times.
Micros WallNowUs() { return SystemClock().Now().wall_us; }

// The API server the Kubernetes flags name (--kubeconfig, --kube-context, --in-cluster,
// --api-server), for the callers that need only a transport to it.
Result<k8s::ApiServerConfig> ApiServerFromFlags(const ServerFlags& o) {
  k8s::MetadataConfig mc;
  mc.kubeconfig = o.kubeconfig;
  mc.context = o.kube_context;
  mc.in_cluster = o.in_cluster;
  mc.api_server = o.api_server;
  return k8s::ResolveApiServerConfig(mc, [](const char* name) { return std::getenv(name); });
}

// Owners and labels of consumers, labels of nodes (for prices): from the Kubernetes watch when
// one is configured, else from a metadata snapshot (files=DIR/metadata.json) when there is one;
// without either a consumer is just its ref and a node just its name.
struct Metadata {
  std::unique_ptr<k8s::MetadataSource> source;
  std::shared_ptr<const k8s::MetadataView> snapshot;

  std::function<ConsumerInfo(const ConsumerRef&)> Describe() const {
    if (source)
      return [m = source.get()](const ConsumerRef& r) { return m->Current()->Describe(r); };
    if (snapshot) return [v = snapshot](const ConsumerRef& r) { return v->Describe(r); };
    return nullptr;
  }
  std::function<cost::NodeFacts(const std::string&)> Facts() const {
    return [m = source.get(), v = snapshot](const std::string& node) {
      cost::NodeFacts f{node, {}, "", ""};
      if (m != nullptr)
        f.labels = m->Current()->NodeLabels(node);
      else if (v)
        f.labels = v->NodeLabels(node);
      return f;
    };
  }
};

Result<Metadata> StartMetadataIfConfigured(const ServerFlags& o, std::ostream& err) {
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

// --source scrape: the flags as a source (targets listed or discovered from the agents'
// Endpoints, asked again before every round). An error is printed; nullptr and `rc` then.
// `engines`, set once the metadata watch runs, names the inference engines to scrape too.
std::unique_ptr<server::IngestSource> ScrapeSourceFromFlags(
    const ServerFlags& o, std::ostream& err, int& rc,
    std::shared_ptr<std::function<std::vector<ingest::EngineTarget>()>> engines) {
  rc = 2;
  std::vector<std::string> targets;
  for (std::size_t at = 0; at <= o.targets.size();) {
    std::size_t comma = std::min(o.targets.find(',', at), o.targets.size());
    if (comma > at) targets.push_back(o.targets.substr(at, comma - at));
    at = comma + 1;
  }
  if (targets.empty() && o.targets_from.empty()) {
    err << "error: --source scrape needs --targets HOST:PORT[,...] or --targets-from "
           "NAMESPACE/SERVICE[:PORT]\n";
    return nullptr;
  }
  std::function<Result<std::vector<std::string>>()> discover;
  if (!o.targets_from.empty()) {
    auto service = k8s::ParseServiceRef(o.targets_from);
    if (!service) {
      err << "error: --targets-from " << service.error().message << "\n";
      return nullptr;
    }
    if (o.kubeconfig.empty() && !o.in_cluster && o.api_server.empty()) {
      err << "error: --targets-from needs the API server: --kubeconfig, --in-cluster or "
             "--api-server\n";
      return nullptr;
    }
    auto api = ApiServerFromFlags(o);
    if (!api) {
      err << "error: " << api.error().message << "\n";
      rc = cli::ExitCodeFor(api.error());
      return nullptr;
    }
    http::InitClientOnce();
    std::shared_ptr<k8s::ApiTransport> transport = k8s::MakeCurlTransport(*api);
    discover = [transport, ref = *service] { return k8s::DiscoverTargets(*transport, ref); };
  }
  auto interval = ParseDuration(o.scrape_interval);
  if (!interval || *interval <= 0) {
    err << fmt::format("error: --scrape-interval '{}': expected a duration such as 15s\n",
                       o.scrape_interval);
    return nullptr;
  }
  if (o.scrape_scheme != "http" && o.scrape_scheme != "https") {
    err << fmt::format("error: --scrape-scheme '{}': expected http or https\n", o.scrape_scheme);
    return nullptr;
  }
  server::ScrapeSourceConfig config;
  config.access = {o.scrape_scheme, o.scrape_auth};
  config.options.targets = std::move(targets);
  config.options.interval_us = *interval;
  config.options.discover = std::move(discover);
  config.options.timeout_us = std::min<Micros>(*interval, 10 * kMicrosPerSecond);
  config.options.engines = [engines] {
    return *engines ? (*engines)() : std::vector<ingest::EngineTarget>{};
  };
  config.now = WallNowUs;
  config.log = &err;
  return server::MakeScrapeSource(std::move(config));
}

// --source prometheus=URL: the flags as a source. An error is printed; nullptr and `rc` then.
std::unique_ptr<server::IngestSource> PrometheusSourceFromFlags(const ServerFlags& o,
                                                                const std::string& path,
                                                                const std::atomic<bool>& stop,
                                                                std::ostream& err, int& rc) {
  rc = 2;
  const std::string url = o.source.substr(std::string_view("prometheus=").size());
  auto client = ingest::PrometheusClient::Create(url, o.prometheus_auth);
  if (!client) {
    err << "error: --source: " << client.error().message << "\n";
    return nullptr;
  }
  auto since = ParseDuration(o.since);
  if (!since || *since <= 0) {
    err << fmt::format("error: --since '{}': expected a duration such as 24h or 7d\n", o.since);
    return nullptr;
  }
  server::PrometheusSourceConfig config;
  config.url = url;
  config.client = std::move(*client);
  config.since_us = *since;
  config.ledger_display = store::DisplayLedgerSpec(path);
  config.now = WallNowUs;
  config.progress = ::isatty(2) ? &err : nullptr;
  config.log = &err;
  config.stop = &stop;
  config.dcgm_from_prometheus = o.dcgm_from_prometheus;
  return server::MakePrometheusSource(std::move(config));
}

// Serves the ledger until `stop` (server/serve_ledger.h); an error is printed and its exit code
// returned.
server::ServeLedgerOptions ServeOptions(const ServerFlags& o, const std::string& path,
                                        const server::ApiToken& token,
                                        std::function<std::string()> extra_metrics,
                                        const guardrails::Policy& policy,
                                        const cost::Catalog& catalog) {
  server::ServeLedgerOptions options{path,   o.listen, token, false, std::move(extra_metrics),
                                     policy, catalog};
  options.reads.snapshot_days = o.snapshot_days;
  options.opencost_listen = o.opencost_listen;
  options.read_only = o.read_only;
  return options;
}

int Serve(server::ServeLedgerOptions options, const std::atomic<bool>& stop, std::ostream& out,
          std::ostream& err) {
  if (Status s = server::ServeLedger(std::move(options), stop, out, err); !s.ok()) {
    err << "error: " << s.error().message << "\n";
    return cli::ExitCodeFor(s.error());
  }
  return 0;
}

// Both components' series on the API's /metrics; either may be absent.
std::function<std::string()> BothMetrics(std::function<std::string()> a,
                                         std::function<std::string()> b) {
  if (!a) return b;
  if (!b) return a;
  return [a = std::move(a), b = std::move(b)] { return a() + b(); };
}

// --webhook: the validating admission webhook on its own TLS listener, serving until the
// returned object goes. An error is printed; nullptr and `rc` then (2 for flags and files).
std::unique_ptr<webhook::BackgroundWebhook> StartWebhookFromFlags(const ServerFlags& o,
                                                                  const guardrails::Policy& policy,
                                                                  std::ostream& out,
                                                                  std::ostream& err, int& rc) {
  webhook::WebhookServerConfig config;
  config.listen = o.webhook_listen;
  config.cert_file = o.tls_cert;
  config.key_file = o.tls_key;
  config.policy = policy;
  auto started = webhook::BackgroundWebhook::Start(std::move(config));
  if (!started) {
    err << "error: --webhook: " << started.error().message << "\n";
    rc = cli::ExitCodeFor(started.error());
    return nullptr;
  }
  out << fmt::format("webhook at {}  (AdmissionReview v1 over TLS; /healthz, /metrics)\n",
                     (*started)->Url());
  out.flush();
  return std::move(*started);
}

// --source scrape | files=DIR | prometheus=URL: flags to a source, then the ingest server
// component (server/ingest_server.h) runs it with the API. The ingest writes through its own
// connection (SQLite WAL lets the API's connections read meanwhile).
int RunIngest(const ServerFlags& o, const std::string& path, const server::ApiToken& token,
              const cost::Catalog& catalog, const guardrails::Policy& policy,
              std::function<std::string()> webhook_metrics, const std::atomic<bool>& stop,
              std::ostream& out, std::ostream& err) {
  const bool scrape = o.source == "scrape";
  const bool files = o.source.starts_with("files=");
  if (!scrape && !o.targets.empty()) {
    err << "error: --targets is for --source scrape\n";
    return 2;
  }
  if (o.dcgm_from_prometheus && !o.source.starts_with("prometheus=")) {
    err << "error: --dcgm-from-prometheus is for --source prometheus=URL\n";
    return 2;
  }
  int rc = 2;
  std::unique_ptr<server::IngestSource> source;
  auto engines = std::make_shared<std::function<std::vector<ingest::EngineTarget>()>>();
  if (scrape)
    source = ScrapeSourceFromFlags(o, err, rc, engines);
  else if (!files)
    source = PrometheusSourceFromFlags(o, path, stop, err, rc);
  if (!source && !files) return rc;
  auto metadata = StartMetadataIfConfigured(o, err);
  if (!metadata) {
    err << "error: " << metadata.error().message << "\n";
    return cli::ExitCodeFor(metadata.error());
  }
  // Inference pods that opt in are scraped for their tokens (docs/tokens.md) where the watch
  // sees them: before the source starts, so every round asks it.
  if (metadata->source)
    *engines = [d = std::make_shared<server::EngineDiscovery>(
                    [m = metadata->source.get()] { return m->Current()->LivePods(); }, err)] {
      return (*d)();
    };
  if (files && !metadata->source) {
    const auto file = std::filesystem::path(o.source.substr(6)) / "metadata.json";
    if (std::filesystem::exists(file)) {
      auto text = ReadFile(file.string(), kConfigFile);
      auto tables = text.ok() ? k8s::ParseMetadataSnapshot(*text, file.string())
                              : Result<k8s::MetadataTables>(text.error());
      if (!tables) {
        err << "error: " << tables.error().message << "\n";
        return cli::ExitCodeFor(tables.error());
      }
      metadata->snapshot = std::make_shared<const k8s::MetadataView>(std::move(*tables));
    }
  }
  if (files) {
    // The replayed engines: the pods of the metadata that opt in (their annotations).
    std::vector<std::string> problems;
    std::vector<k8s::ObjectInfo> pods;
    if (metadata->source)
      pods = metadata->source->Current()->LivePods();
    else if (metadata->snapshot)
      pods = metadata->snapshot->LivePods();
    auto replayed_engines = server::EngineTargets(pods, &problems);
    for (const std::string& problem : problems)
      err << "ingest: not booking the replayed engine of " << problem << "\n";
    // A snapshot may be stamped by a clock up to an hour ahead of this one, not more.
    source = server::MakeFilesSource(o.source.substr(6), store::DisplayLedgerSpec(path), &err,
                                     WallNowUs() + kMicrosPerHour, std::move(replayed_engines));
  }
  server::IngestServerConfig config;
  config.ledger = path;
  config.cluster = o.cluster;
  config.catalog = &catalog;
  config.describe = metadata->Describe();
  config.node_facts = metadata->Facts();
  // --backfill-only is for the sources that have a backlog; a scrape has none.
  config.backfill_only = o.backfill_only && !scrape;
  config.serve = o.serve;
  auto served = server::RunIngestServer(
      config, *source, stop,
      [&](const server::IngestSource* following) {
        std::function<std::string()> extra_metrics;
        if (following != nullptr)
          extra_metrics = [following] { return following->RenderMetrics(); };
        auto options =
            ServeOptions(o, path, token, BothMetrics(std::move(extra_metrics), webhook_metrics),
                         policy, catalog);
        if (following != nullptr) options.sources = [following] { return following->Health(); };
        return Serve(std::move(options), stop, out, err);
      },
      out);
  if (!served) {
    err << "error: " << served.error().message << "\n";
    return cli::ExitCodeFor(served.error());
  }
  // A backfill is the ledger's writer while it runs, and reports never write: it leaves every
  // ended day it filled kept summed, as a serving server keeps the last weeks'.
  if (config.backfill_only && *served == 0 && !stop.load()) {
    auto store = store::OpenLedger(path);
    if (!store)
      err << "warning: keeping days summed: " << store.error().message << "\n";
    else
      server::KeepEveryEndedDay(**store, WallNowUs(), stop, err);
  }
  return *served;
}

}  // namespace

int RunServer(const ServerFlags& o, const std::atomic<bool>& stop, std::ostream& out,
              std::ostream& err) {
  // glibc gives each thread that allocates an arena of its own and keeps what it freed there:
  // every API thread came to hold the peak of the largest request it served. At 10,000 GPUs
  // two arenas held the server at 889 MB RSS after the same requests that grew it to 1.16 GB
  // with the default, and answered as fast (docs/performance.md). MALLOC_ARENA_MAX decides
  // where it is set.
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 2);
  // The guardrail policy before anything else: a bad file stops the start, not the first pod.
  guardrails::Policy policy = guardrails::DefaultPolicy();
  if (!o.policy.empty()) {
    auto loaded = guardrails::LoadPolicyFile(o.policy);
    if (!loaded) {
      err << "error: --policy: " << loaded.error().message << "\n";
      return 2;
    }
    policy = std::move(*loaded);
  }
  if (o.webhook && (o.tls_cert.empty() || o.tls_key.empty())) {
    err << "error: --webhook needs --tls-cert FILE and --tls-key FILE (the API server calls "
           "webhooks over HTTPS only)\n";
    return 2;
  }
  if (!o.webhook && (!o.tls_cert.empty() || !o.tls_key.empty())) {
    err << "error: --tls-cert and --tls-key are for --webhook\n";
    return 2;
  }
  if (o.webhook && o.backfill_only) {
    err << "error: --webhook serves until stopped; --backfill-only exits once caught up\n";
    return 2;
  }
  const bool prometheus = o.source.starts_with("prometheus=");
  const bool ingest = o.source == "scrape" || o.source.starts_with("files=") || prometheus;
  if (o.source.starts_with("files=") && o.source.size() == 6) {
    err << "error: --source files=DIR: give the directory\n";
    return 2;
  }
  if (o.read_only && ingest) {
    err << "error: --read-only serves a ledger other servers write; it ingests nothing (drop "
           "--source, or --read-only)\n";
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
  server::ApiToken token;
  if (!o.token_file.empty()) {
    auto t = server::ApiToken::FromFile(o.token_file);
    if (!t) {
      err << "error: --token-file: " << t.error().message << "\n";
      return 2;
    }
    token = std::move(*t);
    if (std::string pending = token.Pending(); !pending.empty())
      err << "warning: --token-file: " << pending << "\n";
  }
  std::unique_ptr<webhook::BackgroundWebhook> admission;  // stops after the API, on return
  std::function<std::string()> webhook_metrics;
  if (o.webhook) {
    int rc = 2;
    admission = StartWebhookFromFlags(o, policy, out, err, rc);
    if (!admission) return rc;
    webhook_metrics = [w = admission.get()] { return w->server().Metrics(); };
  }
  // Kubernetes Events for the findings that warn, when the server can reach the API server
  // (its own RBAC: create events). Stops after the API, on return.
  std::unique_ptr<server::FindingEventsLoop> events;
  const bool kube = !o.kubeconfig.empty() || o.in_cluster || !o.api_server.empty();
  if (kube && !o.backfill_only) {
    auto api = ApiServerFromFlags(o);
    if (!api) {
      err << "error: " << api.error().message << "\n";
      return cli::ExitCodeFor(api.error());
    }
    http::InitClientOnce();
    events = std::make_unique<server::FindingEventsLoop>(server::ReadConnections(path),
                                                         k8s::MakeCurlTransport(*api), policy,
                                                         WallNowUs, 60 * kMicrosPerSecond, err);
    events->Start();
    webhook_metrics =
        BothMetrics(std::move(webhook_metrics), [e = events.get()] { return e->RenderMetrics(); });
  }
  if (ingest) return RunIngest(o, path, token, catalog, policy, webhook_metrics, stop, out, err);
  return Serve(ServeOptions(o, path, token, webhook_metrics, policy, catalog), stop, out, err);
}

}  // namespace gpuledger::cmd
