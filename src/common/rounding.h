#pragma once
// Doubles from the wire or a file become integers here: std::llround of a NaN, an infinity or
// a value past int64's range is undefined behaviour (in practice INT64_MIN, a wrong number that
// looks real), so each is refused instead and the caller names the field.

#include <cmath>
#include <cstdint>
#include <optional>

namespace gpuledger {

// `value` rounded half away from zero, or nullopt when it is not finite or its rounding lies
// outside int64's range.
inline std::optional<std::int64_t> RoundToInt64(double value) {
  // 2^63 is a double; every finite double below it rounds to at most INT64_MAX (doubles that
  // large are 1,024 apart, so none rounds up to 2^63), and -2^63 is INT64_MIN itself.
  constexpr double kTwoTo63 = 9223372036854775808.0;
  if (!std::isfinite(value) || value >= kTwoTo63 || value < -kTwoTo63) return std::nullopt;
  return static_cast<std::int64_t>(std::llround(value));
}

// n / d rounded half up (toward +infinity on a tie), d > 0, held to int64's range rather than
// wrapped (issue 58: a saving of 4.6e19 nanos printed as $9,096,511,852.58): the one rounding
// of a product of integers back to nanos or µs.
inline std::int64_t RoundHalfUp(__int128 n, __int128 d) {
  const __int128 num = 2 * n + d;
  const __int128 den = 2 * d;
  __int128 q = num / den;
  if (num % den != 0 && num < 0) --q;  // floor, not toward zero
  constexpr __int128 kMin = INT64_MIN;
  constexpr __int128 kMax = INT64_MAX;
  return static_cast<std::int64_t>(q < kMin ? kMin : q > kMax ? kMax : q);
}

}  // namespace gpuledger
