#pragma once
// A fake Kubernetes API server for tests and local runs: serves Kubernetes-format JSON lists
// (with limit/continue paging) and chunked watch streams over plain HTTP on 127.0.0.1:<port 0>,
// so the real MetadataSource and its curl transport run against it. No gtest dependency.
//
// Served: GET /api/v1/{pods,namespaces,nodes}, /apis/apps/v1/replicasets,
// /apis/batch/v1/jobs, /apis/resource.k8s.io/<version>/{resourceclaims,resourceslices} for the
// versions in Options::dra_versions (others 404, as on a cluster without DRA); and POST
// /api/v1/namespaces/<ns>/events, which creates an Event as the real server does: 201 with the
// stored object, 409 AlreadyExists for a name taken in that namespace, 400 for a body that is
// not a JSON object or names another namespace, 415 without Content-Type application/json, 422
// Invalid for what core/v1 Event validation refuses (involvedObject.namespace not the event's;
// with eventTime set, no reportingComponent, reportingInstance, action or reason; a reason or
// action over 128 bytes, a message over 1024). Read the stored ones with Objects("events").
// Also GET /api/v1/namespaces/<ns>/secrets/<name> (Upsert("secrets", ...)) and the service
// proxy (Options::service_proxies), what `kubectl gpuledger` reaches the server through.
//
// State: objects per resource (the plural), keyed namespace/name. Every change takes the next
// resourceVersion of one cluster-wide counter and appends an event to a log; a watch from
// resourceVersion R gets every logged event of its resource after R, then live ones, so a
// client that resumes from the last version it saw loses nothing. All methods are thread-safe.
//
// Faults: FailNext (n responses of a status), TruncateNextWatch (cut a stream mid-line and drop
// the connection), GoneFor / CompactThrough (410 Gone for old resourceVersions), EndWatches.

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"

namespace httplib {
class Server;
}

namespace gpuledger::fake {

class FakeApiServer {
 public:
  struct Options {
    std::string bearer_token;  // when set, requests without "Authorization: Bearer <it>" get 401
    std::set<std::string> dra_versions = {"v1"};  // empty: the cluster has no DRA
    // The service proxy, GET /api/v1/namespaces/<ns>/services/<name>:<port>/proxy/<path>:
    // "<ns>/<name>:<port>" to the upstream's base URL ("http://127.0.0.1:8080"). The request
    // goes on with its path and query and every header but Authorization (the real server's
    // authentication filter removes it); a service not listed is a 503, as one without
    // endpoints is.
    std::map<std::string, std::string> service_proxies;
    std::set<std::string> forbidden;  // resources every request of which is 403 (RBAC), "secrets"
    // When both are set, HTTPS with this certificate (a pod's in-cluster client verifies it
    // against the service account's ca.crt); else plain HTTP.
    std::string tls_cert_file;
    std::string tls_key_file;
  };

  FakeApiServer();
  explicit FakeApiServer(Options options);
  ~FakeApiServer();  // Stop()
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  // Binds 127.0.0.1 on a free port and serves on a background thread.
  Status Start();
  // Ends open watches cleanly and stops serving. Idempotent.
  void Stop();
  int port() const { return port_; }
  std::string url() const;  // "http[s]://127.0.0.1:<port>"

  // --- State. `resource` is the plural: "pods", "namespaces", "nodes", "replicasets", "jobs",
  // "resourceclaims", "resourceslices", "events".
  // Adds or replaces the object (keyed by metadata.namespace/name), stamping
  // metadata.resourceVersion (and a uid when it has none); emits ADDED or MODIFIED. Returns the
  // new resourceVersion.
  std::string Upsert(const std::string& resource, nlohmann::json object);
  // Removes it and emits DELETED (with a new resourceVersion). "" when there was none.
  std::string Delete(const std::string& resource, const std::string& namespace_name,
                     const std::string& name);
  // Emits a BOOKMARK carrying the current resourceVersion.
  void Bookmark(const std::string& resource);
  // The current objects, sorted by key.
  std::vector<nlohmann::json> Objects(const std::string& resource) const;
  std::string resource_version() const;

