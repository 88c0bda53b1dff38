#include "ingest/dcgm_hourly.h"

#include <cmath>
#include <limits>

#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "ingest/prometheus_source.h"

namespace gpuledger::ingest {
namespace {

UsageRow Row(std::string pod, GpuMicros compute_us) {
  UsageRow r;
  r.consumer.ref.pod_uid = PodUid{std::move(pod)};
  r.compute_us = compute_us;
  return r;
}

LedgerHour Hour(GpuMicros metered_us, std::vector<UsageRow> rows) {
  LedgerHour h;
  h.device.gpu = GpuUuid{"GPU-1"};
  h.device.metered_us = metered_us;
  h.usage = std::move(rows);
  return h;
}

TEST(DcgmHourly, OneRowGetsTheGpusWholeActivity) {
  LedgerHour h = Hour(3'600'000'000, {Row("a", 1'000'000'000)});
  DcgmHourlyFractions f{.sm_active = 0.25, .sm_occupancy = 0.5, .tensor_active = 0.1};
  EXPECT_EQ(FillActivityFromDcgmHourly(h, f), 1);
  const UsageRow& r = h.usage[0];
  EXPECT_EQ(r.activity, (Activity{900'000'000, 1'800'000'000, 360'000'000, 0}));
  EXPECT_EQ(r.activity_quality, Quality::kEstimated);
  EXPECT_EQ(r.activity_rule, "dcgm-exporter+prometheus-hourly");
}

TEST(DcgmHourly, SeveralRowsSplitByComputeExactly) {
  // 10 µs of SM activity over weights 1:1:1 -> 4, 3, 3 (largest remainder, ties to the first);
  // the row with no compute gets nothing and keeps quality none.
  LedgerHour h = Hour(10, {Row("a", 5), Row("b", 5), Row("idle", 0), Row("c", 5)});
  EXPECT_EQ(FillActivityFromDcgmHourly(h, {.sm_active = 1.0, .dram_active = 0.3}), 3);
  EXPECT_EQ(h.usage[0].activity.sm_active_us, 4);
  EXPECT_EQ(h.usage[1].activity.sm_active_us, 3);
  EXPECT_EQ(h.usage[3].activity.sm_active_us, 3);
  EXPECT_EQ(h.usage[0].activity.dram_active_us + h.usage[1].activity.dram_active_us +
                h.usage[3].activity.dram_active_us,
            3);
  EXPECT_EQ(h.usage[2].activity, Activity{});
  EXPECT_EQ(h.usage[2].activity_quality, Quality::kNone);
  EXPECT_EQ(h.usage[0].activity_rule, "compute-share+dcgm-exporter+prometheus-hourly");
  EXPECT_EQ(h.usage[3].activity_quality, Quality::kEstimated);
}

TEST(DcgmHourly, UnevenComputeWeights) {
  // 3,600 µs metered, 50% SM active = 1,800 over compute 1:2 -> 600 and 1,200.
  LedgerHour h = Hour(3'600, {Row("a", 100), Row("b", 200)});
  FillActivityFromDcgmHourly(h, {.sm_active = 0.5});
  EXPECT_EQ(h.usage[0].activity.sm_active_us, 600);
  EXPECT_EQ(h.usage[1].activity.sm_active_us, 1'200);
}

TEST(DcgmHourly, FractionsAreClampedAndNanIgnored) {
  LedgerHour h = Hour(1'000, {Row("a", 1)});
  FillActivityFromDcgmHourly(h, {.sm_active = 1.7,
                                 .sm_occupancy = -0.2,
                                 .tensor_active = std::numeric_limits<double>::quiet_NaN()});
  EXPECT_EQ(h.usage[0].activity, (Activity{1'000, 0, 0, 0}));
}

TEST(DcgmHourly, LeavesTheAgentsOwnActivityMigAndEmptyAlone) {
  LedgerHour measured = Hour(100, {Row("a", 10), Row("b", 10)});
  measured.usage[0].activity = {50, 0, 0, 0};
  measured.usage[0].activity_quality = Quality::kMeasured;
  measured.usage[0].activity_rule = "gpm";
  const LedgerHour before = measured;
  EXPECT_EQ(FillActivityFromDcgmHourly(measured, {.sm_active = 0.9}), 0);
  EXPECT_EQ(measured.usage[1].activity_quality, Quality::kNone);
  EXPECT_EQ(measured.usage[0].activity, before.usage[0].activity);

  LedgerHour mig = Hour(100, {Row("a", 10)});
  mig.device.sharing = SharingMode::kMig;
  EXPECT_EQ(FillActivityFromDcgmHourly(mig, {.sm_active = 0.9}), 0);

  LedgerHour no_fields = Hour(100, {Row("a", 10)});
  EXPECT_EQ(FillActivityFromDcgmHourly(no_fields, {}), 0);
  EXPECT_EQ(no_fields.usage[0].activity_quality, Quality::kNone);

  LedgerHour unmetered = Hour(0, {Row("a", 10)});
  EXPECT_EQ(FillActivityFromDcgmHourly(unmetered, {.sm_active = 0.9}), 0);
}

// A Prometheus HTTP API that knows dcgm-exporter averages: classic names for GPU-1 (and a MIG
// instance on it), 4.9 names for GPU-2 and, to be ignored, for GPU-1 too.
struct FakeDcgmPrometheus {
  FakeDcgmPrometheus() {
    server.Get("/prom/api/v1/query", [this](const httplib::Request& req, httplib::Response& res) {
      queries.push_back(req.get_param_value("query") + "@" + req.get_param_value("time"));
      const std::string q = req.get_param_value("query");
      std::string result;
      auto series = [&](std::string labels, std::string value) {
        if (!result.empty()) result += ",";
        result += fmt::format(R"({{"metric":{{{}}},"value":[3600,"{}"]}})", labels, value);
      };
      if (q == "avg_over_time(DCGM_FI_PROF_SM_ACTIVE[3600s])") {
        series(R"("UUID":"GPU-1","gpu":"0","Hostname":"n1")", "0.25");
        series(R"("UUID":"GPU-1","GPU_I_ID":"3")", "0.9");
        series(R"("UUID":"GPU-3")", "NaN");
      } else if (q == "avg_over_time(DCGM_FI_PROF_SM_UTIL_RATIO[3600s])") {
        series(R"("UUID":"GPU-1")", "0.75");
        series(R"("UUID":"GPU-2")", "0.5");
      } else if (q == "avg_over_time(DCGM_FI_PROF_DRAM_UTIL_RATIO[3600s])") {
        series(R"("UUID":"GPU-2")", "0.125");
      }
      res.set_content(
          fmt::format(R"({{"status":"success","data":{{"resultType":"vector","result":[{}]}}}})",
                      result),
          "application/json");
    });
    port = server.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { server.listen_after_bind(); });
  }
  ~FakeDcgmPrometheus() {
    server.stop();
    thread.join();
  }
  httplib::Server server;
  int port = 0;
  std::thread thread;
  std::vector<std::string> queries;  // only read after the client returned
};

TEST(PrometheusDcgm, QueriesTheHoursAveragesAndFillsRowsWithoutActivity) {
  FakeDcgmPrometheus prom;
  auto client = PrometheusClient::Create(fmt::format("http://127.0.0.1:{}/prom", prom.port));
  ASSERT_TRUE(client.ok()) << client.error().message;
  const Micros hour = 7 * kMicrosPerHour;

  auto averages = (*client)->FetchDcgmHourly(hour);
  ASSERT_TRUE(averages.ok()) << averages.error().message;
  ASSERT_EQ(prom.queries.size(), 8u);
  EXPECT_EQ(prom.queries[0], "avg_over_time(DCGM_FI_PROF_SM_ACTIVE[3600s])@28800.000");
  EXPECT_EQ(averages->size(), 2u);                // GPU-3 had only NaN
  EXPECT_EQ((*client)->skipped_not_finite(), 1);  // and its NaN is counted (issue 29)
  EXPECT_EQ(averages->at("GPU-1"), (DcgmHourlyFractions{.sm_active = 0.25}));  // classic wins
  EXPECT_EQ(averages->at("GPU-2"), (DcgmHourlyFractions{.sm_active = 0.5, .dram_active = 0.125}));

  std::vector<LedgerHour> hours;
  hours.push_back(Hour(3'600'000'000, {Row("a", 100), Row("b", 300)}));
  hours.back().device.hour_us = hour;
  hours.push_back(Hour(1'800'000'000, {Row("c", 5)}));
  hours.back().device.hour_us = hour;
  hours.back().device.gpu = GpuUuid{"GPU-2"};
  hours.push_back(Hour(3'600'000'000, {Row("d", 5)}));  // a GPU dcgm-exporter does not know
  hours.back().device.hour_us = hour;
  hours.back().device.gpu = GpuUuid{"GPU-9"};
  prom.queries.clear();
  auto filled = FillActivityFromPrometheusDcgm(**client, hours);
  ASSERT_TRUE(filled.ok()) << filled.error().message;
  EXPECT_EQ(*filled, 3);
  EXPECT_EQ(prom.queries.size(), 8u);  // one round of queries for the one hour
  // GPU-1: 0.25 x 3,600 s = 900 s of SM activity, split 1:3.
  EXPECT_EQ(hours[0].usage[0].activity.sm_active_us, 225'000'000);
  EXPECT_EQ(hours[0].usage[1].activity.sm_active_us, 675'000'000);
  EXPECT_EQ(hours[0].usage[1].activity_rule, "compute-share+dcgm-exporter+prometheus-hourly");
  // GPU-2: one row over 1,800 s metered.
  EXPECT_EQ(hours[1].usage[0].activity, (Activity{900'000'000, 0, 0, 225'000'000}));
  EXPECT_EQ(hours[1].usage[0].activity_rule, "dcgm-exporter+prometheus-hourly");
  EXPECT_EQ(hours[2].usage[0].activity_quality, Quality::kNone);
}

TEST(PrometheusDcgm, ParserRejectsAnswersOfTheWrongShape) {
  DcgmHourlyByGpu out;
  EXPECT_FALSE(ParseDcgmVectorResponse("<html>", "DCGM_FI_PROF_SM_ACTIVE", out).ok());
  EXPECT_FALSE(
      ParseDcgmVectorResponse(R"({"status":"success","data":{"resultType":"matrix","result":[]}})",
                              "DCGM_FI_PROF_SM_ACTIVE", out)
          .ok());
  EXPECT_FALSE(
      ParseDcgmVectorResponse(R"({"status":"success","data":{"resultType":"vector","result":[]}})",
                              "DCGM_FI_DEV_GPU_UTIL", out)
          .ok());
  EXPECT_FALSE(
      ParseDcgmVectorResponse(
          R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"UUID":"GPU-1"},"value":[1,2]}]}})",
          "DCGM_FI_PROF_SM_ACTIVE", out)
          .ok());
  EXPECT_TRUE(out.empty());
}

// A range answer's timestamps come off the wire as doubles: one past the years gpuledger takes
// (or not a number) is the answer's error, not a wrapped instant (issue 35).
TEST(PrometheusRange, TimestampsOutsideTheRangeAreRefused) {
  auto answer = [](std::string_view t) {
    return fmt::format(
        R"({{"status":"success","data":{{"resultType":"matrix","result":[{{"metric":{{"__name__":"x","instance":"a:1"}},"values":[[{},"1"]]}}]}}}})",
        t);
  };
  std::vector<TargetScrape> out;
  ASSERT_TRUE(ParseMatrixResponse(answer("1717200000.5"), out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].at_us, 1'717'200'000'500'000);
  for (std::string_view bad : {"1e300", "-1e300", "1e17", "-5"}) {
    out.clear();
    const Status s = ParseMatrixResponse(answer(bad), out);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.error().message.find("timestamp"), std::string::npos) << s.error().message;
  }
}

}  // namespace
}  // namespace gpuledger::ingest
