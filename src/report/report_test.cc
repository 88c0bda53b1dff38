#include "report/report.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "common/time_util.h"
#include "report/report_json.h"
#include "report/window.h"

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
    usage.push_back(
        Usage("GPU-a", "inference", "api-0", kMicrosPerHour / 4, kMicrosPerHour * 2 / 10));
    usage.push_back(
        Usage("GPU-a", "inference", "api-1", kMicrosPerHour / 4, kMicrosPerHour * 3 / 10));
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

// A closed statement's rows (issue 38) are keyed by EncodeEntry: every string a grouping reads,
// read back exactly, whatever it holds (separators, digits, empty strings, UTF-8).
TEST(Report, EntriesRoundTripAndRefuseOtherText) {
  ConsumerInfo c;
  c.ref = ConsumerRef{"ml", "train-0:1/2", PodUid("uid"), ""};
  c.owner_kind = "Job";
  c.owner_name = "12:34";
  c.labels = {{"team", "vision"}, {"a:b", ""}, {"ünï", "çødé/7"}};
  c.namespace_labels = {{"cost-center", "cc-42"}};
  const std::string cluster = "prod";
  const std::string node = "node/1";
  const std::string model = "H100";
  const GpuUuid gpu("GPU-1");
  const Placed placed{cluster, node, model, gpu, SharingMode::kMig};
  const std::string key = EncodeEntry(c, LabelsOf(c), placed);
  auto back = DecodeEntry(key);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->consumer.ref, c.ref);
  EXPECT_EQ(back->consumer.owner_kind, c.owner_kind);
  EXPECT_EQ(back->consumer.owner_name, c.owner_name);
  EXPECT_EQ(back->consumer.labels, c.labels);
  EXPECT_EQ(back->consumer.namespace_labels, c.namespace_labels);
  EXPECT_EQ(EncodeEntry(back->consumer, LabelsOf(back->consumer), back->placed()), key);
  for (const auto* dims : {"namespace,label:team", "controller", "device,container,node",
                           "cluster,gpu_model,sharing_mode", "label:a:b"})
    EXPECT_EQ(KeyOf(back->consumer, back->placed(), *ParseGroupBy(dims)),
              KeyOf(c, placed, *ParseGroupBy(dims)))
        << dims;
  for (std::string bad : {std::string(), std::string("ml"), key + "x",
                          key.substr(0, key.size() - 1), std::string("99999999999:x")})
    EXPECT_FALSE(DecodeEntry(bad).has_value()) << bad;
}

TEST(Window, AMonthIsItsUtcCalendarMonth) {
  const auto november = MonthRange("2026-11");
  ASSERT_TRUE(november.has_value());
  EXPECT_EQ(FormatRfc3339(november->from_us), "2026-11-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339(november->to_us), "2026-12-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339(MonthRange("2026-12")->to_us), "2027-01-01T00:00:00Z");
  EXPECT_EQ(MonthOf(*november), "2026-11");
  EXPECT_EQ(MonthOf({november->from_us, november->to_us - kMicrosPerHour}), "");
  for (const char* bad : {"2026-13", "2026-00", "2026-1", "26-11", "2026/11", "1969-12"})
    EXPECT_FALSE(MonthRange(bad).has_value()) << bad;
  auto resolved = ResolveWindow("2026-02", {0, 0});
  ASSERT_TRUE(resolved.ok());
  EXPECT_EQ(resolved->to_us - resolved->from_us, 28 * 24 * kMicrosPerHour);
}

