// libgpuledger-kerneltime.so as the CUDA driver runs it (issue 31): loaded by path into a process
// that has the driver loaded, InitializeInjection() called, kernels recorded through CUPTI's
// buffer protocol (the stand-ins of testing/cupti_standin/), the kernel-time file read as the
// agent reads it. Expected figures are computed here from the kernels the script runs.

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "sources/kerneltime/publication.h"
#include "temp_dir.h"
#include "test_paths.h"

extern char** environ;

namespace gpuledger {
namespace {

using namespace std::chrono_literals;
using kerneltime::DecodePublication;
using kerneltime::Publication;

struct Interval {
  std::uint64_t start, end;
};

// The length of the union of `kernels`, the plain way: sort, then sweep.
std::uint64_t UnionLength(std::vector<Interval> kernels) {
  std::sort(kernels.begin(), kernels.end(),
            [](const Interval& a, const Interval& b) { return a.start < b.start; });
  std::uint64_t total = 0, reached = 0;
  for (const Interval& k : kernels) {
    const std::uint64_t from = std::max(k.start, reached);
    if (k.end > from) total += k.end - from;
    reached = std::max(reached, k.end);
  }
  return total;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string HostBinary() {
  const std::string standin = test_paths::kCuptiStandin;
  return standin.substr(0, standin.rfind('/')) + "/kerneltime_host";
}

// One run of the stand-in application, its files in a temporary directory.
class HostRun {
 public:
  HostRun(const std::string& script, std::vector<std::string> env) {
    publish_ = dir_.path().string() + "/publish";
    ::mkdir(publish_.c_str(), 0755);
    const std::string script_path = dir_.path().string() + "/script";
    std::string text = script;
    for (auto at = text.find("@GO@"); at != std::string::npos; at = text.find("@GO@"))
      text.replace(at, 4, go_file());
    std::ofstream(script_path) << text;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, (dir_.path().string() + "/out").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, (dir_.path().string() + "/err").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<std::string> env_store;
    for (char** e = environ; *e != nullptr; ++e)
      if (std::string(*e).rfind("GPULEDGER_", 0) != 0) env_store.push_back(*e);
    for (std::string& e : env) {
      const auto at = e.find("@PUBLISH@");
      if (at != std::string::npos) e.replace(at, 9, publish_);
      env_store.push_back(std::move(e));
    }
    std::vector<char*> envp;
    for (std::string& e : env_store) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string host = HostBinary();
    char* argv[] = {host.data(), const_cast<char*>(script_path.c_str()), nullptr};
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv, envp.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~HostRun() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  const std::string& publish_dir() const { return publish_; }
  std::string go_file() const { return dir_.path().string() + "/go"; }
  std::string file() const { return publish_ + "/" + std::to_string(pid_); }

  // The publication once `done` holds for it (10 s at most), or the last one read.
  template <typename Done>
  std::optional<Publication> ReadUntil(Done done) {
    std::optional<Publication> last;
    for (int i = 0; i < 1000; ++i) {
      auto p = DecodePublication(ReadAll(file()), file());
      if (p) {
        last = *p;
        if (done(*p)) break;
      }
      std::this_thread::sleep_for(10ms);
    }
    return last;
  }

  // Lets the script go on past `wait go`, and the exit status (-1 when it had to be killed).
  int Finish() {
    std::ofstream(go_file()) << "go";
    int status = 0;
    for (int i = 0; i < 2000 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i)
      std::this_thread::sleep_for(10ms);
    if (::waitpid(pid_, &status, WNOHANG) == 0) return -1;
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::string out() const { return ReadAll(dir_.path().string() + "/out"); }
  std::string err() const { return ReadAll(dir_.path().string() + "/err"); }

 private:
  testing::TempDir dir_;
  std::string publish_;
  pid_t pid_ = -1;
};

std::string Uuid(const char* prefix, int byte) {
  char hex[3];
  std::snprintf(hex, sizeof hex, "%02x", byte);
  std::string h;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) h += '-';
    h += hex;
  }
  return prefix + h;
}

const kerneltime::DeviceKernelTime* Device(const Publication& p, const std::string& uuid) {
  for (const auto& d : p.devices)
    if (d.uuid == uuid) return &d;
  return nullptr;
}

class KernelTimeInjection : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(test_paths::kKernelTimeLib).empty())
      GTEST_SKIP() << "the CUPTI stand-ins are not built";
  }
};

