// BuildSnapshot's join of GPU processes to containers, on the model values its sources return.
#include "agent/node_view.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuledger::agent {
namespace {

const std::string kOuter(64, 'a');  // the pod's container, run by the node's runtime
const std::string kInner(64, 'b');  // a container it runs itself (docker-in-docker)

KubeView ViewWithContainer(const std::string& id, const std::string& name) {
  KubeView kube;
  kube.present = true;
  kube.sandboxes.push_back({"sb1", "ci-runner-0", "ci", "uid-1", true, {}});
  kube.containers.push_back({id, "sb1", name, true});
  kube.grants.push_back({"ci", "ci-runner-0", name, "nvidia.com/gpu", {"GPU-1"}, {}});
  kube.Reindex();
  return kube;
}

sources::GpuReading OneProcessReading() {
  sources::GpuReading r;
  r.start_us = 0;
  r.end_us = kMicrosPerSecond;
  r.gpus.push_back({GpuUuid{"GPU-1"}, "H100-80GB", 80 * kGiB, SharingMode::kExclusive, 1, 7});
  r.processes.push_back({42, GpuUuid{"GPU-1"}, std::nullopt, "", kGiB, std::nullopt, ""});
  return r;
}

procfs::ProcessIdentity NestedIdentity() {
  procfs::ProcessIdentity id;
  id.pid = 42;
  id.container = procfs::CgroupRef{kOuter, "uid-1", "containerd", {kInner}};
  return id;
}

// Whom pid 42, in nested containers, is attributed to when the runtime knows `container_id` as
// `name`; no container may be left unknown.
ConsumerRef NestedProcessConsumer(const std::string& container_id, const std::string& name) {
  JoinStats stats;
  NodeSnapshot s = BuildSnapshot("n", OneProcessReading(), ViewWithContainer(container_id, name),
                                 {{42, NestedIdentity()}}, &stats);
  EXPECT_EQ(stats.unknown_containers, 0);
  if (s.processes.size() != 1 || !s.processes[0].consumer) {
    ADD_FAILURE() << "expected one process attributed to a container";
    return {};
  }
  return *s.processes[0].consumer;
}

// The runtime knows the outer container (the CI runner pod) and not the build container inside
// it: the process belongs to the runner.
TEST(BuildSnapshot, ANestedContainerTheRuntimeDoesNotKnowBelongsToItsPod) {
  EXPECT_EQ(NestedProcessConsumer(kOuter, "runner").container, "runner");
}

// The runtime the agent talks to runs the inner container (an agent inside a node that is
// itself a container, as on kind): the innermost known container wins, not the outermost.
TEST(BuildSnapshot, TheInnermostContainerTheRuntimeKnowsWins) {
  const ConsumerRef consumer = NestedProcessConsumer(kInner, "trainer");
  EXPECT_EQ(consumer.container, "trainer");
  EXPECT_EQ(consumer.pod, "ci-runner-0");
}

}  // namespace
}  // namespace gpuledger::agent
