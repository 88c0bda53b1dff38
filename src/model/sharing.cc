#include "model/sharing.h"

#include <algorithm>
#include <array>
#include <utility>

namespace gpuledger {
namespace {

constexpr std::array<std::pair<SharingMode, std::string_view>, 6> kModes = {{
    {SharingMode::kExclusive, "exclusive"},
    {SharingMode::kTimeSlicing, "time-slicing"},
    {SharingMode::kMps, "mps"},
    {SharingMode::kMig, "mig"},
    {SharingMode::kFractional, "fractional"},
    {SharingMode::kDra, "dra"},
}};

constexpr std::array<std::pair<Quality, std::string_view>, 4> kQualities = {{
    {Quality::kMeasured, "measured"},
    {Quality::kEstimated, "estimated"},
    {Quality::kAllocated, "allocated"},
    {Quality::kNone, "none"},
}};

}  // namespace

std::string_view ToString(SharingMode mode) {
  for (auto& [m, name] : kModes)
    if (m == mode) return name;
  return "unknown";
}

std::optional<SharingMode> ParseSharingMode(std::string_view text) {
  for (auto& [m, name] : kModes)
    if (name == text) return m;
  return std::nullopt;
}

std::string_view ToString(Quality quality) {
  for (auto& [q, name] : kQualities)
    if (q == quality) return name;
  return "unknown";
}

std::optional<Quality> ParseQuality(std::string_view text) {
  for (auto& [q, name] : kQualities)
    if (name == text) return q;
  return std::nullopt;
}

Quality Combine(Quality a, Quality b) {
  if (a == Quality::kNone) return b;
  if (b == Quality::kNone) return a;
  return std::max(a, b);
}

}  // namespace gpuledger
