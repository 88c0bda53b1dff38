#include "sources/cri/runtime_parse.h"

namespace gpuledger::cri {

std::vector<Container> ParseListContainersResponse(
    const ::runtime::v1::ListContainersResponse& response) {
  std::vector<Container> out;
  out.reserve(response.containers_size());
  for (const auto& c : response.containers()) {
    Container container;
    container.id = c.id();
    container.pod_sandbox_id = c.pod_sandbox_id();
    container.name = c.metadata().name();
    container.running = c.state() == ::runtime::v1::CONTAINER_RUNNING;
    out.push_back(std::move(container));
  }
  return out;
}

std::vector<PodSandbox> ParseListPodSandboxResponse(
    const ::runtime::v1::ListPodSandboxResponse& response) {
  std::vector<PodSandbox> out;
  out.reserve(response.items_size());
  for (const auto& s : response.items()) {
    PodSandbox sandbox;
    sandbox.id = s.id();
    sandbox.name = s.metadata().name();
    sandbox.namespace_name = s.metadata().namespace_();
    sandbox.uid = s.metadata().uid();
    sandbox.ready = s.state() == ::runtime::v1::SANDBOX_READY;
    sandbox.labels.insert(s.labels().begin(), s.labels().end());
    out.push_back(std::move(sandbox));
  }
  return out;
}

::runtime::v1::Container ToProto(const Container& container) {
  ::runtime::v1::Container c;
  c.set_id(container.id);
  c.set_pod_sandbox_id(container.pod_sandbox_id);
  c.mutable_metadata()->set_name(container.name);
  c.set_state(container.running ? ::runtime::v1::CONTAINER_RUNNING
                                : ::runtime::v1::CONTAINER_EXITED);
  return c;
}

::runtime::v1::PodSandbox ToProto(const PodSandbox& sandbox) {
  ::runtime::v1::PodSandbox s;
  s.set_id(sandbox.id);
  s.mutable_metadata()->set_name(sandbox.name);
  s.mutable_metadata()->set_namespace_(sandbox.namespace_name);
  s.mutable_metadata()->set_uid(sandbox.uid);
  s.set_state(sandbox.ready ? ::runtime::v1::SANDBOX_READY : ::runtime::v1::SANDBOX_NOTREADY);
  s.mutable_labels()->insert(sandbox.labels.begin(), sandbox.labels.end());
  return s;
}

bool Matches(const ::runtime::v1::ContainerFilter& filter, const Container& container) {
  if (!filter.id().empty() && filter.id() != container.id) return false;
  if (!filter.pod_sandbox_id().empty() && filter.pod_sandbox_id() != container.pod_sandbox_id) {
    return false;
  }
  if (filter.has_state()) {
    const bool want_running = filter.state().state() == ::runtime::v1::CONTAINER_RUNNING;
    if (want_running != container.running) return false;
  }
  return filter.label_selector().empty();
}

bool Matches(const ::runtime::v1::PodSandboxFilter& filter, const PodSandbox& sandbox) {
  if (!filter.id().empty() && filter.id() != sandbox.id) return false;
  if (filter.has_state()) {
    const bool want_ready = filter.state().state() == ::runtime::v1::SANDBOX_READY;
    if (want_ready != sandbox.ready) return false;
  }
  for (const auto& [key, value] : filter.label_selector()) {
    auto it = sandbox.labels.find(key);
    if (it == sandbox.labels.end() || it->second != value) return false;
  }
  return true;
}

}  // namespace gpuledger::cri
