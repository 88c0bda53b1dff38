#include "fake_apiserver/fake_apiserver.h"

#include <fmt/format.h>
#include <httplib.h>

#include <cctype>
#include <ctime>

namespace gpuledger::fake {
namespace {

using nlohmann::json;

struct ResourceInfo {
  const char* kind;
  const char* api_version;  // group/version for non-DRA kinds
  bool namespaced;
};

const ResourceInfo* Info(const std::string& resource) {
  static const std::map<std::string, ResourceInfo> kInfo = {
      // NOLINT: immutable table
      {"pods", {"Pod", "v1", true}},
      {"namespaces", {"Namespace", "v1", false}},
      {"nodes", {"Node", "v1", false}},
      {"endpoints", {"Endpoints", "v1", true}},
      {"replicasets", {"ReplicaSet", "apps/v1", true}},
      {"jobs", {"Job", "batch/v1", true}},
      {"resourceclaims", {"ResourceClaim", "resource.k8s.io/v1", true}},
      {"resourceslices", {"ResourceSlice", "resource.k8s.io/v1", false}},
      {"events", {"Event", "v1", true}},
      {"secrets", {"Secret", "v1", true}},
  };
  auto it = kInfo.find(resource);
  return it == kInfo.end() ? nullptr : &it->second;
}

std::string KeyOf(const json& object) {
  const json& md = object.at("metadata");
  std::string ns = md.value("namespace", "");
  std::string name = md.value("name", "");
  return ns.empty() ? name : ns + "/" + name;
}

json StatusBody(int code, const std::string& reason, const std::string& message) {
  return {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
          {"status", "Failure"}, {"message", message}, {"reason", reason},
          {"code", code}};
}

void Reply(httplib::Response& res, int code, const std::string& reason,
           const std::string& message) {
  res.status = code;
  res.set_content(StatusBody(code, reason, message).dump(), "application/json");
}

// The field core/v1 Event validation (legacyValidateEvent) refuses first, as "<path>: <why>";
// "" when it passes. Only the rules an Event creator can break by omission or length.
std::string EventInvalid(const json& event) {
  auto text = [&](const char* field) {
    auto it = event.find(field);
    return it != event.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  const std::string ns = event["metadata"].value("namespace", "");
  const json involved = event.value("involvedObject", json::object());
  const std::string involved_ns = involved.is_object() ? involved.value("namespace", "") : "";
  const bool has_event_time = event.contains("eventTime") && !event["eventTime"].is_null();
  if (!involved_ns.empty() && involved_ns != ns) {
    return "involvedObject.namespace: Invalid value: \"" + involved_ns +
           "\": does not match event.namespace";
  }
  if (has_event_time) {
    for (const char* required : {"reportingComponent", "reportingInstance", "action", "reason"}) {
      if (text(required).empty()) return std::string(required) + ": Required value";
    }
  }
  const std::pair<const char*, std::size_t> limits[] = {
      {"reason", 128}, {"action", 128}, {"message", 1024}};
  for (const auto& [field, limit] : limits) {
    if (text(field).size() > limit) {
      return fmt::format("{}: Invalid value: \"\": can have at most {} characters", field, limit);
    }
  }
  return "";
}

std::string NowRfc3339() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

std::uint64_t ParseRv(const std::string& text) {
  try {
    return text.empty() ? 0 : std::stoull(text);
  } catch (...) {
    return 0;
  }
}

}  // namespace

FakeApiServer::FakeApiServer() : FakeApiServer(Options{}) {}
FakeApiServer::FakeApiServer(Options options) : options_(std::move(options)) {}
FakeApiServer::~FakeApiServer() { Stop(); }

std::string FakeApiServer::url() const {
  return fmt::format("{}://127.0.0.1:{}", options_.tls_cert_file.empty() ? "http" : "https", port_);
}

// Serves one request for `resource` (version already checked).
class FakeApiServer::Handler {
 public:
  static void Serve(FakeApiServer& self, const std::string& resource, const std::string& version,
                    const httplib::Request& req, httplib::Response& res) {
    const ResourceInfo* info = Info(resource);
    std::unique_lock lock(self.mu_);
    self.last_authorization_ = req.get_header_value("Authorization");
    if (!self.options_.bearer_token.empty() &&
        self.last_authorization_ != "Bearer " + self.options_.bearer_token) {
      Reply(res, 401, "Unauthorized", "Unauthorized");
      return;
    }
    const std::string watch = req.get_param_value("watch");
    const bool is_watch = watch == "1" || watch == "true";
    (is_watch ? self.watches_ : self.lists_)[resource]++;
    self.cv_.notify_all();
    Fault& fault = self.faults_[resource];
    if (fault.count > 0) {
      --fault.count;
      Reply(res, fault.status, "InternalError", fmt::format("injected failure {}", fault.status));
      return;
    }
    std::string group_version = info->api_version;
    if (resource == "resourceclaims" || resource == "resourceslices") {
      group_version = "resource.k8s.io/" + version;
    }
    if (!is_watch) {
      List(self, resource, info, group_version, req, res);
      return;
    }
    const std::string from = req.get_param_value("resourceVersion");
    const std::uint64_t from_rv = ParseRv(from);
    auto& gone = self.gone_[resource];
    for (auto it = gone.begin(); it != gone.end(); ++it) {
      if (it->rv == from) {
        bool as_http = it->as_http_status;
        gone.erase(it);
        SendGone(res, as_http, from);
        return;
      }
    }
    if (from_rv != 0 && from_rv <= self.compacted_through_) {
      SendGone(res, false, from);
      return;
    }
    int truncate_after = -1;
    if (auto t = self.truncate_.find(resource); t != self.truncate_.end()) {
      truncate_after = t->second;
      self.truncate_.erase(t);
    }
    int timeout_s = 0;
    if (req.has_param("timeoutSeconds")) {
      timeout_s = std::atoi(req.get_param_value("timeoutSeconds").c_str());
    }
    struct WatchState {
      std::uint64_t cursor;
      int epoch;
      int truncate_after;
      int sent = 0;
      std::chrono::steady_clock::time_point deadline;
    };
    auto state = std::make_shared<WatchState>();
    state->cursor = from_rv != 0 ? from_rv : self.rv_;  // "" or 0: from now
    state->epoch = self.watch_epoch_[resource];
    state->truncate_after = truncate_after;
    state->deadline = timeout_s > 0
                          ? std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s)
                          : std::chrono::steady_clock::time_point::max();
    FakeApiServer* server = &self;
    res.set_chunked_content_provider("application/json", [server, resource, state](
                                                             size_t, httplib::DataSink& sink) {
      std::vector<std::string> lines;
      bool end = false;
      {
        std::unique_lock lock(server->mu_);
        auto pending = [&] {
          for (const auto& e : server->log_) {
            if (e.resource == resource && e.rv > state->cursor) {
              return true;
            }
          }
          return false;
        };
        server->cv_.wait_for(lock, std::chrono::milliseconds(100), [&] {
          return server->stopping_ || pending() || server->watch_epoch_[resource] != state->epoch;
        });
        // An ended watch sends nothing more: events logged after EndWatches (the test changes
        // state right after it) must reach the client through its resume, never live on the
        // stream being closed, however late this thread wakes.
        const bool ended = server->watch_epoch_[resource] != state->epoch;
        for (const auto& e : server->log_) {
          if (ended) {
            break;
          }
          if (e.resource != resource || e.rv <= state->cursor) {
            continue;
          }
          json line = {{"type", e.type}, {"object", e.object}};
          lines.push_back(line.dump() + "\n");
          state->cursor = e.rv;
        }
        end = server->stopping_ || server->watch_epoch_[resource] != state->epoch ||
              std::chrono::steady_clock::now() >= state->deadline;
      }
      for (const std::string& line : lines) {
        if (state->truncate_after >= 0 && state->sent == state->truncate_after) {
          sink.write(line.data(), line.size() / 2);
          return false;  // drop the connection without the terminating chunk
        }
        if (!sink.write(line.data(), line.size())) {
          return false;
        }
        ++state->sent;
      }
      if (end) {
        sink.done();
      }
      return true;
    });
    self.cv_.notify_all();
  }

