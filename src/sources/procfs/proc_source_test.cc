#include "sources/procfs/proc_source.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "io/file_reader.h"

namespace gpuledger::procfs {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;

constexpr char kId[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

// A host root in a temp dir holding a fake /proc and /etc/passwd.
class ProcSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "proc_source_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    files_ = MakePosixFileReader(root_);
    Write("etc/passwd",
          "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/sh\n");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  void Write(const std::string& rel, const std::string& content) {
    const fs::path p = fs::path(root_) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary | std::ios::trunc) << content;
  }
  void AddProcess(int pid, const std::string& cgroup, int uid, const std::string& comm,
                  const std::string& environ) {
    const std::string dir = "proc/" + std::to_string(pid) + "/";
    Write(dir + "cgroup", cgroup);
    Write(dir + "status", "Name:\t" + comm + "\nUmask:\t0022\nState:\tS (sleeping)\nUid:\t" +
                              std::to_string(uid) + "\t0\t0\t0\nGid:\t0\t0\t0\t0\nNSpid:\t" +
                              std::to_string(pid) + "\t7\n");
    Write(dir + "comm", comm + "\n");
    Write(dir + "environ", environ);
  }

  std::string root_;
  std::unique_ptr<FileReader> files_;
};

TEST_F(ProcSourceTest, InspectsAPodProcess) {
  AddProcess(4242,
             "0::/kubepods.slice/kubepods-burstable.slice/"
             "kubepods-burstable-pod1b2c3d4e_0000_4a4a_8b8b_123456789abc.slice/cri-containerd-"s +
                 kId + ".scope\n",
             1000, "python3",
             "HOME=/root\0NVIDIA_VISIBLE_DEVICES=GPU-abc\0CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps\0"
             "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30\0"s);
  ProcSource source(*files_);
  auto id = source.Inspect(4242);
  ASSERT_TRUE(id) << id.error().message;
  EXPECT_EQ(id->pid, 4242);
  ASSERT_TRUE(id->container.has_value());
  EXPECT_EQ(id->container->container_id, kId);
  EXPECT_EQ(id->container->pod_uid, "1b2c3d4e-0000-4a4a-8b8b-123456789abc");
  EXPECT_EQ(id->container->runtime, "containerd");
  EXPECT_EQ(id->uid, 1000);
  EXPECT_EQ(id->namespace_pid, 7);  // the PID it has in its container (issue 31)
  EXPECT_EQ(id->user, "alice");
  EXPECT_EQ(id->comm, "python3");
  EXPECT_EQ(id->visible_devices, "GPU-abc");
  EXPECT_TRUE(id->sharing.mps_client);
  EXPECT_EQ(id->sharing.mps_thread_percentage, 30);
  EXPECT_EQ(id->sharing.sm_limit_percentage, std::nullopt);
}

TEST_F(ProcSourceTest, InspectsAHostProcessInAService) {
  AddProcess(7, "0::/system.slice/jupyter.service\n", 0, "jupyter-lab", "PATH=/bin\0"s);
  ProcSource source(*files_);
  auto id = source.Inspect(7);
  ASSERT_TRUE(id) << id.error().message;
  EXPECT_FALSE(id->container.has_value());
  EXPECT_EQ(id->unit, "jupyter.service");
  EXPECT_EQ(id->user, "root");
  EXPECT_EQ(id->visible_devices, std::nullopt);
}

TEST_F(ProcSourceTest, GoneProcessIsNotFound) {
  ProcSource source(*files_);
  auto id = source.Inspect(999);
  ASSERT_FALSE(id);
  EXPECT_EQ(id.error().code, ErrorCode::kNotFound);
  EXPECT_NE(id.error().message.find(root_ + "/proc/999/cgroup"), std::string::npos)
      << id.error().message;
  // Exited between the cgroup read and the status read.
  Write("proc/998/cgroup", "0::/init.scope\n");
  id = source.Inspect(998);
  ASSERT_FALSE(id);
  EXPECT_EQ(id.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(source.Inspect(0).error().code, ErrorCode::kInvalidArgument);
}

TEST_F(ProcSourceTest, MissingEnvironIsNotAnError) {
  AddProcess(10, "0::/init.scope\n", 0, "init", "");
  fs::remove(fs::path(root_) / "proc/10/environ");
  ProcSource source(*files_);
  auto id = source.Inspect(10);
  ASSERT_TRUE(id) << id.error().message;
  EXPECT_EQ(id->visible_devices, std::nullopt);
}

TEST_F(ProcSourceTest, UnreadableEnvironIsNotAnError) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: permission bits are not enforced";
  AddProcess(11, "0::/init.scope\n", 0, "init", "NVIDIA_VISIBLE_DEVICES=all\0"s);
  ::chmod((root_ + "/proc/11/environ").c_str(), 0);
  ProcSource source(*files_);
  auto id = source.Inspect(11);
  ASSERT_TRUE(id) << id.error().message;
  EXPECT_EQ(id->visible_devices, std::nullopt);
}

TEST_F(ProcSourceTest, MalformedStatusIsAnIoErrorNamingThePath) {
  AddProcess(12, "0::/init.scope\n", 0, "x", "");
  Write("proc/12/status", "Name:\tx\n");
  ProcSource source(*files_);
  auto id = source.Inspect(12);
  ASSERT_FALSE(id);
  EXPECT_EQ(id.error().code, ErrorCode::kIo);
  EXPECT_NE(id.error().message.find(root_ + "/proc/12/status"), std::string::npos);
}

