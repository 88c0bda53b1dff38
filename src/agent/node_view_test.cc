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

// The runtime knows the outer container (the CI runner pod) and not the build container inside
// it: the process belongs to the runner.
TEST(BuildSnapshot, ANestedContainerTheRuntimeDoesNotKnowBelongsToItsPod) {
  KubeView kube = ViewWithContainer(kOuter, "runner");
  JoinStats stats;
  NodeSnapshot s = BuildSnapshot("n", OneProcessReading(), kube, {{42, NestedIdentity()}}, &stats);
  ASSERT_EQ(s.processes.size(), 1u);
  ASSERT_TRUE(s.processes[0].consumer);
  EXPECT_EQ(s.processes[0].consumer->container, "runner");
  EXPECT_EQ(stats.unknown_containers, 0);
}

// The runtime the agent talks to runs the inner container (an agent inside a node that is
// itself a container, as on kind): the innermost known container wins, not the outermost.
TEST(BuildSnapshot, TheInnermostContainerTheRuntimeKnowsWins) {
  KubeView kube = ViewWithContainer(kInner, "trainer");
  JoinStats stats;
  NodeSnapshot s = BuildSnapshot("n", OneProcessReading(), kube, {{42, NestedIdentity()}}, &stats);
  ASSERT_EQ(s.processes.size(), 1u);
  ASSERT_TRUE(s.processes[0].consumer);
  EXPECT_EQ(s.processes[0].consumer->container, "trainer");
  EXPECT_EQ(s.processes[0].consumer->pod, "ci-runner-0");
  EXPECT_EQ(stats.unknown_containers, 0);
}

}  // namespace
}  // namespace gpuledger::agent
