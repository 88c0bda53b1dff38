#include "k8s/k8s_objects.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace gpuledger::k8s {
namespace {

using nlohmann::json;

TEST(ParseObjectInfo, PodWithControllerAmongOwners) {
  auto pod = ParseObjectInfo(json::parse(R"({
    "metadata": {"name": "web-7d4f9c-x2x9p", "namespace": "shop",
                 "uid": "1b2c3d4e-0000-4a4a-8b8b-123456789abc", "resourceVersion": "4711",
                 "labels": {"app": "web", "pod-template-hash": "7d4f9c"},
                 "ownerReferences": [
                   {"kind": "Foo", "name": "not-controller", "uid": "u0"},
                   {"kind": "ReplicaSet", "name": "web-7d4f9c", "uid": "u1", "controller": true}]},
    "spec": {"nodeName": "gpu-node-3"}})"));
  ASSERT_TRUE(pod) << pod.error().message;
  EXPECT_EQ(pod->namespace_name, "shop");
  EXPECT_EQ(pod->name, "web-7d4f9c-x2x9p");
  EXPECT_EQ(pod->uid, "1b2c3d4e-0000-4a4a-8b8b-123456789abc");
  EXPECT_EQ(pod->labels.at("app"), "web");
  ASSERT_TRUE(pod->controller);
  EXPECT_EQ(pod->controller->kind, "ReplicaSet");
  EXPECT_EQ(pod->controller->name, "web-7d4f9c");
  EXPECT_EQ(pod->node_name, "gpu-node-3");
}

// An inference pod that opted in to token scraping: its address and the annotations read, and
// no other annotation (the cache stays small).
TEST(ParseObjectInfo, PodKeepsItsIpAndOnlyTheAnnotationsRead) {
  auto pod = ParseObjectInfo(json::parse(R"({
    "metadata": {"name": "tgi-0", "namespace": "llm", "uid": "u-tgi",
                 "annotations": {"gpuledger.io/tokens-port": "3000",
                                 "gpuledger.io/model": "mistralai/Mistral-7B-Instruct-v0.3",
                                 "kubectl.kubernetes.io/last-applied-configuration": "{...}",
                                 "gpu-fraction": "0.5"}},
    "spec": {"nodeName": "gpu-node-1"},
    "status": {"phase": "Running", "podIP": "10.244.1.17"}})"));
  ASSERT_TRUE(pod) << pod.error().message;
  EXPECT_EQ(pod->pod_ip, "10.244.1.17");
  EXPECT_EQ(pod->annotations,
            (std::map<std::string, std::string>{
                {"gpu-fraction", "0.5"},
                {"gpuledger.io/model", "mistralai/Mistral-7B-Instruct-v0.3"},
                {"gpuledger.io/tokens-port", "3000"}}));
  auto bad_ip = ParseObjectInfo(
      json::parse(R"({"metadata": {"name": "a"}, "status": {"podIP": 10}})"));
  ASSERT_FALSE(bad_ip);
  EXPECT_EQ(bad_ip.error().message, "status.podIP: expected a string");
}

TEST(ParseObjectInfo, ErrorsNameTheField) {
  auto missing = ParseObjectInfo(json::parse(R"({"metadata": {"namespace": "a"}})"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "metadata.name: missing");
  auto bad_label =
      ParseObjectInfo(json::parse(R"({"metadata": {"name": "a", "labels": {"x": 3}}})"));
  ASSERT_FALSE(bad_label);
  EXPECT_EQ(bad_label.error().message, "metadata.labels[x]: expected a string");
}

TEST(ParseResourceClaim, AllocatedDevices) {
  auto claim = ParseResourceClaim(json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "train-gpu", "namespace": "ml", "uid": "c1"},
    "status": {"allocation": {"devices": {"results": [
      {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "node-a", "device": "gpu-0"},
      {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "node-a", "device": "gpu-1",
       "shareID": "s-1"}]}}}})"));
  ASSERT_TRUE(claim) << claim.error().message;
  ASSERT_EQ(claim->allocated.size(), 2u);
  EXPECT_EQ(claim->allocated[1].device, "gpu-1");
  EXPECT_EQ(claim->allocated[1].share_id, "s-1");
  auto pending =
      ParseResourceClaim(json::parse(R"({"metadata": {"name": "p", "namespace": "ml"}})"));
  ASSERT_TRUE(pending);
  EXPECT_TRUE(pending->allocated.empty());
}