  // True when the request may go on: the bearer token (when one is required) and RBAC
  // (Options::forbidden) pass; else the answer is written. With mu_ held.
  static bool Admit(FakeApiServer& self, const std::string& resource, const httplib::Request& req,
                    httplib::Response& res) {
    self.last_authorization_ = req.get_header_value("Authorization");
    if (!self.options_.bearer_token.empty() &&
        self.last_authorization_ != "Bearer " + self.options_.bearer_token) {
      Reply(res, 401, "Unauthorized", "Unauthorized");
      return false;
    }
    if (self.options_.forbidden.contains(resource)) {
      Reply(res, 403, "Forbidden",
            fmt::format("{} is forbidden: User \"test\" cannot get resource \"{}\"", resource,
                        resource));
      return false;
    }
    return true;
  }

  // GET /api/v1/namespaces/<ns>/secrets/<name>.
  static void GetSecret(FakeApiServer& self, const std::string& ns, const std::string& name,
                        const httplib::Request& req, httplib::Response& res) {
    std::unique_lock lock(self.mu_);
    if (!Admit(self, "secrets", req, res)) return;
    const auto& secrets = self.objects_["secrets"];
    auto it = secrets.find(ns + "/" + name);
    if (it == secrets.end()) {
      Reply(res, 404, "NotFound", fmt::format("secrets \"{}\" not found", name));
      return;
    }
    res.set_content(it->second.dump(), "application/json");
  }

