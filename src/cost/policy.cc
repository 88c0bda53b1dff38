#include "cost/policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>

#include "common/apportion.h"
#include "common/strings.h"

namespace gpuledger::cost {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// "0.7" -> 700. Digits with at most 3 decimals, in [0, 1].
Result<int> ParseAlphaPermille(std::string_view policy_text, std::string_view alpha) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument(fmt::format("policy '{}': {}", policy_text, why));
  };
  if (alpha.empty()) {
    return bad("expected hybrid:<alpha in [0, 1]>, e.g. hybrid:0.7");
  }
  std::size_t dot = alpha.find('.');
  std::string_view whole = alpha.substr(0, dot);
  std::string_view frac =
      dot == std::string_view::npos ? std::string_view{} : alpha.substr(dot + 1);
  bool digits_ok = !(whole.empty() && frac.empty()) &&
                   std::all_of(whole.begin(), whole.end(), IsDigit) &&
                   std::all_of(frac.begin(), frac.end(), IsDigit) &&
                   !(dot != std::string_view::npos && frac.empty());
  if (!digits_ok) return bad("alpha must be a decimal number in [0, 1], e.g. hybrid:0.7");
  if (frac.size() > 3) return bad("alpha must have at most 3 decimals");
  // Strip leading zeros so that a long run of zeros cannot overflow.
  while (whole.size() > 1 && whole.front() == '0') whole.remove_prefix(1);
  if (whole.size() > 1) return bad("alpha must be in [0, 1]");
  int permille = whole.empty() ? 0 : (whole[0] - '0') * 1000;
  int scale = 100;
  for (char c : frac) {
    permille += (c - '0') * scale;
    scale /= 10;
  }
  if (permille > 1000) return bad("alpha must be in [0, 1]");
  return permille;
}

// DNS-1123 label: what Kubernetes accepts as a namespace name.
bool IsDns1123Label(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || IsDigit(c); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || c == '-'; });
}

std::uint64_t ClampTime(GpuMicros us) { return us > 0 ? static_cast<std::uint64_t>(us) : 0; }

std::uint64_t ClampKibSeconds(KibSeconds v) { return v > 0 ? static_cast<std::uint64_t>(v) : 0; }

bool AllZero(std::span<const std::uint64_t> w) {
  return std::all_of(w.begin(), w.end(), [](std::uint64_t x) { return x == 0; });
}

// Weights of one simple (non-hybrid) policy into `w` (usage.size() + 2 of them): consumers
// first, then unattributed, then idle. The consumers' part is also what shares the idle part.
void PolicyWeights(PolicyKind kind, const DeviceHour& device,
                   std::span<const ConsumerWeights> usage, std::span<std::uint64_t> w) {
  const std::size_t n = usage.size();
  switch (kind) {
    case PolicyKind::kCompute:
      for (std::size_t i = 0; i < n; ++i) w[i] = ClampTime(usage[i].compute_us);
      w[n] = ClampTime(device.unattributed_us);
      w[n + 1] = ClampTime(device.idle_us);
      return;
    case PolicyKind::kMemory: {
      // Integer KiB-s throughout; the sum is kept in 128 bits so no weight can overflow it.
      unsigned __int128 used = 0;
      for (std::size_t i = 0; i < n; ++i) {
        w[i] = ClampKibSeconds(usage[i].memory_kib_s);
        used += w[i];
      }
      w[n] = ClampKibSeconds(device.unattributed_memory_kib_s);
      used += w[n];
      const auto capacity = static_cast<unsigned __int128>(
          ClampKibSeconds(MemoryCapacityKibSeconds(device.memory_total_bytes, device.metered_us)));
      w[n + 1] = capacity > used ? static_cast<std::uint64_t>(capacity - used) : 0;
      return;
    }
    case PolicyKind::kAllocation:
    case PolicyKind::kHybrid:  // not reached: hybrid is split into its two parts
      for (std::size_t i = 0; i < n; ++i) w[i] = ClampTime(usage[i].allocated_us);
      w[n] = 0;
      w[n + 1] = ClampTime(device.unallocated_us);
      return;
  }
}

// A split of `shares` (one per consumer, then unattributed, then idle) with, under idle handling
// `share`, the idle part moved onto the consumers by `weights` (the policy's own, over the
// consumers alone, so that tiny memory users are not rounded away next to a large idle part;
// by allocation when those are all zero; it stays idle when the consumers have no weight at
// all). `shares` becomes the consumers' part.
DeviceHourCost FromShares(std::vector<std::int64_t> shares, std::span<const std::uint64_t> weights,
                          std::span<const ConsumerWeights> usage, const IdleHandling& idle) {
  DeviceHourCost cost;
  cost.unattributed = shares[usage.size()];
  cost.idle = shares[usage.size() + 1];
  shares.resize(usage.size());
  cost.consumers = std::move(shares);
  if (idle.kind == IdleHandling::Kind::kShare && cost.idle > 0 && !usage.empty()) {
    std::vector<std::uint64_t> by_allocation;
    if (AllZero(weights)) {
      for (const auto& row : usage) by_allocation.push_back(ClampTime(row.allocated_us));
      weights = by_allocation;
    }
    if (!AllZero(weights)) {
      auto extra = Apportion(cost.idle, weights);
      for (std::size_t i = 0; i < usage.size(); ++i) cost.consumers[i] += extra[i];
      cost.idle = 0;
    }
  }
  return cost;
}

