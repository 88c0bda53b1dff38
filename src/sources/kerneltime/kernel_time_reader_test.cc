#include "sources/kerneltime/kernel_time_reader.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <string>

#include "io/file_util.h"
#include "sources/kerneltime/publication.h"
#include "sources/procfs/proc_source.h"
#include "temp_dir.h"

namespace gpuledger::kerneltime {
namespace {

constexpr const char* kUid = "0a1b2c3d-0000-4a4a-8b8b-123456789abc";
constexpr const char* kGpu = "GPU-2d0c5d1e-8a3a-4bfb-a7f9-36a0e3e8e1c5";

// A host root holding the tracers' directory, and the processes NVML listed.
class KernelTimeReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(root_.path() / "run/gpuledger/kerneltime" / kUid);
    files_ = MakePosixFileReader(root_.path().string());
    reader_ = std::make_unique<KernelTimeReader>(*files_);
  }

  // What the tracer of `pid` publishes: `busy_ns` on kGpu.
  void Publish(int pid, std::uint64_t busy_ns, std::int64_t started = 1, std::uint32_t flags = 0,
               int claimed_pid = 0, const std::string& uuid = kGpu) {
    Publication p;
    p.pid = claimed_pid != 0 ? claimed_pid : pid;
    p.started_unix_ns = started;
    p.flags = flags;
    p.devices.push_back({uuid, busy_ns, 10, 0});
    p.devices.push_back({"GPU-other", 999'999'999'999, 10, 0});
    FileLayout f{};
    WritePublication(p, f);
    ASSERT_TRUE(
        WriteFile(Path(pid), std::string(reinterpret_cast<const char*>(&f), sizeof f)).ok());
  }

  std::string Path(int pid) const {
    return (root_.path() / "run/gpuledger/kerneltime" / kUid / std::to_string(pid)).string();
  }

  // One cycle over processes `pids` of the pod on kGpu: each one's kernel time, -1 for none.
  // `namespace_pids`: host PID -> its PID in its container, as procfs gives it (NSpid).
  std::vector<GpuMicros> Cycle(const std::vector<int>& pids,
                               const std::map<int, int>& namespace_pids = {},
                               const std::string& device = kGpu) {
    std::vector<ProcessObservation> procs;
    for (int pid : pids) {
      ProcessObservation p;
      p.pid = pid;
      if (auto ns = namespace_pids.find(pid); ns != namespace_pids.end())
        p.namespace_pid = ns->second;
      p.device = GpuUuid{device};
      p.consumer = ConsumerRef{"ml", "train-0", PodUid{kUid}, "main"};
      procs.push_back(p);
    }
    reader_->Annotate(procs);
    std::vector<GpuMicros> out;
    for (const auto& p : procs) out.push_back(p.kernel_busy_us.value_or(-1));
    return out;
  }

  testing::TempDir root_{"gpuledger-kerneltime-reader"};
  std::unique_ptr<FileReader> files_;
  std::unique_ptr<KernelTimeReader> reader_;
};

TEST_F(KernelTimeReaderTest, TheKernelTimeSinceTheLastCycleAfterABaseline) {
  Publish(100, 5'000'000'500);
  EXPECT_EQ(Cycle({100}), std::vector<GpuMicros>{-1});  // baseline
  Publish(100, 6'500'001'000);
  EXPECT_EQ(Cycle({100}), std::vector<GpuMicros>{1'500'001});  // µs of each reading: no drift
  EXPECT_EQ(Cycle({100}), std::vector<GpuMicros>{0});
  // The tracer restarted (the process re-exec'd): a new baseline, never a negative delta.
  Publish(100, 10, /*started=*/2);
  EXPECT_EQ(Cycle({100}), std::vector<GpuMicros>{-1});
  EXPECT_EQ(reader_->stats().files_read, 4u);
}

TEST_F(KernelTimeReaderTest, FilesThatDoNotBelongGiveNothing) {
  Publish(200, 1'000'000'000, 1, 0, /*claimed_pid=*/201);  // names another process
  Publish(300, 1'000'000'000, 1, kStoodAside);             // a profiler holds CUPTI
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(Cycle({200, 300, 400}), (std::vector<GpuMicros>{-1, -1, -1}));
  EXPECT_EQ(reader_->stats().files_refused, 2u);  // 400 has no file: not a refusal
  EXPECT_EQ(reader_->stats().tracers_off, 2u);
  // A torn file (a write under way, three reads in a row) and a FIFO a tenant put there.
  Publish(500, 1);
  std::string bytes = *ReadFile(Path(500));
  bytes[sizeof(FileLayout) - 1] ^= 1;  // seq_end differs from seq_begin
  ASSERT_TRUE(WriteFile(Path(500), bytes).ok());
  ASSERT_EQ(::mkfifo(Path(600).c_str(), 0600), 0);
  EXPECT_EQ(Cycle({500, 600}), (std::vector<GpuMicros>{-1, -1}));  // and it did not block
  EXPECT_EQ(reader_->stats().files_refused, 4u);
}

// In a container the tracer knows itself by its PID in the pod's namespace: the agent maps the
// host PID NVML gives through /proc/<pid>/status's NSpid line.
TEST_F(KernelTimeReaderTest, AContainersOwnPidNamesItsFile) {
  EXPECT_EQ(procfs::ParseStatusNamespacePid("Name:\tpython3\nNSpid:\t4242\t17\nPPid:\t1\n", 4242),
            17);
  EXPECT_EQ(procfs::ParseStatusNamespacePid("Name:\tpython3\nNSpid:\t4242\n", 4242), 4242);
  EXPECT_EQ(procfs::ParseStatusNamespacePid("Name:\tpython3\n", 4242),
            4242);  // an old kernel: the host's
  const int ns = procfs::ParseStatusNamespacePid("NSpid:\t4242\t17\n", 4242);
  Publish(17, 1'000'000);
  Cycle({4242}, {{4242, ns}});  // the baseline, from the file of PID 17
  Publish(17, 3'000'000);
  EXPECT_EQ(Cycle({4242}, {{4242, ns}}), std::vector<GpuMicros>{2'000});
}

// The tracer names a device by the driver's 16 bytes and guesses the prefix: a MIG instance it
// took for a GPU still matches NVML's "MIG-" UUID, and no other device does.
TEST_F(KernelTimeReaderTest, ADeviceMatchesByItsUuidsBytesWhateverItsPrefix) {
  const std::string mig = "MIG-5c89f1a3-7f1e-5b57-9a47-6f1c4b2e0d11";
  const std::string guessed = "GPU-5c89f1a3-7f1e-5b57-9a47-6f1c4b2e0d11";
  Publish(700, 1'000'000, 1, 0, 0, guessed);
  Cycle({700}, {}, mig);
  Publish(700, 4'000'000, 1, 0, 0, guessed);
  EXPECT_EQ(Cycle({700}, {}, mig), std::vector<GpuMicros>{3'000});
  const std::string other = "MIG-5c89f1a3-7f1e-5b57-9a47-6f1c4b2e0d12";
  Cycle({700}, {}, other);
  Publish(700, 5'000'000, 1, 0, 0, guessed);
  EXPECT_EQ(Cycle({700}, {}, other), std::vector<GpuMicros>{-1});  // never a baseline
}

}  // namespace
}  // namespace gpuledger::kerneltime
