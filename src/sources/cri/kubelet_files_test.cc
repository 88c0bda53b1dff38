#include "sources/cri/kubelet_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "temp_dir.h"

namespace gpuledger::cri {
namespace {

namespace fs = std::filesystem;

constexpr char kUid[] = "1f0e4c2a-3b5d-4e6f-8a9b-0c1d2e3f4a5b";
constexpr char kEndedUid[] = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d";
const std::string kId(64, 'a');
const std::string kSidecarId(64, 'b');
const std::string kEndedId(64, 'c');

// A node's files as the kubelet and containerd leave them, under a temp host root.
class KubeletFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    files_ = MakePosixFileReader(root_.path().string());
    Dir("var/log/pods/ml_train-0_" + std::string(kUid) + "/trainer");
    Dir("var/log/pods/ml_train-0_" + std::string(kUid) + "/sidecar");
    Dir("var/log/pods/ml_done-job-x7_" + std::string(kEndedUid) + "/main");
    Link("train-0_ml_trainer-" + kId);
    Link("train-0_ml_sidecar-" + kSidecarId);
    Link("done-job-x7_ml_main-" + kEndedId);
  }
  void Dir(const std::string& rel) { fs::create_directories(root_.path() / rel); }
  // The link's target is not read: its name is what says which container it is.
  void Link(const std::string& stem) {
    Dir("var/log/containers");
    fs::create_symlink("/var/log/pods/x/0.log",
                       root_.path() / "var/log/containers" / (stem + ".log"));
  }
  // A cgroup directory with a few of the files the kernel puts in each.
  void Cgroup(const std::string& rel) {
    Dir("sys/fs/cgroup/" + rel);
    std::ofstream(root_.path() / "sys/fs/cgroup" / rel / "cgroup.procs") << "";
  }

  testing::TempDir root_{"kubelet-files"};
  std::unique_ptr<FileReader> files_;
};

TEST_F(KubeletFilesTest, PodsAndContainersByNameWithTheRunningOnesFromTheCgroupTree) {
  const std::string pod = "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" +
                          std::string("1f0e4c2a_3b5d_4e6f_8a9b_0c1d2e3f4a5b") + ".slice";
  Cgroup(pod + "/cri-containerd-" + kId + ".scope");
  Cgroup(pod + "/cri-containerd-" + kSidecarId + ".scope/sub");
  auto runtime = MakeKubeletFilesRuntime(*files_);

  auto pods = runtime->ListPodSandbox();
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  ASSERT_EQ(pods->size(), 2u);
  std::map<std::string, PodSandbox> by_name;
  for (const PodSandbox& p : *pods) by_name[p.name] = p;
  EXPECT_EQ(by_name["train-0"].namespace_name, "ml");
  EXPECT_EQ(by_name["train-0"].uid, kUid);
  EXPECT_EQ(by_name["train-0"].id, kUid);
  EXPECT_TRUE(by_name["train-0"].ready);
  EXPECT_EQ(by_name["done-job-x7"].uid, kEndedUid);
  EXPECT_FALSE(by_name["done-job-x7"].ready) << "its cgroup is gone: the pod has stopped";

  auto containers = runtime->ListContainers();
  ASSERT_TRUE(containers.ok()) << containers.error().message;
  std::map<std::string, Container> by_id;
  for (const Container& c : *containers) by_id[c.id] = c;
  ASSERT_EQ(by_id.size(), 3u);
  EXPECT_EQ(by_id[kId].name, "trainer");
  EXPECT_EQ(by_id[kId].pod_sandbox_id, kUid);
  EXPECT_TRUE(by_id[kId].running);
  EXPECT_EQ(by_id[kSidecarId].name, "sidecar");
  EXPECT_TRUE(by_id[kSidecarId].running);
  EXPECT_EQ(by_id[kEndedId].pod_sandbox_id, kEndedUid);
  EXPECT_FALSE(by_id[kEndedId].running);
}

TEST_F(KubeletFilesTest, CgroupV1AndTheCgroupfsDriver) {
  Cgroup("memory/kubepods/besteffort/pod" + std::string(kUid) + "/" + kId);
  auto pods = MakeKubeletFilesRuntime(*files_)->ListPodSandbox();
  ASSERT_TRUE(pods.ok());
  for (const PodSandbox& p : *pods) EXPECT_EQ(p.ready, p.uid == kUid) << p.name;
}

TEST_F(KubeletFilesTest, WithoutAnyPodCgroupEveryPodWithLogsCountsAsRunning) {
  auto pods = MakeKubeletFilesRuntime(*files_)->ListPodSandbox();
  ASSERT_TRUE(pods.ok());
  ASSERT_EQ(pods->size(), 2u);
  for (const PodSandbox& p : *pods) EXPECT_TRUE(p.ready) << p.name;
}

TEST_F(KubeletFilesTest, NamesThatAreNoPodsOrContainersAreSkipped) {
  Dir("var/log/pods/only_two");
  Dir("var/log/pods/a_b_c_");
  Dir("var/log/pods/a__c");
  Link("train-0_ml_trainer-short");
  Link("no-underscores-" + std::string(64, 'd'));
  Link("ghost_ml_main-" + std::string(64, 'e'));  // its pod's logs are gone
  fs::create_directories(root_.path() / "var/log/containers/not-a-link");
  auto runtime = MakeKubeletFilesRuntime(*files_);
  auto pods = runtime->ListPodSandbox();
  ASSERT_TRUE(pods.ok());
  EXPECT_EQ(pods->size(), 2u);
  auto containers = runtime->ListContainers();
  ASSERT_TRUE(containers.ok());
  EXPECT_EQ(containers->size(), 3u);
}

TEST_F(KubeletFilesTest, WithoutThePodLogsItIsUnavailableAndSaysWhere) {
  fs::remove_all(root_.path() / "var/log/pods");
  auto pods = MakeKubeletFilesRuntime(*files_)->ListPodSandbox();
  ASSERT_FALSE(pods.ok());
  EXPECT_EQ(pods.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(pods.error().message.find("var/log/pods"), std::string::npos) << pods.error().message;
}

}  // namespace
}  // namespace gpuledger::cri
