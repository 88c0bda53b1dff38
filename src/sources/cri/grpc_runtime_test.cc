// GrpcRuntimeClient against FakeCri over a real unix socket in a temp dir.
#include "sources/cri/grpc_runtime.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_grpc/fake_cri.h"
#include "temp_dir.h"

namespace gpuledger::cri {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
using ::testing::HasSubstr;

// A short prefix: unix socket paths are limited to 107 bytes.
constexpr const char* kDirPrefix = "gl-cri";

const std::string kId1(64, 'a');
const std::string kId2(64, 'b');

class RuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    socket_ = dir_.File("containerd.sock");
    cri_.SetSandboxes({{"s1", "trainer-0", "ml", "uid-1", true, {{"app", "trainer"}}},
                       {"s0", "trainer-0", "ml", "uid-0", false, {}}});
    cri_.SetContainers({{kId1, "s1", "main", true}, {kId2, "s0", "main", false}});
    ASSERT_TRUE(cri_.Start(socket_).ok());
  }

  gpuledger::testing::TempDir dir_{kDirPrefix};
  std::string socket_;
  fake::FakeCri cri_;
};

TEST_F(RuntimeTest, ListRoundTrip) {
  auto client = MakeGrpcRuntimeClient(socket_);
  auto containers = client->ListContainers();
  ASSERT_TRUE(containers.ok()) << containers.error().message;
  ASSERT_EQ(containers->size(), 2u);
  EXPECT_EQ((*containers)[0].id, kId1);
  EXPECT_EQ((*containers)[0].pod_sandbox_id, "s1");
  EXPECT_EQ((*containers)[0].name, "main");
  EXPECT_TRUE((*containers)[0].running);
  EXPECT_FALSE((*containers)[1].running);

  auto sandboxes = client->ListPodSandbox();
  ASSERT_TRUE(sandboxes.ok()) << sandboxes.error().message;
  ASSERT_EQ(sandboxes->size(), 2u);
  EXPECT_EQ((*sandboxes)[0].uid, "uid-1");
  EXPECT_EQ((*sandboxes)[0].namespace_name, "ml");
  EXPECT_TRUE((*sandboxes)[0].ready);
  EXPECT_EQ((*sandboxes)[0].labels.at("app"), "trainer");
  EXPECT_FALSE((*sandboxes)[1].ready);
  EXPECT_EQ(cri_.calls(), 2);
}

TEST_F(RuntimeTest, DownIsUnavailableWellWithinTheDeadline) {
  RuntimeClientOptions options;
  options.deadline = milliseconds(2000);
  GrpcRuntimeClient client(socket_, options);
  ASSERT_TRUE(client.ListContainers().ok());
  cri_.Stop();
  const auto start = steady_clock::now();
  auto down = client.ListContainers();
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(down.error().message, HasSubstr(socket_));
  EXPECT_LT(steady_clock::now() - start, milliseconds(500));

  ASSERT_TRUE(cri_.Start(socket_).ok());
  auto back = client.ListContainers();
  ASSERT_TRUE(back.ok()) << back.error().message;
}

TEST_F(RuntimeTest, StaleSocketFileIsUnavailableQuickly) {
  // A runtime that died without removing its socket: the file exists, nobody listens.
  cri_.Stop();
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ::close(fd);
  ASSERT_TRUE(std::filesystem::exists(socket_));

  GrpcRuntimeClient client(socket_, {});
  const auto start = steady_clock::now();
  auto down = client.ListPodSandbox();
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(down.error().message, HasSubstr("UNAVAILABLE"));
  EXPECT_LT(steady_clock::now() - start, milliseconds(1000));

  // The fake replaces the stale file, and the same client recovers.
  ASSERT_TRUE(cri_.Start(socket_).ok());
  auto back = client.ListPodSandbox();
  ASSERT_TRUE(back.ok()) << back.error().message;
}

TEST_F(RuntimeTest, DeadlineHonouredWhenTheRuntimeHangs) {
  RuntimeClientOptions options;
  options.deadline = milliseconds(300);
  GrpcRuntimeClient client(socket_, options);
  cri_.control().SetHang(true);
  const auto start = steady_clock::now();
  auto hung = client.ListContainers();
  const auto elapsed = steady_clock::now() - start;
  ASSERT_FALSE(hung.ok());
  EXPECT_EQ(hung.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(hung.error().message, HasSubstr("DEADLINE_EXCEEDED"));
  EXPECT_GE(elapsed, milliseconds(250));
  EXPECT_LT(elapsed, milliseconds(1500));
  cri_.control().SetHang(false);
  EXPECT_TRUE(client.ListContainers().ok());
}

TEST(RuntimeNoServer, NeverStartedIsUnavailable) {
  gpuledger::testing::TempDir dir{kDirPrefix};
  auto client = MakeGrpcRuntimeClient(dir.File("crio.sock"));
  auto sandboxes = client->ListPodSandbox();
  ASSERT_FALSE(sandboxes.ok());
  EXPECT_EQ(sandboxes.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(sandboxes.error().message, HasSubstr("crio.sock"));
}

TEST(FakeCriStart, RejectsOverlongPathAndDoubleStart) {
  fake::FakeCri cri;
  EXPECT_FALSE(cri.Start("/tmp/" + std::string(200, 'x')).ok());
  gpuledger::testing::TempDir dir{kDirPrefix};
  ASSERT_TRUE(cri.Start(dir.File("a.sock")).ok());
  EXPECT_FALSE(cri.Start(dir.File("b.sock")).ok());
  cri.Stop();
  cri.Stop();  // idempotent
  EXPECT_FALSE(std::filesystem::exists(dir.File("a.sock")));
}

}  // namespace
}  // namespace gpuledger::cri
