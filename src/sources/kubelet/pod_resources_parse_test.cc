#include "sources/kubelet/pod_resources_parse.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuledger::kubelet {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

::v1::PodResources* AddPod(::v1::ListPodResourcesResponse& r, const std::string& ns,
                           const std::string& name) {
  auto* pod = r.add_pod_resources();
  pod->set_namespace_(ns);
  pod->set_name(name);
  return pod;
}

void AddDevices(::v1::ContainerResources* c, const std::string& resource,
                std::initializer_list<const char*> ids) {
  auto* d = c->add_devices();
  d->set_resource_name(resource);
  for (const char* id : ids) d->add_device_ids(id);
  d->mutable_topology()->add_nodes()->set_id(0);
}

// The device-plugin forms the kubelet reports, passed through unchanged.
struct DeviceIdCase {
  const char* name;
  const char* resource;
  std::vector<std::string> ids;
};

class DeviceIdForms : public ::testing::TestWithParam<DeviceIdCase> {};

TEST_P(DeviceIdForms, PassThroughUnchanged) {
  const auto& tc = GetParam();
  ::v1::ListPodResourcesResponse r;
  auto* c = AddPod(r, "ml", "trainer-0")->add_containers();
  c->set_name("main");
  auto* d = c->add_devices();
  d->set_resource_name(tc.resource);
  for (const auto& id : tc.ids) d->add_device_ids(id);

  auto grants = ParseListResponse(r);
  ASSERT_EQ(grants.size(), 1u);
  EXPECT_EQ(grants[0].namespace_name, "ml");
  EXPECT_EQ(grants[0].pod, "trainer-0");
  EXPECT_EQ(grants[0].container, "main");
  EXPECT_EQ(grants[0].resource_name, tc.resource);
  EXPECT_EQ(grants[0].device_ids, tc.ids);
  EXPECT_THAT(grants[0].dra, IsEmpty());
}

