// Activity end to end through the real path: agent exposition text (written here by hand) ->
// the exposition parser -> CounterLedger -> the SQLite ledger -> the report -> report JSON.
// One agent exports the activity counters (100% util, 5% SM active: busy-but-starved); an
// older one on another node exports none (NVML only).

#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ingest/counter_ledger.h"
#include "prometheus/exposition_parser.h"
#include "report/report.h"
#include "report/report_json.h"
#include "store/ledger_store.h"
#include "temp_dir.h"

namespace gpuledger::ingest {
namespace {

constexpr Micros kH0 = 1'800'000'000LL * kMicrosPerSecond;  // an hour boundary

// An H100 agent with GPM, at `t` seconds of uptime of the counters: the pod holds the whole GPU,
// a kernel is resident all the time (util 100%) but the SMs are 5% active.
std::string GpmAgent(double t) {
  constexpr const char* kPod = R"(container="main",gpu_uuid="GPU-h100",namespace="ml",)"
                               R"(pod="train-0",pod_uid="uid-train-0")";
  return fmt::format(
      R"(# TYPE gpuledger_device_info gauge
gpuledger_device_info{{gpu_model="H100-80GB",gpu_uuid="GPU-h100",mig_profile="",node="node-a",parent_uuid="",sharing_mode="exclusive"}} 1
# TYPE gpuledger_device_metered_seconds_total counter
gpuledger_device_metered_seconds_total{{gpu_uuid="GPU-h100"}} {t}
# TYPE gpuledger_device_busy_seconds_total counter
gpuledger_device_busy_seconds_total{{gpu_uuid="GPU-h100"}} {t}
# TYPE gpuledger_device_idle_seconds_total counter
gpuledger_device_idle_seconds_total{{gpu_uuid="GPU-h100"}} 0
# TYPE gpuledger_device_unattributed_seconds_total counter
gpuledger_device_unattributed_seconds_total{{gpu_uuid="GPU-h100"}} 0
# TYPE gpuledger_device_memory_total_bytes gauge
gpuledger_device_memory_total_bytes{{gpu_uuid="GPU-h100"}} 85899345920
# TYPE gpuledger_container_allocated_gpu_seconds_total counter
gpuledger_container_allocated_gpu_seconds_total{{{pod}}} {t}
# TYPE gpuledger_container_compute_gpu_seconds_total counter
gpuledger_container_compute_gpu_seconds_total{{{pod}}} {t}
# TYPE gpuledger_container_memory_byte_seconds_total counter
gpuledger_container_memory_byte_seconds_total{{{pod}}} {mem}
# TYPE gpuledger_container_sm_active_gpu_seconds_total counter
gpuledger_container_sm_active_gpu_seconds_total{{{pod}}} {sm}
# TYPE gpuledger_container_sm_occupancy_gpu_seconds_total counter
gpuledger_container_sm_occupancy_gpu_seconds_total{{{pod}}} {occupancy}
# TYPE gpuledger_container_tensor_active_gpu_seconds_total counter
gpuledger_container_tensor_active_gpu_seconds_total{{{pod}}} 0
# TYPE gpuledger_container_dram_active_gpu_seconds_total counter
gpuledger_container_dram_active_gpu_seconds_total{{{pod}}} {dram}
# TYPE gpuledger_container_memory_used_bytes gauge
gpuledger_container_memory_used_bytes{{{pod}}} 10737418240
# TYPE gpuledger_container_attribution_info gauge
gpuledger_container_attribution_info{{activity_source="measured:gpm",compute_source="measured:process-samples",{pod},memory_source="measured",share_source=""}} 1
)",
      fmt::arg("t", t), fmt::arg("pod", kPod), fmt::arg("mem", t * 10737418240.0),
      fmt::arg("sm", t * 0.05), fmt::arg("occupancy", t * 0.02), fmt::arg("dram", t * 0.03));
}

// An older agent (an L4, no GPM): no activity counters, attribution_info without the new labels.
std::string OlderAgent(double t) {
  constexpr const char* kPod =
      R"(container="main",gpu_uuid="GPU-l4",namespace="web",pod="api-0",pod_uid="uid-api-0")";
  return fmt::format(
      R"(gpuledger_device_info{{gpu_model="L4",gpu_uuid="GPU-l4",mig_profile="",node="node-b",parent_uuid="",sharing_mode="exclusive"}} 1
gpuledger_device_metered_seconds_total{{gpu_uuid="GPU-l4"}} {t}
gpuledger_device_busy_seconds_total{{gpu_uuid="GPU-l4"}} {t}
gpuledger_device_idle_seconds_total{{gpu_uuid="GPU-l4"}} 0
gpuledger_device_unattributed_seconds_total{{gpu_uuid="GPU-l4"}} 0
gpuledger_device_memory_total_bytes{{gpu_uuid="GPU-l4"}} 25769803776
gpuledger_container_allocated_gpu_seconds_total{{{pod}}} {t}
gpuledger_container_compute_gpu_seconds_total{{{pod}}} {t}
gpuledger_container_memory_byte_seconds_total{{{pod}}} {mem}
gpuledger_container_attribution_info{{compute_source="measured:process-samples",{pod},memory_source="measured"}} 1
)",
      fmt::arg("t", t), fmt::arg("pod", kPod), fmt::arg("mem", t * 1073741824.0));
}

