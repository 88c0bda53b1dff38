// Pure parsers of /proc/<pid>/cgroup content. The naming rules are documented on
// ParseProcCgroup in proc_source.h.

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/strings.h"
#include "sources/procfs/proc_source.h"

namespace gpuledger::procfs {
namespace {

bool IsHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool AllHex(std::string_view s) { return std::all_of(s.begin(), s.end(), IsHex); }

// A pod UID as the kubelet writes it after systemd's '-' -> '_' is undone: a UUID, or 32 hex
// for static pods (a hash of the manifest, not a UUID).
bool IsPodUid(std::string_view s) {
  if (s.size() == 32) return AllHex(s);
  if (s.size() != 36) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !IsHex(s[i])) return false;
  }
  return true;
}

bool StripSuffix(std::string_view& s, std::string_view suffix) {
  if (!s.ends_with(suffix)) return false;
  s.remove_suffix(suffix.size());
  return true;
}

// "kubepods-pod<uid>.slice", "kubepods-burstable-pod<uid_with_underscores>.slice".
std::optional<std::string> SystemdPodUid(std::string_view component) {
  if (!component.starts_with("kubepods") || !StripSuffix(component, ".slice")) return std::nullopt;
  const std::size_t at = component.rfind("-pod");
  if (at == std::string_view::npos) return std::nullopt;
  std::string uid(component.substr(at + 4));
  std::replace(uid.begin(), uid.end(), '_', '-');
  if (!IsPodUid(uid)) return std::nullopt;
  return uid;
}

// "pod<uid>" (cgroupfs driver); only meaningful below a "kubepods*" component.
std::optional<std::string> CgroupfsPodUid(std::string_view component) {
  if (!component.starts_with("pod")) return std::nullopt;
  component.remove_prefix(3);
  if (!IsPodUid(component)) return std::nullopt;
  return std::string(component);
}

enum class Kind { kNone, kContainer, kMonitor };

struct Component {
  Kind kind = Kind::kNone;
  std::string_view id;
  std::string_view runtime;
};

struct Prefix {
  std::string_view text;
  Kind kind;
  std::string_view runtime;
};

// Longer prefixes first: "crio-conmon-" must win over "crio-".
constexpr std::array kPrefixes = {
    Prefix{"cri-containerd-", Kind::kContainer, "containerd"},
    Prefix{"crio-conmon-", Kind::kMonitor, ""},
    Prefix{"crio-", Kind::kContainer, "crio"},
    Prefix{"docker-", Kind::kContainer, "docker"},
    Prefix{"libpod-conmon-", Kind::kMonitor, ""},
    Prefix{"libpod-", Kind::kContainer, "podman"},
};

// One path component as a container, a runtime monitor, or neither. `parent` is the component
// above it (a plain id directly below "docker" is Docker's cgroupfs layout).
Component ClassifyContainer(std::string_view component, std::string_view parent) {
  if (IsContainerId(component)) {
    return {Kind::kContainer, component, parent == "docker" ? "docker" : ""};
  }
  StripSuffix(component, ".scope");
  for (const Prefix& p : kPrefixes) {
    if (component.starts_with(p.text) && IsContainerId(component.substr(p.text.size()))) {
      return {p.kind, component.substr(p.text.size()), p.runtime};
    }
  }
  return {};
}

// containerd's systemd-driver name where systemd does not manage the hierarchy:
// "kubepods-besteffort-pod<uid>.slice:cri-containerd:<id>" (also "crio", "docker").
struct ColonForm {
  std::optional<std::string> pod_uid;
  Component container;
};

std::optional<ColonForm> ParseColonForm(std::string_view component) {
  const std::size_t first = component.find(':');
  if (first == std::string_view::npos) return std::nullopt;
  const std::size_t second = component.find(':', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  const std::string_view slice = component.substr(0, first);
  const std::string_view prefix = component.substr(first + 1, second - first - 1);
  const std::string_view id = component.substr(second + 1);
  if (!IsContainerId(id)) return std::nullopt;
  std::string_view runtime;
  if (prefix == "cri-containerd") {
    runtime = "containerd";
  } else if (prefix == "crio") {
    runtime = "crio";
  } else if (prefix == "docker") {
    runtime = "docker";
  } else {
    return std::nullopt;
  }
  return ColonForm{SystemdPodUid(slice), {Kind::kContainer, id, runtime}};
}

std::vector<std::string_view> SplitPath(std::string_view path) {
  std::vector<std::string_view> parts;
  for (TextParts names(path, '/'); auto name = names.Next();)
    if (!name->empty()) parts.push_back(*name);
  return parts;
}

enum class PathResult { kNoContainer, kMonitor, kContainer };

// The pod: the first pod component, systemd or cgroupfs style; `start` is the component after
// it (0 when there is none).
std::string PodOf(const std::vector<std::string_view>& parts, std::size_t& start) {
  start = 0;
  bool below_kubepods = false;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    std::optional<std::string> uid = SystemdPodUid(parts[i]);
    if (!uid && below_kubepods) uid = CgroupfsPodUid(parts[i]);
    if (uid) {
      start = i + 1;
      return std::move(*uid);
    }
    if (parts[i].starts_with("kubepods")) below_kubepods = true;
  }
  return {};
}

