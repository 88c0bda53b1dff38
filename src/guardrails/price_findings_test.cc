// Pricing findings from hand-written ledger rows, integer for integer; idle runs found by hand.
// (guardrails_ledger_test checks both against the rows of random ledgers, a day at a time.)
#include "guardrails/price_findings.h"

#include <gtest/gtest.h>

#include <optional>

#include "guardrails/idle_runs.h"
#include "model/ledger.h"
#include "model/reconciliation.h"

namespace gpuledger::guardrails {
namespace {

constexpr Micros kH0 = 1000 * kMicrosPerHour;
const ConsumerRef kDebug{"ml", "debug", PodUid{"u1"}, "main"};
const ConsumerRef kNotebook{"nb", "jupyter", PodUid{"u2"}, "main"};

DeviceHour Hour(Micros hour_us, Nanos price, GpuMicros metered = kMicrosPerHour) {
  DeviceHour d;
  d.hour_us = hour_us;
  d.node = "n1";
  d.gpu = GpuUuid{"GPU-1"};
  d.price_nanos = price;
  d.metered_us = metered;
  d.memory_total_bytes = 80 * kGiB;
  return d;
}

UsageRow Row(Micros hour_us, const ConsumerRef& who, GpuMicros allocated, GpuMicros compute) {
  UsageRow r;
  r.hour_us = hour_us;
  r.gpu = GpuUuid{"GPU-1"};
  r.node = "n1";
  r.consumer.ref = who;
  r.allocated_us = allocated;
  r.compute_us = compute;
  return r;
}

HourPrice PriceOf(const DeviceHour& d) {
  return {d.price_nanos, d.metered_us, d.memory_total_bytes};
}

FindingRow RowOf(const UsageRow& r) {
  return {r.hour_us,   r.node,         &r.consumer.ref, r.gpu.value,
          r.device_id, r.allocated_us, r.compute_us,    r.memory_kib_s};
}

// The device-hour of row r among `devices`, priced.
std::optional<HourPrice> DeviceOf(const UsageRow& r, const std::vector<DeviceHour>& devices) {
  for (const DeviceHour& d : devices)
    if (d.hour_us == r.hour_us && d.node == r.node && d.gpu == r.gpu) return PriceOf(d);
  return std::nullopt;
}

// As a reader of the ledger gives them: device-hours, then the rows that have one.
std::vector<PricedFinding> PriceFindings(std::vector<Finding> findings,
                                         const std::vector<DeviceHour>& devices,
                                         const std::vector<UsageRow>& usage) {
  FindingCosts costs(std::move(findings));
  for (const DeviceHour& d : devices)
    costs.AddDeviceHour(d.hour_us, d.node, d.gpu.value, PriceOf(d));
  for (const UsageRow& r : usage) {
    if (r.device_id.starts_with("MIG-")) costs.NameInstance(r.device_id, r.gpu.value);
    if (auto d = DeviceOf(r, devices)) costs.AddRow(RowOf(r), *d);
  }
  return costs.Take();
}

// Rows in hour order gathered a day at a time, the days' idle segments joined.
std::vector<PricedFinding> DetectIdle(const std::vector<UsageRow>& usage,
                                      const std::vector<DeviceHour>& devices, const Policy& p,
                                      Micros now_us) {
  IdleRuns runs(p, "c", now_us);
  std::optional<IdleHours> hours;
  Micros day = -1;
  for (const UsageRow& r : usage) {
    if (DayStart(r.hour_us) != day) {
      if (hours) runs.AddDay(hours->Finish(), day);
      day = DayStart(r.hour_us);
      hours.emplace(p);
    }
    hours->Add(hours->SeriesOf(RowOf(r)), RowOf(r), DeviceOf(r, devices).value_or(HourPrice{}),
               r.consumer.labels);
  }
  if (hours) runs.AddDay(hours->Finish(), day);
  return runs.Finish();
}

Finding Of(FindingKind kind, const ConsumerRef& who, Micros from, Micros to,
           std::string evidence = "") {
  Finding f;
  f.kind = kind;
  f.node = "n1";
  f.subject = who;
  f.gpu_uuid = "GPU-1";
  f.first_seen_us = from;
  f.last_seen_us = to;
  f.resolved_us = to;
  f.evidence = std::move(evidence);
  return f;
}

TEST(PriceFindings, ComputeWithoutAGrantAtEachHoursOwnPrice) {
  // $3.00 then $3.60 an hour (the second hour only 30 min metered, priced $1.80).
  std::vector<DeviceHour> devices{Hour(kH0, 3'000'000'000),
                                  Hour(kH0 + kMicrosPerHour, 1'800'000'000, kMicrosPerHour / 2)};
  // 1/3 GPU-hour, then 1/7 of the half hour metered.
  std::vector<UsageRow> usage{Row(kH0, kDebug, 0, kMicrosPerHour / 3),
                              Row(kH0 + kMicrosPerHour, kDebug, 0, kMicrosPerHour / 14)};
  std::vector<Finding> f{
      Of(FindingKind::kUnallocatedAccess, kDebug, kH0, kH0 + 90 * 60 * kMicrosPerSecond)};
  auto priced = PriceFindings(f, devices, usage);
  ASSERT_EQ(priced.size(), 1u);
  EXPECT_EQ(priced[0].gpu_us, 1'200'000'000 + 257'142'857);
  // 3e9 x 1.2e9 / 3.6e9 = 1e9 exactly; 1.8e9 x 257142857 / 1.8e9 = 257142857.
  EXPECT_EQ(priced[0].cost_nanos, 1'000'000'000 + 257'142'857);
  EXPECT_EQ(priced[0].cost_basis, "compute used beyond the grant, at the device's price");
}

TEST(PriceFindings, EachHourRoundsHalfUp) {
  std::vector<DeviceHour> devices{Hour(kH0, 1)};  // 1 nano an hour
  std::vector<UsageRow> usage{Row(kH0, kDebug, 0, kMicrosPerHour / 2)};
  auto priced = PriceFindings(
      std::vector<Finding>{Of(FindingKind::kUnmanagedProcess, kDebug, kH0, kH0 + kMicrosPerHour)},
      devices, usage);
  EXPECT_EQ(priced[0].cost_nanos, 1) << "half a nano rounds up";
}

TEST(PriceFindings, StaleGrantHoldsItsShareWhileListed) {
  std::vector<DeviceHour> devices{Hour(kH0, 3'600'000'000),
                                  Hour(kH0 + kMicrosPerHour, 3'600'000'000)};
  // A quarter of the GPU from 00:45 to 01:15: 15 min in each hour.
  auto f = Of(FindingKind::kStaleGrant, kDebug, kH0 + 45 * 60 * kMicrosPerSecond,
              kH0 + 75 * 60 * kMicrosPerSecond,
              "device_id=GPU-1::2 share_ppd=" + std::to_string(kWholeGpu / 4));
  auto priced = PriceFindings(std::vector<Finding>{f}, devices, {});
  EXPECT_EQ(priced[0].gpu_us, 2 * 15 * 60 * kMicrosPerSecond / 4);
  EXPECT_EQ(priced[0].cost_nanos, 2 * 225'000'000);  // $3.60/h x 1/4 x 1/4 h, twice
}

TEST(PriceFindings, MemoryOverACapIsASliceOfTheCard) {
  std::vector<DeviceHour> devices{Hour(kH0, 8'000'000'000)};
  UsageRow r = Row(kH0, kDebug, kMicrosPerHour / 4, 0);
  r.memory_kib_s = 30LL * 1024 * 1024 * 3600;  // 30 GiB all hour
  auto f = Of(FindingKind::kIsolationBreach, kDebug, kH0, kH0 + kMicrosPerHour,
              "memory_bytes=32212254720 declared_memory_bytes=" + std::to_string(20 * kGiB));
  auto priced = PriceFindings(std::vector<Finding>{f}, devices, std::vector<UsageRow>{r});
  // 10 GiB over of 80 GiB for an hour: 1/8 GPU-hour, $1.
  EXPECT_EQ(priced[0].gpu_us, kMicrosPerHour / 8);
  EXPECT_EQ(priced[0].cost_nanos, 1'000'000'000);
}

TEST(PriceFindings, AStaleGrantOfAMigInstanceHoldsTheGpuItsRowsNameLater) {
  std::vector<DeviceHour> devices{Hour(kH0, 3'600'000'000)};
  DeviceHour other = Hour(kH0, 7'200'000'000);
  other.gpu = GpuUuid{"GPU-2"};
  devices.push_back(other);
  Finding f = Of(FindingKind::kStaleGrant, kDebug, kH0, kH0 + kMicrosPerHour,
                 "device_id=MIG-7 share_ppd=" + std::to_string(kWholeGpu / 7));
  f.gpu_uuid = "MIG-7";
  // The instance's GPU is named by a row of another pod, after the device-hours were read.
  UsageRow named = Row(kH0 + 5 * kMicrosPerHour, kNotebook, 10, 0);
  named.gpu = GpuUuid{"GPU-2"};
  named.device_id = "MIG-7";
  auto priced = PriceFindings({f}, devices, {named});
  EXPECT_EQ(priced[0].gpu_us, kMicrosPerHour / 7);
  // A seventh of the hour in whole GPU-µs (514,285,714) at GPU-2's $7.20 an hour.
  EXPECT_EQ(priced[0].cost_nanos, 1'028'571'428);
  EXPECT_EQ(PriceFindings({f}, devices, {})[0].cost_nanos, 0) << "no row says which GPU";
}

TEST(IdleRuns, ARunOfIdleHoursLongEnough) {
  Policy p = DefaultPolicy();
  p.idle_allocation_hours = 3;
  std::vector<UsageRow> usage;
  // Hours 0-3 idle (1% of the allocation is still idle), hour 4 busy, hours 5-6 idle.
  for (int h = 0; h < 7; ++h)
    usage.push_back(Row(kH0 + h * kMicrosPerHour, kNotebook, kMicrosPerHour,
                        h == 4 ? kMicrosPerHour / 2 : kMicrosPerHour / 100));
  const std::vector<DeviceHour> devices{
      Hour(kH0, 1'000'000'000), Hour(kH0 + kMicrosPerHour, 1'000'000'000),
      Hour(kH0 + 2 * kMicrosPerHour, 1'000'000'000), Hour(kH0 + 3 * kMicrosPerHour, 1'000'000'000)};
  auto found = DetectIdle(usage, devices, p, kH0 + 7 * kMicrosPerHour);
  ASSERT_EQ(found.size(), 1u) << "the run of 2 is too short";
  const Finding& f = found[0].finding;
  EXPECT_EQ(f.first_seen_us, kH0);
  EXPECT_EQ(f.last_seen_us, kH0 + 4 * kMicrosPerHour);
  EXPECT_EQ(f.resolved_us, kH0 + 4 * kMicrosPerHour) << "it got busy";
  EXPECT_EQ(f.evidence, "hours=4 allocated_gpu_us=14400000000 compute_gpu_us=144000000");
  EXPECT_EQ(found[0].gpu_us, 4 * kMicrosPerHour);
  EXPECT_EQ(found[0].cost_nanos, 4'000'000'000);
  EXPECT_EQ(found[0].cost_basis, "the allocation held while idle, at the device's price");
  p.exemptions.push_back(Exemption{"nb", {}, {}, 1});
  EXPECT_TRUE(DetectIdle(usage, devices, p, kH0).empty());
}

TEST(IdleRuns, ARunAcrossDaysIsOneFindingAndOpenWhileItLasts) {
  Policy p = DefaultPolicy();
  p.idle_allocation_hours = 30;
  const Micros day = 417 * kMicrosPerDay;
  std::vector<UsageRow> usage;
  for (int h = 0; h < 40; ++h) {
    // Rows of one hour on one GPU, given twice (a ledger keeps one per consumer and
    // device-hour): summed into one hour of the run, not a run broken.
    for (int replica = 0; replica < 2; ++replica) {
      UsageRow r = Row(day + h * kMicrosPerHour, kNotebook, kMicrosPerHour / 2, 0);
      r.device_id = "GPU-1::" + std::to_string(replica);
      usage.push_back(r);
    }
  }
  auto found = DetectIdle(usage, {}, p, day + 40 * kMicrosPerHour);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].finding.first_seen_us, day);
  EXPECT_EQ(found[0].finding.last_seen_us, day + 40 * kMicrosPerHour);
  EXPECT_EQ(found[0].finding.resolved_us, std::nullopt) << "its last hour is the last complete";
  EXPECT_EQ(found[0].finding.gpu_uuid, "GPU-1");
  EXPECT_EQ(found[0].finding.evidence,
            "hours=40 allocated_gpu_us=144000000000 compute_gpu_us=0 device_id=GPU-1::0");
  // A gap of an hour (no row) ends it; the rest is too short.
  usage.erase(usage.begin() + 2 * 20, usage.begin() + 2 * 21);
  EXPECT_TRUE(DetectIdle(usage, {}, p, day + 40 * kMicrosPerHour).empty());
  p.idle_allocation_hours = 19;
  found = DetectIdle(usage, {}, p, day + 40 * kMicrosPerHour);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].finding.last_seen_us, day + 20 * kMicrosPerHour);
  EXPECT_EQ(found[0].finding.resolved_us, day + 20 * kMicrosPerHour);
  EXPECT_EQ(found[1].finding.first_seen_us, day + 21 * kMicrosPerHour);
}

TEST(IdleRuns, ExemptByTheLabelsItsRunBeganWith) {
  Policy p = DefaultPolicy();
  p.idle_allocation_hours = 2;
  p.exemptions.push_back(Exemption{"", {{"idle-ok", "true"}}, {}, 1});
  std::vector<UsageRow> usage;
  for (int h = 0; h < 6; ++h) {
    UsageRow r = Row(kH0 + h * kMicrosPerHour, kNotebook, kMicrosPerHour, 0);
    if (h < 3) r.consumer.labels = {{"idle-ok", "true"}};
    if (h == 3) r.compute_us = kMicrosPerHour;  // busy: the next run begins unlabelled
    usage.push_back(r);
  }
  auto found = DetectIdle(usage, {}, p, kH0 + 6 * kMicrosPerHour);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].finding.first_seen_us, kH0 + 4 * kMicrosPerHour);
}

}  // namespace
}  // namespace gpuledger::guardrails
