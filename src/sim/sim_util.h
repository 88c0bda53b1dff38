#pragma once
// Internal helpers of the simulator: deterministic hashing and id formatting. Every id the
// simulator invents is a pure function of the scenario seed and names, so runs are reproducible.

#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "common/units.h"

namespace gpuledger::sim {

inline std::uint64_t SplitMix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

inline std::uint64_t HashMix(std::uint64_t h, std::string_view part) {
  for (unsigned char c : part) h = (h ^ c) * 0x100000001b3ULL;
  return (h ^ 0xff) * 0x100000001b3ULL;  // separator, so ("ab","c") != ("a","bc")
}

template <typename... Parts>
std::uint64_t HashOf(std::uint64_t seed, const Parts&... parts) {
  std::uint64_t h = 0xcbf29ce484222325ULL ^ SplitMix64(seed);
  ((h = HashMix(h, fmt::format("{}", parts))), ...);
  return SplitMix64(h);
}

// 8-4-4-4-12 lower-case hex from a 64-bit hash (stretched to 128 bits), version-4 shaped.
inline std::string UuidFromHash(std::uint64_t h) {
  std::uint64_t a = SplitMix64(h), b = SplitMix64(h ^ 0x5bd1e995ULL);
  return fmt::format("{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xffff, a & 0xfff,
                     0x8000 | ((b >> 48) & 0x3fff), b & 0xffffffffffffULL);
}

// Memory of a MIG instance of `profile` ("3g.71gb": 71 GB), at most the GPU's.
Bytes MigInstanceMemory(std::string_view profile, Bytes gpu_memory);

}  // namespace gpuledger::sim
