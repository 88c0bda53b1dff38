// Pure parsers of /proc/<pid>/environ, /proc/<pid>/status and /etc/passwd content.

#include <algorithm>
#include <charconv>
#include <climits>
#include <string>
#include <string_view>

#include "common/strings.h"
#include "sources/procfs/proc_source.h"

namespace gpuledger::procfs {
namespace {

// A decimal uid in [0, INT_MAX]; the whole of `text` must be digits.
std::optional<int> ParseUid(std::string_view text) {
  if (text.empty()) return std::nullopt;
  long long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0 || value > INT_MAX)
    return std::nullopt;
  return static_cast<int>(value);
}

// The value of the "<key>" line of /proc/<pid>/status content ("Uid:\t1000\t1000..."), its
// leading blanks dropped; nullopt when there is none.
std::optional<std::string_view> StatusValue(std::string_view status, std::string_view key) {
  for (TextParts lines(status, '\n'); auto line = lines.Next();) {
    if (!line->starts_with(key)) continue;
    line->remove_prefix(key.size());
    const std::size_t first = line->find_first_not_of(" \t");
    return first == std::string_view::npos ? std::string_view{} : line->substr(first);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> EnvironValue(std::string_view environ_content, std::string_view name) {
  if (name.empty() || name.find('=') != std::string_view::npos) return std::nullopt;
  for (TextParts entries(environ_content, '\0'); auto entry = entries.Next();) {
    if (entry->size() > name.size() && entry->starts_with(name) && (*entry)[name.size()] == '=')
      return std::string(entry->substr(name.size() + 1));
  }
  return std::nullopt;
}

std::optional<int> ParsePercentage(const std::optional<std::string>& text) {
  if (!text || text->empty() || text->size() > 3) return std::nullopt;
  int value = 0;
  for (char c : *text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  if (value < 1 || value > 100) return std::nullopt;
  return value;
}

std::optional<Bytes> ParseMemorySize(std::string_view text) {
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0 || digits > 19) return std::nullopt;
  unsigned long long value = 0;
  std::from_chars(text.data(), text.data() + digits, value);
  std::string_view suffix = text.substr(digits);
  if (suffix.size() == 2 && (suffix[1] == 'b' || suffix[1] == 'B')) suffix.remove_suffix(1);
  int shift = 0;
  if (suffix.size() == 1) {
    switch (suffix[0]) {
      case 'k':
      case 'K':
        shift = 10;
        break;
      case 'm':
      case 'M':
        shift = 20;
        break;
      case 'g':
      case 'G':
        shift = 30;
        break;
      case 't':
      case 'T':
        shift = 40;
        break;
      case 'b':
      case 'B':
        shift = 0;
        break;
      default:
        return std::nullopt;
    }
  } else if (!suffix.empty()) {
    return std::nullopt;
  }
  constexpr unsigned long long kMax = 1ull << 62;
  if (value == 0 || value > (kMax >> shift)) return std::nullopt;
  return static_cast<Bytes>(value << shift);
}

SharingEnv ParseSharingEnv(std::string_view environ_content) {
  auto get = [&](std::string_view name) { return EnvironValue(environ_content, name); };
  SharingEnv env;
  env.mps_client = get("CUDA_MPS_PIPE_DIRECTORY").has_value();
  env.mps_thread_percentage = ParsePercentage(get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"));
  if (auto limits = get("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT")) {
    // "0=5GB,1=2G": the entry for ordinal 0.
    std::string_view rest = *limits;
    while (!rest.empty()) {
      std::string_view entry = rest.substr(0, rest.find(','));
      rest.remove_prefix(std::min(rest.size(), entry.size() + 1));
      if (entry.starts_with("0=")) env.mps_memory_limit_bytes = ParseMemorySize(entry.substr(2));
    }
  }
  env.sm_limit_percentage = ParsePercentage(get("CUDA_DEVICE_SM_LIMIT"));
  auto hami_memory = get("CUDA_DEVICE_MEMORY_LIMIT_0");
  if (!hami_memory) hami_memory = get("CUDA_DEVICE_MEMORY_LIMIT");
  if (hami_memory) env.memory_limit_bytes = ParseMemorySize(*hami_memory);
  for (std::string_view prefix : {"ALIYUN_COM_GPU_MEM_", "ALIBABACLOUD_COM_GPU_MEM_"}) {
    auto var = [&](std::string_view name) { return get(std::string(prefix) + std::string(name)); };
    auto gib = [](const std::optional<std::string>& v) -> std::optional<Bytes> {
      if (!v) return std::nullopt;
      auto size = ParseMemorySize(*v + "G");
      return size;
    };
    if (auto idx = var("IDX")) {
      int index = -1;
      auto [end, ec] = std::from_chars(idx->data(), idx->data() + idx->size(), index);
      if (ec == std::errc() && end == idx->data() + idx->size() && index >= 0)
        env.gpushare_gpu_index = index;
    }
    if (!env.gpushare_memory_bytes) env.gpushare_memory_bytes = gib(var("CONTAINER"));
    if (!env.gpushare_device_bytes) env.gpushare_device_bytes = gib(var("DEV"));
    if (env.gpushare_gpu_index || env.gpushare_memory_bytes) break;
  }
  return env;
}

Result<int> ParseStatusRealUid(std::string_view status_content) {
  if (auto value = StatusValue(status_content, "Uid:"); value && !value->empty())
    if (auto uid = ParseUid(value->substr(0, value->find_first_of(" \t")))) return *uid;
  return IoError("status: no valid \"Uid:\" line");
}

int ParseStatusNamespacePid(std::string_view status_content, int host_pid) {
  auto value = StatusValue(status_content, "NSpid:");
  if (!value || value->empty()) return host_pid;
  // "4242\t17": the host's view first, the innermost namespace's last.
  auto pid = ParseUid(value->substr(value->find_last_of(" \t") + 1));
  return pid && *pid > 0 ? *pid : host_pid;
}

std::unordered_map<int, std::string> ParsePasswd(std::string_view passwd_content) {
  // name:password:uid:gid:gecos:home:shell
  std::unordered_map<int, std::string> users;
  for (TextParts lines(passwd_content, '\n'); auto next = lines.Next();) {
    const std::string_view line = *next;
    const std::size_t c1 = line.find(':');
    if (c1 == 0 || c1 == std::string_view::npos) continue;
    const std::size_t c2 = line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    const std::size_t c3 = line.find(':', c2 + 1);
    const std::string_view uid_text =
        line.substr(c2 + 1, c3 == std::string_view::npos ? std::string_view::npos : c3 - c2 - 1);
    const std::string_view name = line.substr(0, c1);
    if (name.front() == '+' || name.front() == '-' || name.front() == '#')
      continue;  // NIS, comments
    if (auto uid = ParseUid(uid_text)) users.try_emplace(*uid, name);
  }
  return users;
}

}  // namespace gpuledger::procfs