// Splits a non-negative amount by one simple policy and the idle handling. The weights of a
// device with a few consumers stay on the stack: a report splits millions of device-hours.
DeviceHourCost SplitSimple(Nanos amount, PolicyKind kind, const DeviceHour& device,
                           std::span<const ConsumerWeights> usage, const IdleHandling& idle) {
  constexpr std::size_t kOnStack = 32;
  std::array<std::uint64_t, kOnStack> small;
  std::vector<std::uint64_t> large;
  const std::size_t n = usage.size() + 2;
  if (n > kOnStack) large.resize(n);
  const std::span<std::uint64_t> weights =
      n > kOnStack ? std::span<std::uint64_t>(large) : std::span<std::uint64_t>(small).first(n);
  PolicyWeights(kind, device, usage, weights);
  return FromShares(Apportion(amount, weights), weights.first(usage.size()), usage, idle);
}

DeviceHourCost SplitNonNegative(Nanos price, const DeviceHour& device,
                                std::span<const ConsumerWeights> usage, const Policy& policy,
                                const IdleHandling& idle) {
  if (policy.kind != PolicyKind::kHybrid) {
    return SplitSimple(price, policy.kind, device, usage, idle);
  }
  __int128 alpha = std::clamp(policy.alpha_permille, 0, 1000);
  auto allocation_part = static_cast<Nanos>((static_cast<__int128>(price) * alpha + 500) / 1000);
  DeviceHourCost a = SplitSimple(allocation_part, PolicyKind::kAllocation, device, usage, idle);
  DeviceHourCost c =
      SplitSimple(price - allocation_part, PolicyKind::kCompute, device, usage, idle);
  for (std::size_t i = 0; i < usage.size(); ++i) a.consumers[i] += c.consumers[i];
  a.idle += c.idle;
  a.unattributed += c.unattributed;
  return a;
}

}  // namespace

Result<Policy> ParsePolicy(std::string_view text) {
  std::string_view t = Trim(text);
  if (t == "allocation") return Policy{PolicyKind::kAllocation, 1000};
  if (t == "compute") return Policy{PolicyKind::kCompute, 1000};
  if (t == "memory") return Policy{PolicyKind::kMemory, 1000};
  constexpr std::string_view kHybrid = "hybrid";
  if (t.substr(0, kHybrid.size()) == kHybrid) {
    std::string_view rest = t.substr(kHybrid.size());
    if (rest.empty() || rest.front() != ':') {
      return InvalidArgument(
          fmt::format("policy '{}': expected hybrid:<alpha in [0, 1]>, e.g. hybrid:0.7", text));
    }
    auto alpha = ParseAlphaPermille(text, rest.substr(1));
    if (!alpha) return alpha.error();
    return Policy{PolicyKind::kHybrid, *alpha};
  }
  return InvalidArgument(fmt::format(
      "policy '{}': expected allocation, compute, memory or hybrid:<alpha in [0, 1]>", text));
}

std::string ToString(const Policy& policy) {
  switch (policy.kind) {
    case PolicyKind::kAllocation:
      return "allocation";
    case PolicyKind::kCompute:
      return "compute";
    case PolicyKind::kMemory:
      return "memory";
    case PolicyKind::kHybrid: {
      int a = std::clamp(policy.alpha_permille, 0, 1000);
      if (a % 1000 == 0) return fmt::format("hybrid:{}", a / 1000);
      std::string frac = fmt::format("{:03d}", a % 1000);
      while (frac.back() == '0') frac.pop_back();
      return fmt::format("hybrid:{}.{}", a / 1000, frac);
    }
  }
  return "allocation";
}

Result<IdleHandling> ParseIdleHandling(std::string_view text) {
  std::string_view t = Trim(text);
  if (t == "keep") return IdleHandling{IdleHandling::Kind::kKeep, ""};
  if (t == "share") return IdleHandling{IdleHandling::Kind::kShare, ""};
  constexpr std::string_view kNamespace = "namespace:";
  if (t.substr(0, kNamespace.size()) == kNamespace) {
    std::string_view ns = t.substr(kNamespace.size());
    if (!IsDns1123Label(ns)) {
      return InvalidArgument(fmt::format(
          "idle handling '{}': namespace must be a DNS-1123 label (lowercase letters, digits and "
          "'-', starting and ending with a letter or digit, at most 63 characters)",
          text));
    }
    return IdleHandling{IdleHandling::Kind::kNamespace, std::string(ns)};
  }
  return InvalidArgument(
      fmt::format("idle handling '{}': expected keep, share or namespace:<namespace>", text));
}