  // GET /api/v1/namespaces/<ns>/services/<name:port>/proxy<rest>: forwarded to the upstream.
  static void ProxyService(FakeApiServer& self, const std::string& ns, const std::string& service,
                           const std::string& rest, const httplib::Request& req,
                           httplib::Response& res) {
    std::string upstream;
    {
      std::unique_lock lock(self.mu_);
      if (!Admit(self, "services/proxy", req, res)) return;
      auto it = self.options_.service_proxies.find(ns + "/" + service);
      if (it == self.options_.service_proxies.end()) {
        Reply(res, 503, "ServiceUnavailable",
              fmt::format("no endpoints available for service \"{}\"", service));
        return;
      }
      upstream = it->second;
    }
    httplib::Client client(upstream);
    httplib::Headers headers;
    for (const auto& [name, value] : req.headers) {
      std::string lower = name;
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (lower != "authorization" && lower != "host" && lower != "content-length")
        headers.emplace(name, value);
    }
    std::string target = rest.empty() ? "/" : rest;
    if (!req.params.empty()) {
      target += "?";
      for (const auto& [k, v] : req.params)
        target += httplib::detail::encode_query_param(k) + "=" +
                  httplib::detail::encode_query_param(v) + "&";
      target.pop_back();
    }
    auto answer = client.Get(target, headers);
    if (!answer) {
      Reply(res, 503, "ServiceUnavailable", "error trying to reach service: connection refused");
      return;
    }
    res.status = answer->status;
    res.set_content(answer->body, answer->get_header_value("Content-Type"));
  }

