#pragma once
// Exact apportionment of an integer total by integer weights (largest-remainder method).

#include <cstdint>
#include <span>
#include <vector>

#include "common/units.h"

namespace gpuledger {

// Shares of `total` proportional to `weights`, summing to `total` exactly. Each share is the
// floor or the ceiling of its exact quotient; leftover units go to the largest remainders, ties
// to the lower index, so results are deterministic. All weights zero: everything to the last
// index (callers put their "idle" or "unattributed" bucket last). Empty weights: empty result.
// A negative total (a credit) is split as its magnitude and every share negated, so any int64
// total, INT64_MIN included, splits exactly.
std::vector<std::int64_t> Apportion(std::int64_t total, std::span<const std::uint64_t> weights);

// A counter's delta over [from_us, to_us) split over the UTC hours it covers by the time in
// each (Apportion: the parts sum to `total` exactly), in hour order; empty when to_us <= from_us.
struct HourPart {
  Micros hour_us;
  std::int64_t part;
};
std::vector<HourPart> ApportionOverHours(std::int64_t total, Micros from_us, Micros to_us);

}  // namespace gpuledger