std::string ToString(const IdleHandling& idle) {
  switch (idle.kind) {
    case IdleHandling::Kind::kKeep:
      return "keep";
    case IdleHandling::Kind::kShare:
      return "share";
    case IdleHandling::Kind::kNamespace:
      return "namespace:" + idle.namespace_name;
  }
  return "keep";
}

namespace {

// The policy split of `price` (any sign).
DeviceHourCost SplitByPolicy(Nanos price, const DeviceHour& device,
                             std::span<const ConsumerWeights> usage, const Policy& policy,
                             const IdleHandling& idle) {
  if (price >= 0) return SplitNonNegative(price, device, usage, policy, idle);
  // A negative price (a credit) is split as its magnitude and negated, so the parts still sum
  // to it exactly. INT64_MIN has no magnitude in int64: split it in two halves.
  DeviceHourCost cost;
  if (price == INT64_MIN) {
    DeviceHourCost a = SplitNonNegative(INT64_MAX, device, usage, policy, idle);
    DeviceHourCost b = SplitNonNegative(1, device, usage, policy, idle);
    cost = a;
    for (std::size_t i = 0; i < usage.size(); ++i)
      cost.consumers[i] = -a.consumers[i] - b.consumers[i];
    cost.idle = -a.idle - b.idle;
    cost.unattributed = -a.unattributed - b.unattributed;
    return cost;
  }
  cost = SplitNonNegative(-price, device, usage, policy, idle);
  for (auto& c : cost.consumers) c = -c;
  cost.idle = -cost.idle;
  cost.unattributed = -cost.unattributed;
  return cost;
}

// The electricity part (>= 0) by measured energy: consumers' energy_mj, then the device's
// unattributed and idle energy. Idle handling `share` spreads the idle part by the consumers'
// energy (by allocation when they used none; it stays idle with no consumer weight at all).
DeviceHourCost SplitEnergy(Nanos amount, const DeviceHour& device,
                           std::span<const ConsumerWeights> usage, const IdleHandling& idle) {
  auto mj = [](MilliJoules v) { return v > 0 ? static_cast<std::uint64_t>(v) : 0; };
  std::vector<std::uint64_t> w;
  w.reserve(usage.size() + 2);
  for (const auto& row : usage) w.push_back(mj(row.energy_mj));
  w.push_back(mj(device.unattributed_energy_mj));
  w.push_back(mj(device.idle_energy_mj));
  return FromShares(Apportion(amount, w), std::span(w).first(usage.size()), usage, idle);
}

}  // namespace

DeviceHourCost SplitDeviceHour(const DeviceHour& device, std::span<const ConsumerWeights> usage,
                               const Policy& policy, const IdleHandling& idle) {
  const Nanos price = device.price_nanos;
  const Nanos energy = device.energy_price_nanos;
  // The electricity part is split by energy only when it is a part of a non-negative price;
  // anything else (a bad row) is split whole by the policy, which still conserves the price.
  if (energy <= 0 || price < energy) return SplitByPolicy(price, device, usage, policy, idle);
  DeviceHourCost cost = SplitByPolicy(price - energy, device, usage, policy, idle);
  DeviceHourCost e = SplitEnergy(energy, device, usage, idle);
  for (std::size_t i = 0; i < usage.size(); ++i) cost.consumers[i] += e.consumers[i];
  cost.idle += e.idle;
  cost.unattributed += e.unattributed;
  return cost;
}

DeviceHourCost SplitDeviceHour(const DeviceHour& device, std::span<const UsageRow> usage,
                               const Policy& policy, const IdleHandling& idle) {
  std::vector<ConsumerWeights> weights;
  weights.reserve(usage.size());
  for (const UsageRow& row : usage) weights.push_back(WeightsOf(row));
  return SplitDeviceHour(device, weights, policy, idle);
}

KibSeconds MemoryCapacityKibSeconds(Bytes memory_total_bytes, GpuMicros metered_us) {
  if (memory_total_bytes <= 0 || metered_us <= 0) return 0;
  const unsigned __int128 byte_us =
      static_cast<unsigned __int128>(memory_total_bytes) * static_cast<std::uint64_t>(metered_us);
  const unsigned __int128 kib_s =
      (byte_us + kByteMicrosPerKibSecond / 2) / kByteMicrosPerKibSecond;  // nearest, half up
  return kib_s > INT64_MAX ? INT64_MAX : static_cast<KibSeconds>(kib_s);
}

Nanos PriceForMetered(Nanos hourly_nanos, GpuMicros metered_us) {
  __int128 product = static_cast<__int128>(hourly_nanos) * metered_us;
  bool negative = product < 0;
  if (negative) product = -product;
  __int128 rounded = (product + kMicrosPerHour / 2) / kMicrosPerHour;  // half up (away from 0)
  if (negative) rounded = -rounded;
  if (rounded > INT64_MAX) return INT64_MAX;
  if (rounded < INT64_MIN) return INT64_MIN;
  return static_cast<Nanos>(rounded);
}

}  // namespace gpuledger::cost
