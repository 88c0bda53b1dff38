#pragma once
// `gpuledger server`, the server's composition root: the only place that names its concrete
// parts (ingest sources, the Kubernetes watch, the webhook, the Events loop). It serves a
// ledger's REST API. With --source it also ingests into the
// ledger (docs/ingest.md): `scrape` scrapes the --targets agents every --scrape-interval;
// `files=DIR` replays exposition snapshots (with DIR/metadata.json, a `kubectl get -o json`
// List, for owners, labels and node labels when no watch is configured) and exits (or keeps
// serving with --serve). With --webhook it also serves the validating admission webhook over
// TLS until stopped (docs/webhook.md); --policy is the guardrail policy both apply.

#include <atomic>
#include <ostream>
#include <string>

#include "http/client.h"
#include "ledger/read_service.h"

namespace gpuledger::cmd {

struct ServerFlags {
  std::string source;        // "", "scrape", "files=DIR" or "prometheus=URL"
  std::string targets;       // scrape: "host:port,host:port"
  std::string targets_from;  // scrape: "NAMESPACE/SERVICE[:PORT]", the agents' Endpoints
  std::string scrape_interval = "15s";
  // scrape: agents behind a TLS proxy (kube-rbac-proxy): https and what the proxy asks for.
  std::string scrape_scheme = "http";
  http::ClientAuth scrape_auth;
  bool serve = false;          // files=DIR: keep serving the API after the replay
  std::string since = "24h";   // prometheus=URL: how far back the first run starts
  bool backfill_only = false;  // prometheus=URL, files=DIR: stop once caught up (no API served)
  // prometheus=URL: fill rows without activity from dcgm-exporter's hourly averages in the same
  // Prometheus (ingest::FillActivityFromPrometheusDcgm, docs/ingest.md).
  bool dcgm_from_prometheus = false;
  // prometheus=URL: what a managed Prometheus, Thanos or Mimir behind a gateway wants.
  http::ClientAuth prometheus_auth;
  std::string cluster;  // empty: the ledger's meta "cluster", else "default"
  bool read_only = false;  // no --source: serve a ledger others write, writing nothing
  std::string ledger;   // "sqlite:PATH" or a path
  std::string listen = "0.0.0.0:8080";
  // OpenCost's read paths without the token, for its clients (server::Api::HandleOpenCost);
  // empty: not served. docs/opencost.md says who may reach it.
  std::string opencost_listen;
  // Days of the ledger's rows the API keeps in memory (ledger::ReadServiceOptions).
  int snapshot_days = ledger::ReadServiceOptions{}.snapshot_days;
  std::string token_file;
  std::string catalog;
  // Kubernetes metadata (owners, labels, node labels for prices): any of these starts the watch.
  std::string kubeconfig;
  std::string kube_context;
  bool in_cluster = false;
  std::string api_server;
  // Guardrails: the policy file (empty: DefaultPolicy()) and the validating admission webhook,
  // served over TLS beside the API (docs/webhook.md).
  std::string policy;
  bool webhook = false;
  std::string tls_cert;
  std::string tls_key;
  std::string webhook_listen = "0.0.0.0:8443";
};

int RunServer(const ServerFlags& flags, const std::atomic<bool>& stop, std::ostream& out,
              std::ostream& err);

}  // namespace gpuledger::cmd