std::string CuptiPath() { return std::string("GPULEDGER_CUPTI_PATH=") + test_paths::kCuptiStandin; }
const std::string kPublishTo = "GPULEDGER_KERNELTIME_DIR=@PUBLISH@";

TEST_F(KernelTimeInjection, PublishesTheUnionOfEachDevicesKernelsWhileTheProcessRuns) {
  // Two overlapping kernels (concurrent streams), a record that is no kernel, a second device,
  // and 3,000 disjoint kernels: 624 KB of records, several of the tracer's 256 KiB buffers.
  std::vector<Interval> device0 = {{1000, 2000}, {1500, 2500}};
  for (std::uint64_t i = 0; i < 3000; ++i) device0.push_back({10000 + i * 60, 10000 + i * 60 + 50});
  HostRun run(
      "kernel 0 1000 2000\nkernel 0 1500 2500\nother\nkernel 1 0 100\n"
      "kernels 0 10000 50 3000 10\nwait @GO@\n",
      {kPublishTo, CuptiPath()});
  const std::string gpu0 = Uuid("GPU-", 0x10), gpu1 = Uuid("GPU-", 0x11);
  const std::uint64_t busy0 = UnionLength(device0);
  ASSERT_EQ(busy0, 1500u + 3000u * 50u);

  // Published while the process still runs (the flush thread, every 100 ms).
  auto p = run.ReadUntil([&](const Publication& p) {
    const auto* d = Device(p, gpu0);
    return d != nullptr && d->kernels == device0.size() && Device(p, gpu1) != nullptr;
  });
  ASSERT_TRUE(p.has_value()) << run.err();
  const auto* d0 = Device(*p, gpu0);
  const auto* d1 = Device(*p, gpu1);
  ASSERT_NE(d0, nullptr);
  ASSERT_NE(d1, nullptr);
  EXPECT_EQ(d0->busy_ns, busy0);
  EXPECT_EQ(d0->kernels, device0.size());
  EXPECT_EQ(d0->clipped_ns, 0u);
  EXPECT_EQ(d1->busy_ns, 100u);
  EXPECT_EQ(d1->kernels, 1u);
  EXPECT_EQ(p->flags, 0u);
  EXPECT_EQ(p->errors, 0u);
  EXPECT_EQ(std::to_string(p->pid), run.file().substr(run.file().rfind('/') + 1));
  EXPECT_GT(p->updated_unix_ns, 0);

  // At exit: one forced flush, and the file is gone (the agent counts only live processes).
  EXPECT_EQ(run.Finish(), 0) << run.err();
  EXPECT_NE(run.out().find("cupti registrations=1 enabled=1 subscribed=0"), std::string::npos)
      << run.out();
  EXPECT_NE(run.out().find("forced=1 disables=0"), std::string::npos) << run.out();
  struct stat st;
  EXPECT_NE(::stat(run.file().c_str(), &st), 0) << "the file outlived its process";
}

TEST_F(KernelTimeInjection, UsesTheCuptiTheApplicationAlreadyLoaded) {
  // No GPULEDGER_CUPTI_PATH: the application's own libcupti.so.13 (as PyTorch brings one).
  HostRun run("kernel 0 0 700\nwait @GO@\n", {kPublishTo, "GPULEDGER_HOST_OWN_CUPTI=1"});
  auto p = run.ReadUntil([](const Publication& p) { return !p.devices.empty(); });
  ASSERT_TRUE(p.has_value()) << run.err();
  ASSERT_EQ(p->devices.size(), 1u) << run.err();
  EXPECT_EQ(p->devices[0].uuid, Uuid("GPU-", 0x10));
  EXPECT_EQ(p->devices[0].busy_ns, 700u);
  EXPECT_EQ(run.Finish(), 0);
}

