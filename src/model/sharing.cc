#include "model/sharing.h"
#include "common/enum_names.h"
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

constexpr NameTable<SharingMode, 6> kModes = {{
    {SharingMode::kExclusive, "exclusive"},
    {SharingMode::kTimeSlicing, "time-slicing"},
    {SharingMode::kMps, "mps"},
    {SharingMode::kMig, "mig"},
    {SharingMode::kFractional, "fractional"},
    {SharingMode::kDra, "dra"},
}};

constexpr NameTable<Quality, 4> kQualities = {{
    {Quality::kMeasured, "measured"},
    {Quality::kEstimated, "estimated"},
    {Quality::kAllocated, "allocated"},
    {Quality::kNone, "none"},
}};

constexpr NameTable<SignalSource, 4> kSignalSources = {{
    {SignalSource::kNone, ""},
    {SignalSource::kNvml, "nvml"},
    {SignalSource::kGpm, "gpm"},
    {SignalSource::kDcgm, "dcgm-exporter"},
}};

}  // namespace

std::string_view ToString(SignalSource source) { return NameIn(kSignalSources, source, "unknown"); }

std::optional<SignalSource> ParseSignalSource(std::string_view text) {
  return ValueIn(kSignalSources, text);
}

std::string_view ToString(SharingMode mode) { return NameIn(kModes, mode, "unknown"); }

std::optional<SharingMode> ParseSharingMode(std::string_view text) { return ValueIn(kModes, text); }

std::string_view ToString(Quality quality) { return NameIn(kQualities, quality, "unknown"); }

std::optional<Quality> ParseQuality(std::string_view text) { return ValueIn(kQualities, text); }

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
