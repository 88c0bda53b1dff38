#pragma once
// Who a GPU process is: its container (from /proc/<pid>/cgroup), its Unix user and systemd
// unit (for nodes without Kubernetes), and its NVIDIA_VISIBLE_DEVICES. All reads go through a
// FileReader rooted at --host-root; the parsers are pure functions over file contents.

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "common/units.h"
#include "io/file_reader.h"

namespace gpuledger::procfs {

struct CgroupRef {
  std::string container_id;  // 64 hex (docker-, cri-containerd-, crio- prefixes removed)
  std::string pod_uid;       // with dashes (systemd's underscores turned back); may be empty
  std::string runtime;       // "containerd", "crio", "docker", "podman"; "" when unknown
  // Containers nested inside `container_id` (docker-in-docker, a CI runner's build containers,
  // a kind node's pods seen from its host), outermost first. The join takes the innermost one
  // the node's container runtime knows: that is the workload it scheduled.
  std::vector<std::string> nested_ids;
};

// The content of /proc/<pid>/cgroup (v1 or v2, systemd or cgroupfs driver). kNotFound when the
// process is in no container. A process in a sub-cgroup below its container's is still found.
//
// Rules (kubelet, containerd, CRI-O and Docker naming; see shared/data/README.md):
// - Lines are "<id>:<controllers>:<path>". They are tried in a fixed order, first match wins:
//   the unified "0::" line, then "name=systemd", then the line with the "cpu" controller, then
//   "memory", then the rest in file order. Malformed lines are skipped.
// - The pod is the first path component "kubepods[-<qos>]-pod<uid with _>.slice" (systemd) or
//   "pod<uid>" below a "kubepods*" component (cgroupfs). A uid is a UUID or 32 hex (static pods).
// - The container is the first container component after the pod (or in the whole path when
//   there is no pod, so "/docker/<id>/kubepods/..." of a kind node still yields the pod's own):
//   "cri-containerd-", "crio-", "docker-", "libpod-" + 64 hex [+ ".scope"], a plain 64-hex
//   component, or containerd's "<pod slice>:cri-containerd:<id>". Components below it are
//   sub-cgroups of the same container, or, when they are container components themselves,
//   containers nested in it (nested_ids).
// - "crio-conmon-<id>" and "libpod-conmon-<id>" are the runtime's monitor, not the workload:
//   such a line names no container.
// Never crashes or throws on any input.
Result<CgroupRef> ParseProcCgroup(std::string_view content);

// A container id as every runtime we name writes it: 64 lowercase hex (sha256).
bool IsContainerId(std::string_view s);

// A directory of the cgroup tree ("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-
// pod<uid>.slice[/cri-containerd-<id>.scope]"), named by the same rules: its pod UID and, when it
// is a container's, the container ID; kNotFound when it is no pod's. The kubelet removes a pod's
// cgroup once the pod has stopped, so the tree says which pods are running.
Result<CgroupRef> ParseCgroupDirectory(std::string_view path);

// The systemd unit in a cgroup path ("user@1000.service", "slurmstepd.scope", "jupyter.service"),
// or empty. The path is the first of the lines, in ParseProcCgroup's order, that holds a unit;
// the unit is its innermost ".service" component, else its innermost ".scope" component (so a
// scope inside a user manager, ".../user@1000.service/app.slice/x.scope", gives
// "user@1000.service").
std::string SystemdUnit(std::string_view cgroup_content);

// A variable from NUL-separated /proc/<pid>/environ content; nullopt when absent. The first
// definition wins, as with getenv.
std::optional<std::string> EnvironValue(std::string_view environ_content, std::string_view name);

// A whole percentage in 1..100 ("30"); nullopt for anything else (absent, "0", "30%", "abc").
std::optional<int> ParsePercentage(const std::optional<std::string>& text);

// A memory size as the sharing layers write it: digits with an optional binary suffix k, m, g
// or t (either case, optionally followed by "b"/"B": "5GB", "1G", "4096m", "1048576k"), or
// plain bytes. nullopt for anything else, zero, or a size over 2^62.
std::optional<Bytes> ParseMemorySize(std::string_view text);

// What the GPU-sharing layer injected into a process's environment, each with its origin:
// - CUDA_MPS_PIPE_DIRECTORY: NVIDIA's device plugin in MPS mode (and any MPS client) — the
//   process is a client of an MPS daemon (NVIDIA MPS documentation, "Environment variables").
// - CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: the client's cap on the SMs, in percent (ibid.).
// - CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: the client's device memory cap, "<ordinal>=<size>[,...]"
//   (ibid.; e.g. "0=5GB"); ordinal 0, the first device the container sees, is kept.
// - CUDA_DEVICE_SM_LIMIT, CUDA_DEVICE_MEMORY_LIMIT_<n> / CUDA_DEVICE_MEMORY_LIMIT: HAMi-core's
//   caps (Project-HAMi/HAMi-core README): SM percent, and device memory ("4096m"), per visible
//   device <n> or for all; device 0's is kept.
// - ALIYUN_COM_GPU_MEM_IDX / _CONTAINER / _DEV (and ALIBABACLOUD_COM_GPU_MEM_*): Alibaba's GPU
//   sharing (AliyunContainerService/gpushare-scheduler-extender pkg/utils/const.go): the GPU
//   index the scheduler chose, the container's GPU memory in GiB and the device's in GiB.
struct SharingEnv {
  bool mps_client = false;
  std::optional<int> mps_thread_percentage;
  std::optional<Bytes> mps_memory_limit_bytes;
  std::optional<int> sm_limit_percentage;
  std::optional<Bytes> memory_limit_bytes;
  std::optional<int> gpushare_gpu_index;
  std::optional<Bytes> gpushare_memory_bytes;
  std::optional<Bytes> gpushare_device_bytes;
  bool operator==(const SharingEnv&) const = default;
};
SharingEnv ParseSharingEnv(std::string_view environ_content);

// The real uid (first field of the "Uid:" line) of /proc/<pid>/status content.
Result<int> ParseStatusRealUid(std::string_view status_content);

// The PID a process has in its innermost PID namespace (the last field of the "NSpid:" line of
// /proc/<pid>/status), which is what a program inside a container calls itself; `host_pid` when
// the line is absent (kernels before 4.1) or unreadable.
int ParseStatusNamespacePid(std::string_view status_content, int host_pid);

// uid -> user name from /etc/passwd content; malformed lines are skipped, the first entry for a
// uid wins.
std::unordered_map<int, std::string> ParsePasswd(std::string_view passwd_content);

struct ProcessIdentity {
  int pid = 0;
  std::optional<CgroupRef> container;          // unset: in no container
  int uid = -1;                                // real uid from /proc/<pid>/status
  int namespace_pid = 0;                       // its PID in its own namespace (NSpid)
  std::string user;                            // from <host-root>/etc/passwd, or the uid as text
  std::string unit;                            // systemd unit, or empty
  std::string comm;                            // /proc/<pid>/comm
  std::optional<std::string> visible_devices;  // NVIDIA_VISIBLE_DEVICES, if readable
  std::optional<std::string> cuda_visible_devices;  // CUDA_VISIBLE_DEVICES, if readable
  // How the process shares its GPU, from what the sharing layer put in its environment
  // (SharingEnv); empty when unreadable.
  SharingEnv sharing;
};

// Reads /proc/<pid>/{cgroup,status,comm,environ} and /etc/passwd through `files` (not owned;
// must outlive this). Not thread-safe: one collector thread owns it.
class ProcSource {
 public:
  explicit ProcSource(FileReader& files) : files_(files) {}
  // kNotFound when the process is gone (it may exit between NVML and here). An unreadable
  // environ (another user's process, a zombie) is not an error: visible_devices stays unset.
  //
  // Identities are cached per PID and revalidated by the content of /proc/<pid>/cgroup, one
  // read instead of four per GPU process per cycle. A PID reused in another cgroup (another
  // container) is read afresh; one reused in the same cgroup is the same container, which is
  // all attribution needs.
  Result<ProcessIdentity> Inspect(int pid);
  // Forgets cached PIDs not inspected since the previous call (call once per cycle).
  void EndCycle();

 private:
  struct Cached {
    std::string cgroup;
    ProcessIdentity identity;
    bool touched = true;
  };
  Result<ProcessIdentity> InspectUncached(int pid, const std::string& cgroup);

  // /etc/passwd is read once; a uid missing from it triggers one re-read for that uid (users
  // added later are found), and the answer, name or uid text, is cached from then on.
  std::string UserName(int uid);

  FileReader& files_;
  std::optional<std::unordered_map<int, std::string>> passwd_;
  std::unordered_map<int, std::string> users_;  // every uid answered so far
  std::unordered_map<int, Cached> cache_;
};

}  // namespace gpuledger::procfs