TEST_F(KernelTimeInjection, NamesAMigInstanceByItsOwnUuid) {
  HostRun run("kernel 1 0 300\nwait @GO@\n",
              {kPublishTo, CuptiPath(), "GPULEDGER_FAKE_CUDA_MIG=1"});
  auto p = run.ReadUntil([](const Publication& p) { return !p.devices.empty(); });
  ASSERT_TRUE(p.has_value()) << run.err();
  ASSERT_EQ(p->devices.size(), 1u);
  EXPECT_EQ(p->devices[0].uuid, Uuid("MIG-", 0x11));
  EXPECT_EQ(p->devices[0].busy_ns, 300u);
  EXPECT_EQ(run.Finish(), 0);
}

TEST_F(KernelTimeInjection, StepsAsideUntouchedForAProfilerThatHoldsCupti) {
  HostRun run("kernel 0 0 500\nwait @GO@\n",
              {kPublishTo, CuptiPath(), "GPULEDGER_FAKE_CUPTI_PROFILER=1"});
  auto p = run.ReadUntil([](const Publication& p) { return p.flags != 0; });
  ASSERT_TRUE(p.has_value()) << run.err();
  EXPECT_EQ(p->flags, kerneltime::kStoodAside);
  EXPECT_EQ(p->errors, 0u);
  EXPECT_TRUE(p->devices.empty());
  EXPECT_EQ(run.Finish(), 0);
  // The profiler's CUPTI is left as it was: no buffers registered, nothing enabled or flushed.
  EXPECT_NE(run.out().find("registrations=0 enabled=0 subscribed=0 flushes=0"), std::string::npos)
      << run.out();
}

TEST_F(KernelTimeInjection, DisablesItselfAndSaysSoWhenProfilingIsRestricted) {
  HostRun run("kernel 0 0 500\nwait @GO@\n",
              {kPublishTo, CuptiPath(), "GPULEDGER_FAKE_CUPTI_NO_PRIVILEGE=1"});
  auto p = run.ReadUntil([](const Publication& p) { return p.flags != 0; });
  ASSERT_TRUE(p.has_value()) << run.err();
  EXPECT_EQ(p->flags, kerneltime::kDisabled);
  EXPECT_EQ(p->errors, 1u);
  EXPECT_EQ(run.Finish(), 0) << "the application must run on";
  EXPECT_NE(run.out().find("enabled=0"), std::string::npos) << run.out();
  EXPECT_NE(run.out().find("forced=0 disables=1"), std::string::npos) << run.out();
}

TEST_F(KernelTimeInjection, WithoutCuptiTheApplicationRunsOnAndTheFileSaysSo) {
  HostRun run("kernel 0 0 500\nwait @GO@\n",
              {kPublishTo, "GPULEDGER_CUPTI_PATH=/nonexistent/libcupti.so"});
  auto p = run.ReadUntil([](const Publication& p) { return p.flags != 0; });
  ASSERT_TRUE(p.has_value()) << run.err();
  EXPECT_EQ(p->flags, kerneltime::kDisabled);
  EXPECT_EQ(p->errors, 1u);
  EXPECT_EQ(run.Finish(), 0);
  EXPECT_NE(run.err().find("gpuledger-kerneltime: GPULEDGER_CUPTI_PATH=/nonexistent/libcupti.so"),
            std::string::npos)
      << run.err();
}

TEST_F(KernelTimeInjection, WithoutAPublishDirectoryItTouchesNothing) {
  HostRun run("kernel 0 0 500\n", {CuptiPath()});
  EXPECT_EQ(run.Finish(), 0);
  EXPECT_NE(run.err().find("GPULEDGER_KERNELTIME_DIR is not set"), std::string::npos) << run.err();
  EXPECT_NE(run.out().find("registrations=0 enabled=0 subscribed=0 flushes=0"), std::string::npos)
      << run.out();
}

}  // namespace
}  // namespace gpuledger
