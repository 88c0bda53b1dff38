#include "report/report.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "report/report_json.h"

namespace gpuledger::report {
namespace {

constexpr Nanos kDollar = kNanosPerUnit;

DeviceHour Device(const std::string& gpu, Nanos price) {
  DeviceHour d;
  d.hour_us = 0;
  d.node = "n1";
  d.gpu = GpuUuid{gpu};
  d.gpu_model = "A100-80GB";
  d.sharing = SharingMode::kTimeSlicing;
  d.pricing_class = "on-demand";
  d.price_nanos = price;
  d.metered_us = kMicrosPerHour;
  d.memory_total_bytes = 80 * kGiB;
  return d;
}

UsageRow Usage(const std::string& gpu, const std::string& ns, const std::string& pod,
               GpuMicros allocated, GpuMicros compute) {
  UsageRow u;
  u.hour_us = 0;
  u.gpu = GpuUuid{gpu};
  u.consumer.ref = ConsumerRef{ns, pod, PodUid{pod + "-uid"}, "main"};
  u.consumer.owner_kind = "Deployment";
  u.consumer.owner_name = pod.substr(0, pod.find('-'));
  u.node = "n1";
  u.gpu_model = "A100-80GB";
  u.sharing = SharingMode::kTimeSlicing;
  u.allocated_us = allocated;
  u.compute_us = compute;
  u.compute_quality = Quality::kMeasured;
  return u;
}

struct Fixture {
  std::vector<DeviceHour> devices;
  std::vector<UsageRow> usage;
  Fixture() {
    // GPU a: $4/h, R=4, three pods hold a quarter each, one quarter unallocated.
    DeviceHour a = Device("GPU-a", 4 * kDollar);
    a.unallocated_us = kMicrosPerHour / 4;
    a.busy_us = kMicrosPerHour * 6 / 10;
    a.idle_us = kMicrosPerHour - a.busy_us;
    devices.push_back(a);
    usage.push_back(Usage("GPU-a", "inference", "api-0", kMicrosPerHour / 4, kMicrosPerHour * 2 / 10));
    usage.push_back(Usage("GPU-a", "inference", "api-1", kMicrosPerHour / 4, kMicrosPerHour * 3 / 10));
    usage.push_back(Usage("GPU-a", "research", "nb-0", kMicrosPerHour / 4, kMicrosPerHour / 10));
    usage[0].consumer.labels["team"] = "search";
    usage[2].consumer.namespace_labels["team"] = "science";
    // GPU b: $1/h, nobody on it.
    DeviceHour b = Device("GPU-b", kDollar);
    b.unallocated_us = kMicrosPerHour;
    b.idle_us = kMicrosPerHour;
    devices.push_back(b);
  }
};

Nanos Sum(const Report& r) {
  Nanos s = r.idle.cost_nanos + r.unattributed.cost_nanos;
  for (const auto& row : r.rows) s += row.figures.cost_nanos;
  return s;
}

TEST(Report, AllocationByNamespaceKeepsIdleVisible) {
  Fixture f;
  auto r = BuildReport(f.devices, f.usage, *ParseGroupBy("namespace"), cost::Policy{},
                       cost::IdleHandling{}, 0, kMicrosPerHour);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].key, "inference");
  EXPECT_EQ(r.rows[0].figures.cost_nanos, 2 * kDollar);
  EXPECT_EQ(r.rows[0].figures.allocated_gpu_us, kMicrosPerHour / 2);
  EXPECT_EQ(r.rows[1].key, "research");
  EXPECT_EQ(r.rows[1].figures.cost_nanos, kDollar);
  EXPECT_EQ(r.idle.cost_nanos, 2 * kDollar);  // a quarter of GPU a, all of GPU b
  EXPECT_EQ(r.total.device_cost_nanos, 5 * kDollar);
  EXPECT_EQ(Sum(r), r.total.device_cost_nanos);
  EXPECT_EQ(r.rows[0].figures.quality, Quality::kMeasured);
}

TEST(Report, LabelKeysInheritFromTheNamespaceAndBucketTheRest) {
  Fixture f;
  auto r = BuildReport(f.devices, f.usage, *ParseGroupBy("label:team"), cost::Policy{},
                       cost::IdleHandling{}, 0, kMicrosPerHour);
  std::map<std::string, Nanos> cost;
  for (const auto& row : r.rows) cost[row.key] = row.figures.cost_nanos;
  EXPECT_EQ(cost["search"], kDollar);
  EXPECT_EQ(cost["science"], kDollar);
  EXPECT_EQ(cost["unlabelled"], kDollar);
}

