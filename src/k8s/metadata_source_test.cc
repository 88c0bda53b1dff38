// MetadataSource with its real curl transport against the fake API server on loopback.
#include "k8s/metadata_source.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "fake_apiserver/fake_apiserver.h"

namespace gpuledger::k8s {
namespace {

using namespace std::chrono_literals;
using fake::FakeApiServer;
using fake::MakeNamespace;
using fake::MakeNode;
using fake::MakeOwned;
using fake::MakePod;

MetadataConfig TestConfig(const FakeApiServer& server) {
  MetadataConfig config;
  config.api_server = server.url();
  config.initial_backoff = 10ms;
  config.max_backoff = 80ms;
  config.publish_interval = 0ms;
  config.watch_timeout = 30s;
  config.dra_rediscovery = 1s;
  config.list_page_size = 2;  // exercise paging with a handful of objects
  config.log = false;
  return config;
}

std::unique_ptr<MetadataSource> Start(const MetadataConfig& config) {
  auto source = StartMetadata(config);
  EXPECT_TRUE(source) << source.error().message;
  return source ? std::move(*source) : nullptr;
}

// Polls until `pred(view)` holds; the watch delivers asynchronously.
template <typename Pred>
bool Eventually(MetadataSource& source, Pred pred, std::chrono::milliseconds timeout = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred(*source.Current())) {
      return true;
    }
    std::this_thread::sleep_for(5ms);
  }
  return pred(*source.Current());
}

ConsumerRef Ref(const std::string& ns, const std::string& pod) {
  return {ns, pod, PodUid{}, "main"};
}

const ResourceStats& StatsOf(const MetadataStats& stats, const std::string& resource) {
  for (const auto& r : stats.resources) {
    if (r.resource == resource) {
      return r;
    }
  }
  static const ResourceStats kNone;  // NOLINT
  ADD_FAILURE() << "no stats for " << resource;
  return kNone;
}

// The cache's live pods equal the server's objects: names, labels, owners.
bool PodsMatchServer(const MetadataView& view, const FakeApiServer& server) {
  std::map<std::string, std::map<std::string, std::string>> want, got;
  for (const auto& p : server.Objects("pods")) {
    want[p["metadata"]["namespace"].get<std::string>() + "/" +
         p["metadata"]["name"].get<std::string>()] =
        p["metadata"].value("labels", std::map<std::string, std::string>{});
  }
  for (const auto& p : view.LivePods()) {
    got[ObjectKey(p.namespace_name, p.name)] = p.labels;
  }
  return want == got;
}

