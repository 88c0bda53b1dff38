#include "common/apportion.h"

#include <algorithm>
#include <cassert>
#include <numeric>

namespace gpuledger {

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
  std::vector<unsigned __int128> remainder(weights.size());
  std::int64_t given = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    unsigned __int128 product = static_cast<unsigned __int128>(total) * weights[i];
    shares[i] = static_cast<std::int64_t>(product / sum);
    remainder[i] = product % sum;
    given += shares[i];
  }
  std::vector<std::size_t> order(weights.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return remainder[a] > remainder[b]; });
  for (std::int64_t left = total - given, k = 0; left > 0; --left, ++k) ++shares[order[k]];
  return shares;
}

}  // namespace gpuledger