  // POST /api/v1/namespaces/<ns>/events.
  static void CreateEvent(FakeApiServer& self, const std::string& ns, const httplib::Request& req,
                          httplib::Response& res) {
    std::unique_lock lock(self.mu_);
    self.last_authorization_ = req.get_header_value("Authorization");
    ++self.creates_["events"];
    if (!self.options_.bearer_token.empty() &&
        self.last_authorization_ != "Bearer " + self.options_.bearer_token) {
      Reply(res, 401, "Unauthorized", "Unauthorized");
      return;
    }
    Fault& fault = self.faults_["events"];
    if (fault.count > 0) {
      --fault.count;
      Reply(res, fault.status, "InternalError", fmt::format("injected failure {}", fault.status));
      return;
    }
    if (!req.get_header_value("Content-Type").starts_with("application/json")) {
      Reply(res, 415, "UnsupportedMediaType",
            fmt::format("the body of the request was in an unknown format - accepted media types "
                        "include: application/json (got '{}')",
                        req.get_header_value("Content-Type")));
      return;
    }
    json event = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    if (!event.is_object() || (event.contains("metadata") && !event["metadata"].is_object())) {
      Reply(res, 400, "BadRequest", "the request body is not a JSON object");
      return;
    }
    json& md = event["metadata"];
    if (md.value("namespace", ns) != ns) {
      Reply(res, 400, "BadRequest",
            "the namespace of the provided object does not match the namespace sent on the "
            "request");
      return;
    }
    md["namespace"] = ns;
    const std::string name = md.value("name", "");
    if (name.empty()) {
      Reply(res, 422, "Invalid",
            "Event \"\" is invalid: metadata.name: Required value: name or "
            "generateName is required");
      return;
    }
    if (std::string why = EventInvalid(event); !why.empty()) {
      Reply(res, 422, "Invalid", fmt::format("Event \"{}\" is invalid: {}", name, why));
      return;
    }
    if (self.objects_["events"].contains(ns + "/" + name)) {
      json body =
          StatusBody(409, "AlreadyExists", fmt::format("events \"{}\" already exists", name));
      body["details"] = {{"name", name}, {"kind", "events"}};
      res.status = 409;
      res.set_content(body.dump(), "application/json");
      return;
    }
    md.erase("uid");  // the server assigns these
    md.erase("resourceVersion");
    md["creationTimestamp"] = NowRfc3339();
    json stored = self.StoreLocked("events", std::move(event));
    res.status = 201;
    res.set_content(stored.dump(), "application/json");
  }

 private:
  static void SendGone(httplib::Response& res, bool as_http, const std::string& from) {
    const std::string message =
        fmt::format("too old resource version: {}", from.empty() ? "0" : from);
    if (as_http) {
      Reply(res, 410, "Expired", message);
      return;
    }
    json line = {{"type", "ERROR"}, {"object", StatusBody(410, "Expired", message)}};
    res.status = 200;
    res.set_content(line.dump() + "\n", "application/json");
  }

