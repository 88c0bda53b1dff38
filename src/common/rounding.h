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

}  // namespace gpuledger
