#include "common/apportion.h"

#include <algorithm>
#include <cassert>
#include <numeric>

namespace gpuledger {
namespace {

// Marks a remainder whose weight has had its leftover unit. Real remainders are below the sum
// of the weights, which is below 2^64 x 2^64 / 2: this value is never one of them.
constexpr unsigned __int128 kServed = ~static_cast<unsigned __int128>(0);

}  // namespace

std::vector<std::int64_t> Apportion(std::int64_t total, std::span<const std::uint64_t> weights) {
  assert(total >= 0);
  std::vector<std::int64_t> shares(weights.size(), 0);
  if (weights.empty()) return shares;
  unsigned __int128 sum = 0;
  for (auto w : weights) sum += w;
  if (sum == 0) {
    shares.back() = total;
    return shares;
  }
  // Most splits are of a few consumers: their remainders stay on the stack.
  constexpr std::size_t kSmall = 16;
  unsigned __int128 small[kSmall];
  std::vector<unsigned __int128> large;
  if (weights.size() > kSmall) large.resize(weights.size());
  unsigned __int128* remainder = weights.size() > kSmall ? large.data() : small;
  std::int64_t given = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    unsigned __int128 product = static_cast<unsigned __int128>(total) * weights[i];
    shares[i] = static_cast<std::int64_t>(product / sum);
    remainder[i] = product % sum;
    given += shares[i];
  }
  // Fewer leftover units than weights: each goes to the largest remainder not yet served, the
  // lowest index first on a tie (what a stable sort by remainder, descending, would give).
  const auto left = static_cast<std::size_t>(total - given);
  if (left * weights.size() <= 4 * kSmall * kSmall) {
    for (std::size_t k = 0; k < left; ++k) {
      std::size_t best = weights.size();
      for (std::size_t i = 0; i < weights.size(); ++i)
        if (remainder[i] != kServed && (best == weights.size() || remainder[i] > remainder[best]))
          best = i;
      ++shares[best];
      remainder[best] = kServed;
    }
    return shares;
  }
  std::vector<std::size_t> order(weights.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return remainder[a] > remainder[b]; });
  for (std::size_t k = 0; k < left; ++k) ++shares[order[k]];
  return shares;
}

}  // namespace gpuledger
