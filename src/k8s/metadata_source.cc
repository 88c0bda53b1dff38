#include "k8s/metadata_source.h"
#include "http/client.h"

#include "k8s/resource_cache.h"

#include <fmt/format.h>

#include <iostream>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

namespace gpuledger::k8s {
namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

std::string UrlEncode(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

std::string StatusMessage(const std::string& body) {
  json doc = json::parse(body, nullptr, false);
  if (doc.is_object() && doc.contains("message") && doc["message"].is_string()) {
    return doc["message"].get<std::string>();
  }
  return body.substr(0, 200);
}

class ApiMetadataSource;

// Lists and watches one resource on its own thread.
class Watcher {
 public:
  Watcher(ApiMetadataSource& source, WatchedResource spec, std::size_t index,
          std::unique_ptr<ApiTransport> transport);
  void Run();

 private:
  enum class ListOutcome { kOk, kRetry, kAbsent, kStopped };
  ListOutcome List();
  void Watch();
  void Fail(const std::string& message, bool truncated = false);
  void Healthy();
  bool Backoff();
  void MaybePublish(bool force);
  bool Stopping() const;
  template <typename F>
  void Update(F&& f);

  ApiMetadataSource& source_;
  WatchedResource spec_;
  std::size_t index_;
  std::unique_ptr<ApiTransport> transport_;
  std::unique_ptr<ResourceCache> cache_;
  std::size_t path_index_ = 0;
  bool absent_ = false;
  bool need_list_ = true;
  bool listed_once_ = false;
  std::string resource_version_;
  std::chrono::milliseconds backoff_;
  bool healthy_ = true;
  bool dirty_ = false;
  SteadyClock::time_point last_publish_{};
};

class ApiMetadataSource : public MetadataSource {
 public:
  ApiMetadataSource(MetadataConfig config, const TransportFactory& transports)
      : config_(std::move(config)), current_(std::make_shared<const MetadataView>()) {
    auto specs = WatchedResources(config_.watch_dra);
    for (std::size_t i = 0; i < specs.size(); ++i) {
      ResourceStats s;
      s.resource = specs[i].name;
      stats_.resources.push_back(s);
      watchers_.push_back(std::make_unique<Watcher>(*this, std::move(specs[i]), i, transports()));
    }
    for (auto& w : watchers_) {
      threads_.emplace_back([w = w.get()] { w->Run(); });
    }
  }

  ~ApiMetadataSource() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    stopping_.store(true);
    cv_.notify_all();
    for (auto& t : threads_) {
      t.join();
    }
  }

  std::shared_ptr<const MetadataView> Current() const override {
    std::lock_guard lock(mu_);
    return current_;
  }

  bool WaitForSync(std::chrono::milliseconds timeout) override {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] {
      for (const auto& r : stats_.resources) {
        if (!r.synced) {
          return false;
        }
      }
      return true;
    });
  }

  MetadataStats Stats() const override {
    std::lock_guard lock(mu_);
    return stats_;
  }

  // Watcher side.
  const MetadataConfig& config() const { return config_; }
  bool stopping() const { return stopping_.load(std::memory_order_relaxed); }

  void Publish(ResourceCache& cache) {
    std::lock_guard lock(mu_);
    cache.Publish(tables_);
    current_ = std::make_shared<const MetadataView>(tables_);
    ++stats_.publishes;
  }

  template <typename F>
  void UpdateStats(std::size_t index, F&& f) {
    {
      std::lock_guard lock(mu_);
      f(stats_.resources[index]);
    }
    cv_.notify_all();
  }

  // Sleeps `d` unless stopped first; false when stopping.
  bool SleepFor(std::chrono::milliseconds d) {
    std::unique_lock lock(mu_);
    return !cv_.wait_for(lock, d, [&] { return stop_; });
  }

 private:
  MetadataConfig config_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<bool> stopping_{false};
  MetadataTables tables_;
  std::shared_ptr<const MetadataView> current_;
  MetadataStats stats_;
  std::vector<std::unique_ptr<Watcher>> watchers_;
  std::vector<std::thread> threads_;
};

Watcher::Watcher(ApiMetadataSource& source, WatchedResource spec, std::size_t index,
                 std::unique_ptr<ApiTransport> transport)
    : source_(source),
      spec_(std::move(spec)),
      index_(index),
      transport_(std::move(transport)),
      cache_(spec_.make_cache(source.config().tombstone_retention)),
      backoff_(source.config().initial_backoff) {}

template <typename F>
void Watcher::Update(F&& f) {
  source_.UpdateStats(index_, std::forward<F>(f));
}

bool Watcher::Stopping() const { return source_.stopping(); }

void Watcher::Fail(const std::string& message, bool truncated) {
  Update([&](ResourceStats& s) {
    ++s.errors;
    if (truncated) {
      ++s.truncated;
    }
    s.last_error = message;
  });
  if (healthy_ && source_.config().log) {
    std::cerr << fmt::format("gpuledger: metadata: {}: {}; retrying with backoff\n", spec_.name,
                             message);
  }
  healthy_ = false;
}

