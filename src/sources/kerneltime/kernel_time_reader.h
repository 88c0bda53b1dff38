#pragma once
// The agent's side of the kernel-time tracer (issue 31): each cycle, for every GPU process in a
// pod, the file its tracer publishes at <dir>/<pod-uid>/<pid> (under --host-root) is read and
// the kernel time since the last cycle set on the process (ProcessObservation::kernel_busy_us),
// which attribution then splits the device's busy time by.
//
// A file counts only for a process NVML lists on that device in that pod: its path is built from
// the pod the process's cgroup names and the PID NVML gives as the container's PID namespace
// numbers it (/proc/<pid>/status; the tracer inside knows no other), the file must name it again,
// and only its record for the process's own device is read. What a tenant writes into its own
// directory is still its claim (guardrails check it against NVML; a later slice). A file that
// is absent, torn three times in a row, of another format, or from a tracer that disabled itself
// or stood aside for a profiler gives no kernel time: the NVML estimate stands for that process.
// The first reading of a process (or after its tracer restarted) is a baseline.
//
// Thread-compatible: the collector's cycle thread.

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "io/file_reader.h"
#include "model/snapshot.h"

namespace gpuledger::kerneltime {

inline constexpr const char* kDefaultDir = "/run/gpuledger/kerneltime";

struct ReaderStats {
  std::uint64_t files_read = 0;     // whole publications read
  std::uint64_t files_refused = 0;  // another format, another PID, or torn three times
  std::uint64_t tracers_off = 0;    // the tracer disabled itself or stood aside
};

class KernelTimeReader {
 public:
  KernelTimeReader(FileReader& files, std::string dir = kDefaultDir)
      : files_(files), dir_(std::move(dir)) {}

  void Annotate(std::vector<ProcessObservation>& processes);
  const ReaderStats& stats() const { return stats_; }

 private:
  struct Last {
    std::int64_t started_unix_ns = 0;
    std::uint64_t busy_ns = 0;
  };
  using Key = std::tuple<std::string, int, std::string>;  // pod uid, pid, device uuid

  FileReader& files_;
  std::string dir_;
  std::map<Key, Last> last_;  // processes seen in the last cycle only: bounded by the node's
  ReaderStats stats_;
};

}  // namespace gpuledger::kerneltime
