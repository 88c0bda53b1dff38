#pragma once
// Money as exact decimal text, the one formatter and the one parser of amounts: int64 nanos in
// and out, never through a double. The text is FOCUS NumericFormat ('.' separator, no grouping,
// no exponent), which is also how prices are written in catalogs and node labels and shown in
// JSON. DisplayMoney rounds to cents for people (tables, the demo, Kubernetes Events).

#include <string>
#include <string_view>

#include "common/result.h"
#include "common/units.h"

namespace gpuledger {

// 90'000'000'000 -> "90", 1'500'000'000 -> "1.5", -5 -> "-0.000000005". Exact: trailing zeros
// of the nine fractional digits are dropped, nothing is rounded.
std::string DecimalFromNanos(Nanos nanos);

// "90", "90.00", "-1.5", "+0.000000005", ".5", "007.5" -> nanos. More than nine fractional
// digits are accepted only when the extra digits are zeros (anything else would need
// rounding). Fails (kInvalidArgument, "'<text>' is not a decimal amount: <why>") on an exponent,
// grouping, a currency sign, spaces, an empty string, or a value beyond int64 nanos.
Result<Nanos> NanosFromDecimal(std::string_view text);

// `numerator / denominator` (denominator > 0) rounded half away from zero to `scale` digits
// after the point, as decimal text; exact with 128-bit intermediates. Used for quantities and
// unit prices (GPU-hours from GPU-µs), which are not money totals.
std::string DecimalRatio(__int128 numerator, __int128 denominator, int scale);

// "1,234,567": an integer with its thousands grouped, for people (tables).
std::string Thousands(std::int64_t value);

// "$1,234.56": rounded to cents, half away from zero, thousands grouped. For people only;
// files and JSON carry DecimalFromNanos or integer nanos.
std::string DisplayMoney(Nanos nanos);

}  // namespace gpuledger