  // --- Faults.
  // The next `count` requests for `resource` (lists, watches and creates) answer `status` with
  // a Kubernetes Status body.
  void FailNext(const std::string& resource, int count, int status = 500);
  // The next watch of `resource` sends `after_events` whole events, then the first half of the
  // next one, then drops the connection (no terminating chunk).
  void TruncateNextWatch(const std::string& resource, int after_events);
  // A watch of `resource` from exactly `resource_version` gets 410 Gone once: by default as the
  // real server does, an ERROR event with a Status of code 410 on a 200 stream; with
  // `as_http_status`, an HTTP 410 response.
  void GoneFor(const std::string& resource, const std::string& resource_version,
               bool as_http_status = false);
  // Forgets logged events up to and including `resource_version` (etcd compaction): watches
  // from an older version get 410 Gone.
  void CompactThrough(const std::string& resource_version);
  // Ends every open watch of `resource` cleanly, as timeoutSeconds would.
  void EndWatches(const std::string& resource);

  // --- Observations.
  int list_requests(const std::string& resource) const;
  int watch_requests(const std::string& resource) const;
  // POSTs of `resource` received, whatever they were answered (401 and injected faults too).
  int create_requests(const std::string& resource) const;
  // Waits until at least `count` watch requests of `resource` have been answered with a stream.
  bool WaitForWatches(const std::string& resource, int count,
                      std::chrono::milliseconds timeout) const;
  // The Authorization header of the latest request ("" when none).
  std::string last_authorization() const;

 private:
  struct Event {
    std::uint64_t rv = 0;
    std::string resource;
    std::string type;
    nlohmann::json object;
  };
  struct Fault {
    int count = 0;
    int status = 500;
  };
  struct Gone {
    std::string rv;
    bool as_http_status = false;
  };
  class Handler;

  void Emit(const std::string& resource, const std::string& type, nlohmann::json object);
  // Upsert with mu_ held: stamps uid and resourceVersion, stores, emits; the stored object.
  nlohmann::json StoreLocked(const std::string& resource, nlohmann::json object);

  Options options_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool stopping_ = false;
  std::uint64_t rv_ = 1000;
  std::uint64_t compacted_through_ = 0;
  std::uint64_t uid_counter_ = 0;
  std::map<std::string, std::map<std::string, nlohmann::json>> objects_;
  std::vector<Event> log_;
  std::map<std::string, Fault> faults_;
  std::map<std::string, int> truncate_;
  std::map<std::string, std::vector<Gone>> gone_;
  std::map<std::string, int> watch_epoch_;
  std::map<std::string, int> lists_;
  std::map<std::string, int> watches_;
  std::map<std::string, int> creates_;
  std::string last_authorization_;

  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

// Object builders in the API server's JSON shape (only the fields gpuledger reads).
nlohmann::json MakePod(const std::string& namespace_name, const std::string& name,
                       const std::map<std::string, std::string>& labels = {},
                       const std::string& owner_kind = "", const std::string& owner_name = "",
                       const std::string& node = "");
nlohmann::json MakeNamespace(const std::string& name,
                             const std::map<std::string, std::string>& labels = {});
nlohmann::json MakeNode(const std::string& name,
                        const std::map<std::string, std::string>& labels = {});
// A ReplicaSet or Job (`kind`) owned by `owner_kind`/`owner_name` (may be empty).
nlohmann::json MakeOwned(const std::string& kind, const std::string& namespace_name,
                         const std::string& name, const std::string& owner_kind,
                         const std::string& owner_name);
struct FakeDraResult {
  std::string driver, pool, device, request = "gpu";
};
nlohmann::json MakeResourceClaim(const std::string& namespace_name, const std::string& name,
                                 const std::vector<FakeDraResult>& allocated);
struct FakeSliceDevice {
  std::string name;
  std::map<std::string, std::string> string_attributes;  // e.g. {"uuid", "GPU-..."}
  std::map<std::string, long long> int_attributes;
};
// api_version "v1" puts attributes on the device; "v1beta1" under device.basic.
nlohmann::json MakeResourceSlice(const std::string& name, const std::string& driver,
                                 const std::string& pool, const std::string& node,
                                 const std::vector<FakeSliceDevice>& devices,
                                 std::int64_t generation = 1,
                                 const std::string& api_version = "v1");

}  // namespace gpuledger::fake
