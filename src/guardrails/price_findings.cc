#include "guardrails/price_findings.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "common/money.h"

namespace gpuledger::guardrails {
namespace {

std::int64_t EvidenceInt(std::string_view evidence, std::string_view key) {
  std::string v = EvidenceValue(evidence, key);
  std::int64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  return ec == std::errc() && p == v.data() + v.size() && n > 0 ? n : 0;
}

}  // namespace

Nanos PriceOf(__int128 gpu_us, const HourPrice& d) {
  if (gpu_us <= 0 || d.metered_us <= 0 || d.price_nanos <= 0) return 0;
  const __int128 num = gpu_us * d.price_nanos;
  return static_cast<Nanos>((2 * num + d.metered_us) / (2 * static_cast<__int128>(d.metered_us)));
}

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

FindingCosts::FindingCosts(std::vector<Finding> findings) {
  priced_.reserve(findings.size());
  pricing_.reserve(findings.size());
  for (Finding& f : findings) {
    Pricing p;
    p.from_us = f.first_seen_us;
    p.to_us = std::max(p.from_us, f.resolved_us.value_or(f.last_seen_us));
    std::string_view basis = kRiskBasis;
    switch (f.kind) {
      case FindingKind::kUnallocatedAccess:
      case FindingKind::kUnmanagedProcess:
        basis = kComputeBasis;
        break;
      case FindingKind::kIsolationBreach:
        p.memory_cap = EvidenceInt(f.evidence, "declared_memory_bytes");
        basis = p.memory_cap > 0 ? kMemoryBasis : kComputeBasis;
        break;
      case FindingKind::kIdleAllocation:
        basis = kIdleBasis;
        break;
      case FindingKind::kStaleGrant:
        basis = kStaleBasis;
        p.share_ppd = EvidenceInt(f.evidence, "share_ppd");
        if (p.share_ppd > 0) stale_by_node_[f.node].push_back(priced_.size());
        break;
      case FindingKind::kVisibleDevicesOverride:
        basis = kOverrideBasis;
        break;
      default:
        break;
    }
    if (basis == kComputeBasis || basis == kMemoryBasis || basis == kIdleBasis)
      by_subject_[f.subject].push_back(priced_.size());  // priced by its subject's rows
    pricing_.push_back(std::move(p));
    priced_.push_back({std::move(f), 0, 0, std::string(basis)});
  }
}

bool FindingCosts::ConcernsDevicesOf(std::string_view node) const {
  return stale_by_node_.find(node) != stale_by_node_.end();
}

void FindingCosts::AddRow(const FindingRow& r, const HourPrice& d) {
  const auto of = by_subject_.find(*r.subject);
  if (of == by_subject_.end()) return;
  for (std::size_t i : of->second) {
    const Finding& f = priced_[i].finding;
    const Pricing& p = pricing_[i];
    if (f.node != r.node || r.hour_us + kMicrosPerHour <= p.from_us || r.hour_us >= p.to_us)
      continue;
    if (r.gpu != f.gpu_uuid && r.device_id != f.gpu_uuid) continue;  // another device
    __int128 gpu_us = 0;
    switch (f.kind) {
      case FindingKind::kUnallocatedAccess:
      case FindingKind::kUnmanagedProcess:
        gpu_us = std::max<GpuMicros>(0, r.compute_us - r.allocated_us);
        break;
      case FindingKind::kIsolationBreach:
        if (p.memory_cap > 0) {
          // Byte-µs beyond the cap over the finding's part of the hour, as GPU-µs of the card.
          if (d.memory_total_bytes <= 0) continue;
          const Micros overlap =
              std::min(p.to_us, r.hour_us + kMicrosPerHour) - std::max(p.from_us, r.hour_us);
          const __int128 held = static_cast<__int128>(r.memory_kib_s) * 1024 * kMicrosPerSecond;
          const __int128 beyond =
              held - static_cast<__int128>(p.memory_cap) * std::max<Micros>(0, overlap);
          if (beyond <= 0) continue;
          gpu_us = beyond / d.memory_total_bytes;
        } else {
          gpu_us = std::max<GpuMicros>(0, r.compute_us - r.allocated_us);
        }
        break;
      case FindingKind::kIdleAllocation:
        gpu_us = r.allocated_us;
        break;
      default:
        continue;
    }
    priced_[i].gpu_us += static_cast<GpuMicros>(gpu_us);
    priced_[i].cost_nanos += PriceOf(gpu_us, d);
  }
}

void FindingCosts::AddDeviceHour(Micros hour_us, std::string_view node, std::string_view gpu,
                                 const HourPrice& d) {
  const auto of = stale_by_node_.find(node);
  if (of == stale_by_node_.end()) return;
  for (std::size_t i : of->second) {
    Pricing& p = pricing_[i];
    const std::string& held = priced_[i].finding.gpu_uuid;
    // A MIG instance holds its GPU, which its rows may name only later: every GPU kept.
    if (hour_us + kMicrosPerHour <= p.from_us || hour_us >= p.to_us ||
        (gpu != held && !held.starts_with("MIG-")))
      continue;
    const Micros overlap =
        std::min(p.to_us, hour_us + kMicrosPerHour) - std::max(p.from_us, hour_us);
    const __int128 gpu_us = static_cast<__int128>(p.share_ppd) * overlap / kWholeGpu;
    p.stale.push_back({std::string(gpu), static_cast<GpuMicros>(gpu_us), PriceOf(gpu_us, d)});
  }
}

void FindingCosts::NameInstance(std::string_view instance, std::string_view gpu) {
  instance_gpu_.insert_or_assign(std::string(instance), std::string(gpu));
}

std::vector<PricedFinding> FindingCosts::Take() {
  for (std::size_t i = 0; i < priced_.size(); ++i) {
    Pricing& p = pricing_[i];
    if (p.stale.empty()) continue;
    std::string_view gpu = priced_[i].finding.gpu_uuid;
    if (auto it = instance_gpu_.find(gpu); it != instance_gpu_.end()) gpu = it->second;
    for (const StaleHour& h : p.stale) {
      if (h.gpu != gpu) continue;
      priced_[i].gpu_us += h.gpu_us;
      priced_[i].cost_nanos += h.cost_nanos;
    }
    p.stale = {};
  }
  return std::move(priced_);
}

}  // namespace gpuledger::guardrails
