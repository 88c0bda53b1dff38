#include "rightsizing/recommend.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace gpuledger::rightsizing {
namespace {

constexpr Bytes kGB = 1'000'000'000;
// H100-80GB per GPU-hour: p5.48xlarge at $55.04 / 8 GPUs = $6.88.
constexpr Nanos kH100Hourly = 6'880'000'000;

WorkloadUsage Training() {
  WorkloadUsage u;
  u.workload = "ml/Job/train-llm";
  u.gpu_model = "H100-80GB";
  u.pool = "p5";
  u.gpus_held_ppd = 8 * kWholeGpu;
  u.gpus_used = 2;
  u.memory_peak_bytes = 60 * kGiB;
  u.memory_p99_bytes = 58 * kGiB;
  u.compute_p50 = 0.80;
  u.compute_p95 = 0.95;
  u.compute_p99 = 0.99;
  u.hours_observed = 10 * 24;
  u.coverage = 0.98;
  u.gpu_memory_bytes = 80 * kGiB;
  u.hourly_price_nanos = kH100Hourly;
  return u;
}

TEST(Recommend, TrainingJobHoldingEightUsingTwo) {
  auto recs = Recommend(Training(), RightsizingOptions{});
  ASSERT_EQ(recs.size(), 1u);
  const Recommendation& r = recs[0];
  EXPECT_EQ(r.action, Action::kFewerGpus);
  EXPECT_EQ(ActionName(r.action), "fewer-gpus");
  EXPECT_EQ(r.target, "2 GPUs");
  EXPECT_EQ(r.recommended_ppd, 2 * kWholeGpu);
  // By hand: 6 GPUs freed x $6.88 x 730 h = $30,134.40 = 30,134,400,000,000
  // nanos.
  EXPECT_EQ(r.monthly_saving_nanos, 6 * kH100Hourly * 730);
  EXPECT_EQ(r.monthly_saving_nanos, 30'134'400'000'000);
  EXPECT_EQ(r.current_hourly_nanos, 8 * kH100Hourly);
  EXPECT_EQ(r.recommended_hourly_nanos, 2 * kH100Hourly);
  EXPECT_EQ(r.confidence, "high");
  EXPECT_DOUBLE_EQ(r.days_observed, 10);
  ASSERT_GE(r.reasons.size(), 3u);
  EXPECT_NE(r.reasons[0].find("Request 2 GPUs instead of 8.00 H100-80GB GPUs"), std::string::npos)
      << r.reasons[0];
  EXPECT_NE(r.reasons[2].find("$30,134.40 a month"), std::string::npos) << r.reasons[2];
}

TEST(Recommend, BusyWorkloadIsKept) {
  WorkloadUsage u = Training();
  u.gpus_used = 8;
  auto recs = Recommend(u, RightsizingOptions{});
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].action, Action::kKeep);
  EXPECT_EQ(recs[0].monthly_saving_nanos, 0);
  EXPECT_NE(recs[0].reasons[0].find("no smaller layout saves money"), std::string::npos);
}

TEST(Recommend, NoDataIsKeptWithLowConfidence) {
  WorkloadUsage u = Training();
  u.hours_observed = 0;
  u.coverage = 0;
  auto recs = Recommend(u, RightsizingOptions{});
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].action, Action::kKeep);
  EXPECT_EQ(recs[0].confidence, "low");
}

// A small inference pod on a whole H100-80GB: 7 GiB peak, p95 compute 12%.
WorkloadUsage Inference() {
  WorkloadUsage u = Training();
  u.workload = "web/Deployment/embedder";
  u.gpus_held_ppd = kWholeGpu;
  u.gpus_used = 0.12;
  u.memory_peak_bytes = 7 * kGiB;
  u.memory_p99_bytes = 6 * kGiB;
  u.compute_p50 = 0.05;
  u.compute_p95 = 0.12;
  u.compute_p99 = 0.20;
  u.hours_observed = 36;
  u.coverage = 0.75;
  return u;
}