void Watcher::Healthy() {
  backoff_ = source_.config().initial_backoff;
  if (!healthy_ && source_.config().log) {
    std::cerr << fmt::format("gpuledger: metadata: {}: recovered\n", spec_.name);
  }
  healthy_ = true;
}

bool Watcher::Backoff() {
  const auto wait = backoff_;
  backoff_ = std::min(backoff_ * 2, source_.config().max_backoff);
  return source_.SleepFor(wait);
}

void Watcher::MaybePublish(bool force) {
  if (!dirty_) {
    return;
  }
  const auto now = SteadyClock::now();
  if (!force && now - last_publish_ < source_.config().publish_interval) {
    return;
  }
  source_.Publish(*cache_);
  dirty_ = false;
  last_publish_ = now;
}

void Watcher::Run() {
  while (!Stopping()) {
    if (need_list_) {
      switch (List()) {
        case ListOutcome::kOk:
          break;
        case ListOutcome::kRetry:
          if (!Backoff()) {
            return;
          }
          continue;
        case ListOutcome::kAbsent:
          if (!source_.SleepFor(source_.config().dra_rediscovery)) {
            return;
          }
          continue;
        case ListOutcome::kStopped:
          return;
      }
    }
    Watch();
  }
}

Watcher::ListOutcome Watcher::List() {
  const auto& config = source_.config();
  const auto tick = [this] { return !Stopping(); };
  while (true) {
    const std::string& path = spec_.paths[path_index_];
    std::vector<json> items;
    std::string continue_token, rv;
    bool not_found = false;
    std::string failure;
    while (true) {
      std::string target = fmt::format("{}?limit={}", path, config.list_page_size);
      if (!continue_token.empty()) {
        target += "&continue=" + UrlEncode(continue_token);
      }
      auto response = transport_->Get(target, tick);
      if (Stopping()) {
        return ListOutcome::kStopped;
      }
      if (!response) {
        failure = response.error().message;
        break;
      }
      if (response->status == 404 && spec_.optional) {
        not_found = true;
        break;
      }
      if (response->status == 410 && !continue_token.empty()) {
        // The continue token expired: start the list over.
        items.clear();
        continue_token.clear();
        continue;
      }
      if (response->status != 200) {
        failure = fmt::format("list {}: HTTP {}: {}", path, response->status,
                              StatusMessage(response->body));
        break;
      }
      auto page = ParseListPage(response->body);
      if (!page) {
        failure = fmt::format("list {}: {}", path, page.error().message);
        break;
      }
      for (auto& item : page->items) {
        items.push_back(std::move(item));
      }
      rv = page->resource_version;
      continue_token = page->continue_token;
      if (continue_token.empty()) {
        break;
      }
    }
    if (not_found) {
      if (path_index_ + 1 < spec_.paths.size()) {
        ++path_index_;
        continue;
      }
      path_index_ = 0;
      if (!absent_ && config.log) {
        std::cerr << fmt::format("gpuledger: metadata: {}: not served by this cluster (no DRA)\n",
                                 spec_.name);
      }
      absent_ = true;
      cache_->Clear();
      dirty_ = true;
      MaybePublish(true);
      Update([&](ResourceStats& s) {
        s.absent = true;
        s.synced = true;
        s.api_path.clear();
      });
      return ListOutcome::kAbsent;
    }
    if (!failure.empty()) {
      Fail(failure);
      return ListOutcome::kRetry;
    }
    std::string item_error;
    int bad = cache_->Replace(items, &item_error);
    if (bad > 0) {
      Fail(fmt::format("list {}: skipped {} object(s) that did not parse: {}", path, bad,
                       item_error));
    }
    dirty_ = true;
    MaybePublish(true);
    resource_version_ = rv;
    need_list_ = false;
    absent_ = false;
    const bool relist = listed_once_;
    listed_once_ = true;
    Update([&](ResourceStats& s) {
      ++s.lists;
      if (relist) {
        ++s.relists;
      }
      s.synced = true;
      s.absent = false;
      s.api_path = path;
    });
    if (bad == 0) {
      Healthy();
    }
    return ListOutcome::kOk;
  }
}

