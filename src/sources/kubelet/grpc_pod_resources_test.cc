// GrpcPodResourcesClient against FakeKubelet over a real unix socket in a temp dir.
#include "sources/kubelet/grpc_pod_resources.h"

#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_grpc/fake_kubelet.h"
#include "temp_dir.h"

namespace gpuledger::kubelet {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
using ::testing::HasSubstr;

// A short prefix: unix socket paths are limited to 107 bytes.
constexpr const char* kDirPrefix = "gl-kubelet";

std::vector<ContainerGrant> SampleGrants() {
  return {
      {"ml", "trainer-0", "main", "nvidia.com/gpu", {"GPU-aaaa::0", "GPU-aaaa::1"}, {}},
      {"ml",
       "trainer-0",
       "main",
       "",
       {},
       {{"ml/gpu-claim",
         "gpu.nvidia.com",
         "node-1",
         "gpu-0",
         "share-1",
         {"nvidia.com/gpu=GPU-bbbb"}}}},
      {"web", "infer", "server", "nvidia.com/gpu", {"nvidia0/vgpu2"}, {}},
  };
}

class PodResourcesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    socket_ = dir_.File("pod-resources/kubelet.sock");
    kubelet_.SetGrants(SampleGrants());
    kubelet_.SetAllocatable({{"nvidia.com/gpu", "GPU-aaaa::0"},
                             {"nvidia.com/gpu", "GPU-aaaa::1"},
                             {"nvidia.com/mig-1g.10gb", "MIG-cccc"}});
    ASSERT_TRUE(kubelet_.Start(socket_).ok());
  }

  gpuledger::testing::TempDir dir_{kDirPrefix};
  std::string socket_;
  fake::FakeKubelet kubelet_;
};

TEST_F(PodResourcesTest, ListRoundTripIncludesDra) {
  auto client = MakeGrpcPodResourcesClient(socket_);
  auto grants = client->List();
  ASSERT_TRUE(grants.ok()) << grants.error().message;
  ASSERT_EQ(grants->size(), 3u);
  EXPECT_EQ((*grants)[0].device_ids, SampleGrants()[0].device_ids);
  ASSERT_EQ((*grants)[1].dra.size(), 1u);
  const DraDevice& d = (*grants)[1].dra[0];
  EXPECT_EQ(d.claim, "ml/gpu-claim");
  EXPECT_EQ(d.driver, "gpu.nvidia.com");
  EXPECT_EQ(d.pool, "node-1");
  EXPECT_EQ(d.device, "gpu-0");
  EXPECT_EQ(d.share_id, "share-1");
  EXPECT_THAT(d.cdi_devices, ::testing::ElementsAre("nvidia.com/gpu=GPU-bbbb"));
  EXPECT_EQ((*grants)[2].device_ids, std::vector<std::string>{"nvidia0/vgpu2"});
  EXPECT_EQ(kubelet_.calls(), 1);
}

TEST_F(PodResourcesTest, AllocatableAndGetRoundTrip) {
  GrpcPodResourcesClient client(socket_, {});
  auto devices = client.GetAllocatableResources();
  ASSERT_TRUE(devices.ok()) << devices.error().message;
  ASSERT_EQ(devices->size(), 3u);
  EXPECT_EQ((*devices)[2].resource_name, "nvidia.com/mig-1g.10gb");
  EXPECT_EQ((*devices)[2].device_id, "MIG-cccc");

  auto pod = client.Get("web", "infer");
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  ASSERT_EQ(pod->size(), 1u);
  EXPECT_EQ((*pod)[0].container, "server");

  auto missing = client.Get("web", "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error().message, HasSubstr("NOT_FOUND"));
}

TEST_F(PodResourcesTest, StateChangesAreSeenByTheNextCall) {
  auto client = MakeGrpcPodResourcesClient(socket_);
  ASSERT_EQ(client->List()->size(), 3u);
  kubelet_.SetGrants({});
  auto grants = client->List();
  ASSERT_TRUE(grants.ok()) << grants.error().message;
  EXPECT_TRUE(grants->empty());
}

TEST_F(PodResourcesTest, SocketRemovedThenRestoredRecoversWithoutNewClient) {
  auto client = MakeGrpcPodResourcesClient(socket_);
  ASSERT_TRUE(client->List().ok());

  kubelet_.Stop();
  ASSERT_FALSE(std::filesystem::exists(socket_));
  for (int i = 0; i < 2; ++i) {
    auto down = client->List();
    ASSERT_FALSE(down.ok());
    EXPECT_EQ(down.error().code, ErrorCode::kUnavailable);
    EXPECT_THAT(down.error().message, HasSubstr(socket_));
  }

  ASSERT_TRUE(kubelet_.Start(socket_).ok());
  auto back = client->List();
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->size(), 3u);
}

TEST_F(PodResourcesTest, RestartBetweenCallsIsInvisible) {
  auto client = MakeGrpcPodResourcesClient(socket_);
  ASSERT_TRUE(client->List().ok());
  kubelet_.Stop();
  ASSERT_TRUE(kubelet_.Start(socket_).ok());
  // The old connection was closed by the server; the channel reconnects on the next call.
  auto grants = client->List();
  ASSERT_TRUE(grants.ok()) << grants.error().message;
}