INSTANTIATE_TEST_SUITE_P(
    Kubelet, DeviceIdForms,
    ::testing::Values(
        DeviceIdCase{"Exclusive", "nvidia.com/gpu", {"GPU-8f6b2c1e-3a4d-4e5f-9a0b-1c2d3e4f5a6b"}},
        DeviceIdCase{"NvidiaTimeSlicingReplicas",
                     "nvidia.com/gpu",
                     {"GPU-8f6b2c1e-3a4d-4e5f-9a0b-1c2d3e4f5a6b::0",
                      "GPU-8f6b2c1e-3a4d-4e5f-9a0b-1c2d3e4f5a6b::3"}},
        DeviceIdCase{"GkeSharedVgpu", "nvidia.com/gpu", {"nvidia0/vgpu2"}},
        DeviceIdCase{"EksMigReplica",
                     "nvidia.com/mig-1g.10gb",
                     {"MIG-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0::1"}},
        DeviceIdCase{"MigStrategyMixed",
                     "nvidia.com/mig-3g.40gb",
                     {"MIG-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ParseListResponse, OldFieldSetWithoutDynamicResources) {
  // A kubelet before DRA: fields 1-4 only; CPU-only containers and pods are omitted.
  ::v1::ListPodResourcesResponse r;
  auto* pod = AddPod(r, "default", "web");
  auto* cpu_only = pod->add_containers();
  cpu_only->set_name("nginx");
  cpu_only->add_cpu_ids(2);
  cpu_only->add_cpu_ids(3);
  auto* mem = cpu_only->add_memory();
  mem->set_memory_type("memory");
  mem->set_size(1 << 30);
  auto* gpu_pod = AddPod(r, "ml", "infer");
  auto* sidecar = gpu_pod->add_containers();
  sidecar->set_name("sidecar");
  auto* main = gpu_pod->add_containers();
  main->set_name("main");
  AddDevices(main, "nvidia.com/gpu", {"GPU-aaaa", "GPU-bbbb"});
  AddDevices(main, "rdma/hca", {});  // an entry without ids is no grant
  AddDevices(main, "example.com/nic", {"nic0"});

  auto grants = ParseListResponse(r);
  ASSERT_EQ(grants.size(), 2u);
  EXPECT_EQ(grants[0].pod, "infer");
  EXPECT_EQ(grants[0].container, "main");
  EXPECT_EQ(grants[0].resource_name, "nvidia.com/gpu");
  EXPECT_THAT(grants[0].device_ids, ElementsAre("GPU-aaaa", "GPU-bbbb"));
  EXPECT_EQ(grants[1].resource_name, "example.com/nic");
}

TEST(ParseListResponse, NewFieldSetWithDraClaimsAndShareId) {
  ::v1::ListPodResourcesResponse r;
  auto* c = AddPod(r, "team-a", "llm-0")->add_containers();
  c->set_name("server");
  AddDevices(c, "nvidia.com/gpu", {"GPU-1111"});
  auto* claim = c->add_dynamic_resources();
  claim->set_claim_name("gpu-claim");
  claim->set_claim_namespace("team-a");
  auto* exclusive = claim->add_claim_resources();
  exclusive->set_driver_name("gpu.nvidia.com");
  exclusive->set_pool_name("node-1");
  exclusive->set_device_name("gpu-0");
  exclusive->add_cdi_devices()->set_name("k8s.gpu.nvidia.com/claim=abc-gpu-0");
  exclusive->add_cdi_devices()->set_name("nvidia.com/gpu=GPU-2222");
  auto* shared_claim = c->add_dynamic_resources();
  shared_claim->set_claim_name("shared");
  shared_claim->set_claim_namespace("team-a");
  auto* shared = shared_claim->add_claim_resources();
  shared->set_driver_name("gpu.nvidia.com");
  shared->set_pool_name("node-1");
  shared->set_device_name("gpu-1");
  shared->set_share_id("7c9e6679-7425-40de-944b-e07fc1f90ae7");

  auto grants = ParseListResponse(r);
  ASSERT_EQ(grants.size(), 2u);
  EXPECT_EQ(grants[0].resource_name, "nvidia.com/gpu");
  EXPECT_THAT(grants[0].dra, IsEmpty());
  const ContainerGrant& g = grants[1];
  EXPECT_EQ(g.namespace_name, "team-a");
  EXPECT_EQ(g.pod, "llm-0");
  EXPECT_EQ(g.container, "server");
  EXPECT_EQ(g.resource_name, "");
  EXPECT_THAT(g.device_ids, IsEmpty());
  ASSERT_EQ(g.dra.size(), 2u);
  EXPECT_EQ(g.dra[0].claim, "team-a/gpu-claim");
  EXPECT_EQ(g.dra[0].driver, "gpu.nvidia.com");
  EXPECT_EQ(g.dra[0].pool, "node-1");
  EXPECT_EQ(g.dra[0].device, "gpu-0");
  EXPECT_EQ(g.dra[0].share_id, "");
  EXPECT_THAT(g.dra[0].cdi_devices,
              ElementsAre("k8s.gpu.nvidia.com/claim=abc-gpu-0", "nvidia.com/gpu=GPU-2222"));
  EXPECT_EQ(g.dra[1].claim, "team-a/shared");
  EXPECT_EQ(g.dra[1].device, "gpu-1");
  EXPECT_EQ(g.dra[1].share_id, "7c9e6679-7425-40de-944b-e07fc1f90ae7");
  EXPECT_THAT(g.dra[1].cdi_devices, IsEmpty());
}

TEST(ParseListResponse, DraOnlyContainerAndClaimWithoutDevicesIsOmitted) {
  ::v1::ListPodResourcesResponse r;
  auto* pod = AddPod(r, "ns", "p");
  auto* empty_claim = pod->add_containers();
  empty_claim->set_name("waiting");
  empty_claim->add_dynamic_resources()->set_claim_name("nothing-yet");
  auto* dra = pod->add_containers();
  dra->set_name("dra");
  auto* claim = dra->add_dynamic_resources();
  claim->set_claim_name("c");
  claim->set_claim_namespace("ns");
  claim->add_claim_resources()->set_device_name("gpu-3");

  auto grants = ParseListResponse(r);
  ASSERT_EQ(grants.size(), 1u);
  EXPECT_EQ(grants[0].container, "dra");
  ASSERT_EQ(grants[0].dra.size(), 1u);
  EXPECT_EQ(grants[0].dra[0].claim, "ns/c");
  EXPECT_EQ(grants[0].dra[0].device, "gpu-3");
}

TEST(ParseListResponse, WireBytesFromAKubeletWithFieldsWeDoNotDeclare) {
  // A newer kubelet may add fields: they are skipped, not an error. Field 9 (unknown) is
  // appended to a ContainerResources by hand.
  ::v1::ListPodResourcesResponse r;
  auto* c = AddPod(r, "ns", "p")->add_containers();
  c->set_name("c");
  AddDevices(c, "nvidia.com/gpu", {"GPU-x"});
  std::string bytes = r.SerializeAsString();
  ::v1::ContainerResources with_unknown;
  ASSERT_TRUE(with_unknown.ParseFromString(c->SerializeAsString() + std::string("\x4a\x02hi", 4)));
  ::v1::ListPodResourcesResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  *parsed.mutable_pod_resources(0)->mutable_containers(0) = with_unknown;
  auto grants = ParseListResponse(parsed);
  ASSERT_EQ(grants.size(), 1u);
  EXPECT_THAT(grants[0].device_ids, ElementsAre("GPU-x"));
}

TEST(ParseAllocatableResponse, OneDevicePerId) {
  ::v1::AllocatableResourcesResponse r;
  auto* d = r.add_devices();
  d->set_resource_name("nvidia.com/gpu");
  d->add_device_ids("GPU-a::0");
  d->add_device_ids("GPU-a::1");
  auto* m = r.add_devices();
  m->set_resource_name("nvidia.com/mig-1g.10gb");
  m->add_device_ids("MIG-b");
  r.add_cpu_ids(0);

  auto devices = ParseAllocatableResponse(r);
  ASSERT_EQ(devices.size(), 3u);
  EXPECT_EQ(devices[0].resource_name, "nvidia.com/gpu");
  EXPECT_EQ(devices[0].device_id, "GPU-a::0");
  EXPECT_EQ(devices[1].device_id, "GPU-a::1");
  EXPECT_EQ(devices[2].resource_name, "nvidia.com/mig-1g.10gb");
  EXPECT_EQ(devices[2].device_id, "MIG-b");
}

bool SameGrants(const std::vector<ContainerGrant>& a, const std::vector<ContainerGrant>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].namespace_name != b[i].namespace_name || a[i].pod != b[i].pod ||
        a[i].container != b[i].container || a[i].resource_name != b[i].resource_name ||
        a[i].device_ids != b[i].device_ids || a[i].dra.size() != b[i].dra.size()) {
      return false;
    }
    for (size_t j = 0; j < a[i].dra.size(); ++j) {
      const auto& x = a[i].dra[j];
      const auto& y = b[i].dra[j];
      if (x.claim != y.claim || x.driver != y.driver || x.pool != y.pool || x.device != y.device ||
          x.share_id != y.share_id || x.cdi_devices != y.cdi_devices) {
        return false;
      }
    }
  }
  return true;
}

