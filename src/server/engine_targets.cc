#include "server/engine_targets.h"

#include <charconv>

#include <fmt/format.h>

namespace gpuledger::server {
namespace {

const std::string* Annotation(const k8s::ObjectInfo& pod, std::string_view key) {
  auto it = pod.annotations.find(std::string(key));
  return it == pod.annotations.end() ? nullptr : &it->second;
}

// A path as an URL takes it: absolute, without spaces, control characters or a fragment.
bool IsUrlPath(std::string_view path) {
  if (path.empty() || path.front() != '/') return false;
  for (char c : path)
    if (static_cast<unsigned char>(c) <= ' ' || c == '#' || c == 0x7f) return false;
  return true;
}

}  // namespace

std::vector<ingest::EngineTarget> EngineTargets(const std::vector<k8s::ObjectInfo>& pods,
                                                std::vector<std::string>* problems) {
  std::vector<ingest::EngineTarget> out;
  auto problem = [&](const k8s::ObjectInfo& pod, std::string_view key, std::string_view value,
                     std::string_view expected) {
    if (problems != nullptr)
      problems->push_back(fmt::format("pod {}/{}: {} '{}': expected {}", pod.namespace_name,
                                      pod.name, key, value, expected));
  };
  for (const k8s::ObjectInfo& pod : pods) {
    const std::string* port_text = Annotation(pod, k8s::kTokensPortAnnotation);
    if (port_text == nullptr || pod.deleted || pod.pod_ip.empty()) continue;
    int port = 0;
    const char* end = port_text->data() + port_text->size();
    auto [at, ec] = std::from_chars(port_text->data(), end, port);
    if (ec != std::errc() || at != end || port < 1 || port > 65535) {
      problem(pod, k8s::kTokensPortAnnotation, *port_text, "a port number, 1 to 65535");
      continue;
    }
    const std::string* path = Annotation(pod, k8s::kTokensPathAnnotation);
    if (path != nullptr && !IsUrlPath(*path)) {
      problem(pod, k8s::kTokensPathAnnotation, *path, "a path such as /metrics");
      continue;
    }
    const std::string* model = Annotation(pod, k8s::kModelAnnotation);
    const std::string* container = Annotation(pod, k8s::kTokensContainerAnnotation);
    // An IPv6 pod IP is bracketed in a URL.
    const bool v6 = pod.pod_ip.find(':') != std::string::npos;
    ingest::EngineTarget t;
    t.url = fmt::format("http://{}{}{}:{}{}", v6 ? "[" : "", pod.pod_ip, v6 ? "]" : "", port,
                        path != nullptr ? *path : "/metrics");
    t.consumer = ConsumerRef{pod.namespace_name, pod.name, PodUid(pod.uid),
                             container != nullptr ? *container : ""};
    t.model = model != nullptr ? *model : "";
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<ingest::EngineTarget> EngineDiscovery::operator()() {
  std::vector<std::string> problems;
  std::vector<ingest::EngineTarget> targets = EngineTargets(pods_(), &problems);
  std::lock_guard lock(mu_);
  std::set<std::string> now(problems.begin(), problems.end());
  for (const std::string& p : now)
    if (!logged_.contains(p)) log_ << "ingest: not scraping the engine of " << p << "\n";
  if (now != logged_) log_.flush();
  logged_ = std::move(now);
  return targets;
}

}  // namespace gpuledger::server
