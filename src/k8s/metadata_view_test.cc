#include "k8s/metadata_view.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace gpuledger::k8s {
namespace {

using nlohmann::json;

template <typename T, typename Parse>
Table<T> Build(Parse parse, std::initializer_list<const char*> objects) {
  std::map<std::string, T> table;
  for (const char* text : objects) {
    auto value = parse(json::parse(text));
    EXPECT_TRUE(value) << value.error().message;
    std::string key;
    if constexpr (requires { value->namespace_name; }) {
      key = ObjectKey(value->namespace_name, value->name);
    } else {
      key = value->name;
    }
    table[key] = *value;
  }
  return std::make_shared<const std::map<std::string, T>>(std::move(table));
}

Table<ObjectInfo> Objects(std::initializer_list<const char*> objects) {
  return Build<ObjectInfo>(&ParseObjectInfo, objects);
}

MetadataView ClusterView() {
  MetadataTables t;
  t.pods = Objects({
      R"({"metadata":{"namespace":"shop","name":"web-7d4f9c-x2x9p","uid":"p1",
          "labels":{"app":"web","pod-template-hash":"7d4f9c","team":"storefront"},
          "ownerReferences":[{"kind":"ReplicaSet","name":"web-7d4f9c","controller":true}]}})",
      R"({"metadata":{"namespace":"ml","name":"nightly-29112020-abcde","uid":"p2",
          "labels":{"job-name":"nightly-29112020"},
          "ownerReferences":[{"kind":"Job","name":"nightly-29112020","controller":true}]}})",
      R"({"metadata":{"namespace":"ml","name":"debug","uid":"p3"}})",
      R"({"metadata":{"namespace":"ml","name":"trainer-0","uid":"p4",
          "ownerReferences":[{"kind":"StatefulSet","name":"trainer","controller":true}]}})",
      R"({"metadata":{"namespace":"kube-system","name":"dcgm-x1","uid":"p5",
          "ownerReferences":[{"kind":"DaemonSet","name":"dcgm","controller":true}]}})",
      R"({"metadata":{"namespace":"shop","name":"api-5c6b7-qq","uid":"p6",
          "labels":{"pod-template-hash":"5c6b7"},
          "ownerReferences":[{"kind":"ReplicaSet","name":"api-5c6b7","controller":true}]}})",
      R"({"metadata":{"namespace":"ml","name":"adhoc-xyz","uid":"p7",
          "ownerReferences":[{"kind":"Job","name":"adhoc","controller":true}]}})",
  });
  t.replicasets = Objects({R"({"metadata":{"namespace":"shop","name":"web-7d4f9c",
      "ownerReferences":[{"kind":"Deployment","name":"web","controller":true}]}})"});
  t.jobs = Objects({
      R"({"metadata":{"namespace":"ml","name":"nightly-29112020",
          "ownerReferences":[{"kind":"CronJob","name":"nightly","controller":true}]}})",
      R"({"metadata":{"namespace":"ml","name":"adhoc"}})"});
  t.namespaces =
      Objects({R"({"metadata":{"name":"ml","labels":{"team":"research","cost-center":"cc-42"}}})",
               R"({"metadata":{"name":"shop","labels":{"team":"commerce"}}})"});
  t.nodes = Objects({R"({"metadata":{"name":"gpu-node-3","labels":{
      "node.kubernetes.io/instance-type":"p5.48xlarge","topology.kubernetes.io/region":"us-east-1",
      "karpenter.sh/capacity-type":"spot","nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3"}}})"});
  t.resource_claims = Build<ResourceClaimInfo>(
      &ParseResourceClaim, {
                               R"({"metadata":{"namespace":"ml","name":"trainer-0-gpu-x7k2q"},
          "status":{"allocation":{"devices":{"results":[
            {"request":"gpu","driver":"gpu.nvidia.com","pool":"gpu-node-3","device":"gpu-1"},
            {"request":"gpu","driver":"gpu.nvidia.com","pool":"gpu-node-3","device":"gpu-7"}]}}}})"});
  t.resource_slices = Build<ResourceSliceInfo>(
      &ParseResourceSlice,
      {// Generation 1 is stale: the driver republished the pool as generation 2.
       R"({"metadata":{"name":"old"},"spec":{"driver":"gpu.nvidia.com","nodeName":"gpu-node-3",
          "pool":{"name":"gpu-node-3","generation":1},"devices":[{"name":"gpu-1","attributes":{
            "uuid":{"string":"GPU-stale"}}}]}})",
       R"({"metadata":{"name":"new"},"spec":{"driver":"gpu.nvidia.com","nodeName":"gpu-node-3",
          "pool":{"name":"gpu-node-3","generation":2},"devices":[
            {"name":"gpu-0","attributes":{"uuid":{"string":"GPU-00000000-1111-2222-3333-000000000000"}}},
            {"name":"gpu-1","attributes":{"uuid":{"string":"GPU-00000000-1111-2222-3333-000000000001"},
              "productName":{"string":"NVIDIA H100 80GB HBM3"},"index":{"int":1}}}]}})"});
  return MetadataView(std::move(t));
}

