// Findings read a day at a time through the read service (findings.h) against the
// computation they replaced, kept here whole as the reference (the window's rows read at once,
// priced and searched for idle runs in one pass): random ledgers in SQLite and PostgreSQL with
// every sharing layout, idle streaks across days, recorded findings of every kind, bills,
// label and namespace exemptions; windows whole, in days, in hours and mid-hour; every filter;
// the read service keeping 0 to 3 days. Finding for finding, nano for nano.
#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "common/money.h"
#include "ledger/billing_reads.h"
#include "ledger/findings.h"
#include "ledger/read_service.h"
#include "model/reconciliation.h"
#include "report/window.h"
#include "store/ledger_store.h"
#include "store_test_env/store_test_env.h"

namespace gpuledger::ledger {
namespace {

using store::testing::Hour;
using store::testing::StoreKind;
using store::testing::StoreKindName;

// The computation before findings were read a day at a time (commit 29f63c3), whole: the
// window's usage rows and priced device-hours read at once. The reference, as it was.
namespace reference {

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

std::vector<guardrails::PricedFinding> PriceFindings(std::span<const Finding> findings,
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

  std::vector<guardrails::PricedFinding> out;
  out.reserve(findings.size());
  for (const Finding& f : findings) {
    guardrails::PricedFinding p{f, 0, 0, std::string(guardrails::kRiskBasis)};
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
      p.cost_basis = guardrails::kComputeBasis;
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
          p.cost_basis = guardrails::kMemoryBasis;
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
        p.cost_basis = guardrails::kIdleBasis;
        each_row([&](const UsageRow& r, const DeviceHour& d) {
          if (!OnDevice(r, f.gpu_uuid)) return;
          p.gpu_us += r.allocated_us;
          p.cost_nanos += PriceOf(r.allocated_us, d);
        });
        break;
      case FindingKind::kStaleGrant: {
        p.cost_basis = guardrails::kStaleBasis;
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
        p.cost_basis = guardrails::kOverrideBasis;
        break;
      default:
        break;
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<Finding> DetectIdleAllocations(std::span<const UsageRow> usage,
                                           const guardrails::Policy& policy,
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

bool Matches(const Finding& f, const FindingsQuery& q) {
  if (q.kind && f.kind != *q.kind) return false;
  if (!q.namespace_name.empty() && f.subject.namespace_name != q.namespace_name) return false;
  if (q.min_severity && f.severity < *q.min_severity) return false;
  if (q.open_only && f.resolved_us) return false;
  return true;
}

Result<FindingsDocument> ReadFindingsDocument(store::LedgerStore& store, const FindingsQuery& query,
                                              const guardrails::Policy& policy) {
  auto extent = store.Extent();
  if (!extent) return extent.error();
  auto window = report::ResolveWindow(query.window, *extent);
  if (!window) return InvalidArgument("window: " + window.error().message);
  FindingsDocument doc;
  doc.from_us = window->from_us;
  doc.to_us = window->to_us;
  auto meta = store.ReadMeta();
  if (!meta) return meta.error();
  if (auto it = meta->find("cluster"); it != meta->end()) doc.cluster = it->second;
  if (auto it = meta->find("currency"); it != meta->end() && !it->second.empty())
    doc.currency = it->second;

  const TimeRange range{doc.from_us, doc.to_us};
  store::FindingQuery fq;
  fq.from_us = range.from_us;
  fq.to_us = range.to_us;
  fq.kind = query.kind;
  fq.namespace_name = query.namespace_name;
  fq.min_severity = query.min_severity;
  auto recorded = store.ReadFindings(fq);
  if (!recorded) return recorded.error();
  auto usage = store.ReadUsage(range);
  if (!usage) return usage.error();
  auto devices = ledger::ReadPricedDeviceHours(store, range);
  if (!devices) return devices.error();

  // Pod labels for label exemptions: the agent knows none, the ledger's rows carry them. A
  // finding's are those its subject carried when it was first seen: its first row in the window
  // from that hour on (of one hour, the least set). (Before findings' days were held: its first
  // row in the window.)
  static const std::map<std::string, std::string> kNone;
  auto labels_when_seen = [&](const Finding& f) -> const std::map<std::string, std::string>& {
    const UsageRow* first = nullptr;
    for (const UsageRow& r : *usage)
      if (r.consumer.ref == f.subject && r.hour_us + kMicrosPerHour > f.first_seen_us &&
          (first == nullptr || r.hour_us < first->hour_us ||
           (r.hour_us == first->hour_us && r.consumer.labels < first->consumer.labels)))
        first = &r;
    return first == nullptr ? kNone : first->consumer.labels;
  };
  std::vector<Finding> all;
  for (Finding& f : *recorded) {
    if (!policy.Enabled(f.kind) || policy.Exempt(f.kind, f.subject, labels_when_seen(f))) continue;
    // The policy in force now says how severe it is; the agent's is what it was told then.
    f.severity = policy.For(f.kind).severity;
    if (Matches(f, query)) all.push_back(std::move(f));
  }
  for (Finding& f : DetectIdleAllocations(*usage, policy, doc.cluster, extent->to_us))
    if (Matches(f, query)) all.push_back(std::move(f));
  std::sort(all.begin(), all.end(), [](const Finding& a, const Finding& b) {
    return std::tie(a.first_seen_us, a.node, a.kind, a.subject, a.gpu_uuid) <
           std::tie(b.first_seen_us, b.node, b.kind, b.subject, b.gpu_uuid);
  });
  doc.findings = PriceFindings(all, *devices, *usage);
  SumTotals(doc);
  return doc;
}

}  // namespace reference

struct RandomLedger {
  std::vector<LedgerHour> hours;
  std::vector<Reconciliation> bills;
  std::vector<Finding> findings;
};

const char* const kNamespaces[] = {"ml", "web", "research"};
constexpr int kPods = 14;

ConsumerRef Pod(int p) {
  if (p == kPods) return {std::string(kHostNamespace), "user:alice", PodUid{""}, ""};
  return {kNamespaces[p % 3], fmt::format("pod-{}", p), PodUid{fmt::format("uid-{}", p)}, "main"};
}

// Stable for a pod: exemptions by label agree however its rows are read.
LabelMap LabelsOf(int p) {
  if (p % 4 == 0) return {{"team", "exempt"}};
  return {{"team", p % 2 ? "alpha" : "beta"}};
}

// Two nodes of three GPUs each: one exclusive, one time-sliced into three replicas, one split
// into two MIG instances. Each slot holds a tenant for stretches, idle or busy for stretches.
RandomLedger MakeRandomLedger(std::mt19937_64& rng, int hours) {
  auto below = [&](std::int64_t n) {
    return static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(n));
  };
  RandomLedger out;
  struct Slot {
    std::string node, gpu, device_id;
    int gpu_index = 0;
    int tenant = -1;  // -1: none
    bool idle = false;
    bool greedy = false;  // uses the GPU without a grant
  };
  std::vector<Slot> slots;
  for (std::string node : {"node-a", "node-b"})
    for (int g = 0; g < 3; ++g) {
      const std::string gpu = fmt::format("GPU-{}-{}", node, g);
      const int n = g == 0 ? 1 : g == 1 ? 3 : 2;
      for (int i = 0; i < n; ++i)
        slots.push_back({node, gpu,
                         g == 0   ? gpu
                         : g == 1 ? fmt::format("{}::{}", gpu, i)
                                  : fmt::format("MIG-{}-{}", node, i),
                         g});
    }
  for (int h = 0; h < hours; ++h) {
    for (Slot& s : slots) {
      if (s.tenant < 0 || below(30) == 0)
        s.tenant = below(6) == 0 ? -1 : static_cast<int>(below(kPods + 1));
      if (below(12) == 0) s.idle = !s.idle;
      if (below(20) == 0) s.greedy = !s.greedy;
    }
    for (const std::string node : {"node-a", "node-b"})
      for (int g = 0; g < 3; ++g) {
        if (below(15) == 0) continue;  // an hour no one recorded
        LedgerHour lh;
        DeviceHour& d = lh.device;
        d.hour_us = Hour(h);
        d.cluster = "c";
        d.node = node;
        d.gpu = GpuUuid{fmt::format("GPU-{}-{}", node, g)};
        d.gpu_model = "NVIDIA H100";
        d.sharing = g == 0   ? SharingMode::kExclusive
                    : g == 1 ? SharingMode::kTimeSlicing
                             : SharingMode::kMig;
        d.pricing_class = "on-demand";
        d.price_nanos = below(10) == 0 ? 0 : below(6'000'000'000);
        d.metered_us = below(6) == 0 ? below(kMicrosPerHour) + 1 : kMicrosPerHour;
        d.unmetered_us = kMicrosPerHour - d.metered_us;
        d.memory_total_bytes = below(10) == 0 ? 0 : 80 * kGiB;
        GpuMicros allocated = 0, compute = 0;
        std::vector<int> here;
        for (const Slot& s : slots)
          if (s.node == node && s.gpu_index == g)
            here.push_back(static_cast<int>(&s - slots.data()));
        std::vector<int> tenants;  // a consumer has one row in a device-hour
        for (int i : here) {
          const Slot& s = slots[static_cast<std::size_t>(i)];
          if (s.tenant < 0 || std::find(tenants.begin(), tenants.end(), s.tenant) != tenants.end())
            continue;
          tenants.push_back(s.tenant);
          UsageRow u;
          u.hour_us = d.hour_us;
          u.gpu = d.gpu;
          u.consumer.ref = Pod(s.tenant);
          u.consumer.labels = LabelsOf(s.tenant);
          u.node = node;
          u.gpu_model = d.gpu_model;
          u.sharing = d.sharing;
          u.device_id = s.device_id;
          u.allocated_us = s.greedy || s.tenant == kPods
                               ? 0
                               : d.metered_us / static_cast<GpuMicros>(here.size());
          const GpuMicros room = u.allocated_us > 0 ? u.allocated_us : d.metered_us / 4;
          u.compute_us =
              s.idle && u.allocated_us > 0 ? below(u.allocated_us / 40 + 1) : below(room + 1);
          u.memory_kib_s = below(40LL * 1024 * 1024 * 3600);
          u.compute_quality = Quality::kMeasured;
          u.memory_quality = Quality::kMeasured;
          allocated += u.allocated_us;
          compute += u.compute_us;
          lh.usage.push_back(std::move(u));
        }
        d.unallocated_us = d.metered_us - allocated;
        d.busy_us = std::min(compute, d.metered_us);
        d.idle_us = d.metered_us - d.busy_us;
        out.hours.push_back(std::move(lh));
      }
  }
  for (int day = 0; day * 24 < hours + 24; ++day)
    for (const char* node : {"node-a", "node-b"})
      if (below(3) == 0) {
        Reconciliation r;
        r.node = node;
        r.day_us = DayStart(Hour(day * 24));
        r.billed_nanos = below(90'000'000'000);
        r.factor = "1/1";
        r.currency = "USD";
        r.bill_file = "bill.csv";
        out.bills.push_back(r);
      }
  // Recorded findings of every kind, each with its own first-seen instant.
  const std::vector<std::string> devices = {"GPU-node-a-0",    "GPU-node-a-1", "GPU-node-b-2",
                                            "GPU-node-a-1::2", "MIG-node-b-1", "MIG-node-a-0",
                                            "GPU-elsewhere"};
  for (int i = 0; i < 80; ++i) {
    Finding f;
    f.kind = static_cast<FindingKind>(below(kFindingKinds));
    f.severity = static_cast<Severity>(below(3));
    f.cluster = "c";
    f.node = below(2) ? "node-a" : "node-b";
    f.subject = Pod(static_cast<int>(below(kPods + 2)));
    f.gpu_uuid =
        devices[static_cast<std::size_t>(below(static_cast<std::int64_t>(devices.size())))];
    if (below(4) != 0) {  // mostly on the node of the device it names
      if (f.gpu_uuid.find("node-a") != std::string::npos) f.node = "node-a";
      if (f.gpu_uuid.find("node-b") != std::string::npos) f.node = "node-b";
    }
    f.first_seen_us = Hour(static_cast<int>(below(hours))) + below(3600) * kMicrosPerSecond + i;
    f.last_seen_us = f.first_seen_us + below(40 * kMicrosPerHour);
    if (below(2)) f.resolved_us = f.last_seen_us + below(600) * kMicrosPerSecond;
    if (f.kind == FindingKind::kIsolationBreach && below(2))
      f.evidence = fmt::format("memory_bytes=1 declared_memory_bytes={}", below(30 * kGiB));
    if (f.kind == FindingKind::kStaleGrant)
      f.evidence = fmt::format("device_id={} share_ppd={}", f.gpu_uuid, below(kWholeGpu + 1));
    out.findings.push_back(std::move(f));
  }
  // And for certain: stale grants of MIG instances (priced at the GPU their rows name).
  for (const char* node : {"node-a", "node-b"}) {
    Finding f;
    f.kind = FindingKind::kStaleGrant;
    f.cluster = "c";
    f.node = node;
    f.subject = Pod(1);
    f.gpu_uuid = fmt::format("MIG-{}-1", node);
    f.first_seen_us = Hour(static_cast<int>(below(hours / 2))) + 1234 * kMicrosPerSecond;
    f.last_seen_us = f.first_seen_us + 30 * kMicrosPerHour;
    f.evidence = fmt::format("device_id={} share_ppd={}", f.gpu_uuid, kWholeGpu / 2);
    out.findings.push_back(std::move(f));
  }
  return out;
}

guardrails::Policy RandomPolicy(std::mt19937_64& rng) {
  guardrails::Policy p = guardrails::DefaultPolicy();
  p.idle_allocation_hours = std::vector<int>{1, 3, 8, 30}[rng() % 4];
  p.idle_compute_fraction = rng() % 2 ? 0.01 : 0.03;
  if (rng() % 2) p.exemptions.push_back(guardrails::Exemption{"", {{"team", "exempt"}}, {}, 1});
  if (rng() % 2)
    p.exemptions.push_back(guardrails::Exemption{
        "web", {}, {FindingKind::kUnallocatedAccess, FindingKind::kIdleAllocation}, 2});
  if (rng() % 3 == 0) p.For(FindingKind::kStaleGrant).action = guardrails::Action::kOff;
  if (rng() % 4 == 0) p.For(FindingKind::kIdleAllocation).action = guardrails::Action::kOff;
  return p;
}

FindingsQuery RandomQuery(std::mt19937_64& rng, int hours) {
  auto below = [&](std::int64_t n) {
    return static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(n));
  };
  FindingsQuery q;
  const std::int64_t from = below(hours);
  const std::int64_t to = from + 1 + below(hours - from);
  const Micros s = kMicrosPerSecond;
  switch (below(5)) {
    case 0:
      q.window = "all";
      break;
    case 1:
      q.window = below(2) ? "24h" : "2d";
      break;
    case 2:
      q.window =
          fmt::format("{},{}", Hour(static_cast<int>(from)) / s, Hour(static_cast<int>(to)) / s);
      break;
    default:  // mid-hour
      q.window = fmt::format("{},{}", (Hour(static_cast<int>(from)) + below(3600) * s) / s,
                             (Hour(static_cast<int>(to)) + below(3600) * s) / s);
  }
  if (below(4) == 0) q.kind = static_cast<FindingKind>(below(kFindingKinds));
  if (below(4) == 0) q.namespace_name = kNamespaces[below(3)];
  if (below(4) == 0) q.min_severity = static_cast<Severity>(below(3));
  q.open_only = below(4) == 0;
  return q;
}

std::string Describe(const guardrails::PricedFinding& p) {
  const Finding& f = p.finding;
  return fmt::format("{} {} {} {} {} {} {}..{}..{} [{}] {} GPU-us {} nanos ({})", ToString(f.kind),
                     ToString(f.severity), f.node, f.subject.Key(), f.gpu_uuid, f.cluster,
                     f.first_seen_us, f.last_seen_us, f.resolved_us.value_or(-1), f.evidence,
                     p.gpu_us, p.cost_nanos, p.cost_basis);
}

std::vector<std::string> Described(const FindingsDocument& d) {
  std::vector<std::string> out;
  out.push_back(fmt::format("{}..{} {} {} total {} nanos {} GPU-us", d.from_us, d.to_us, d.cluster,
                            d.currency, d.total_cost_nanos, d.total_gpu_us));
  for (const guardrails::PricedFinding& p : d.findings) out.push_back(Describe(p));
  for (const auto& [kind, k] : d.by_kind)
    out.push_back(
        fmt::format("{}: {} {} {} {}", ToString(kind), k.findings, k.open, k.gpu_us, k.cost_nanos));
  return out;
}

class FindingsProperty : public store::testing::EachStoreTest {};

TEST_P(FindingsProperty, EqualTheWholeWindowsComputationNanoForNano) {
  std::mt19937_64 rng(20261206);
  const int hours = 100;  // four days and a bit, starting at midnight
  const RandomLedger random = MakeRandomLedger(rng, hours);
  auto written = store_->WriteHours(random.hours);
  ASSERT_TRUE(written.ok()) << written.error().message;
  ASSERT_TRUE(store_->WriteReconciliations(random.bills).ok());
  // Half the findings now, half recorded after the days they span were held (a held day that
  // lacks a subject they price is summarized again).
  const std::size_t half = random.findings.size() / 2;
  ASSERT_TRUE(store_->WriteFindings(std::span(random.findings).first(half)).ok());
  ASSERT_TRUE(store_->PutMeta("cluster", "c").ok());

  std::vector<std::unique_ptr<ledger::ReadService>>
      reads;  // keeping 0 to 3 days, each across trials
  for (int days = 0; days <= 3; ++days)
    reads.push_back(
        std::make_unique<ledger::ReadService>(ledger::ReadServiceOptions{.snapshot_days = days}));
  ASSERT_TRUE(reads[3]->Warm(*store_).ok());  // its open days from the kept snapshot
  int findings = 0, idle = 0, priced = 0;
  for (int trial = 0; trial < 200; ++trial) {
    if (trial == 100) {
      ASSERT_TRUE(store_->WriteFindings(std::span(random.findings).subspan(half)).ok());
      // And an hour of the first day written again: the held days it touches are dropped.
      ASSERT_TRUE(store_->WriteHours(std::span(random.hours).subspan(5, 1)).ok());
    }
    const guardrails::Policy policy = RandomPolicy(rng);
    const FindingsQuery q = RandomQuery(rng, hours);
    auto expected = reference::ReadFindingsDocument(*store_, q, policy);
    ASSERT_TRUE(expected.ok()) << expected.error().message;
    ledger::ReadService& r = *reads[static_cast<std::size_t>(trial) % reads.size()];
    auto ours = ReadFindingsDocument(*store_, r, q, policy);
    ASSERT_TRUE(ours.ok()) << ours.error().message;
    EXPECT_EQ(Described(*ours), Described(*expected))
        << "trial " << trial << " window " << q.window << " kept days " << trial % 4;
    findings += static_cast<int>(expected->findings.size());
    for (const guardrails::PricedFinding& p : expected->findings) {
      idle += p.finding.kind == FindingKind::kIdleAllocation;
      priced += p.cost_nanos != 0;
    }
  }
  // The trials met what they are meant to.
  EXPECT_GT(findings, 1500);  // 2,394 with this seed
  EXPECT_GT(idle, 400);       // 737
  EXPECT_GT(priced, 300);     // 497
  EXPECT_GT(reads[0]->stats().direct_reads, 0);
  EXPECT_GT(reads[3]->stats().cache_hits, 0);
  for (const auto& r : reads) EXPECT_GT(r->stats().held_summary_days, 0);
}

INSTANTIATE_TEST_SUITE_P(Stores, FindingsProperty,
                         ::testing::Values(StoreKind::kSqlite, StoreKind::kPostgres),
                         [](const auto& info) { return StoreKindName(info.param); });

}  // namespace
}  // namespace gpuledger::ledger
