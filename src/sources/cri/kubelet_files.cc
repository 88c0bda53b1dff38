#include "sources/cri/kubelet_files.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "common/strings.h"
#include "sources/procfs/proc_source.h"

namespace gpuledger::cri {
namespace {

constexpr std::string_view kPodLogs = "/var/log/pods";
constexpr std::string_view kContainerLogs = "/var/log/containers";
// Where a pod's cgroup may lie: the unified tree (v2), else v1's systemd or memory hierarchy.
constexpr std::string_view kCgroupRoots[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/systemd",
                                             "/sys/fs/cgroup/memory"};
// kubepods[.slice] / [qos] / pod / container: deeper directories are a container's own.
constexpr int kCgroupDepth = 4;

// "a_b_c" -> {"a", "b", "c"}; anything else (names never hold '_') -> nullopt.
std::optional<std::vector<std::string>> ThreeNames(std::string_view text) {
  if (text.ends_with('_')) return std::nullopt;
  std::vector<std::string> names;
  for (TextParts parts(text, '_'); auto name = parts.Next();) names.emplace_back(*name);
  if (names.size() != 3 ||
      std::any_of(names.begin(), names.end(), [](const std::string& n) { return n.empty(); }))
    return std::nullopt;
  return names;
}

// A directory name the walk below kubepods goes into: a QoS class, a pod, a container.
bool PodTreeName(std::string_view name) {
  return name.starts_with("kubepods") || name.starts_with("pod") || name == "burstable" ||
         name == "besteffort" || name.ends_with(".scope") || procfs::IsContainerId(name);
}

struct Running {
  bool known = false;  // a kubepods tree was read
  std::set<std::string> pods;
  std::set<std::string> containers;
};

void Walk(FileReader& files, const std::string& dir, const std::string& relative, int depth,
          Running& out) {
  auto names = files.List(dir);
  if (!names.ok()) return;
  for (const std::string& name : *names) {
    if (!PodTreeName(name)) continue;
    const std::string path = relative + "/" + name;
    if (auto ref = procfs::ParseCgroupDirectory(path); ref.ok()) {
      out.pods.insert(ref->pod_uid);
      if (!ref->container_id.empty()) {
        out.containers.insert(ref->container_id);
        continue;  // below a container: its own sub-cgroups
      }
    }
    if (depth + 1 < kCgroupDepth) Walk(files, dir + "/" + name, path, depth + 1, out);
  }
}

Running ReadRunning(FileReader& files) {
  Running out;
  for (std::string_view root : kCgroupRoots) {
    auto names = files.List(root);
    if (!names.ok()) continue;
    for (const std::string& name : *names) {
      if (!name.starts_with("kubepods")) continue;
      out.known = true;
      Walk(files, std::string(root) + "/" + name, "/" + name, 1, out);
    }
    if (out.known) break;
  }
  return out;
}

class KubeletFilesRuntime final : public RuntimeClient {
 public:
  explicit KubeletFilesRuntime(FileReader& files) : files_(files) {}

  Result<std::vector<PodSandbox>> ListPodSandbox() override {
    auto lists = Lists();
    if (!lists.ok()) return lists.error();
    return std::move(lists->sandboxes);
  }
  Result<std::vector<Container>> ListContainers() override {
    auto lists = Lists();
    if (!lists.ok()) return lists.error();
    return std::move(lists->containers);
  }

  // One pass over the directories serves both lists.
  Result<RuntimeLists> Lists() override {
    auto pod_dirs = files_.List(kPodLogs);
    if (!pod_dirs.ok())
      return Unavailable(fmt::format("{}: {}", files_.Resolve(kPodLogs), pod_dirs.error().message));
    auto links = files_.List(kContainerLogs);
    if (!links.ok())
      return Unavailable(
          fmt::format("{}: {}", files_.Resolve(kContainerLogs), links.error().message));
    const Running running = ReadRunning(files_);

    RuntimeLists out;
    std::map<std::pair<std::string, std::string>, std::string> uid_of;  // (ns, pod) -> uid
    for (const std::string& dir : *pod_dirs) {
      auto names = ThreeNames(dir);
      if (!names) continue;
      PodSandbox pod;
      pod.namespace_name = (*names)[0];
      pod.name = (*names)[1];
      pod.uid = pod.id = (*names)[2];
      pod.ready = !running.known || running.pods.count(pod.uid) > 0;
      uid_of[{pod.namespace_name, pod.name}] = pod.uid;
      out.sandboxes.push_back(std::move(pod));
    }
    for (std::string_view link : *links) {
      if (!link.ends_with(".log")) continue;
      link.remove_suffix(4);
      const std::size_t dash = link.rfind('-');
      if (dash == std::string_view::npos || !procfs::IsContainerId(link.substr(dash + 1))) continue;
      auto names = ThreeNames(link.substr(0, dash));
      if (!names) continue;
      auto uid = uid_of.find({(*names)[1], (*names)[0]});
      if (uid == uid_of.end()) continue;  // its pod's logs are gone: the pod was removed
      Container c;
      c.id = std::string(link.substr(dash + 1));
      c.pod_sandbox_id = uid->second;
      c.name = (*names)[2];
      c.running = !running.known || running.containers.count(c.id) > 0;
      out.containers.push_back(std::move(c));
    }
    return out;
  }

 private:
  FileReader& files_;
};

}  // namespace

std::unique_ptr<RuntimeClient> MakeKubeletFilesRuntime(FileReader& files) {
  return std::make_unique<KubeletFilesRuntime>(files);
}

}  // namespace gpuledger::cri
