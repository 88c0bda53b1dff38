#pragma once
// CRI runtime.v1 client (ListContainers, ListPodSandbox): container id -> pod name, namespace, UID.

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace gpuledger::cri {

struct Container {
  std::string id;  // 64 hex
  std::string pod_sandbox_id;
  std::string name;  // container name in the pod spec
  bool running = false;
};

struct PodSandbox {
  std::string id;
  std::string name;
  std::string namespace_name;
  std::string uid;
  bool ready = false;  // SANDBOX_READY; NOTREADY = terminated or not started
  std::map<std::string, std::string> labels;
};

struct RuntimeLists {
  std::vector<PodSandbox> sandboxes;
  std::vector<Container> containers;
};

class RuntimeClient {
 public:
  virtual ~RuntimeClient() = default;
  virtual Result<std::vector<Container>> ListContainers() = 0;
  virtual Result<std::vector<PodSandbox>> ListPodSandbox() = 0;
  // Both lists, the sandboxes asked for first. CRI has no call for both; a client that reads
  // them from one source in one pass overrides this to read it once.
  virtual Result<RuntimeLists> Lists() {
    auto sandboxes = ListPodSandbox();
    if (!sandboxes.ok()) return sandboxes.error();
    auto containers = ListContainers();
    if (!containers.ok()) return containers.error();
    return RuntimeLists{std::move(*sandboxes), std::move(*containers)};
  }
};

// unix socket path, e.g. /run/containerd/containerd.sock; errors are kUnavailable.
std::unique_ptr<RuntimeClient> MakeGrpcRuntimeClient(const std::string& socket_path);

}  // namespace gpuledger::cri