TEST(Report, AllocationByNamespaceKeepsIdleVisible) {
  Fixture f;
  auto r = *BuildReport(f.devices, f.usage, *ParseGroupBy("namespace"), cost::Policy{},
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

// The per-device method beside the truth: every row on GPU a is counted with the device's whole
// busy time (0.6 h) and whole price ($4), so inference's two pods count the GPU twice; GPU b,
// with nobody on it, is nobody's. The JSON carries it as "per_device".
TEST(Report, NaiveFiguresCountTheWholeDeviceOncePerConsumer) {
  Fixture f;
  auto r = *BuildReport(f.devices, f.usage, *ParseGroupBy("namespace"), cost::Policy{},
                        cost::IdleHandling{}, 0, kMicrosPerHour);
  ASSERT_EQ(r.rows.size(), 2u);
  const Figures& inference = r.rows[0].figures;
  EXPECT_EQ(inference.compute_gpu_us, kMicrosPerHour / 2);
  EXPECT_EQ(inference.naive_compute_gpu_us, 2 * (kMicrosPerHour * 6 / 10));
  EXPECT_EQ(inference.naive_cost_nanos, 2 * 4 * kDollar);
  const Figures& research = r.rows[1].figures;
  EXPECT_EQ(research.naive_compute_gpu_us, kMicrosPerHour * 6 / 10);
  EXPECT_EQ(research.naive_cost_nanos, 4 * kDollar);
  EXPECT_EQ(r.idle.naive_cost_nanos, 0);
  const nlohmann::json j = nlohmann::json::parse(ReportToJson(r));
  EXPECT_EQ(j["rows"][0]["per_device"]["compute_gpu_us"], 2 * (kMicrosPerHour * 6 / 10));
  EXPECT_EQ(j["rows"][0]["per_device"]["cost_nanos"], 8 * kDollar);
  EXPECT_FALSE(j["idle"].contains("per_device"));
  auto back = ReportFromJson(ReportToJson(r));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->rows[0].figures.naive_cost_nanos, 8 * kDollar);
  EXPECT_EQ(back->rows[1].figures.naive_compute_gpu_us, kMicrosPerHour * 6 / 10);
  EXPECT_EQ(AddSaturating(INT64_MAX - 1, 5), INT64_MAX);
  EXPECT_EQ(AddSaturating(INT64_MIN + 1, -5), INT64_MIN);
}

TEST(Report, LabelKeysInheritFromTheNamespaceAndBucketTheRest) {
  Fixture f;
  auto r = *BuildReport(f.devices, f.usage, *ParseGroupBy("label:team"), cost::Policy{},
                        cost::IdleHandling{}, 0, kMicrosPerHour);
  std::map<std::string, Nanos> cost;
  for (const auto& row : r.rows) cost[row.key] = row.figures.cost_nanos;
  EXPECT_EQ(cost["search"], kDollar);
  EXPECT_EQ(cost["science"], kDollar);
  EXPECT_EQ(cost["unlabelled"], kDollar);
}

TEST(Report, IdleChargedToAPlatformNamespace) {
  Fixture f;
  auto r = *BuildReport(f.devices, f.usage, *ParseGroupBy("namespace"), cost::Policy{},
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
  auto r = *BuildReport(f.devices, f.usage, *ParseGroupBy("namespace,controller"),
                        *cost::ParsePolicy("compute"), cost::IdleHandling{}, 0, kMicrosPerHour);
  std::map<std::string, Nanos> cost;
  for (const auto& row : r.rows) cost[row.key] = row.figures.cost_nanos;
  // GPU a busy 60%: $4 x 0.2, 0.3, 0.1; idle = $4 x 0.4 + $1. The controller level does not
  // repeat the namespace its key already begins with (issue 34).
  EXPECT_EQ(cost["inference/Deployment/api"], 2 * kDollar);
  EXPECT_EQ(cost["research/Deployment/nb"], kDollar * 4 / 10);
  EXPECT_EQ(r.idle.cost_nanos, kDollar * 16 / 10 + kDollar);
  EXPECT_EQ(Sum(r), 5 * kDollar);
}

TEST(Report, WindowExcludesOtherHours) {
  Fixture f;
  auto r = *BuildReport(f.devices, f.usage, *ParseGroupBy("namespace"), cost::Policy{},
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
  auto r = *BuildReport(f.devices, f.usage, *ParseGroupBy("namespace"),
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

// Activity sums per row; its quality is the worst of the rows that had any, their rules merged;
// the activity fractions are taken over the rows that carried activity (coverage).
TEST(Report, ActivityAggregatesWithWorstQualityAndMergedRules) {
  Fixture f;
  // api-0: GPM, measured. api-1: split by compute share, estimated. nb-0: an older agent.
  f.usage[0].activity = Activity{100, 50, 10, 40};
  f.usage[0].activity_quality = Quality::kMeasured;
  f.usage[0].activity_rule = "gpm";
  f.usage[0].share_source = "env:CUDA_MPS_ACTIVE_THREAD_PERCENTAGE";
  f.usage[1].activity = Activity{200, 60, 20, 30};
  f.usage[1].activity_quality = Quality::kEstimated;
  f.usage[1].activity_rule = "compute-share+gpm";
  f.usage[1].share_source = "resource:gpu_milli";
  auto r = *BuildReport(f.devices, f.usage, *ParseGroupBy("namespace"), cost::Policy{},
                        cost::IdleHandling{}, 0, kMicrosPerHour);
  ASSERT_EQ(r.rows.size(), 2u);
  const Figures& inference = r.rows[0].figures;
  EXPECT_EQ(inference.activity, (Activity{300, 110, 30, 70}));
  EXPECT_EQ(inference.activity_quality, Quality::kEstimated);
  EXPECT_EQ(inference.activity_rule, "compute-share+gpm");
  EXPECT_EQ(inference.activity_allocated_gpu_us, kMicrosPerHour / 2);
  EXPECT_EQ(inference.activity_compute_gpu_us, kMicrosPerHour * 5 / 10);
  EXPECT_EQ(inference.share_source, "env:CUDA_MPS_ACTIVE_THREAD_PERCENTAGE+resource:gpu_milli");
  // Granted memory: a quarter of 80 GiB for an hour, twice.
  EXPECT_EQ(inference.granted_memory_kib_s, 2 * 20LL * 1024 * 1024 * 3600);
  const Figures& research = r.rows[1].figures;
  EXPECT_EQ(research.activity, Activity{});
  EXPECT_EQ(research.activity_quality, Quality::kNone);
  EXPECT_EQ(research.activity_allocated_gpu_us, 0);
  EXPECT_EQ(r.rows[1].utilization.basis, "nvml-only");
  EXPECT_EQ(r.rows[0].utilization.basis, "gpm");
  // Idle and unattributed carry no activity.
  EXPECT_EQ(r.idle.activity, Activity{});
  EXPECT_EQ(FormatSource(inference.activity_quality, inference.activity_rule),
            "estimated:compute-share+gpm");
  EXPECT_EQ(FormatSource(Quality::kNone, ""), "none");
  EXPECT_EQ(FormatSource(Quality::kMeasured, ""), "measured");
}

// One exclusive GPU-hour: NVML util 100%, GPM SM active 5%. The report row is busy-but-starved,
// and the JSON row says so with its signals, thresholds, basis and the activity block.
TEST(Report, BusyButStarvedRowInJson) {
  DeviceHour d = Device("GPU-h", 4 * kDollar);
  d.sharing = SharingMode::kExclusive;
  d.busy_us = kMicrosPerHour;
  UsageRow u = Usage("GPU-h", "ml", "train-0", kMicrosPerHour, kMicrosPerHour);
  u.sharing = SharingMode::kExclusive;
  u.activity = Activity{180'000'000, 90'000'000, 36'000'000, 72'000'000};  // 5%, 2.5%, 1%, 2%
  u.activity_quality = Quality::kMeasured;
  u.activity_rule = "gpm";
  u.memory_kib_s = 10LL * 1024 * 1024 * 3600;  // 10 GiB held for the hour
  std::vector<DeviceHour> devices{d};
  std::vector<UsageRow> usage{u};
  auto r = *BuildReport(devices, usage, *ParseGroupBy("pod"), cost::Policy{}, cost::IdleHandling{},
                        0, kMicrosPerHour);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].utilization.cls, utilization::Class::kBusyButStarved);

  const std::string text = ReportToJson(r);
  auto j = nlohmann::json::parse(text);
  const auto& row = j["rows"][0];
  EXPECT_EQ(row["key"], "ml/train-0");
  EXPECT_EQ(row["activity"]["sm_active_gpu_us"], 180'000'000);
  EXPECT_EQ(row["activity"]["sm_occupancy_gpu_us"], 90'000'000);
  EXPECT_EQ(row["activity"]["tensor_active_gpu_us"], 36'000'000);
  EXPECT_EQ(row["activity"]["dram_active_gpu_us"], 72'000'000);
  EXPECT_EQ(row["activity"]["allocated_gpu_us"], kMicrosPerHour);
  EXPECT_EQ(row["activity"]["source"], "measured:gpm");
  EXPECT_EQ(row["granted_memory_kib_s"], 80LL * 1024 * 1024 * 3600);
  EXPECT_EQ(row["share_source"], "");
  const auto& util = row["utilization"];
  EXPECT_EQ(util["class"], "busy-but-starved");
  EXPECT_EQ(util["basis"], "gpm");
  EXPECT_DOUBLE_EQ(util["signals"]["gpu_util"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(util["signals"]["sm_active"].get<double>(), 0.05);
  EXPECT_DOUBLE_EQ(util["thresholds"]["busy_util_at_least"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(util["thresholds"]["starved_sm_per_util_below"].get<double>(), 0.25);
  EXPECT_NE(util["reason"].get<std::string>().find("SM active 5%"), std::string::npos);
  EXPECT_FALSE(j["idle"].contains("utilization"));

  // Back and forth: the same document (the class is recomputed from the figures).
  auto back = ReportFromJson(text);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->rows[0].figures.activity, u.activity);
  EXPECT_EQ(back->rows[0].utilization.cls, utilization::Class::kBusyButStarved);
  EXPECT_EQ(ReportToJson(*back), text);
}

// Each row's compute carries the widest error its rules showed on real hardware; none where no
// rule of it was measured there.
TEST(Report, RowsCarryTheMeasuredErrorBandOfTheirComputeRules) {
  std::vector<DeviceHour> devices{Device("GPU-h", 4 * kDollar)};
  std::vector<UsageRow> usage;
  const std::pair<const char*, const char*> pods[] = {{"alone", "device-activity"},
                                                      {"shared", "device-idle+process-samples"},
                                                      {"mig", "mig-presence"}};
  for (const auto& [pod, rule] : pods) {
    UsageRow u = Usage("GPU-h", "ml", pod, kMicrosPerHour / 4, kMicrosPerHour / 8);
    u.compute_rule = rule;
    usage.push_back(u);
  }
  auto r = *BuildReport(devices, usage, *ParseGroupBy("pod"), cost::Policy{}, cost::IdleHandling{},
                        0, kMicrosPerHour);
  auto j = nlohmann::json::parse(ReportToJson(r));
  std::map<std::string, nlohmann::json> band;
  for (const auto& row : j["rows"]) band[row["key"]] = row["compute_error_band"];
  EXPECT_DOUBLE_EQ(band["ml/alone"].get<double>(), 0.003);
  EXPECT_DOUBLE_EQ(band["ml/shared"].get<double>(), 1.11);
  EXPECT_TRUE(band["ml/mig"].is_null());
}

// A report document from a server older than activity reads as having none.
TEST(Report, JsonWithoutActivityReadsAsNone) {
  Fixture f;
  auto r = *BuildReport(f.devices, f.usage, *ParseGroupBy("namespace"), cost::Policy{},
                        cost::IdleHandling{}, 0, kMicrosPerHour);
  auto j = nlohmann::json::parse(ReportToJson(r));
  for (auto& row : j["rows"])
    for (const char* k : {"activity", "granted_memory_kib_s", "share_source", "utilization"})
      row.erase(k);
  auto back = ReportFromJson(j.dump());
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->rows.size(), 2u);
  EXPECT_EQ(back->rows[0].figures.activity_quality, Quality::kNone);
  EXPECT_TRUE(back->rows[0].utilization.nvml_only);
  // A source this build cannot read is an error, not a silent "none".
  auto bad = nlohmann::json::parse(ReportToJson(r));
  bad["rows"][0]["activity"]["source"] = "guessed:gpm";
  EXPECT_FALSE(ReportFromJson(bad.dump()));
  auto source = ParseSource("estimated:compute-share+gpm");
  ASSERT_TRUE(source);
  EXPECT_EQ(source->first, Quality::kEstimated);
  EXPECT_EQ(source->second, "compute-share+gpm");
}

TEST(Figures, MemoryTimeSaturatesInsteadOfWrapping) {
  Figures a;
  a.memory_kib_s = INT64_MAX - 1;
  Figures b;
  b.memory_kib_s = 5;
  a.Add(b);
  EXPECT_EQ(a.memory_kib_s, INT64_MAX);
}

// Issue 58: "pod,pod,..." 4,000 times made a 680 MB answer of one 16 KiB GET. A level once, at
// most kMaxGroupLevels of them; distinct labels are distinct levels.
TEST(ParseGroupBy, RefusesARepeatedLevelAndTooManyLevels) {
  for (const char* twice : {"pod,pod", "namespace,label:team,label:team", "node,gpu_model,node"}) {
    auto by = ParseGroupBy(twice);
    ASSERT_FALSE(by.ok()) << twice;
    EXPECT_NE(by.error().message.find("given twice"), std::string::npos) << by.error().message;
  }
  std::string many;
  for (int i = 0; i < 4000; ++i) many += i == 0 ? "pod" : ",pod";
  EXPECT_FALSE(ParseGroupBy(many).ok());
  std::string labels;
  for (std::size_t i = 0; i <= kMaxGroupLevels; ++i)
    labels += fmt::format("{}label:k{}", i == 0 ? "" : ",", i);
  auto over = ParseGroupBy(labels);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.error().message.find("at most 8"), std::string::npos) << over.error().message;
  EXPECT_EQ(ParseGroupBy("namespace,label:a,label:b,pod")->size(), 4u);
}

// Issue 29: `--window 7` meant 7 seconds. A window's length needs its unit.
TEST(ResolveWindow, LengthsNeedAUnitAndInstantsStayInTheCalendar) {
  const TimeRange extent{0, 30 * 24 * kMicrosPerHour};
  EXPECT_EQ(ResolveWindow("7d", extent)->from_us, 23 * 24 * kMicrosPerHour);
  EXPECT_EQ(*ResolveWindow("all", extent), extent);
  EXPECT_EQ(*ResolveWindow("0,3600", extent), (TimeRange{0, kMicrosPerHour}));
  auto bare = ResolveWindow("7", extent);
  ASSERT_FALSE(bare.ok());
  EXPECT_NE(bare.error().message.find("give a unit"), std::string::npos) << bare.error().message;
  EXPECT_FALSE(ResolveWindow("-9223372036854,9223372036854", extent).ok());
}

// Issue 58: "36500d" and "106751d" reached back to 1926 and 1734 while an explicit START is held
// to 1970 on; a duration longer than the ledger's history now starts at the epoch.
TEST(ResolveWindow, LengthsNeverReachBeforeTheEpoch) {
  const TimeRange extent{400 * 24 * kMicrosPerHour, 430 * 24 * kMicrosPerHour};
  for (const char* window : {"36500d", "106751d", "90000h", "3650000m"}) {
    auto w = ResolveWindow(window, extent);
    ASSERT_TRUE(w.ok()) << window << ": " << w.error().message;
    EXPECT_EQ(*w, (TimeRange{0, extent.to_us})) << window;
  }
  EXPECT_EQ(ResolveWindow("430d", extent)->from_us, 0);
  EXPECT_EQ(ResolveWindow("429d", extent)->from_us, 24 * kMicrosPerHour);
}

// OpenCost's calendar words, about the day holding the ledger's last instant (issue 34).
TEST(ResolveWindow, CalendarWordsAsOpenCostReadsThem) {
  auto at = [](const char* text) { return *ParseRfc3339(text); };
  // The ledger ends at 2026-11-25T05:00Z, a Wednesday; its last instant is that morning.
  const TimeRange extent{at("2026-09-01T00:00:00Z"), at("2026-11-25T05:00:00Z")};
  auto is = [&](const char* word, const char* from, const char* to) {
    auto w = ResolveWindow(word, extent);
    ASSERT_TRUE(w) << word << ": " << w.error().message;
    EXPECT_EQ(w->from_us, at(from)) << word << " from " << FormatRfc3339(w->from_us);
    EXPECT_EQ(w->to_us, at(to)) << word << " to " << FormatRfc3339(w->to_us);
  };
  is("today", "2026-11-25T00:00:00Z", "2026-11-25T05:00:00Z");
  is("yesterday", "2026-11-24T00:00:00Z", "2026-11-25T00:00:00Z");
  is("week", "2026-11-22T00:00:00Z", "2026-11-25T05:00:00Z");  // from Sunday
  is("lastweek", "2026-11-15T00:00:00Z", "2026-11-22T00:00:00Z");
  is("month", "2026-11-01T00:00:00Z", "2026-11-25T05:00:00Z");
  is("lastmonth", "2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z");
  // A ledger that ends at midnight: "today" is its last day, not an empty one.
  const TimeRange midnight{at("2026-01-01T00:00:00Z"), at("2027-01-01T00:00:00Z")};
  EXPECT_EQ(ResolveWindow("today", midnight)->from_us, at("2026-12-31T00:00:00Z"));
  EXPECT_EQ(ResolveWindow("lastmonth", midnight)->from_us, at("2026-11-01T00:00:00Z"));
  EXPECT_EQ(ResolveWindow("month", TimeRange{0, at("2026-01-10T00:00:00Z")})->from_us,
            at("2026-01-01T00:00:00Z"));
  EXPECT_EQ(ResolveWindow("lastmonth", TimeRange{0, at("2026-01-10T00:00:00Z")})->from_us,
            at("2025-12-01T00:00:00Z"));
}

// "30d" as OpenCost reads it: today and the 29 whole days before, so that `step=1d` steps over
// calendar days on a live ledger (issue 32); other units stay that much before the end.
TEST(ResolveWindow, WholeDaysAreCalendarDaysEndingWithTheLedgersLastDay) {
  auto at = [](const char* text) { return *ParseRfc3339(text); };
  const TimeRange live{at("2026-09-01T00:00:00Z"), at("2026-11-25T05:00:00Z")};
  EXPECT_EQ(ResolveWindow("7d", live)->from_us, at("2026-11-19T00:00:00Z"));
  EXPECT_EQ(ResolveWindow("7d", live)->to_us, live.to_us);
  EXPECT_EQ(*ResolveWindow("1d", live), *ResolveWindow("today", live));
  EXPECT_EQ(ResolveWindow("30d", live)->from_us, at("2026-10-27T00:00:00Z"));
  EXPECT_EQ(ResolveWindow("168h", live)->from_us, at("2026-11-18T05:00:00Z"));
  EXPECT_EQ(ResolveWindow("6d24h", live)->from_us, at("2026-11-18T05:00:00Z"));
  // A ledger ending at midnight: its last day is the one before, so 7d is 7 whole days.
  const TimeRange replayed{at("2026-09-01T00:00:00Z"), at("2026-11-25T00:00:00Z")};
  EXPECT_EQ(ResolveWindow("7d", replayed)->from_us, at("2026-11-18T00:00:00Z"));
  EXPECT_EQ(ResolveWindow("7d", replayed)->from_us, ResolveWindow("168h", replayed)->from_us);
}

TEST(ParseGroupBy, RejectsUnknownNamesClearly) {
  auto bad = ParseGroupBy("namespace,teams");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("unknown grouping 'teams'"), std::string::npos);
  EXPECT_EQ(ToString(*ParseGroupBy("namespace,label:team")), "namespace,label:team");
}

}  // namespace
}  // namespace gpuledger::report

namespace gpuledger::report {
namespace {

// Issue 29, finding 6: totals past int64 wrapped (a row came out at -2 nanos and rows + idle +
// unattributed no longer equalled the total). A window whose sums cannot be held exactly is an
// error naming the quantity; one nano less is reported exactly.
TEST(Report, AWindowWhoseCostCannotBeHeldExactlyIsAnErrorNotAWrappedTotal) {
  const Nanos half = INT64_MAX / 2;  // 4,611,686,018.427387903 a device-hour
  std::vector<DeviceHour> devices{Device("GPU-a", half), Device("GPU-b", half + 2)};
  std::vector<UsageRow> usage{Usage("GPU-a", "ml", "train-0", kMicrosPerHour, kMicrosPerHour)};
  auto r = BuildReport(devices, usage, *ParseGroupBy("namespace"), cost::Policy{},
                       cost::IdleHandling{}, 0, kMicrosPerHour);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message.find("device cost"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().message.rfind("window:", 0), 0u) << r.error().message;

  devices[1].price_nanos = half + 1;  // the sum is INT64_MAX exactly
  auto fits = BuildReport(devices, usage, *ParseGroupBy("namespace"), cost::Policy{},
                          cost::IdleHandling{}, 0, kMicrosPerHour);
  ASSERT_TRUE(fits) << fits.error().message;
  EXPECT_EQ(fits->total.device_cost_nanos, INT64_MAX);
  EXPECT_EQ(Sum(*fits), INT64_MAX);
}

}  // namespace
}  // namespace gpuledger::report
