#include "guardrails/price_findings.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "common/money.h"

namespace gpuledger::guardrails {
namespace {

constexpr std::string_view kComputeBasis = "compute used beyond the grant, at the device's price";
constexpr std::string_view kMemoryBasis =
    "memory held beyond the declared cap, as a share of the card, at the device's price";
constexpr std::string_view kIdleBasis = "the allocation held while idle, at the device's price";
constexpr std::string_view kStaleBasis =
    "the share of the device the stale grant holds, while listed, at the device's price";
constexpr std::string_view kOverrideBasis =
    "none: a risk; GPU time it took on devices not granted is its unallocated-access finding's";
constexpr std::string_view kRiskBasis = "none: a risk, no GPU time taken";

std::int64_t EvidenceInt(std::string_view evidence, std::string_view key) {
  std::string v = EvidenceValue(evidence, key);
  std::int64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  return ec == std::errc() && p == v.data() + v.size() && n > 0 ? n : 0;
}

// Price of `gpu_us` of a device-hour: price x gpu_us / metered, rounded half up.
Nanos PriceOf(__int128 gpu_us, const DeviceHour& d) {
  if (gpu_us <= 0 || d.metered_us <= 0 || d.price_nanos <= 0) return 0;
  const __int128 num = gpu_us * d.price_nanos;
  return static_cast<Nanos>((2 * num + d.metered_us) / (2 * static_cast<__int128>(d.metered_us)));
}

bool OnDevice(const UsageRow& r, const std::string& device) {
  return r.gpu.value == device || r.device_id == device;
}

}  // namespace

std::string Summary(const PricedFinding& p) {
  const Finding& f = p.finding;
  const std::string who = f.subject.IsHost() ? f.subject.pod + " (in no pod)" : f.subject.Key();
  // Display figures (the exact ones are the finding's integers).
  const std::string gpu_hours =
      fmt::format("{:.2f}", static_cast<double>(p.gpu_us) / kMicrosPerHour);
  const std::string cost = DisplayMoney(p.cost_nanos);
  const Micros end = f.resolved_us.value_or(f.last_seen_us);
  const std::string hours = fmt::format(
      "{:.1f}", static_cast<double>(std::max<Micros>(0, end - f.first_seen_us)) / kMicrosPerHour);
  auto gib = [&](std::string_view key) {
    return fmt::format("{:.1f} GiB", static_cast<double>(EvidenceInt(f.evidence, key)) / kGiB);
  };
  switch (f.kind) {
    case FindingKind::kUnallocatedAccess:
      return fmt::format("{} used {} GPU-hours of {} it was never granted: {}", who, gpu_hours,
                         f.gpu_uuid, cost);
    case FindingKind::kUnmanagedProcess:
      return fmt::format("{} used {} GPU-hours of {} outside Kubernetes: {}", who, gpu_hours,
                         f.gpu_uuid, cost);
    case FindingKind::kVisibleDevicesOverride: {
      std::string env = EvidenceValue(f.evidence, "NVIDIA_VISIBLE_DEVICES");
      std::string var = "NVIDIA_VISIBLE_DEVICES";
      if (env.empty()) {
        env = EvidenceValue(f.evidence, "CUDA_VISIBLE_DEVICES");
        var = "CUDA_VISIBLE_DEVICES";
      }
      return fmt::format("{} can reach GPUs it was not granted ({}={}) on {}", who, var, env,
                         f.node);
    }
    case FindingKind::kMemoryOversubscribed:
      if (f.subject == ConsumerRef{})
        return fmt::format("the sharers of {} hold {} of its {}", f.gpu_uuid,
                           gib("memory_used_bytes"), gib("memory_total_bytes"));
      return fmt::format("{} holds {} of {}, over its fair share of {}", who, gib("memory_bytes"),
                         f.gpu_uuid, EvidenceValue(f.evidence, "fair_share"));
    case FindingKind::kIsolationBreach:
      if (EvidenceInt(f.evidence, "declared_memory_bytes") > 0)
        return fmt::format("{} held {} of {}, over its declared cap of {}, for {} h: {}", who,
                           gib("memory_bytes"), f.gpu_uuid, gib("declared_memory_bytes"), hours,
                           cost);
      return fmt::format("{} used {} of {}, over its declared {}: {} GPU-hours beyond, {}", who,
                         EvidenceValue(f.evidence, "compute_share"), f.gpu_uuid,
                         EvidenceValue(f.evidence, "declared_share"), gpu_hours, cost);
    case FindingKind::kStaleGrant:
      return fmt::format(
          "{} is not running but its grant of {} stayed listed for {} h: {} GPU-hours "
          "the scheduler could not hand out, {}",
          who, EvidenceValue(f.evidence, "device_id"), hours, gpu_hours, cost);
    case FindingKind::kIdleAllocation:
      return fmt::format("{} held {} GPU-hours of {} idle for {} h: {}", who, gpu_hours, f.gpu_uuid,
                         EvidenceValue(f.evidence, "hours"), cost);
    case FindingKind::kKernelTimeMismatch:
      return fmt::format(
          "{} published {} µs of kernel time on {} where NVML saw {} µs busy in one cycle; its "
          "compute falls back to NVML's estimate",
          who, EvidenceValue(f.evidence, "kernel_busy_us"), f.gpu_uuid,
          EvidenceValue(f.evidence, "nvml_busy_us"));
    default:
      return fmt::format("{}: {} on {}", ToString(f.kind), who, f.gpu_uuid);
  }
}

std::vector<PricedFinding> PriceFindings(std::span<const Finding> findings,
                                         std::span<const DeviceHour> devices,
                                         std::span<const UsageRow> usage) {
  std::map<std::tuple<Micros, std::string, std::string>, const DeviceHour*>
      device_at;  // hour, node, gpu
  for (const DeviceHour& d : devices) device_at[{d.hour_us, d.node, d.gpu.value}] = &d;
  std::map<std::pair<std::string, ConsumerRef>, std::vector<const UsageRow*>>
      rows_of;  // node, consumer
  for (const UsageRow& r : usage) rows_of[{r.node, r.consumer.ref}].push_back(&r);
  // A MIG instance's physical GPU, from the rows that name it.
  std::map<std::string, std::string> parent;
  for (const UsageRow& r : usage)
    if (r.device_id.starts_with("MIG-")) parent[r.device_id] = r.gpu.value;

  std::vector<PricedFinding> out;
  out.reserve(findings.size());
  for (const Finding& f : findings) {
    PricedFinding p{f, 0, 0, std::string(kRiskBasis)};
    const Micros from = f.first_seen_us;
    const Micros to = std::max(from, f.resolved_us.value_or(f.last_seen_us));
    auto in_window = [&](const UsageRow& r) {
      return r.hour_us + kMicrosPerHour > from && r.hour_us < to;
    };
    auto device_of = [&](const UsageRow& r) -> const DeviceHour* {
      auto it = device_at.find({r.hour_us, r.node, r.gpu.value});
      return it == device_at.end() ? nullptr : it->second;
    };
    const auto rows = rows_of.find({f.node, f.subject});
    auto each_row = [&](auto&& fn) {
      if (rows == rows_of.end()) return;
      for (const UsageRow* r : rows->second)
        if (in_window(*r))
          if (const DeviceHour* d = device_of(*r)) fn(*r, *d);
    };
    auto compute_beyond_grant = [&] {
      p.cost_basis = kComputeBasis;
      each_row([&](const UsageRow& r, const DeviceHour& d) {
        if (!OnDevice(r, f.gpu_uuid)) return;
        const GpuMicros beyond = std::max<GpuMicros>(0, r.compute_us - r.allocated_us);
        p.gpu_us += beyond;
        p.cost_nanos += PriceOf(beyond, d);
      });
    };
    switch (f.kind) {
      case FindingKind::kUnallocatedAccess:
      case FindingKind::kUnmanagedProcess:
        compute_beyond_grant();
        break;
      case FindingKind::kIsolationBreach:
        if (const std::int64_t cap = EvidenceInt(f.evidence, "declared_memory_bytes"); cap > 0) {
          // Byte-µs beyond the cap over the finding's part of each hour, as GPU-µs of the card.
          p.cost_basis = kMemoryBasis;
          each_row([&](const UsageRow& r, const DeviceHour& d) {
            if (!OnDevice(r, f.gpu_uuid) || d.memory_total_bytes <= 0) return;
            const Micros overlap =
                std::min(to, r.hour_us + kMicrosPerHour) - std::max(from, r.hour_us);
            const __int128 held = static_cast<__int128>(r.memory_kib_s) * 1024 * kMicrosPerSecond;
            const __int128 beyond =
                held - static_cast<__int128>(cap) * std::max<Micros>(0, overlap);
            if (beyond <= 0) return;
            const __int128 gpu_us = beyond / d.memory_total_bytes;
            p.gpu_us += static_cast<GpuMicros>(gpu_us);
            p.cost_nanos += PriceOf(gpu_us, d);
          });
        } else {
          compute_beyond_grant();
        }
        break;
      case FindingKind::kIdleAllocation:
        p.cost_basis = kIdleBasis;
        each_row([&](const UsageRow& r, const DeviceHour& d) {
          if (!OnDevice(r, f.gpu_uuid)) return;
          p.gpu_us += r.allocated_us;
          p.cost_nanos += PriceOf(r.allocated_us, d);
        });
        break;
      case FindingKind::kStaleGrant: {
        p.cost_basis = kStaleBasis;
        const std::int64_t share = EvidenceInt(f.evidence, "share_ppd");
        std::string gpu = f.gpu_uuid;
        if (auto it = parent.find(gpu); it != parent.end()) gpu = it->second;
        for (Micros h = HourStart(from); h < to && share > 0; h += kMicrosPerHour) {
          auto d = device_at.find({h, f.node, gpu});
          if (d == device_at.end()) continue;
          const Micros overlap = std::min(to, h + kMicrosPerHour) - std::max(from, h);
          const __int128 gpu_us = static_cast<__int128>(share) * overlap / kWholeGpu;
          p.gpu_us += static_cast<GpuMicros>(gpu_us);
          p.cost_nanos += PriceOf(gpu_us, *d->second);
        }
        break;
      }
      case FindingKind::kVisibleDevicesOverride:
        p.cost_basis = kOverrideBasis;
        break;
      default:
        break;
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<Finding> DetectIdleAllocations(std::span<const UsageRow> usage, const Policy& policy,
                                           const std::string& cluster, Micros now_us) {
  std::vector<Finding> out;
  if (!policy.Enabled(FindingKind::kIdleAllocation)) return out;
  // Rows per (node, consumer, device held), in hour order.
  std::map<std::tuple<std::string, ConsumerRef, std::string>, std::vector<const UsageRow*>> series;
  for (const UsageRow& r : usage) {
    const std::string device = r.device_id.starts_with("MIG-") ? r.device_id : r.gpu.value;
    series[{r.node, r.consumer.ref, device}].push_back(&r);
  }
  const Micros open_from = HourStart(now_us) - kMicrosPerHour;  // the last complete hour
  for (auto& [key, rows] : series) {
    const auto& [node, ref, device] = key;
    if (ref.IsHost() ||
        policy.Exempt(FindingKind::kIdleAllocation, ref, rows.front()->consumer.labels))
      continue;
    std::sort(rows.begin(), rows.end(),
              [](const UsageRow* a, const UsageRow* b) { return a->hour_us < b->hour_us; });
    auto idle = [&](const UsageRow& r) {
      return r.allocated_us > 0 &&
             static_cast<double>(r.compute_us) <=
                 policy.idle_compute_fraction * static_cast<double>(r.allocated_us);
    };
    std::size_t i = 0;
    while (i < rows.size()) {
      if (!idle(*rows[i])) {
        ++i;
        continue;
      }
      std::size_t j = i;
      GpuMicros allocated = rows[i]->allocated_us, compute = rows[i]->compute_us;
      while (j + 1 < rows.size() && rows[j + 1]->hour_us == rows[j]->hour_us + kMicrosPerHour &&
             idle(*rows[j + 1])) {
        ++j;
        allocated += rows[j]->allocated_us;
        compute += rows[j]->compute_us;
      }
      const auto hours = static_cast<int>(j - i + 1);
      if (hours >= policy.idle_allocation_hours) {
        Finding f;
        f.kind = FindingKind::kIdleAllocation;
        f.severity = policy.For(f.kind).severity;
        f.cluster = cluster;
        f.node = node;
        f.subject = ref;
        f.gpu_uuid = device;
        f.first_seen_us = rows[i]->hour_us;
        f.last_seen_us = rows[j]->hour_us + kMicrosPerHour;
        if (rows[j]->hour_us < open_from) f.resolved_us = f.last_seen_us;
        f.evidence = fmt::format("hours={} allocated_gpu_us={} compute_gpu_us={}", hours, allocated,
                                 compute);
        if (!rows[i]->device_id.empty()) f.evidence += " device_id=" + rows[i]->device_id;
        out.push_back(std::move(f));
      }
      i = j + 1;
    }
  }
  return out;
}

}  // namespace gpuledger::guardrails