ConsumerRef Ref(std::string ns, std::string pod, std::string uid) {
  return {std::move(ns), std::move(pod), PodUid(std::move(uid)), "main"};
}

TEST(MetadataView, OwnerResolution) {
  const MetadataView view = ClusterView();
  struct Case {
    ConsumerRef ref;
    std::string kind, name;
  };
  const std::vector<Case> cases = {
      {Ref("shop", "web-7d4f9c-x2x9p", "p1"), "Deployment", "web"},       // via ReplicaSet
      {Ref("ml", "nightly-29112020-abcde", "p2"), "CronJob", "nightly"},  // via Job
      {Ref("ml", "debug", "p3"), "Pod", "debug"},                         // bare pod
      {Ref("ml", "trainer-0", "p4"), "StatefulSet", "trainer"},
      {Ref("kube-system", "dcgm-x1", "p5"), "DaemonSet", "dcgm"},
      {Ref("shop", "api-5c6b7-qq", "p6"), "Deployment", "api"},  // RS not cached: hash label
      {Ref("ml", "adhoc-xyz", "p7"), "Job", "adhoc"},            // a Job without a CronJob
      {Ref("ml", "gone-pod", "p9"), "Pod", "gone-pod"},          // unknown pod
  };
  for (const auto& c : cases) {
    ConsumerInfo info = view.Describe(c.ref);
    EXPECT_EQ(info.owner_kind, c.kind) << c.ref.pod;
    EXPECT_EQ(info.owner_name, c.name) << c.ref.pod;
    EXPECT_EQ(info.ref, c.ref);
  }
}

TEST(MetadataView, PodAndNamespaceLabels) {
  const MetadataView view = ClusterView();
  ConsumerInfo web = view.Describe(Ref("shop", "web-7d4f9c-x2x9p", "p1"));
  EXPECT_EQ(web.labels.at("team"), "storefront");  // the pod's own label wins in the report
  EXPECT_EQ(web.namespace_labels.at("team"), "commerce");
  ConsumerInfo debug = view.Describe(Ref("ml", "debug", "p3"));
  EXPECT_TRUE(debug.labels.empty());
  EXPECT_EQ(debug.namespace_labels,
            (std::map<std::string, std::string>{{"cost-center", "cc-42"}, {"team", "research"}}));
  ConsumerRef host{std::string(kHostNamespace), "user:alice", {}, ""};
  ConsumerInfo h = view.Describe(host);
  EXPECT_TRUE(h.owner_kind.empty());
  EXPECT_TRUE(h.namespace_labels.empty());
}

