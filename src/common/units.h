#pragma once
// The units of design section 2. Raw numbers carry their unit as a suffix (_us, _bytes, _mj,
// _nanos, _ppd); these aliases say the same in signatures.

#include <cstdint>

namespace gpuledger {

using Micros = std::int64_t;     // µs since the Unix epoch, or a duration in µs
using GpuMicros = std::int64_t;  // GPU-µs of one whole physical GPU
using Bytes = std::int64_t;
using MilliJoules = std::int64_t;  // NVML's energy counter unit
using MilliWatts = std::int64_t;
using Nanos = std::int64_t;  // money: 1e-9 of the billing currency; never a double

// Memory held over time: KiB held for one second. An integer so that every attributed figure
// is; a year of a whole 141 GB GPU is 4.3e15, far inside int64 (and below 2^53, so it also
// crosses Prometheus' float64 exactly: common/counter_units.h).
using KibSeconds = std::int64_t;
inline constexpr std::int64_t kByteMicrosPerKibSecond = 1024LL * 1'000'000;

// A share of one physical GPU in parts per kWholeGpu. kWholeGpu = lcm(1..16) * 1000, so every
// share the sharing modes produce is an exact integer: 1/R replicas (R <= 16), MIG slices out of
// 7 or 4 (or 8 memory slices), thousandths (gpu_milli) and whole percents.
using SharePpd = std::int64_t;
inline constexpr SharePpd kWholeGpu = 720'720'000;

inline constexpr Micros kMicrosPerSecond = 1'000'000;
inline constexpr Micros kMicrosPerHour = 3'600 * kMicrosPerSecond;
inline constexpr Nanos kNanosPerUnit = 1'000'000'000;  // nanos in one dollar (or euro, ...)
inline constexpr Bytes kGiB = 1024LL * 1024 * 1024;
inline constexpr Bytes kMiB = 1024LL * 1024;

// The start of the UTC hour holding t.
constexpr Micros HourStart(Micros t) {
  Micros r = t % kMicrosPerHour;
  return r < 0 ? t - r - kMicrosPerHour : t - r;
}

}  // namespace gpuledger