void Watcher::Watch() {
  const auto& config = source_.config();
  const std::string& path = spec_.paths[path_index_];
  const std::string target =
      fmt::format("{}?watch=1&resourceVersion={}&allowWatchBookmarks=true&timeoutSeconds={}", path,
                  UrlEncode(resource_version_), config.watch_timeout.count());
  Update([](ResourceStats& s) { ++s.watches; });
  LineSplitter lines;
  std::string stream_error;  // set when an event makes us stop reading
  bool retry_now = false;    // stop reading, then relist without backoff
  std::uint64_t applied = 0;
  auto on_data = [&](std::string_view chunk) {
    for (const std::string& line : lines.Feed(chunk)) {
      auto event = ParseWatchEvent(line);
      if (!event) {
        // A malformed event may hide a change: relist after the backoff.
        stream_error = fmt::format("watch {}: {}", path, event.error().message);
        need_list_ = true;
        return false;
      }
      switch (event->type) {
        case WatchEventType::kError:
          if (event->status_code == 410) {
            Update([](ResourceStats& s) { ++s.gone; });
            need_list_ = true;
            retry_now = true;
          } else {
            stream_error = fmt::format("watch {}: error event {}: {}", path, event->status_code,
                                       event->message);
          }
          return false;
        case WatchEventType::kBookmark:
          resource_version_ = event->resource_version;
          break;
        case WatchEventType::kAdded:
        case WatchEventType::kModified:
        case WatchEventType::kDeleted: {
          auto st = cache_->Apply(event->type, *event->object);
          if (!st.ok()) {
            Fail(fmt::format("watch {}: skipped an object: {}", path, st.error().message));
          } else {
            dirty_ = true;
            ++applied;
          }
          resource_version_ = event->resource_version;
          break;
        }
      }
    }
    if (applied > 0) {
      Update([&](ResourceStats& s) { s.events += applied; });
      applied = 0;
    }
    return true;
  };
  auto tick = [&] {
    MaybePublish(false);
    return !Stopping();
  };
  auto end = transport_->Stream(target, on_data, tick);
  if (applied > 0) {  // the batch that stopped the stream
    Update([&](ResourceStats& s) { s.events += applied; });
  }
  MaybePublish(true);
  if (Stopping()) {
    return;
  }
  if (!end) {
    Fail(end.error().message);
    Backoff();
    return;
  }
  if (retry_now) {
    return;
  }  // 410 in the stream: relist now
  if (!stream_error.empty()) {
    Fail(stream_error);
    Backoff();
    return;
  }
  if (end->status == 410) {
    Update([](ResourceStats& s) { ++s.gone; });
    need_list_ = true;
    return;
  }
  if (end->status == 404 && spec_.optional) {
    // The served version went away (an upgrade): find the current one.
    path_index_ = 0;
    need_list_ = true;
    return;
  }
  if (end->status != 200) {
    Fail(fmt::format("watch {}: HTTP {}: {}", path, end->status, StatusMessage(end->body)));
    Backoff();
    return;
  }
  if (!end->complete || !lines.pending().empty()) {
    // A broken stream: the events before the break are applied; resume from the last
    // resourceVersion seen, after the backoff (the server replays what came after it).
    Fail(
        fmt::format("watch {}: stream broke{}{}", path, lines.pending().empty() ? "" : " mid-event",
                    end->error.empty() ? "" : ": " + end->error),
        /*truncated=*/true);
    Backoff();
    return;
  }
  Healthy();  // the server ended the watch at timeoutSeconds: watch again
}

class StaticMetadataSource : public MetadataSource {
 public:
  explicit StaticMetadataSource(std::shared_ptr<const MetadataView> view)
      : view_(view ? std::move(view) : std::make_shared<const MetadataView>()) {}
  std::shared_ptr<const MetadataView> Current() const override { return view_; }
  bool WaitForSync(std::chrono::milliseconds) override { return true; }
  MetadataStats Stats() const override { return {}; }

 private:
  std::shared_ptr<const MetadataView> view_;
};

}  // namespace

Result<ApiServerConfig> ResolveApiServerConfig(
    const MetadataConfig& config, const std::function<const char*(const char*)>& getenv) {
  Result<ApiServerConfig> resolved = ApiServerConfig{};
  if (config.in_cluster) {
    const char* host = getenv("KUBERNETES_SERVICE_HOST");
    const char* port = getenv("KUBERNETES_SERVICE_PORT");
    resolved = LoadInClusterConfig(config.in_cluster_root, host ? host : "", port ? port : "");
  } else if (!config.kubeconfig.empty()) {
    resolved = LoadKubeconfig(config.kubeconfig, config.context);
  } else if (config.api_server.empty()) {
    return InvalidArgument("metadata: give a kubeconfig, in-cluster, or an API server URL");
  }
  if (!resolved) {
    return resolved;
  }
  if (!config.api_server.empty()) {
    if (!config.api_server.starts_with("http://") && !config.api_server.starts_with("https://")) {
      return InvalidArgument(
          fmt::format("metadata: API server \"{}\" is not an http(s) URL", config.api_server));
    }
    resolved->server = config.api_server;
    if (resolved->source.empty()) {
      resolved->source = "--api-server " + config.api_server;
    }
  }
  return resolved;
}

std::unique_ptr<MetadataSource> StartMetadataWith(const MetadataConfig& config,
                                                  const TransportFactory& transports) {
  return std::make_unique<ApiMetadataSource>(config, transports);
}

Result<std::unique_ptr<MetadataSource>> StartMetadata(const MetadataConfig& config) {
  auto server = ResolveApiServerConfig(config, [](const char* name) { return std::getenv(name); });
  if (!server) {
    return server.error();
  }
  TransportOptions options;
  options.stream_timeout_s = static_cast<long>(config.watch_timeout.count()) + 60;
  http::InitClientOnce();
  return StartMetadataWith(
      config, [server = *server, options] { return MakeCurlTransport(server, options); });
}

std::unique_ptr<MetadataSource> MakeStaticMetadataSource(std::shared_ptr<const MetadataView> view) {
  return std::make_unique<StaticMetadataSource>(std::move(view));
}

}  // namespace gpuledger::k8s