  static void List(FakeApiServer& self, const std::string& resource, const ResourceInfo* info,
                   const std::string& group_version, const httplib::Request& req,
                   httplib::Response& res) {
    const auto& objects = self.objects_[resource];
    std::size_t limit = 0;
    if (req.has_param("limit")) {
      limit = static_cast<std::size_t>(std::atoll(req.get_param_value("limit").c_str()));
    }
    std::size_t offset = 0;
    std::string list_rv = std::to_string(self.rv_);
    if (req.has_param("continue")) {
      // Our token: "<offset>.<resourceVersion of the first page>".
      const std::string token = req.get_param_value("continue");
      auto dot = token.find('.');
      if (dot == std::string::npos) {
        Reply(res, 400, "BadRequest", "invalid continue token");
        return;
      }
      offset = static_cast<std::size_t>(std::atoll(token.substr(0, dot).c_str()));
      list_rv = token.substr(dot + 1);
    }
    json items = json::array();
    std::size_t i = 0;
    for (const auto& [key, object] : objects) {
      if (i++ < offset) {
        continue;
      }
      if (limit > 0 && items.size() >= limit) {
        break;
      }
      items.push_back(object);
    }
    json metadata = {{"resourceVersion", list_rv}};
    if (limit > 0 && offset + items.size() < objects.size()) {
      metadata["continue"] = fmt::format("{}.{}", offset + items.size(), list_rv);
    }
    json body = {{"kind", std::string(info->kind) + "List"},
                 {"apiVersion", group_version},
                 {"metadata", metadata},
                 {"items", items}};
    res.status = 200;
    res.set_content(body.dump(), "application/json");
  }
};

Status FakeApiServer::Start() {
  if (server_) {
    return InvalidArgument("fake API server: already started");
  }
  {
    std::lock_guard lock(mu_);
    stopping_ = false;
  }
  if (!options_.tls_cert_file.empty()) {
    auto tls = std::make_unique<httplib::SSLServer>(options_.tls_cert_file.c_str(),
                                                    options_.tls_key_file.c_str());
    if (!tls->is_valid()) return InvalidArgument("fake API server: bad TLS certificate or key");
    server_ = std::move(tls);
  } else {
    server_ = std::make_unique<httplib::Server>();
  }
  server_->new_task_queue = [] { return new httplib::ThreadPool(48); };
  server_->set_keep_alive_timeout(1);
  auto route = [this](const std::string& resource) {
    return [this, resource](const httplib::Request& req, httplib::Response& res) {
      Handler::Serve(*this, resource, "", req, res);
    };
  };
  for (const char* r : {"pods", "namespaces", "nodes", "endpoints"}) {
    server_->Get(fmt::format("/api/v1/{}", r), route(r));
  }
  server_->Get("/apis/apps/v1/replicasets", route("replicasets"));
  server_->Get("/apis/batch/v1/jobs", route("jobs"));
  server_->Get(R"(/apis/resource\.k8s\.io/([^/]+)/(resourceclaims|resourceslices))",
               [this](const httplib::Request& req, httplib::Response& res) {
                 const std::string version = req.matches[1];
                 const std::string resource = req.matches[2];
                 if (!options_.dra_versions.contains(version)) {
                   Reply(res, 404, "NotFound", "the server could not find the requested resource");
                   return;
                 }
                 Handler::Serve(*this, resource, version, req, res);
               });
  server_->Get(R"(/api/v1/namespaces/([^/]+)/secrets/([^/]+))",
               [this](const httplib::Request& req, httplib::Response& res) {
                 Handler::GetSecret(*this, req.matches[1], req.matches[2], req, res);
               });
  server_->Get(R"(/api/v1/namespaces/([^/]+)/services/([^/]+)/proxy(/.*)?)",
               [this](const httplib::Request& req, httplib::Response& res) {
                 Handler::ProxyService(*this, req.matches[1], req.matches[2], req.matches[3], req,
                                       res);
               });
  server_->Post(R"(/api/v1/namespaces/([^/]+)/events)",
                [this](const httplib::Request& req, httplib::Response& res) {
                  Handler::CreateEvent(*this, req.matches[1], req, res);
                });
  server_->set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) {
      Reply(res, res.status, "NotFound", "the server could not find the requested resource");
    }
  });
  port_ = server_->bind_to_any_port("127.0.0.1");
  if (port_ <= 0) {
    server_.reset();
    return IoError("fake API server: cannot bind 127.0.0.1");
  }
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // httplib's stop() does nothing before the listener runs (it would then accept forever), so
  // Start returns only once it does: a Stop right after Start then always ends it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!server_->is_running()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return IoError("fake API server: the listener did not start within 10 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return Status::Ok();
}

void FakeApiServer::Stop() {
  if (!server_) {
    return;
  }
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  server_->stop();
  if (thread_.joinable()) {
    thread_.join();
  }
  server_.reset();
}

void FakeApiServer::Emit(const std::string& resource, const std::string& type, json object) {
  log_.push_back({rv_, resource, type, std::move(object)});
  cv_.notify_all();
}

std::string FakeApiServer::Upsert(const std::string& resource, json object) {
  std::lock_guard lock(mu_);
  StoreLocked(resource, std::move(object));
  return std::to_string(rv_);
}