TargetScrape Parse(const std::string& instance, Micros at, const std::string& text) {
  auto parsed = prometheus::ParseExposition(text);
  EXPECT_TRUE(parsed) << parsed.error().message;
  TargetScrape s{instance, at, {}};
  if (parsed) s.samples = std::move(parsed->samples);
  return s;
}

TEST(ActivityEndToEnd, StarvedGpuIsClassifiedInTheReportJson) {
  CounterLedger ledger("c1", nullptr);
  // Agents up for 1000 s at the hour; scraped again an hour later.
  ledger.Feed(Parse("a:9400", kH0, GpmAgent(1000)));
  ledger.Feed(Parse("b:9400", kH0, OlderAgent(1000)));
  ledger.Feed(Parse("a:9400", kH0 + kMicrosPerHour, GpmAgent(4600)));
  ledger.Feed(Parse("b:9400", kH0 + kMicrosPerHour, OlderAgent(4600)));
  const auto hours = ledger.TakeTouched();
  ASSERT_EQ(hours.size(), 2u);

  gpuledger::testing::TempDir dir("gpuledger-activity-e2e");
  auto store = store::OpenSqliteLedger((dir.path() / "ledger.db").string());
  ASSERT_TRUE(store) << store.error().message;
  ASSERT_TRUE((*store)->WriteHours(hours));
  auto devices = (*store)->ReadDeviceHours({});
  auto usage = (*store)->ReadUsage({});
  ASSERT_TRUE(devices && usage);
  ASSERT_EQ(usage->size(), 2u);
  // The ledger row holds the exact integers: 3600 s x 5% = 180 s of SM activity.
  const UsageRow& train = usage->at(0).consumer.ref.pod == "train-0" ? usage->at(0) : usage->at(1);
  EXPECT_EQ(train.compute_us, kMicrosPerHour);
  EXPECT_EQ(train.activity.sm_active_us, 180 * kMicrosPerSecond);
  EXPECT_EQ(train.activity.sm_occupancy_us, 72 * kMicrosPerSecond);
  EXPECT_EQ(train.activity.dram_active_us, 108 * kMicrosPerSecond);
  EXPECT_EQ(train.activity_quality, Quality::kMeasured);
  EXPECT_EQ(train.activity_rule, "gpm");

  auto r = *report::BuildReport(*devices, *usage, *report::ParseGroupBy("pod"), cost::Policy{},
                                cost::IdleHandling{}, kH0, kH0 + kMicrosPerHour);
  const auto j = nlohmann::json::parse(report::ReportToJson(r));
  ASSERT_EQ(j["rows"].size(), 2u);
  for (const auto& row : j["rows"]) {
    const auto& u = row["utilization"];
    if (row["key"] == "ml/train-0") {
      EXPECT_EQ(u["class"], "busy-but-starved") << row.dump(2);
      EXPECT_EQ(u["basis"], "gpm");
      EXPECT_DOUBLE_EQ(u["signals"]["gpu_util"].get<double>(), 1.0);
      EXPECT_DOUBLE_EQ(u["signals"]["sm_active"].get<double>(), 0.05);
      EXPECT_EQ(row["activity"]["sm_active_gpu_us"], 180 * kMicrosPerSecond);
      EXPECT_EQ(row["activity"]["source"], "measured:gpm");
    } else {
      EXPECT_EQ(row["key"], "web/api-0");
      // The older agent: NVML says 100%, nothing can tell a starved GPU apart.
      EXPECT_EQ(u["class"], "healthy") << row.dump(2);
      EXPECT_EQ(u["basis"], "nvml-only");
      EXPECT_EQ(row["activity"]["source"], "none");
      EXPECT_EQ(row["activity"]["sm_active_gpu_us"], 0);
      EXPECT_EQ(row["share_source"], "");
    }
  }
}

}  // namespace
}  // namespace gpuledger::ingest
