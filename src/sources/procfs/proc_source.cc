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
  ProcessIdentity id;
  id.pid = pid;

  auto cgroup = ReadProcFile(files_, pid, "cgroup");
  if (!cgroup) return cgroup.error();
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
  id.user = UserName(id.uid);

  auto comm = ReadProcFile(files_, pid, "comm");
  if (!comm) return comm.error();
  id.comm = std::move(*comm);
  while (!id.comm.empty() && id.comm.back() == '\n') id.comm.pop_back();

  // Another user's environ is EACCES without CAP_SYS_PTRACE, a zombie's is empty: neither is an
  // error, the guardrail just has nothing to compare.
  if (auto environ = files_.Read(fmt::format("/proc/{}/environ", pid))) {
    id.visible_devices = EnvironValue(*environ, "NVIDIA_VISIBLE_DEVICES");
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
