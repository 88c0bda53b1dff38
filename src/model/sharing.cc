#include "model/sharing.h"
#include "model/activity.h"
#include "model/usage.h"

#include <algorithm>
#include <array>
#include <set>
#include <sstream>
#include <string>
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

constexpr std::array<std::pair<SignalSource, std::string_view>, 4> kSignalSources = {{
    {SignalSource::kNone, ""},
    {SignalSource::kNvml, "nvml"},
    {SignalSource::kGpm, "gpm"},
    {SignalSource::kDcgm, "dcgm-exporter"},
}};

}  // namespace

std::string_view ToString(SignalSource source) {
  for (auto& [s, name] : kSignalSources)
    if (s == source) return name;
  return "unknown";
}

std::optional<SignalSource> ParseSignalSource(std::string_view text) {
  for (auto& [s, name] : kSignalSources)
    if (name == text) return s;
  return std::nullopt;
}

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

std::pair<std::optional<Quality>, std::string_view> ParseSourceLabel(std::string_view text) {
  std::string_view rule;
  if (auto colon = text.find(':'); colon != std::string_view::npos) {
    rule = text.substr(colon + 1);
    text = text.substr(0, colon);
  }
  return {ParseQuality(text), rule};
}

Quality Combine(Quality a, Quality b) {
  if (a == Quality::kNone) return b;
  if (b == Quality::kNone) return a;
  return std::max(a, b);
}

std::string MergeRules(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty() || a == b) return a;
  std::set<std::string> rules;
  for (const std::string* s : {&a, &b}) {
    std::stringstream in(*s);
    for (std::string r; std::getline(in, r, '+');) rules.insert(r);
  }
  std::string out;
  for (const auto& r : rules) out += (out.empty() ? "" : "+") + r;
  return out;
}

}  // namespace gpuledger
