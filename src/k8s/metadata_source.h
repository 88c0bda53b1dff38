#pragma once
// MetadataSource: keeps a MetadataView of the cluster current by listing and watching the API
// server (pods, namespaces, nodes, ReplicaSets, Jobs, and DRA ResourceClaims/ResourceSlices
// when the cluster serves resource.k8s.io). Each resource is watched on its own thread;
// every change publishes a new immutable view (rate-limited by publish_interval).
//
// Environment failures are handled, never fatal: 5xx and broken connections back off and resume
// the watch from the last resourceVersion seen; 410 Gone relists; a cluster without DRA (404 on
// every resource.k8s.io version) is "absent" and re-checked every dra_rediscovery. Each is
// counted in Stats() and logged once per change of state.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "k8s/api_transport.h"
#include "k8s/kube_config.h"
#include "k8s/metadata_view.h"

namespace gpuledger::k8s {

struct MetadataConfig {
  // Where the API server is: a kubeconfig file (its current-context, or `context`), or
  // in-cluster (service-account token; KUBERNETES_SERVICE_HOST/PORT). `api_server` overrides
  // the server URL of either; alone it means an unauthenticated server ("http://127.0.0.1:8001"
  // behind `kubectl proxy`, or the fake API server in tests).
  std::string kubeconfig;
  std::string context;
  bool in_cluster = false;
  std::string api_server;
  std::string in_cluster_root;  // prefix of /var/run/secrets/kubernetes.io/... ("" in production)

  bool watch_dra = true;  // resourceclaims and resourceslices
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{30'000};
  std::chrono::seconds watch_timeout{290};  // ?timeoutSeconds= of each watch request
  std::chrono::milliseconds publish_interval{1'000};
  std::chrono::seconds dra_rediscovery{300};  // how often a cluster without DRA is re-asked
  std::chrono::seconds tombstone_retention{6 * 3600};  // deleted objects stay describable
  int list_page_size = 500;
  bool log = true;  // state changes to stderr
};

// Counters per watched resource (exposed by the server as metrics).
struct ResourceStats {
  std::string resource;     // "pods", "namespaces", "nodes", "replicasets", "jobs",
                            // "resourceclaims", "resourceslices"
  std::string api_path;     // "/api/v1/pods"; for DRA the version in use, "" while absent
  bool synced = false;      // listed at least once (or DRA found absent)
  bool absent = false;      // DRA not served by this cluster
  std::uint64_t lists = 0;  // complete lists (the first one and every relist)
  std::uint64_t relists = 0;
  std::uint64_t watches = 0;    // watch requests started
  std::uint64_t events = 0;     // ADDED/MODIFIED/DELETED applied
  std::uint64_t errors = 0;     // failed requests, 5xx, bad JSON, broken streams
  std::uint64_t gone = 0;       // 410 Gone (resourceVersion too old) -> relist
  std::uint64_t truncated = 0;  // watch streams that broke mid-body
  std::string last_error;
};

struct MetadataStats {
  std::vector<ResourceStats> resources;
  std::uint64_t publishes = 0;  // views published
};

class MetadataSource {
 public:
  virtual ~MetadataSource() = default;
  // The latest view; never null (empty before the first list). Thread-safe.
  virtual std::shared_ptr<const MetadataView> Current() const = 0;
  // Blocks until every resource was listed once (or found absent); false on timeout.
  virtual bool WaitForSync(std::chrono::milliseconds timeout) = 0;
  virtual MetadataStats Stats() const = 0;
};

// The API server settings `config` names. `getenv` reads KUBERNETES_SERVICE_HOST/PORT.
Result<ApiServerConfig> ResolveApiServerConfig(
    const MetadataConfig& config, const std::function<const char*(const char*)>& getenv);

// Resolves the config (errors name the kubeconfig file and field) and starts the watches. The
// returned source stops and joins its threads in its destructor.
Result<std::unique_ptr<MetadataSource>> StartMetadata(const MetadataConfig& config);

// The same with a given server config and transport factory (one transport per thread).
using TransportFactory = std::function<std::unique_ptr<ApiTransport>()>;
std::unique_ptr<MetadataSource> StartMetadataWith(const MetadataConfig& config,
                                                  const TransportFactory& transports);

// A source that always returns `view` (the simulator, `--no-metadata`, tests of consumers).
std::unique_ptr<MetadataSource> MakeStaticMetadataSource(std::shared_ptr<const MetadataView> view);

}  // namespace gpuledger::k8s
