// What a container runtime does last before a container's process starts, for the deployed
// processes e2e (issue 62): into the image's root, down to exactly the capabilities the
// manifest adds to `drop: [ALL]`, as the manifest's user, then exec.
//
//   container_exec ROOT UID:GID CAPS PROGRAM [ARG...]
// CAPS: the capabilities' names without "CAP_", comma-separated ("DAC_READ_SEARCH,SYS_PTRACE"),
// or "-" for none. Run as root (with CAP_SYS_CHROOT and CAP_SETPCAP); the environment passes on
// as it is.
#include <grp.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

namespace {

const std::map<std::string, int>& CapabilityNumbers() {
  static const std::map<std::string, int> numbers = {
      {"CHOWN", CAP_CHOWN},
      {"DAC_OVERRIDE", CAP_DAC_OVERRIDE},
      {"DAC_READ_SEARCH", CAP_DAC_READ_SEARCH},
      {"FOWNER", CAP_FOWNER},
      {"FSETID", CAP_FSETID},
      {"KILL", CAP_KILL},
      {"SETGID", CAP_SETGID},
      {"SETUID", CAP_SETUID},
      {"SETPCAP", CAP_SETPCAP},
      {"NET_BIND_SERVICE", CAP_NET_BIND_SERVICE},
      {"NET_RAW", CAP_NET_RAW},
      {"SYS_CHROOT", CAP_SYS_CHROOT},
      {"SYS_PTRACE", CAP_SYS_PTRACE},
      {"SYS_ADMIN", CAP_SYS_ADMIN},
      {"MKNOD", CAP_MKNOD},
      {"AUDIT_WRITE", CAP_AUDIT_WRITE},
      {"SETFCAP", CAP_SETFCAP},
  };
  return numbers;
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "container_exec: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(127);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: container_exec ROOT UID:GID CAPS PROGRAM [ARG...]\n");
    return 2;
  }
  std::set<int> keep;
  if (std::string caps = argv[3]; caps != "-") {
    std::stringstream names(caps);
    for (std::string name; std::getline(names, name, ',');) {
      auto it = CapabilityNumbers().find(name);
      if (it == CapabilityNumbers().end()) {
        std::fprintf(stderr, "container_exec: unknown capability %s\n", name.c_str());
        return 2;
      }
      keep.insert(it->second);
    }
  }
  unsigned uid = 0, gid = 0;
  if (std::sscanf(argv[2], "%u:%u", &uid, &gid) != 2) {
    std::fprintf(stderr, "container_exec: expected UID:GID, got %s\n", argv[2]);
    return 2;
  }
  int last_cap = CAP_LAST_CAP;
  std::ifstream("/proc/sys/kernel/cap_last_cap") >> last_cap;  // the running kernel's
  if (::chroot(argv[1]) != 0) Die(std::string("chroot ") + argv[1]);
  if (::chdir("/") != 0) Die("chdir /");
  // The bounding set limits what uid 0 gets at exec; the inheritable and ambient sets are
  // emptied so that nothing else passes through it.
  for (int cap = 0; cap <= last_cap; ++cap)
    if (!keep.count(cap) && ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0)
      Die("PR_CAPBSET_DROP " + std::to_string(cap));
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) Die("ambient");
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capget, &header, data) != 0) Die("capget");
  data[0].inheritable = data[1].inheritable = 0;
  if (::syscall(SYS_capset, &header, data) != 0) Die("capset");
  if (::setgroups(0, nullptr) != 0) Die("setgroups");
  if (::setgid(gid) != 0) Die("setgid");
  if (::setuid(uid) != 0) Die("setuid");
  ::execv(argv[4], argv + 4);
  Die(std::string("exec ") + argv[4]);
}