TEST(Recommend, SmallInferenceRankedSharing) {
  auto recs = Recommend(Inference(), RightsizingOptions{});
  // 7 GiB x 1.2 = 9.02e9 bytes. MIG 1g.10gb: 1/7 of the GPU, saving 6/7 x 6.88
  // x 730 = 4304.64 exactly (6.88 x 730 = 5022.40; x 6/7 = 4304.914285714...).
  // Time-slice: 1/8 needs compute 0.12 <= 0.125 and 9.02e9 x 8 = 72.2e9 <= 80
  // GiB: saving 7/8 x 5022.40 = 4394.60.
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].action, Action::kTimeSlice);
  EXPECT_EQ(recs[0].target, "1/8");
  EXPECT_EQ(recs[0].monthly_saving_nanos, 4'394'600'000'000);
  EXPECT_EQ(recs[1].action, Action::kMigProfile);
  EXPECT_EQ(recs[1].target, "1g.10gb");
  // 5,022,400,000,000 x 6 / 7 = 4,304,914,285,714.28... -> rounded half up:
  // ...714.
  EXPECT_EQ(recs[1].monthly_saving_nanos, 4'304'914'285'714);
  EXPECT_EQ(recs[0].confidence, "medium");  // 1.5 days, 75% coverage
}

TEST(Recommend, CheaperModel) {
  WorkloadUsage u = Inference();
  u.memory_peak_bytes = 12 * kGiB;                        // x 1.2 = 14.4 GiB: 1g.20gb on an H100
  u.other_models = {{"L4", 23034 * kMiB, 1'668'800'000},  // $13.3504 / 8
                    {"T4", 15360 * kMiB, 978'000'000},    // 15 GiB: holds 14.4 GiB
                    {"A10G", 24 * kGiB, 2'036'000'000}};
  auto recs = Recommend(u, RightsizingOptions{});
  ASSERT_FALSE(recs.empty());
  // T4: 15 GiB >= 14.4 GiB fits and is cheapest: 6.88 - 0.978 = 5.902 x 730 =
  // 4308.46.
  auto it = std::find_if(recs.begin(), recs.end(),
                         [](const Recommendation& r) { return r.action == Action::kCheaperModel; });
  ASSERT_NE(it, recs.end());
  EXPECT_EQ(it->target, "T4");
  EXPECT_EQ(it->monthly_saving_nanos, 4'308'460'000'000);
  EXPECT_NE(it->reasons[0].find("Its compute was not measured"), std::string::npos);
  // Above the compute threshold no cheaper model is offered.
  u.compute_p95 = 0.6;
  for (const auto& r : Recommend(u, RightsizingOptions{}))
    EXPECT_NE(r.action, Action::kCheaperModel);
}

TEST(Recommend, MoneyIsRoundedHalfUpOnce) {
  // 1/3 of a GPU held at 1 nano an hour: 240,240,000 ppd x 1 / 720,720,000 =
  // 0.333 -> 0.
  EXPECT_EQ(HourlyCost(kWholeGpu / 3, 1), 0);
  EXPECT_EQ(HourlyCost(kWholeGpu / 2, 1), 1);  // 0.5 rounds up
  EXPECT_EQ(MonthlySaving(kWholeGpu, 1, kWholeGpu / 2, 1), 365);
  EXPECT_EQ(MonthlySaving(kWholeGpu, 3, kWholeGpu / 7, 3),
            1877);  // 6/7 x 2190 = 1877.14
}

TEST(Recommend, ConfidenceThresholds) {
  RightsizingOptions o;
  EXPECT_EQ(Confidence(7, 0.9, o), "high");
  EXPECT_EQ(Confidence(6.9, 1.0, o), "medium");
  EXPECT_EQ(Confidence(30, 0.6, o), "medium");
  EXPECT_EQ(Confidence(30, 0.4, o), "low");
  EXPECT_EQ(Confidence(0.5, 1.0, o), "low");
}

}  // namespace
}  // namespace gpuledger::rightsizing