void SeedCluster(FakeApiServer& server) {
  server.Upsert("namespaces", MakeNamespace("ml", {{"team", "research"}}));
  server.Upsert("namespaces", MakeNamespace("shop", {{"team", "commerce"}}));
  server.Upsert("nodes",
                MakeNode("gpu-node-1", {{"node.kubernetes.io/instance-type", "p4d.24xlarge"},
                                        {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB"}}));
  server.Upsert("replicasets", MakeOwned("ReplicaSet", "shop", "web-7d4f9c", "Deployment", "web"));
  server.Upsert("jobs", MakeOwned("Job", "ml", "nightly-2911", "CronJob", "nightly"));
  server.Upsert("pods", MakePod("shop", "web-7d4f9c-a", {{"app", "web"}}, "ReplicaSet",
                                "web-7d4f9c", "gpu-node-1"));
  server.Upsert("pods", MakePod("shop", "web-7d4f9c-b", {{"app", "web"}}, "ReplicaSet",
                                "web-7d4f9c", "gpu-node-1"));
  server.Upsert("pods", MakePod("ml", "nightly-2911-x", {}, "Job", "nightly-2911", "gpu-node-1"));
  server.Upsert("pods", MakePod("ml", "notebook", {{"owner", "alice"}}));
  server.Upsert("pods", MakePod("ml", "trainer-0", {}, "StatefulSet", "trainer"));
}

TEST(MetadataSource, ListsEverythingAndResolves) {
  FakeApiServer server;
  ASSERT_TRUE(server.Start().ok());
  SeedCluster(server);
  server.Upsert(
      "resourceclaims",
      fake::MakeResourceClaim("ml", "trainer-0-gpu", {{"gpu.nvidia.com", "gpu-node-1", "gpu-3"}}));
  server.Upsert(
      "resourceslices",
      fake::MakeResourceSlice(
          "gpu-node-1-slice", "gpu.nvidia.com", "gpu-node-1", "gpu-node-1",
          {{"gpu-3", {{"uuid", "GPU-a0a0a0a0-0000-0000-0000-000000000003"}}, {{"index", 3}}}}));
  auto source = Start(TestConfig(server));
  ASSERT_TRUE(source);
  ASSERT_TRUE(source->WaitForSync(10s));
  auto view = source->Current();
  EXPECT_EQ(view->LivePods().size(), 5u);
  auto web = view->Describe(Ref("shop", "web-7d4f9c-a"));
  EXPECT_EQ(web.owner_kind, "Deployment");
  EXPECT_EQ(web.owner_name, "web");
  EXPECT_EQ(web.namespace_labels.at("team"), "commerce");
  auto nightly = view->Describe(Ref("ml", "nightly-2911-x"));
  EXPECT_EQ(nightly.owner_kind, "CronJob");
  EXPECT_EQ(nightly.owner_name, "nightly");
  auto notebook = view->Describe(Ref("ml", "notebook"));
  EXPECT_EQ(notebook.owner_kind, "Pod");
  EXPECT_EQ(notebook.owner_name, "notebook");
  EXPECT_EQ(notebook.labels.at("owner"), "alice");
  EXPECT_EQ(view->NodeLabels("gpu-node-1").at("node.kubernetes.io/instance-type"), "p4d.24xlarge");
  auto devices = view->ClaimDevices("ml/trainer-0-gpu");
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].uuid, GpuUuid("GPU-a0a0a0a0-0000-0000-0000-000000000003"));
  EXPECT_EQ(devices[0].attributes.at("index"), "3");

  MetadataStats stats = source->Stats();
  EXPECT_EQ(stats.resources.size(), 7u);
  EXPECT_EQ(StatsOf(stats, "pods").lists, 1u);
  EXPECT_EQ(StatsOf(stats, "pods").errors, 0u);
  EXPECT_EQ(StatsOf(stats, "resourceclaims").api_path, "/apis/resource.k8s.io/v1/resourceclaims");
  // 5 pods at 2 per page: 3 list requests.
  EXPECT_EQ(server.list_requests("pods"), 3);
}

TEST(MetadataSource, WatchEventsUpdateTheView) {
  FakeApiServer server;
  ASSERT_TRUE(server.Start().ok());
  SeedCluster(server);
  auto source = Start(TestConfig(server));
  ASSERT_TRUE(source && source->WaitForSync(10s));
  ASSERT_TRUE(server.WaitForWatches("pods", 1, 5s));

  server.Upsert("pods", MakePod("ml", "new-job-pod", {{"team", "vision"}}, "Job", "nightly-2911"));
  EXPECT_TRUE(Eventually(*source, [](const MetadataView& v) {
    return v.Describe(Ref("ml", "new-job-pod")).owner_kind == "CronJob";
  }));
  // Modify labels.
  server.Upsert("pods", MakePod("ml", "notebook", {{"owner", "bob"}, {"team", "nlp"}}));
  EXPECT_TRUE(Eventually(*source, [](const MetadataView& v) {
    auto labels = v.Describe(Ref("ml", "notebook")).labels;
    return labels.contains("team") && labels.at("owner") == "bob";
  }));
  server.Upsert("namespaces", MakeNamespace("ml", {{"team", "ai"}}));
  EXPECT_TRUE(Eventually(
      *source, [](const MetadataView& v) { return v.NamespaceLabels("ml").at("team") == "ai"; }));
  // Delete: gone from the live pods, still describable (tombstone) for closed hours.
  server.Delete("pods", "shop", "web-7d4f9c-b");
  EXPECT_TRUE(
      Eventually(*source, [&](const MetadataView& v) { return PodsMatchServer(v, server); }));
  EXPECT_EQ(source->Current()->Describe(Ref("shop", "web-7d4f9c-b")).owner_name, "web");
  server.Bookmark("pods");
  MetadataStats stats = source->Stats();
  EXPECT_EQ(StatsOf(stats, "pods").events, 3u);
  EXPECT_EQ(StatsOf(stats, "pods").relists, 0u);
  EXPECT_EQ(StatsOf(stats, "pods").errors, 0u);
}

TEST(MetadataSource, RecoversFrom500s) {
  FakeApiServer server;
  ASSERT_TRUE(server.Start().ok());
  SeedCluster(server);
  server.FailNext("pods", 3, 500);
  server.FailNext("nodes", 2, 503);
  auto source = Start(TestConfig(server));
  ASSERT_TRUE(source && source->WaitForSync(10s));
  EXPECT_TRUE(PodsMatchServer(*source->Current(), server));
  MetadataStats stats = source->Stats();
  EXPECT_EQ(StatsOf(stats, "pods").errors, 3u);
  EXPECT_NE(StatsOf(stats, "pods").last_error.find("HTTP 500"), std::string::npos);
  EXPECT_EQ(StatsOf(stats, "nodes").errors, 2u);
  EXPECT_EQ(StatsOf(stats, "pods").lists, 1u);
  EXPECT_EQ(server.list_requests("pods"), 3 + 3);  // 3 failures, then 3 pages

  // 500s on the watch: back off and resume from the last version, no relist.
  ASSERT_TRUE(server.WaitForWatches("pods", 1, 5s));
  server.FailNext("pods", 2, 500);
  server.EndWatches("pods");
  server.Upsert("pods", MakePod("ml", "after-500", {}));
  EXPECT_TRUE(Eventually(*source, [&](const MetadataView& v) {
    return PodsMatchServer(v, server) && StatsOf(source->Stats(), "pods").errors == 5u &&
           server.watch_requests("pods") == 4;  // the first, two 500s, the one that worked
  }));
  stats = source->Stats();
  EXPECT_EQ(StatsOf(stats, "pods").errors, 5u);
  EXPECT_EQ(StatsOf(stats, "pods").relists, 0u);
}

TEST(MetadataSource, TruncatedWatchResumesWithoutLosingEvents) {
  FakeApiServer server;
  ASSERT_TRUE(server.Start().ok());
  SeedCluster(server);
  auto source = Start(TestConfig(server));
  ASSERT_TRUE(source && source->WaitForSync(10s));
  ASSERT_TRUE(server.WaitForWatches("pods", 1, 5s));
  // The next stream carries 2 events whole, then half of the third, then breaks.
  server.TruncateNextWatch("pods", 2);
  server.EndWatches("pods");
  ASSERT_TRUE(server.WaitForWatches("pods", 2, 5s));
  for (int i = 0; i < 6; ++i) {
    server.Upsert("pods", MakePod("ml", "burst-" + std::to_string(i), {{"i", std::to_string(i)}}));
  }
  server.Delete("pods", "ml", "burst-1");
  server.Upsert("pods", MakePod("ml", "burst-2", {{"i", "two"}}));
  EXPECT_TRUE(
      Eventually(*source, [&](const MetadataView& v) { return PodsMatchServer(v, server); }));
  MetadataStats stats = source->Stats();
  EXPECT_EQ(StatsOf(stats, "pods").truncated, 1u);
  EXPECT_EQ(StatsOf(stats, "pods").relists, 0u);  // resumed, not relisted
  EXPECT_EQ(StatsOf(stats, "pods").events, 8u);   // each event applied exactly once
  EXPECT_EQ(source->Current()->Describe(Ref("ml", "burst-2")).labels.at("i"), "two");
}

TEST(MetadataSource, GoneRelists) {
  for (bool as_http_status : {false, true}) {
    SCOPED_TRACE(as_http_status ? "HTTP 410" : "ERROR event 410");
    FakeApiServer server;
    ASSERT_TRUE(server.Start().ok());
    SeedCluster(server);
    server.Upsert("pods", MakePod("ml", "made-before-list", {}));
    // The list answers the current version; the watch from it is answered 410 once: the client
    // must relist.
    server.GoneFor("pods", server.resource_version(), as_http_status);
    auto source = Start(TestConfig(server));
    ASSERT_TRUE(source && source->WaitForSync(10s));
    // A change while the client is relisting is still seen.
    server.Delete("pods", "ml", "notebook");
    // The relist is counted after the 410 is: wait for both (under ASan the gap showed).
    EXPECT_TRUE(Eventually(*source, [&](const MetadataView& v) {
      const auto pods = StatsOf(source->Stats(), "pods");
      return PodsMatchServer(v, server) && pods.gone > 0 && pods.relists > 0;
    }));
    MetadataStats stats = source->Stats();
    EXPECT_EQ(StatsOf(stats, "pods").relists, 1u);
    EXPECT_EQ(StatsOf(stats, "pods").gone, 1u);
    EXPECT_EQ(StatsOf(stats, "pods").errors, 0u);
  }
}

TEST(MetadataSource, CompactionWhileDisconnectedRelistsAndDropsDeletedPods) {
  FakeApiServer server;
  ASSERT_TRUE(server.Start().ok());
  SeedCluster(server);
  auto source = Start(TestConfig(server));
  ASSERT_TRUE(source && source->WaitForSync(10s));
  ASSERT_TRUE(server.WaitForWatches("pods", 1, 5s));
  // Break the watch with 500s, change state, compact the log: the resume gets 410 -> relist,
  // and the relist must notice the deletion it never saw as an event. The 500s last until the
  // log is compacted (a fixed count could run out first on a loaded machine, and the client
  // would then see the changes live instead).
  server.FailNext("pods", 1'000'000, 500);
  server.EndWatches("pods");
  server.Delete("pods", "ml", "trainer-0");
  server.Upsert("pods", MakePod("ml", "late", {}));
  server.CompactThrough(server.resource_version());
  server.FailNext("pods", 0, 500);
  EXPECT_TRUE(
      Eventually(*source, [&](const MetadataView& v) { return PodsMatchServer(v, server); }));
  MetadataStats stats = source->Stats();
  EXPECT_EQ(StatsOf(stats, "pods").relists, 1u);
  EXPECT_EQ(StatsOf(stats, "pods").gone, 1u);
  // The deleted StatefulSet pod is a tombstone: still resolves for past hours.
  EXPECT_EQ(source->Current()->Describe(Ref("ml", "trainer-0")).owner_kind, "StatefulSet");
}

TEST(MetadataSource, ClusterWithoutDraOrWithBeta) {
  {
    FakeApiServer::Options options;
    options.dra_versions = {};
    FakeApiServer server(options);
    ASSERT_TRUE(server.Start().ok());
    SeedCluster(server);
    auto source = Start(TestConfig(server));
    ASSERT_TRUE(source && source->WaitForSync(10s));
    MetadataStats stats = source->Stats();
    EXPECT_TRUE(StatsOf(stats, "resourceclaims").absent);
    EXPECT_EQ(StatsOf(stats, "resourceclaims").errors, 0u);
    EXPECT_EQ(source->Current()->LivePods().size(), 5u);
  }
  {
    FakeApiServer::Options options;
    options.dra_versions = {"v1beta1"};
    FakeApiServer server(options);
    ASSERT_TRUE(server.Start().ok());
    server.Upsert("resourceslices",
                  fake::MakeResourceSlice("s", "gpu.nvidia.com", "node-b", "node-b",
                                          {{"gpu-0", {{"uuid", "GPU-b0"}}, {}}}, 1, "v1beta1"));
    auto source = Start(TestConfig(server));
    ASSERT_TRUE(source && source->WaitForSync(10s));
    EXPECT_EQ(StatsOf(source->Stats(), "resourceslices").api_path,
              "/apis/resource.k8s.io/v1beta1/resourceslices");
    EXPECT_EQ(source->Current()->DeviceUuid("gpu.nvidia.com", "node-b", "gpu-0"),
              GpuUuid("GPU-b0"));
    server.Upsert("resourceclaims",
                  fake::MakeResourceClaim("ml", "c", {{"gpu.nvidia.com", "node-b", "gpu-0"}}));
    EXPECT_TRUE(Eventually(*source, [](const MetadataView& v) {
      auto d = v.ClaimDevices("ml/c");
      return d.size() == 1 && d[0].uuid == GpuUuid("GPU-b0");
    }));
  }
}

TEST(MetadataSource, BearerTokenFromInClusterFiles) {
  namespace fs = std::filesystem;
  const fs::path root =
      fs::temp_directory_path() / ("gpuledger_incluster_" + std::to_string(::getpid()));
  const fs::path sa = root / "var/run/secrets/kubernetes.io/serviceaccount";
  fs::create_directories(sa);
  std::ofstream(sa / "token") << "sa-token-1\n";
  std::ofstream(sa / "ca.crt") << "unused for http";
  FakeApiServer::Options options;
  options.bearer_token = "sa-token-1";
  FakeApiServer server(options);
  ASSERT_TRUE(server.Start().ok());
  SeedCluster(server);
  MetadataConfig config = TestConfig(server);
  config.in_cluster = true;
  config.in_cluster_root = root.string();
  auto resolved = ResolveApiServerConfig(config, [](const char* name) -> const char* {
    std::string n = name;
    if (n == "KUBERNETES_SERVICE_HOST") {
      return "10.96.0.1";
    }
    if (n == "KUBERNETES_SERVICE_PORT") {
      return "443";
    }
    return nullptr;
  });
  ASSERT_TRUE(resolved) << resolved.error().message;
  EXPECT_EQ(resolved->server, server.url());  // the override wins over the service address
  auto source = StartMetadataWith(config, [cfg = *resolved] { return MakeCurlTransport(cfg); });
  ASSERT_TRUE(source->WaitForSync(10s));
  EXPECT_EQ(server.last_authorization(), "Bearer sa-token-1");
  EXPECT_EQ(source->Current()->LivePods().size(), 5u);
  fs::remove_all(root);
}

TEST(MetadataSource, UnreachableServerKeepsRetryingAndStops) {
  MetadataConfig config;
  config.api_server = "http://127.0.0.1:1";  // nothing listens on port 1
  config.initial_backoff = 10ms;
  config.max_backoff = 20ms;
  config.log = false;
  auto source = Start(config);
  ASSERT_TRUE(source);
  EXPECT_FALSE(source->WaitForSync(300ms));
  EXPECT_GT(StatsOf(source->Stats(), "pods").errors, 2u);
  EXPECT_TRUE(source->Current()->LivePods().empty());
  const auto t0 = std::chrono::steady_clock::now();
  source.reset();  // joins promptly
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
}

TEST(MetadataSource, ConfigErrors) {
  MetadataConfig none;
  auto r = StartMetadata(none);
  ASSERT_FALSE(r);
  MetadataConfig bad;
  bad.kubeconfig = "/nonexistent/config";
  r = StartMetadata(bad);
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().message.starts_with("kubeconfig /nonexistent/config")) << r.error().message;
}

}  // namespace
}  // namespace gpuledger::k8s
