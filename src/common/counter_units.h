#pragma once
// Exact integer counters through Prometheus' float64 text values (design section 2).
//
// The agent keeps every total as an integer (GPU-µs, mJ, KiB-s) and exposes it in the base unit
// Prometheus wants (seconds, joules, byte-seconds) as one correctly rounded float64:
// n / 1e6, n / 1e3 or n * 1024. The text writer prints the shortest decimal that reads back to
// that same double, a TSDB stores the double, and ToCount() recovers n exactly.
//
// The bound, per series: the recovery is exact while the spacing of doubles near the value is
// below half the unit, i.e. for n < kExactCounterLimit of that unit:
//   seconds from µs:    2^33 s  = 8.59e15 µs (272 years of one GPU)
//   joules from mJ:     2^43 J  = 8.80e15 mJ (279 years at 1 kW)
//   byte-seconds from KiB-s: 2^53 KiB-s (power-of-two scale: exact to the last bit;
//                       a year of 141 GB is 4.3e15 KiB-s)
// Beyond the bound values stay within one unit, never silently wrap. 2^53 µs itself is out of
// reach of float64 *seconds*: between 2^33 and 2^34 s consecutive doubles are 1.9 µs apart.

#include <cmath>
#include <cstdint>

#include "common/units.h"  // KibSeconds

namespace gpuledger {

// How many counter units make one base unit: µs per s, mJ per J. KiB-s scale up (see below).
enum class CounterScale : std::int64_t {
  kMicrosPerSecond = 1'000'000,
  kMilliPerUnit = 1'000,
  kKibPerByte = -1024,  // byte-seconds = KiB-s x 1024
  kOne = 1,             // plain counts (histogram buckets): the value is the integer
};

inline constexpr std::int64_t kExactCounterLimitMicros = 8'589'934'592'000'000LL;  // 2^33 s

// n counter units as the float64 base-unit value (one correctly rounded operation).
inline double ToBaseUnit(std::int64_t n, CounterScale scale) {
  const auto s = static_cast<std::int64_t>(scale);
  if (s < 0) return static_cast<double>(n) * static_cast<double>(-s);  // exact below 2^53
  return static_cast<double>(n) / static_cast<double>(s);
}

// The inverse: the integer count whose ToBaseUnit is `value` (nearest for values past the
// bound). Precondition: value is finite and >= 0.
inline std::int64_t ToCount(double value, CounterScale scale) {
  const auto s = static_cast<std::int64_t>(scale);
  // long double (x87: 64-bit mantissa) keeps the product's error far below half a unit.
  const long double scaled = s < 0 ? static_cast<long double>(value) / static_cast<long double>(-s)
                                   : static_cast<long double>(value) * static_cast<long double>(s);
  if (scaled >= 9.2e18L) return INT64_MAX;
  return static_cast<std::int64_t>(std::llroundl(scaled));
}

}  // namespace gpuledger
