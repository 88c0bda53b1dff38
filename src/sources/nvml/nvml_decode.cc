#include "sources/nvml/nvml_decode.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace gpuledger::nvml {

double SampleValue(nvmlValueType_t type, const nvmlValue_t& v) {
  switch (type) {
    case NVML_VALUE_TYPE_DOUBLE:
      return v.dVal;
    case NVML_VALUE_TYPE_UNSIGNED_INT:
      return v.uiVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
      return static_cast<double>(v.ulVal);
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
      return static_cast<double>(v.ullVal);
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
      return static_cast<double>(v.sllVal);
    case NVML_VALUE_TYPE_SIGNED_INT:
      return v.siVal;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT:
      return v.usVal;
  }
  return v.uiVal;
}

std::string ParseMigProfile(std::string_view name) {
  const auto space = name.find_last_of(' ');
  std::string_view token = space == std::string_view::npos ? name : name.substr(space + 1);
  // [<n>c.]<n>g.<n>gb[+suffix]
  std::size_t i = 0;
  auto digits = [&] {
    const std::size_t start = i;
    while (i < token.size() && std::isdigit(static_cast<unsigned char>(token[i]))) ++i;
    return i > start;
  };
  auto literal = [&](std::string_view s) {
    if (token.substr(i, s.size()) != s) return false;
    i += s.size();
    return true;
  };
  std::size_t save = i;
  if (!(digits() && literal("c."))) i = save;
  if (!(digits() && literal("g.") && digits() && literal("gb"))) return {};
  if (i < token.size()) {
    if (token[i] != '+' && token[i] != '-') return {};
    for (std::size_t j = i + 1; j < token.size(); ++j) {
      if (!std::isalnum(static_cast<unsigned char>(token[j]))) return {};
    }
    if (i + 1 == token.size()) return {};
  }
  return std::string(token);
}

int ProfileSlices(std::string_view profile) {
  const auto g = profile.find("g.");
  if (g == std::string_view::npos || g == 0) return 0;
  std::size_t start = g;
  while (start > 0 && std::isdigit(static_cast<unsigned char>(profile[start - 1]))) --start;
  if (start == g) return 0;
  int n = 0;
  for (std::size_t k = start; k < g; ++k) n = n * 10 + (profile[k] - '0');
  return n;
}

std::vector<ProcessEntry> ParseProcessInfos(const nvmlProcessInfo_t* buffer, std::size_t capacity,
                                            unsigned count, unsigned char sentinel) {
  std::vector<ProcessEntry> out;
  const std::size_t n = std::min<std::size_t>(count, capacity);
  if (n == 0) return out;
  const auto* bytes = reinterpret_cast<const unsigned char*>(buffer);
  std::size_t written = capacity * sizeof(nvmlProcessInfo_t);
  while (written > 0 && bytes[written - 1] == sentinel) --written;
  const std::size_t stride = written <= n * sizeof(nvmlProcessInfo_v2_t)
                                 ? sizeof(nvmlProcessInfo_v2_t)
                                 : sizeof(nvmlProcessInfo_t);
  for (std::size_t k = 0; k < n; ++k) {
    // pid at 0 and usedGpuMemory at 8 in both layouts.
    unsigned pid = 0;
    unsigned long long used = 0;
    std::memcpy(&pid, bytes + k * stride + offsetof(nvmlProcessInfo_t, pid), sizeof(pid));
    std::memcpy(&used, bytes + k * stride + offsetof(nvmlProcessInfo_t, usedGpuMemory),
                sizeof(used));
    out.push_back({pid, used == NVML_VALUE_NOT_AVAILABLE ? 0 : static_cast<Bytes>(used)});
  }
  return out;
}
}  // namespace gpuledger::nvml
