#include "common/apportion.h"

#include <algorithm>
#include <numeric>

namespace gpuledger {
namespace {

// Marks a remainder whose weight has had its leftover unit. Real remainders are below the sum
// of the weights, which is below 2^64 x 2^64 / 2: this value is never one of them.
constexpr unsigned __int128 kServed = ~static_cast<unsigned __int128>(0);

}  // namespace

std::vector<std::int64_t> Apportion(std::int64_t total, std::span<const std::uint64_t> weights) {
  std::vector<std::int64_t> shares(weights.size(), 0);
  if (weights.empty()) return shares;
  // The split is of the magnitude, held unsigned: INT64_MIN's is 2^63. Each share is kept as
  // its magnitude's bit pattern (2^63 is INT64_MIN's) and steps by unsigned arithmetic, so
  // nothing overflows; a negative total (a credit) negates them at the end, modulo 2^64,
  // which is exact for every magnitude up to 2^63.
  const bool negative = total < 0;
  const std::uint64_t magnitude =
      negative ? 0 - static_cast<std::uint64_t>(total) : static_cast<std::uint64_t>(total);
  auto add = [](std::int64_t& share, std::uint64_t units) {
    share = static_cast<std::int64_t>(static_cast<std::uint64_t>(share) + units);
  };
  auto finish = [&] {
    if (negative)
      for (std::int64_t& s : shares)
        s = static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(s));
    return std::move(shares);
  };
  unsigned __int128 sum = 0;
  for (auto w : weights) sum += w;
  if (sum == 0) {
    add(shares.back(), magnitude);
    return finish();
  }
  // Most splits are of a few consumers: their remainders stay on the stack.
  constexpr std::size_t kSmall = 16;
  unsigned __int128 small[kSmall];
  std::vector<unsigned __int128> large;
  if (weights.size() > kSmall) large.resize(weights.size());
  unsigned __int128* remainder = weights.size() > kSmall ? large.data() : small;
  std::uint64_t given = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const unsigned __int128 product = static_cast<unsigned __int128>(magnitude) * weights[i];
    const auto share = static_cast<std::uint64_t>(product / sum);
    add(shares[i], share);
    remainder[i] = product % sum;
    given += share;
  }
  // Fewer leftover units than weights: each goes to the largest remainder not yet served, the
  // lowest index first on a tie (what a stable sort by remainder, descending, would give).
  const auto left = static_cast<std::size_t>(magnitude - given);
  if (left * weights.size() <= 4 * kSmall * kSmall) {
    for (std::size_t k = 0; k < left; ++k) {
      std::size_t best = weights.size();
      for (std::size_t i = 0; i < weights.size(); ++i)
        if (remainder[i] != kServed && (best == weights.size() || remainder[i] > remainder[best]))
          best = i;
      add(shares[best], 1);
      remainder[best] = kServed;
    }
    return finish();
  }
  std::vector<std::size_t> order(weights.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return remainder[a] > remainder[b]; });
  for (std::size_t k = 0; k < left; ++k) add(shares[order[k]], 1);
  return finish();
}

std::vector<HourPart> ApportionOverHours(std::int64_t total, Micros from_us, Micros to_us) {
  std::vector<Micros> hours;
  std::vector<std::uint64_t> overlap;
  for (Micros h = HourStart(from_us); h < to_us; h += kMicrosPerHour) {
    hours.push_back(h);
    overlap.push_back(
        static_cast<std::uint64_t>(std::min(to_us, h + kMicrosPerHour) - std::max(from_us, h)));
  }
  const std::vector<std::int64_t> parts = Apportion(total, overlap);
  std::vector<HourPart> out;
  out.reserve(hours.size());
  for (std::size_t i = 0; i < hours.size(); ++i) out.push_back({hours[i], parts[i]});
  return out;
}

}  // namespace gpuledger
