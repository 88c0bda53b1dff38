#include "common/money.h"

#include <fmt/format.h>

#include <cstdint>
#include <limits>

namespace gpuledger {
std::string Thousands(std::int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

namespace {

// Decimal digits of a non-negative 128-bit value.
std::string Digits(unsigned __int128 v) {
  if (v == 0) return "0";
  std::string out;
  while (v > 0) {
    out.insert(out.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  }
  return out;
}

// "123" with scale 2 -> "1.23"; trailing fractional zeros dropped.
std::string WithPoint(unsigned __int128 magnitude, int scale, bool negative) {
  std::string digits = Digits(magnitude);
  if (scale > 0) {
    if (static_cast<int>(digits.size()) <= scale)
      digits.insert(0, static_cast<std::size_t>(scale + 1) - digits.size(), '0');
    std::string integer = digits.substr(0, digits.size() - static_cast<std::size_t>(scale));
    std::string fraction = digits.substr(digits.size() - static_cast<std::size_t>(scale));
    while (!fraction.empty() && fraction.back() == '0') fraction.pop_back();
    digits = fraction.empty() ? integer : integer + "." + fraction;
  }
  if (negative && digits != "0") return "-" + digits;
  return digits;
}

}  // namespace

std::string DecimalFromNanos(Nanos nanos) {
  bool negative = nanos < 0;
  // Magnitude via 128 bits so INT64_MIN has one.
  unsigned __int128 magnitude = negative
                                    ? static_cast<unsigned __int128>(-static_cast<__int128>(nanos))
                                    : static_cast<unsigned __int128>(nanos);
  return WithPoint(magnitude, 9, negative);
}

Result<Nanos> NanosFromDecimal(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument(fmt::format("'{}' is not a decimal amount: {}", text, why));
  };
  std::size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) negative = text[i++] == '-';
  __int128 integer = 0;
  int integer_digits = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    integer = integer * 10 + (text[i++] - '0');
    if (++integer_digits > 20) return bad("too large");
  }
  __int128 fraction = 0;
  int fraction_digits = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      int digit = text[i++] - '0';
      if (fraction_digits < 9) {
        fraction = fraction * 10 + digit;
      } else if (digit != 0) {
        return bad("more than 9 decimal places (finer than a nano)");
      }
      ++fraction_digits;
    }
  }
  if (integer_digits == 0 && fraction_digits == 0) return bad("no digits");
  if (i != text.size()) return bad(fmt::format("unexpected '{}'", text[i]));
  for (int k = std::min(fraction_digits, 9); k < 9; ++k) fraction *= 10;
  __int128 value = integer * kNanosPerUnit + fraction;
  if (value > std::numeric_limits<Nanos>::max()) return bad("too large");
  return static_cast<Nanos>(negative ? -value : value);
}

std::string DecimalRatio(__int128 numerator, __int128 denominator, int scale) {
  bool negative = (numerator < 0) != (denominator < 0) && numerator != 0;
  unsigned __int128 n = static_cast<unsigned __int128>(numerator < 0 ? -numerator : numerator);
  unsigned __int128 d =
      static_cast<unsigned __int128>(denominator < 0 ? -denominator : denominator);
  for (int k = 0; k < scale; ++k) n *= 10;
  unsigned __int128 q = n / d;
  if ((n % d) * 2 >= d) ++q;  // half away from zero
  return WithPoint(q, scale, negative);
}

std::string DisplayMoney(Nanos nanos) {
  std::int64_t cents = nanos / 10'000'000;
  std::int64_t rest = nanos % 10'000'000;
  if (rest >= 5'000'000) ++cents;
  if (rest <= -5'000'000) --cents;
  std::int64_t abs_cents = cents < 0 ? -cents : cents;
  return fmt::format("{}${}.{:02}", cents < 0 ? "-" : "", Thousands(abs_cents / 100),
                     abs_cents % 100);
}

}  // namespace gpuledger