TEST_F(ProcSourceTest, UnknownUidFallsBackToItsNumberAndNewUsersAreFound) {
  AddProcess(20, "0::/init.scope\n", 1000680000, "x", "");
  AddProcess(21, "0::/init.scope\n", 2000, "y", "");
  ProcSource source(*files_);
  ASSERT_TRUE(source.Inspect(20));
  EXPECT_EQ(source.Inspect(20)->user, "1000680000");
  // bob is added after passwd was first read: his uid is new, so passwd is read again.
  Write("etc/passwd", "root:x:0:0::/root:/bin/sh\nbob:x:2000:2000::/home/bob:/bin/sh\n");
  EXPECT_EQ(source.Inspect(21)->user, "bob");
  // Answers are cached: a changed passwd does not rename a known uid.
  Write("etc/passwd", "robert:x:2000:2000::/home/bob:/bin/sh\n");
  EXPECT_EQ(source.Inspect(21)->user, "bob");
}

TEST_F(ProcSourceTest, NoPasswdFileMeansUidText) {
  fs::remove(fs::path(root_) / "etc/passwd");
  AddProcess(30, "0::/init.scope\n", 0, "x", "");
  ProcSource source(*files_);
  EXPECT_EQ(source.Inspect(30)->user, "0");
}

}  // namespace
}  // namespace gpuledger::procfs

namespace gpuledger::procfs {
namespace {

// The same code over this machine's real /proc: ourselves.
TEST(ProcSourceReal, InspectsItself) {
  auto files = MakePosixFileReader("/");
  if (!files->Exists("/proc/self/cgroup")) GTEST_SKIP() << "no /proc/self/cgroup here";
  ProcSource source(*files);
  auto id = source.Inspect(::getpid());
  ASSERT_TRUE(id) << id.error().message;
  EXPECT_EQ(id->uid, static_cast<int>(::getuid()));
  EXPECT_FALSE(id->user.empty());
  EXPECT_FALSE(id->comm.empty());
  EXPECT_EQ(id->comm.find('\n'), std::string::npos);
}

TEST(ParseMemorySize, BinarySuffixesAsTheSharingLayersWriteThem) {
  EXPECT_EQ(ParseMemorySize("5GB"), 5 * kGiB);
  EXPECT_EQ(ParseMemorySize("1G"), kGiB);
  EXPECT_EQ(ParseMemorySize("4096m"), 4 * kGiB);
  EXPECT_EQ(ParseMemorySize("1048576k"), kGiB);
  EXPECT_EQ(ParseMemorySize("512MB"), 512 * kMiB);
  EXPECT_EQ(ParseMemorySize("1000"), 1000);
  for (std::string_view bad : {"", "0", "G", "5 GB", "5XB", "-1G", "99999999999999999999", "5GiB"})
    EXPECT_EQ(ParseMemorySize(bad), std::nullopt) << bad;
  EXPECT_EQ(ParseMemorySize("4194305T"), std::nullopt);  // over 2^62
}

TEST(ParseSharingEnv, EachLayersVariables) {
  using namespace std::string_literals;
  SharingEnv mps = ParseSharingEnv(
      "CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps\0CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25\0"
      "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=1=2G,0=5GB\0"s);
  EXPECT_TRUE(mps.mps_client);
  EXPECT_EQ(mps.mps_thread_percentage, 25);
  EXPECT_EQ(mps.mps_memory_limit_bytes, 5 * kGiB);

  SharingEnv hami = ParseSharingEnv("CUDA_DEVICE_SM_LIMIT=30\0CUDA_DEVICE_MEMORY_LIMIT_0=4096m\0"s);
  EXPECT_FALSE(hami.mps_client);
  EXPECT_EQ(hami.sm_limit_percentage, 30);
  EXPECT_EQ(hami.memory_limit_bytes, 4 * kGiB);
  EXPECT_EQ(ParseSharingEnv("CUDA_DEVICE_MEMORY_LIMIT=2g\0"s).memory_limit_bytes, 2 * kGiB);

  SharingEnv ali = ParseSharingEnv(
      "ALIYUN_COM_GPU_MEM_IDX=1\0ALIYUN_COM_GPU_MEM_CONTAINER=8\0ALIYUN_COM_GPU_MEM_DEV=16\0"s);
  EXPECT_EQ(ali.gpushare_gpu_index, 1);
  EXPECT_EQ(ali.gpushare_memory_bytes, 8 * kGiB);
  EXPECT_EQ(ali.gpushare_device_bytes, 16 * kGiB);
  EXPECT_EQ(ParseSharingEnv("ALIBABACLOUD_COM_GPU_MEM_CONTAINER=4\0"s).gpushare_memory_bytes,
            4 * kGiB);

  // Malformed values are absent, never a wrong number.
  SharingEnv bad = ParseSharingEnv(
      "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=130\0CUDA_DEVICE_MEMORY_LIMIT_0=lots\0ALIYUN_COM_GPU_MEM_IDX=-1\0"s);
  EXPECT_EQ(bad, SharingEnv{});
}

}  // namespace
}  // namespace gpuledger::procfs