TEST(ParseResourceSlice, V1AndV1beta1Attributes) {
  auto v1 = ParseResourceSlice(json::parse(R"({
    "metadata": {"name": "node-a-gpu.nvidia.com-x"},
    "spec": {"driver": "gpu.nvidia.com", "nodeName": "node-a",
             "pool": {"name": "node-a", "generation": 3, "resourceSliceCount": 1},
             "devices": [{"name": "gpu-0", "attributes": {
                "uuid": {"string": "GPU-4b3c2d1e-aaaa-bbbb-cccc-000000000000"},
                "gpu.nvidia.com/index": {"int": 0},
                "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"},
                "driverVersion": {"version": "570.86.15"}}}]}})"));
  ASSERT_TRUE(v1) << v1.error().message;
  EXPECT_EQ(v1->pool_generation, 3);
  ASSERT_EQ(v1->devices.size(), 1u);
  const auto& a = v1->devices[0].attributes;
  EXPECT_EQ(a.at("uuid"), "GPU-4b3c2d1e-aaaa-bbbb-cccc-000000000000");
  EXPECT_EQ(a.at("index"), "0");  // own driver's prefix dropped
  EXPECT_EQ(a.at("resource.kubernetes.io/pcieRoot"), "pci0000:00");
  EXPECT_EQ(a.at("driverVersion"), "570.86.15");

  auto beta = ParseResourceSlice(json::parse(R"({
    "metadata": {"name": "s"},
    "spec": {"driver": "gpu.nvidia.com", "nodeName": "node-b", "pool": {"name": "node-b"},
             "devices": [{"name": "gpu-1", "basic": {"attributes": {
                "uuid": {"string": "GPU-11111111-2222-3333-4444-555555555555"}}}}]}})"));
  ASSERT_TRUE(beta) << beta.error().message;
  EXPECT_EQ(beta->devices[0].attributes.at("uuid"), "GPU-11111111-2222-3333-4444-555555555555");
}

TEST(ParseListPage, ItemsVersionAndContinue) {
  auto page = ParseListPage(R"({"kind":"PodList","apiVersion":"v1",
    "metadata":{"resourceVersion":"123","continue":"abc"},
    "items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]})");
  ASSERT_TRUE(page) << page.error().message;
  EXPECT_EQ(page->resource_version, "123");
  EXPECT_EQ(page->continue_token, "abc");
  EXPECT_EQ(page->items.size(), 2u);
  EXPECT_FALSE(ParseListPage("{\"items\": 5}"));
  EXPECT_FALSE(ParseListPage("<html>"));
}

TEST(ParseWatchEvent, TypesAndGone) {
  auto added = ParseWatchEvent(
      R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"77"}}})");
  ASSERT_TRUE(added) << added.error().message;
  EXPECT_EQ(added->type, WatchEventType::kAdded);
  EXPECT_EQ(added->resource_version, "77");
  auto bookmark = ParseWatchEvent(
      R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"90"}}})");
  ASSERT_TRUE(bookmark);
  EXPECT_EQ(bookmark->type, WatchEventType::kBookmark);
  EXPECT_EQ(bookmark->resource_version, "90");
  auto gone = ParseWatchEvent(
      R"({"type":"ERROR","object":{"kind":"Status","code":410,"message":"too old resource version: 5"}})");
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->type, WatchEventType::kError);
  EXPECT_EQ(gone->status_code, 410);
  EXPECT_FALSE(ParseWatchEvent(R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})"));
  EXPECT_FALSE(ParseWatchEvent(R"({"type":"ADDED","obj)"));
  EXPECT_FALSE(ParseWatchEvent(R"({"type":"ERROR","object":{"message":5}})"));
}

TEST(LineSplitter, AcrossChunksAndTruncation) {
  LineSplitter s;
  EXPECT_TRUE(s.Feed("{\"a\":").empty());
  auto lines = s.Feed("1}\n{\"b\":2}\r\n\n{\"c\"");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "{\"a\":1}");
  EXPECT_EQ(lines[1], "{\"b\":2}");
  EXPECT_EQ(s.pending(), "{\"c\"");
}

}  // namespace
}  // namespace gpuledger::k8s
