#pragma once
// Who a GPU process is: its container (from /proc/<pid>/cgroup), its Unix user and systemd
// unit (for nodes without Kubernetes), and its NVIDIA_VISIBLE_DEVICES. All reads go through a
// FileReader rooted at --host-root; the parsers are pure functions over file contents.

#include <optional>
#include <string>
#include <string_view>

#include "common/file_reader.h"
#include "common/result.h"

namespace gpuledger::procfs {

struct CgroupRef {
  std::string container_id;     // 64 hex (docker-, cri-containerd-, crio- prefixes removed)
  std::string pod_uid;          // with dashes (systemd's underscores turned back); may be empty
  std::string runtime;          // "containerd", "crio", "docker", "" when unknown
};

// The content of /proc/<pid>/cgroup (v1 or v2, systemd or cgroupfs driver). kNotFound when the
// process is in no container. A process in a sub-cgroup below its container's is still found.
Result<CgroupRef> ParseProcCgroup(std::string_view content);

// The systemd unit in a cgroup path ("user@1000.service", "slurmstepd.scope", "jupyter.service"),
// or empty.
std::string SystemdUnit(std::string_view cgroup_content);

// A variable from NUL-separated /proc/<pid>/environ content; nullopt when absent.
std::optional<std::string> EnvironValue(std::string_view environ_content, std::string_view name);

struct ProcessIdentity {
  int pid = 0;
  std::optional<CgroupRef> container;  // unset: in no container
  int uid = -1;                        // real uid from /proc/<pid>/status
  std::string user;                    // from <host-root>/etc/passwd, or the uid as text
  std::string unit;                    // systemd unit, or empty
  std::string comm;                    // /proc/<pid>/comm
  std::optional<std::string> visible_devices;  // NVIDIA_VISIBLE_DEVICES, if readable
};

class ProcSource {
 public:
  explicit ProcSource(FileReader& files) : files_(files) {}
  // kNotFound when the process is gone (it may exit between NVML and here).
  Result<ProcessIdentity> Inspect(int pid);

 private:
  FileReader& files_;
};

}  // namespace gpuledger::procfs