TEST_F(PodResourcesTest, ResourceExhaustedBacksOffWithoutCallingTheKubelet) {
  steady_clock::time_point now = steady_clock::now();
  PodResourcesClientOptions options;
  options.now = [&now] { return now; };
  GrpcPodResourcesClient client(socket_, options);
  kubelet_.control().FailResourceExhausted(2);

  auto refused = client.List();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(refused.error().message, HasSubstr("RESOURCE_EXHAUSTED"));
  EXPECT_THAT(refused.error().message, HasSubstr(socket_));
  EXPECT_EQ(kubelet_.calls(), 1);

  // Within the back-off: answered locally, the kubelet is not called (any method).
  auto limited = client.List();
  ASSERT_FALSE(limited.ok());
  EXPECT_EQ(limited.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(limited.error().message, HasSubstr("rate limited, retry in 1s"));
  EXPECT_FALSE(client.GetAllocatableResources().ok());
  EXPECT_EQ(kubelet_.calls(), 1);

  // After 1 s the next call reaches the kubelet, is refused again: the back-off doubles.
  now += milliseconds(1000);
  EXPECT_FALSE(client.List().ok());
  EXPECT_EQ(kubelet_.calls(), 2);
  now += milliseconds(1000);
  auto still = client.List();
  ASSERT_FALSE(still.ok());
  EXPECT_THAT(still.error().message, HasSubstr("retry in 1s"));
  EXPECT_EQ(kubelet_.calls(), 2);

  now += milliseconds(1000);
  auto ok = client.List();
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(kubelet_.calls(), 3);

  // A success resets the back-off to its start.
  kubelet_.control().FailResourceExhausted(1);
  EXPECT_FALSE(client.List().ok());
  auto reset = client.List();
  ASSERT_FALSE(reset.ok());
  EXPECT_THAT(reset.error().message, HasSubstr("retry in 1s"));
  EXPECT_EQ(kubelet_.calls(), 4);
}

TEST_F(PodResourcesTest, BackoffIsCappedAtMax) {
  steady_clock::time_point now = steady_clock::now();
  PodResourcesClientOptions options;
  options.now = [&now] { return now; };
  GrpcPodResourcesClient client(socket_, options);
  kubelet_.control().FailResourceExhausted(100);
  std::chrono::seconds expected[] = {std::chrono::seconds(1),  std::chrono::seconds(2),
                                     std::chrono::seconds(4),  std::chrono::seconds(8),
                                     std::chrono::seconds(16), std::chrono::seconds(32),
                                     std::chrono::seconds(60), std::chrono::seconds(60)};
  for (auto wait : expected) {
    auto refused = client.List();
    ASSERT_FALSE(refused.ok());
    EXPECT_THAT(refused.error().message, HasSubstr("RESOURCE_EXHAUSTED"));
    auto limited = client.List();
    EXPECT_THAT(limited.error().message,
                HasSubstr("retry in " + std::to_string(wait.count()) + "s"));
    now += wait;
  }
}

TEST_F(PodResourcesTest, DeadlineHonouredWhenTheKubeletHangs) {
  PodResourcesClientOptions options;
  options.deadline = milliseconds(300);
  GrpcPodResourcesClient client(socket_, options);
  kubelet_.control().SetHang(true);
  const auto start = steady_clock::now();
  auto hung = client.List();
  const auto elapsed = steady_clock::now() - start;
  ASSERT_FALSE(hung.ok());
  EXPECT_EQ(hung.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(hung.error().message, HasSubstr("DEADLINE_EXCEEDED"));
  EXPECT_GE(elapsed, milliseconds(250));
  EXPECT_LT(elapsed, milliseconds(1500));

  kubelet_.control().SetHang(false);
  auto ok = client.List();
  ASSERT_TRUE(ok.ok()) << ok.error().message;
}

TEST_F(PodResourcesTest, StopWhileACallHangsReturnsPromptly) {
  PodResourcesClientOptions options;
  options.deadline = milliseconds(5000);
  GrpcPodResourcesClient client(socket_, options);
  kubelet_.control().SetHang(true);
  std::thread stopper([this] {
    std::this_thread::sleep_for(milliseconds(200));
    kubelet_.Stop();
  });
  const auto start = steady_clock::now();
  auto result = client.List();
  stopper.join();
  EXPECT_FALSE(result.ok());
  EXPECT_LT(steady_clock::now() - start, milliseconds(3000));
}

TEST_F(PodResourcesTest, ConcurrentCallsAndStateChanges) {
  // One client shared by threads while the state is rewritten: every answer is a whole state.
  auto client = MakeGrpcPodResourcesClient(socket_);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; !done; ++i) {
      kubelet_.SetGrants(i % 2 == 0 ? SampleGrants() : std::vector<ContainerGrant>{});
    }
  });
  std::vector<std::thread> readers;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        auto grants = client->List();
        if (!grants.ok() || (!grants->empty() && grants->size() != 3)) ++bad;
      }
    });
  }
  for (auto& r : readers) r.join();
  done = true;
  writer.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(kubelet_.calls(), 200);
}

TEST(PodResourcesNoServer, MissingSocketIsUnavailableAtOnce) {
  gpuledger::testing::TempDir dir{kDirPrefix};
  const std::string socket = dir.File("kubelet.sock");
  auto client = MakeGrpcPodResourcesClient(socket);
  const auto start = steady_clock::now();
  auto grants = client->List();
  ASSERT_FALSE(grants.ok());
  EXPECT_EQ(grants.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(grants.error().message, HasSubstr(socket));
  EXPECT_LT(steady_clock::now() - start, milliseconds(500));
}

}  // namespace
}  // namespace gpuledger::kubelet
