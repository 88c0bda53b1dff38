#include "recommendations/replay.h"

#include <gtest/gtest.h>

namespace gpuledger::recommendations {
namespace {

using rightsizing::Action;
using rightsizing::Layout;
using rightsizing::Percentile;
using rightsizing::Recommendation;

constexpr std::uint32_t kGiBInMib = 1024;

// 100 hours of one GPU at 20% and 10 GiB, but for 3 hours at 30%, 2 hours at 25 GiB and 1 hour
// with a second GPU busy beside it; hour 100 held no GPU.
DemandSeries Bursty() {
  DemandSeries d;
  for (int h = 0; h <= 100; ++h) {
    d.hours.push_back(h * kMicrosPerHour);
    d.first.push_back(static_cast<std::uint32_t>(d.compute.size()));
    if (h == 100) continue;
    float share = 0.2f;
    std::uint32_t memory = 10 * kGiBInMib;
    if (h < 3) share = 0.3f;
    if (h == 3 || h == 4) memory = 25 * kGiBInMib;
    d.compute.push_back(share);
    d.memory_mib.push_back(memory);
    if (h == 5 || h == 6) {  // a second GPU: busy in hour 5, idle in hour 6 (it fits)
      d.compute.push_back(h == 5 ? 0.5f : 0.01f);
      d.memory_mib.push_back(40 * kGiBInMib);
    }
  }
  return d;
}

Recommendation Move(Action action, Layout layout, Nanos now, Nanos after, Nanos saving) {
  Recommendation r;
  r.workload = "ml/Deployment/api";
  r.action = action;
  r.layout = layout;
  r.current_hourly_nanos = now;
  r.recommended_hourly_nanos = after;
  r.monthly_saving_nanos = saving;
  r.confidence = "high";
  r.days_observed = 100.0 / 24;
  r.coverage = 1;
  r.reasons = {"the move", "confidence"};
  return r;
}

TEST(Replay, CountsEachMisfitHourByCauseAgainstThePercentilesAllowance) {
  // A quarter time-slice: 25% of the GPU, 20 GiB.
  const Recommendation slice =
      Move(Action::kTimeSlice, {1, 0.25, 20 * kGiB}, 4'000'000'000, 1'000'000'000, 1);
  const rightsizing::Replayed p95 = Replay(slice, Bursty(), Percentile::kP95);
  EXPECT_EQ(p95.hours, 100);  // hour 100 held nothing
  EXPECT_EQ(p95.compute_hours, 3);
  EXPECT_EQ(p95.memory_hours, 2);
  EXPECT_EQ(p95.gpus_hours, 1);  // hour 5; hour 6's second GPU was idle
  EXPECT_EQ(p95.misfit_hours, 6);
  EXPECT_EQ(p95.allowed_hours, 5);  // 5% of 100
  EXPECT_TRUE(p95.risky());
  EXPECT_EQ(p95.cost_before_nanos, 400'000'000'000);
  EXPECT_EQ(p95.cost_after_nanos, 100'000'000'000);
  const rightsizing::Replayed p50 = Replay(slice, Bursty(), Percentile::kP50);
  EXPECT_EQ(p50.allowed_hours, 50);
  EXPECT_FALSE(p50.risky());

  // Two whole GPUs of the same model (memory 0: the same GPUs) fit every hour.
  const rightsizing::Replayed two =
      Replay(Move(Action::kFewerGpus, {2, 1.0, 0}, 8, 4, 1), Bursty(), Percentile::kP95);
  EXPECT_EQ(two.misfit_hours, 0);
  // A slower model, a third as fast: 0.3 of this GPU is 0.9 of it (fits), 0.35 would not.
  const rightsizing::Replayed slower = Replay(
      Move(Action::kCheaperModel, {1, 1.0 / 3, 24 * kGiB}, 8, 4, 1), Bursty(), Percentile::kP95);
  EXPECT_EQ(slower.compute_hours, 0);
  EXPECT_EQ(slower.memory_hours, 2);
  EXPECT_EQ(slower.gpus_hours, 1);
  // Release fits no busy hour: it computed in all 100.
  const rightsizing::Replayed gone =
      Replay(Move(Action::kRelease, {}, 8, 0, 1), Bursty(), Percentile::kP95);
  EXPECT_EQ(gone.gpus_hours, 100);
  EXPECT_TRUE(gone.risky());
}

TEST(Replay, RiskyMovesRankLastWithLowConfidenceAndAKeepLeadsWhenAllAre) {
  rightsizing::WorkloadUsage usage;
  usage.workload = "ml/Deployment/api";
  usage.gpu_model = "A100-80GB";
  usage.gpus_held_ppd = kWholeGpu;
  rightsizing::RightsizingOptions options;
  options.min_days_high = 1;

  // The bigger saving is risky; the MIG profile (3/7, 40 GiB) fits.
  std::vector<Recommendation> ranked = {
      Move(Action::kTimeSlice, {1, 0.25, 20 * kGiB}, 4'000'000'000, 1'000'000'000, 300),
      Move(Action::kMigProfile, {1, 3.0 / 7, 40 * kGiB}, 4'000'000'000, 2'000'000'000, 200)};
  ReplayRanked(ranked, usage, Bursty(), options);
  ASSERT_EQ(ranked.size(), 2u);
  EXPECT_EQ(ranked[0].action, Action::kMigProfile);
  EXPECT_EQ(ranked[0].confidence, "high");
  EXPECT_EQ(ranked[0].reasons[1],
            "Replayed against its own 100 hours in the window: it would not have fit 1 hour "
            "(1 hour with more GPUs busy than it would have), within the 5 hours allowed at "
            "p95; those hours would have cost $200.00 instead of $400.00.");
  EXPECT_EQ(ranked[1].action, Action::kTimeSlice);
  EXPECT_EQ(ranked[1].confidence, "low");
  EXPECT_NE(ranked[1].reasons[1].find("it would not have fit 6 hours (2 hours with a memory peak "
                                      "above what it would hold, 3 hours with compute above what "
                                      "it would do, 1 hour with more GPUs busy than it would "
                                      "have), more than the 5 hours allowed"),
            std::string::npos)
      << ranked[1].reasons[1];

  std::vector<Recommendation> risky = {Move(Action::kRelease, {}, 4, 0, 400)};
  ReplayRanked(risky, usage, Bursty(), options);
  ASSERT_EQ(risky.size(), 2u);
  EXPECT_EQ(risky[0].action, Action::kKeep);
  EXPECT_FALSE(risky[0].replay);
  EXPECT_EQ(risky[0].recommended_ppd, kWholeGpu);
  EXPECT_EQ(risky[0].monthly_saving_nanos, 0);
  EXPECT_EQ(risky[1].action, Action::kRelease);
  EXPECT_TRUE(risky[1].replay->risky());
}

}  // namespace
}  // namespace gpuledger::recommendations
