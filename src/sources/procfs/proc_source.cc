#include "sources/procfs/proc_source.h"

#include <fmt/format.h>

#include <string>
#include <utility>

namespace gpuledger::procfs {
namespace {

// Reads /proc/<pid>/<file>; a missing file means the process is gone.
Result<std::string> ReadProcFile(FileReader& files, int pid, std::string_view file) {
  auto content = files.Read(fmt::format("/proc/{}/{}", pid, file));
  if (!content && content.error().code == ErrorCode::kNotFound)
    return NotFound(fmt::format("process {} is gone: {}", pid, content.error().message));
  return content;
}

}  // namespace

Result<ProcessIdentity> ProcSource::Inspect(int pid) {
  if (pid <= 0) return InvalidArgument(fmt::format("invalid pid {}", pid));
  auto cgroup = ReadProcFile(files_, pid, "cgroup");
  if (!cgroup) {
    cache_.erase(pid);
    return cgroup.error();
  }
  if (auto it = cache_.find(pid); it != cache_.end() && it->second.cgroup == *cgroup) {
    it->second.touched = true;
    return it->second.identity;
  }
  auto id = InspectUncached(pid, *cgroup);
  if (id.ok()) cache_[pid] = Cached{std::move(*cgroup), *id, true};
  return id;
}

void ProcSource::EndCycle() {
  std::erase_if(cache_, [](const auto& kv) { return !kv.second.touched; });
  for (auto& [pid, c] : cache_) c.touched = false;
}

Result<ProcessIdentity> ProcSource::InspectUncached(int pid, const std::string& cgroup_content) {
  ProcessIdentity id;
  id.pid = pid;
  const std::string* cgroup = &cgroup_content;
  if (auto ref = ParseProcCgroup(*cgroup)) id.container = std::move(*ref);
  id.unit = SystemdUnit(*cgroup);

  auto status = ReadProcFile(files_, pid, "status");
  if (!status) return status.error();
  auto uid = ParseStatusRealUid(*status);
  if (!uid) {
    return IoError(fmt::format("{}: {}", files_.Resolve(fmt::format("/proc/{}/status", pid)),
                               uid.error().message));
  }
  id.uid = *uid;
  id.namespace_pid = ParseStatusNamespacePid(*status, pid);
  id.user = UserName(id.uid);

  auto comm = ReadProcFile(files_, pid, "comm");
  if (!comm) return comm.error();
  id.comm = std::move(*comm);
  while (!id.comm.empty() && id.comm.back() == '\n') id.comm.pop_back();

  // Another user's environ is EACCES without CAP_SYS_PTRACE, a zombie's is empty: neither is an
  // error, the guardrail just has nothing to compare.
  if (auto environ = files_.Read(fmt::format("/proc/{}/environ", pid))) {
    id.visible_devices = EnvironValue(*environ, "NVIDIA_VISIBLE_DEVICES");
    id.cuda_visible_devices = EnvironValue(*environ, "CUDA_VISIBLE_DEVICES");
    id.sharing = ParseSharingEnv(*environ);
  }
  return id;
}

std::string ProcSource::UserName(int uid) {
  if (auto it = users_.find(uid); it != users_.end()) return it->second;
  const bool fresh = !passwd_.has_value();
  auto load = [this] {
    auto content = files_.Read("/etc/passwd");
    passwd_ = content ? ParsePasswd(*content) : std::unordered_map<int, std::string>{};
  };
  if (fresh) load();
  auto found = passwd_->find(uid);
  if (found == passwd_->end() && !fresh) {
    load();  // a user added since the last read
    found = passwd_->find(uid);
  }
  std::string name = found != passwd_->end() ? found->second : std::to_string(uid);
  users_.emplace(uid, name);
  return name;
}

}  // namespace gpuledger::procfs