PathResult ParsePath(std::string_view path, CgroupRef& out) {
  const std::vector<std::string_view> parts = SplitPath(path);
  std::size_t start = 0;
  std::string pod_uid = PodOf(parts, start);
  // The container: the first container component at or after `start`.
  for (std::size_t i = start; i < parts.size(); ++i) {
    Component c = ClassifyContainer(parts[i], i > 0 ? parts[i - 1] : std::string_view());
    if (c.kind == Kind::kNone) {
      if (auto colon = ParseColonForm(parts[i])) {
        c = colon->container;
        if (pod_uid.empty() && colon->pod_uid) pod_uid = *colon->pod_uid;
      }
    }
    if (c.kind == Kind::kMonitor) return PathResult::kMonitor;
    if (c.kind == Kind::kContainer) {
      out.container_id = std::string(c.id);
      out.pod_uid = std::move(pod_uid);
      out.runtime = std::string(c.runtime);
      out.nested_ids.clear();
      for (std::size_t j = i + 1; j < parts.size(); ++j) {
        Component inner = ClassifyContainer(parts[j], parts[j - 1]);
        if (inner.kind == Kind::kContainer) out.nested_ids.emplace_back(inner.id);
      }
      return PathResult::kContainer;
    }
  }
  return PathResult::kNoContainer;
}

struct CgroupLine {
  int rank = 0;
  std::string_view path;
};

bool HasController(std::string_view controllers, std::string_view name) {
  for (TextParts each(controllers, ','); auto controller = each.Next();)
    if (*controller == name) return true;
  return false;
}

// The lines of the file in the order they are consulted (see ParseProcCgroup).
std::vector<CgroupLine> RankedLines(std::string_view content) {
  std::vector<CgroupLine> lines;
  for (TextParts each(content, '\n'); auto next = each.Next();) {
    const std::string_view line = *next;
    const std::size_t c1 = line.find(':');
    if (c1 == std::string_view::npos) continue;
    const std::size_t c2 = line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    const std::string_view hierarchy = line.substr(0, c1);
    const std::string_view controllers = line.substr(c1 + 1, c2 - c1 - 1);
    const std::string_view path = line.substr(c2 + 1);  // may itself hold ':'
    if (path.empty() || path.front() != '/') continue;
    int rank = 4;
    if (hierarchy == "0" && controllers.empty()) {
      rank = 0;
    } else if (HasController(controllers, "name=systemd")) {
      rank = 1;
    } else if (HasController(controllers, "cpu")) {
      rank = 2;
    } else if (HasController(controllers, "memory")) {
      rank = 3;
    }
    lines.push_back({rank, path});
  }
  std::stable_sort(lines.begin(), lines.end(),
                   [](const CgroupLine& a, const CgroupLine& b) { return a.rank < b.rank; });
  return lines;
}

// The innermost component of `path` ending in `suffix` (with a non-empty name), or empty.
std::string_view InnermostWithSuffix(const std::vector<std::string_view>& parts,
                                     std::string_view suffix) {
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    if (it->size() > suffix.size() && it->ends_with(suffix)) return *it;
  }
  return {};
}

}  // namespace

Result<CgroupRef> ParseProcCgroup(std::string_view content) {
  bool monitor = false;
  for (const CgroupLine& line : RankedLines(content)) {
    CgroupRef ref;
    switch (ParsePath(line.path, ref)) {
      case PathResult::kContainer:
        return ref;
      case PathResult::kMonitor:
        monitor = true;
        break;
      case PathResult::kNoContainer:
        break;
    }
  }
  if (monitor) return NotFound("cgroup: a container runtime monitor (conmon), not a workload");
  return NotFound("cgroup: the process is in no container");
}

bool IsContainerId(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

Result<CgroupRef> ParseCgroupDirectory(std::string_view path) {
  CgroupRef ref;
  if (ParsePath(path, ref) == PathResult::kContainer) return ref;
  std::size_t start = 0;
  ref.pod_uid = PodOf(SplitPath(path), start);
  if (ref.pod_uid.empty()) return NotFound("cgroup: the directory is no pod's");
  return ref;
}

std::string SystemdUnit(std::string_view cgroup_content) {
  for (const CgroupLine& line : RankedLines(cgroup_content)) {
    const std::vector<std::string_view> parts = SplitPath(line.path);
    std::string_view unit = InnermostWithSuffix(parts, ".service");
    if (unit.empty()) unit = InnermostWithSuffix(parts, ".scope");
    if (!unit.empty()) return std::string(unit);
  }
  return {};
}

}  // namespace gpuledger::procfs