TEST(MetadataView, NodeLabels) {
  const MetadataView view = ClusterView();
  auto labels = view.NodeLabels("gpu-node-3");
  EXPECT_EQ(labels.size(), 4u);
  EXPECT_EQ(labels.at("node.kubernetes.io/instance-type"), "p5.48xlarge");
  EXPECT_EQ(labels.at("karpenter.sh/capacity-type"), "spot");
  EXPECT_TRUE(view.NodeLabels("nope").empty());
}

TEST(MetadataView, DraClaimToGpuUuidViaSliceAttributes) {
  const MetadataView view = ClusterView();
  auto devices = view.ClaimDevices("ml/trainer-0-gpu-x7k2q");
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].allocation.device, "gpu-1");
  EXPECT_EQ(devices[0].uuid, GpuUuid("GPU-00000000-1111-2222-3333-000000000001"));  // not stale
  EXPECT_EQ(devices[0].node, "gpu-node-3");
  EXPECT_EQ(devices[0].attributes.at("productName"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(devices[0].attributes.at("index"), "1");
  EXPECT_TRUE(devices[1].uuid.empty());  // gpu-7 is in no slice
  EXPECT_TRUE(devices[1].attributes.empty());
  EXPECT_EQ(view.DeviceUuid("gpu.nvidia.com", "gpu-node-3", "gpu-0"),
            GpuUuid("GPU-00000000-1111-2222-3333-000000000000"));
  EXPECT_FALSE(view.DeviceAttributes("gpu.nvidia.com", "other", "gpu-0"));
  EXPECT_TRUE(view.ClaimDevices("ml/unknown").empty());
}

TEST(MetadataView, EmptyViewDescribesBarePods) {
  MetadataView empty;
  ConsumerInfo info = empty.Describe(Ref("a", "b", "u"));
  EXPECT_EQ(info.owner_kind, "Pod");
  EXPECT_EQ(info.owner_name, "b");
  EXPECT_TRUE(empty.NodeLabels("n").empty());
  EXPECT_TRUE(empty.ClaimDevices("a/c").empty());
}

}  // namespace
}  // namespace gpuledger::k8s

namespace gpuledger::k8s {
namespace {

// KAI/Run:ai fractions live in pod annotations: only the two GPU-sharing keys are kept, and
// Describe turns them into a declared fraction or memory; malformed values declare nothing.
TEST(MetadataView, GpuSharingAnnotationsBecomeDeclaredShares) {
  MetadataTables t;
  t.pods = Objects({
      R"({"metadata":{"namespace":"ml","name":"half","uid":"a",
          "annotations":{"gpu-fraction":"0.5","kubectl.kubernetes.io/last-applied-configuration":"{}"}}})",
      R"({"metadata":{"namespace":"ml","name":"mem","uid":"b","annotations":{"gpu-memory":"2000"}}})",
      R"({"metadata":{"namespace":"ml","name":"bad","uid":"c","annotations":{"gpu-fraction":"1.5","gpu-memory":"2GB"}}})",
  });
  EXPECT_EQ(t.pods->at("ml/half").annotations.size(), 1u);
  MetadataView view(t);
  ConsumerInfo half = view.Describe(ConsumerRef{"ml", "half", PodUid{"a"}, "main"});
  EXPECT_EQ(half.annotated_gpu_fraction, 0.5);
  EXPECT_EQ(half.annotated_gpu_memory_bytes, std::nullopt);
  EXPECT_EQ(view.Describe(ConsumerRef{"ml", "mem", PodUid{"b"}, "main"}).annotated_gpu_memory_bytes,
            2000 * kMiB);
  ConsumerInfo bad = view.Describe(ConsumerRef{"ml", "bad", PodUid{"c"}, "main"});
  EXPECT_EQ(bad.annotated_gpu_fraction, std::nullopt);
  EXPECT_EQ(bad.annotated_gpu_memory_bytes, std::nullopt);
}

}  // namespace
}  // namespace gpuledger::k8s