TEST(Report, IdleChargedToAPlatformNamespace) {
  Fixture f;
  auto r = BuildReport(f.devices, f.usage, *ParseGroupBy("namespace"), cost::Policy{},
                       *cost::ParseIdleHandling("namespace:platform"), 0, kMicrosPerHour);
  std::map<std::string, Nanos> cost;
  for (const auto& row : r.rows) cost[row.key] = row.figures.cost_nanos;
  EXPECT_EQ(cost["platform"], 2 * kDollar);
  EXPECT_EQ(r.idle.cost_nanos, 0);
  EXPECT_EQ(r.idle.allocated_gpu_us, kMicrosPerHour * 5 / 4);  // time stays visible
  EXPECT_EQ(Sum(r), 5 * kDollar);
}

TEST(Report, ComputePolicyAndMultiLevelKeys) {
  Fixture f;
  auto r = BuildReport(f.devices, f.usage, *ParseGroupBy("namespace,controller"),
                       *cost::ParsePolicy("compute"), cost::IdleHandling{}, 0, kMicrosPerHour);
  std::map<std::string, Nanos> cost;
  for (const auto& row : r.rows) cost[row.key] = row.figures.cost_nanos;
  // GPU a busy 60%: $4 x 0.2, 0.3, 0.1; idle = $4 x 0.4 + $1.
  EXPECT_EQ(cost["inference/inference/Deployment/api"], 2 * kDollar);
  EXPECT_EQ(cost["research/research/Deployment/nb"], kDollar * 4 / 10);
  EXPECT_EQ(r.idle.cost_nanos, kDollar * 16 / 10 + kDollar);
  EXPECT_EQ(Sum(r), 5 * kDollar);
}

TEST(Report, WindowExcludesOtherHours) {
  Fixture f;
  auto r = BuildReport(f.devices, f.usage, *ParseGroupBy("namespace"), cost::Policy{},
                       cost::IdleHandling{}, kMicrosPerHour, 2 * kMicrosPerHour);
  EXPECT_TRUE(r.rows.empty());
  EXPECT_EQ(r.total.device_cost_nanos, 0);
}

// Memory-time is integer KiB-s end to end: rows sum their consumers, unattributed is the
// device's, idle is the capacity (total x metered) less both; the JSON carries the integers.
TEST(Report, MemoryKibSecondsSumAndIdleIsTheUnusedCapacity) {
  constexpr KibSeconds kGibHour = 1024LL * 1024 * 3600;
  Fixture f;
  f.usage[0].memory_kib_s = 10 * kGibHour;
  f.usage[1].memory_kib_s = 5 * kGibHour;
  f.devices[0].unattributed_memory_kib_s = kGibHour;
  auto r = BuildReport(f.devices, f.usage, *ParseGroupBy("namespace"),
                       *cost::ParsePolicy("memory"), cost::IdleHandling{}, 0, kMicrosPerHour);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].key, "inference");
  EXPECT_EQ(r.rows[0].figures.memory_kib_s, 15 * kGibHour);
  EXPECT_EQ(r.rows[1].figures.memory_kib_s, 0);
  EXPECT_EQ(r.unattributed.memory_kib_s, kGibHour);
  EXPECT_EQ(r.idle.memory_kib_s, 2 * 80 * kGibHour - 16 * kGibHour);  // two 80 GiB GPUs
  EXPECT_EQ(Sum(r), r.total.device_cost_nanos);

  const std::string json = ReportToJson(r);
  EXPECT_NE(json.find("\"memory_kib_s\": 56623104000"), std::string::npos) << json;
  EXPECT_EQ(json.find("memory_byte_us"), std::string::npos);
  auto back = ReportFromJson(json);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->rows[0].figures.memory_kib_s, 15 * kGibHour);
  EXPECT_EQ(back->idle.memory_kib_s, r.idle.memory_kib_s);
  EXPECT_EQ(back->unattributed.memory_kib_s, kGibHour);
}

TEST(Figures, MemoryTimeSaturatesInsteadOfWrapping) {
  Figures a;
  a.memory_kib_s = INT64_MAX - 1;
  Figures b;
  b.memory_kib_s = 5;
  a.Add(b);
  EXPECT_EQ(a.memory_kib_s, INT64_MAX);
}

TEST(ParseGroupBy, RejectsUnknownNamesClearly) {
  auto bad = ParseGroupBy("namespace,teams");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("unknown grouping 'teams'"), std::string::npos);
  EXPECT_EQ(ToString(*ParseGroupBy("namespace,label:team")), "namespace,label:team");
}

}  // namespace
}  // namespace gpuledger::report