TEST(ToListResponse, RoundTripsThroughTheParser) {
  std::vector<ContainerGrant> grants = {
      {"ml", "a", "main", "nvidia.com/gpu", {"GPU-1::0", "GPU-1::1"}, {}},
      {"ml",
       "a",
       "main",
       "",
       {},
       {{"ml/claim-1", "gpu.nvidia.com", "pool", "gpu-0", "", {"nvidia.com/gpu=GPU-2"}},
        {"ml/claim-1", "gpu.nvidia.com", "pool", "gpu-1", "", {}},
        {"other/claim-2", "gpu.nvidia.com", "pool", "gpu-2", "share-9", {}}}},
      {"ml", "b", "x", "nvidia.com/mig-3g.40gb", {"MIG-3"}, {}},
  };
  auto proto = ToListResponse(grants);
  ASSERT_EQ(proto.pod_resources_size(), 2);
  ASSERT_EQ(proto.pod_resources(0).containers_size(), 1);
  const auto& c = proto.pod_resources(0).containers(0);
  ASSERT_EQ(c.dynamic_resources_size(), 2);
  EXPECT_EQ(c.dynamic_resources(0).claim_resources_size(), 2);
  EXPECT_EQ(c.dynamic_resources(1).claim_namespace(), "other");
  EXPECT_TRUE(c.dynamic_resources(1).claim_resources(0).has_share_id());
  EXPECT_FALSE(c.dynamic_resources(0).claim_resources(0).has_share_id());
  EXPECT_TRUE(SameGrants(ParseListResponse(proto), grants));
}

}  // namespace
}  // namespace gpuledger::kubelet