json FakeApiServer::StoreLocked(const std::string& resource, json object) {
  const std::string key = KeyOf(object);
  auto& objects = objects_[resource];
  const bool existed = objects.contains(key);
  json& md = object["metadata"];
  if (!md.contains("uid")) {
    md["uid"] = existed ? objects[key]["metadata"]["uid"]
                        : json(fmt::format("00000000-0000-4000-8000-{:012}", ++uid_counter_));
  }
  ++rv_;
  object["metadata"]["resourceVersion"] = std::to_string(rv_);
  const ResourceInfo* info = Info(resource);
  if (info != nullptr && !object.contains("kind")) {
    object["kind"] = info->kind;
    object["apiVersion"] = info->api_version;
  }
  objects[key] = object;
  Emit(resource, existed ? "MODIFIED" : "ADDED", object);
  return object;
}

std::string FakeApiServer::Delete(const std::string& resource, const std::string& namespace_name,
                                  const std::string& name) {
  std::lock_guard lock(mu_);
  auto& objects = objects_[resource];
  const std::string key = namespace_name.empty() ? name : namespace_name + "/" + name;
  auto it = objects.find(key);
  if (it == objects.end()) {
    return "";
  }
  json object = std::move(it->second);
  objects.erase(it);
  ++rv_;
  object["metadata"]["resourceVersion"] = std::to_string(rv_);
  Emit(resource, "DELETED", std::move(object));
  return std::to_string(rv_);
}

void FakeApiServer::Bookmark(const std::string& resource) {
  std::lock_guard lock(mu_);
  const ResourceInfo* info = Info(resource);
  json object = {{"kind", info != nullptr ? info->kind : "Unknown"},
                 {"metadata", {{"resourceVersion", std::to_string(rv_)}}}};
  // A bookmark carries the current version; it must sort after everything already logged.
  ++rv_;
  object["metadata"]["resourceVersion"] = std::to_string(rv_);
  Emit(resource, "BOOKMARK", std::move(object));
}

std::vector<json> FakeApiServer::Objects(const std::string& resource) const {
  std::lock_guard lock(mu_);
  std::vector<json> out;
  auto it = objects_.find(resource);
  if (it == objects_.end()) {
    return out;
  }
  for (const auto& [key, object] : it->second) {
    out.push_back(object);
  }
  return out;
}

std::string FakeApiServer::resource_version() const {
  std::lock_guard lock(mu_);
  return std::to_string(rv_);
}

void FakeApiServer::FailNext(const std::string& resource, int count, int status) {
  std::lock_guard lock(mu_);
  faults_[resource] = {count, status};
}

void FakeApiServer::TruncateNextWatch(const std::string& resource, int after_events) {
  std::lock_guard lock(mu_);
  truncate_[resource] = after_events;
}

void FakeApiServer::GoneFor(const std::string& resource, const std::string& resource_version,
                            bool as_http_status) {
  std::lock_guard lock(mu_);
  gone_[resource].push_back({resource_version, as_http_status});
}

void FakeApiServer::CompactThrough(const std::string& resource_version) {
  std::lock_guard lock(mu_);
  compacted_through_ = ParseRv(resource_version);
  std::erase_if(log_, [&](const Event& e) { return e.rv <= compacted_through_; });
}

void FakeApiServer::EndWatches(const std::string& resource) {
  std::lock_guard lock(mu_);
  ++watch_epoch_[resource];
  cv_.notify_all();
}

int FakeApiServer::list_requests(const std::string& resource) const {
  std::lock_guard lock(mu_);
  auto it = lists_.find(resource);
  return it == lists_.end() ? 0 : it->second;
}

int FakeApiServer::watch_requests(const std::string& resource) const {
  std::lock_guard lock(mu_);
  auto it = watches_.find(resource);
  return it == watches_.end() ? 0 : it->second;
}

bool FakeApiServer::WaitForWatches(const std::string& resource, int count,
                                   std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] {
    auto it = watches_.find(resource);
    return it != watches_.end() && it->second >= count;
  });
}

int FakeApiServer::create_requests(const std::string& resource) const {
  std::lock_guard lock(mu_);
  auto it = creates_.find(resource);
  return it == creates_.end() ? 0 : it->second;
}

std::string FakeApiServer::last_authorization() const {
  std::lock_guard lock(mu_);
  return last_authorization_;
}

