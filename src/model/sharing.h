#pragma once
// Sharing modes (design section 3) and how each attributed figure was obtained.

#include <optional>
#include <string_view>
#include <utility>

namespace gpuledger {

enum class SharingMode { kExclusive, kTimeSlicing, kMps, kMig, kFractional, kDra };

std::string_view ToString(SharingMode mode);  // "exclusive", "time-slicing", "mps", "mig", ...
std::optional<SharingMode> ParseSharingMode(std::string_view text);

// How a number was obtained. Ordered from best to worst: a sum of figures has the worst quality
// of its parts (Combine).
enum class Quality {
  kMeasured,   // per-process NVML samples, a MIG instance's own counters, exact NVML memory
  kEstimated,  // a rule split a measured device total (named in the row's compute_rule)
  kAllocated,  // from the grant alone, nothing measured
  kNone,       // nothing to say (no usage at all)
};

std::string_view ToString(Quality quality);
std::optional<Quality> ParseQuality(std::string_view text);
// A "<quality>[:<rule>]" source label ("measured:process-samples", "estimated", "none") as its
// quality and rule; the quality is nullopt for text that names none ("", an unknown word).
std::pair<std::optional<Quality>, std::string_view> ParseSourceLabel(std::string_view text);
Quality Combine(Quality a, Quality b);  // the worse of two, kNone is neutral

}  // namespace gpuledger