json MakePod(const std::string& namespace_name, const std::string& name,
             const std::map<std::string, std::string>& labels, const std::string& owner_kind,
             const std::string& owner_name, const std::string& node) {
  json pod = {{"metadata", {{"namespace", namespace_name}, {"name", name}}},
              {"spec", {{"containers", json::array({{{"name", "main"}}})}}},
              {"status", {{"phase", "Running"}}}};
  if (!labels.empty()) {
    pod["metadata"]["labels"] = labels;
  }
  if (!owner_kind.empty()) {
    pod["metadata"]["ownerReferences"] =
        json::array({{{"apiVersion", owner_kind == "Job" ? "batch/v1" : "apps/v1"},
                      {"kind", owner_kind},
                      {"name", owner_name},
                      {"uid", "owner-" + owner_name},
                      {"controller", true},
                      {"blockOwnerDeletion", true}}});
  }
  if (!node.empty()) {
    pod["spec"]["nodeName"] = node;
  }
  return pod;
}

json MakeNamespace(const std::string& name, const std::map<std::string, std::string>& labels) {
  json ns = {{"metadata", {{"name", name}}}, {"status", {{"phase", "Active"}}}};
  auto all = labels;
  all["kubernetes.io/metadata.name"] = name;
  ns["metadata"]["labels"] = all;
  return ns;
}

json MakeNode(const std::string& name, const std::map<std::string, std::string>& labels) {
  json node = {{"metadata", {{"name", name}}}, {"spec", json::object()}};
  if (!labels.empty()) {
    node["metadata"]["labels"] = labels;
  }
  return node;
}

json MakeOwned(const std::string& kind, const std::string& namespace_name, const std::string& name,
               const std::string& owner_kind, const std::string& owner_name) {
  json obj = {{"metadata", {{"namespace", namespace_name}, {"name", name}}},
              {"spec", json::object()}};
  (void)kind;
  if (!owner_kind.empty()) {
    obj["metadata"]["ownerReferences"] =
        json::array({{{"apiVersion", owner_kind == "CronJob" ? "batch/v1" : "apps/v1"},
                      {"kind", owner_kind},
                      {"name", owner_name},
                      {"uid", "owner-" + owner_name},
                      {"controller", true}}});
  }
  return obj;
}

json MakeResourceClaim(const std::string& namespace_name, const std::string& name,
                       const std::vector<FakeDraResult>& allocated) {
  json claim = {{"metadata", {{"namespace", namespace_name}, {"name", name}}},
                {"spec", {{"devices", {{"requests", json::array()}}}}}};
  if (!allocated.empty()) {
    json results = json::array();
    for (const auto& r : allocated) {
      results.push_back(
          {{"request", r.request}, {"driver", r.driver}, {"pool", r.pool}, {"device", r.device}});
    }
    claim["status"] = {{"allocation", {{"devices", {{"results", results}}}}}};
  }
  return claim;
}

json MakeResourceSlice(const std::string& name, const std::string& driver, const std::string& pool,
                       const std::string& node, const std::vector<FakeSliceDevice>& devices,
                       std::int64_t generation, const std::string& api_version) {
  json devs = json::array();
  for (const auto& d : devices) {
    json attrs = json::object();
    for (const auto& [k, v] : d.string_attributes) {
      attrs[k] = {{"string", v}};
    }
    for (const auto& [k, v] : d.int_attributes) {
      attrs[k] = {{"int", v}};
    }
    json dev = {{"name", d.name}};
    if (api_version == "v1beta1") {
      dev["basic"] = {{"attributes", attrs}};
    } else {
      dev["attributes"] = attrs;
    }
    devs.push_back(dev);
  }
  return {{"metadata", {{"name", name}}},
          {"spec",
           {{"driver", driver},
            {"nodeName", node},
            {"pool", {{"name", pool}, {"generation", generation}, {"resourceSliceCount", 1}}},
            {"devices", devs}}}};
}

}  // namespace gpuledger::fake
