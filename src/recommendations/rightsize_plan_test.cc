#include "recommendations/rightsize_plan.h"

#include <gtest/gtest.h>

namespace gpuledger::recommendations {
namespace {

constexpr Micros kH = kMicrosPerHour;
constexpr Nanos kHourly = 4'000'000'000;  // $4 per GPU-hour
constexpr Bytes kCard = 80LL * 1000 * 1000 * 1000;
constexpr Nanos kMonth = 730;

// `workloads` Deployments, each alone on a whole A100-80GB for 24 hours at 10% compute and
// 5 GB of memory: each fits a 1g.10gb, and together they fit one card.
struct SmallOnes {
  std::vector<DeviceHour> devices;
  std::vector<UsageRow> usage;
  explicit SmallOnes(int workloads) {
    for (int h = 0; h < 24; ++h)
      for (int w = 0; w < workloads; ++w) {
        const std::string gpu = "GPU-" + std::to_string(w);
        DeviceHour d;
        d.hour_us = h * kH;
        d.node = "node-a";
        d.gpu = GpuUuid{gpu};
        d.gpu_model = "A100-80GB";
        d.pricing_class = "on-demand";
        d.price_nanos = kHourly;
        d.metered_us = kH;
        d.memory_total_bytes = kCard;
        devices.push_back(d);
        UsageRow u;
        u.hour_us = h * kH;
        u.gpu = GpuUuid{gpu};
        const std::string name = "svc-" + std::to_string(w);
        u.consumer.ref = {"ml", name + "-0", PodUid{name + "-uid"}, "main"};
        u.consumer.owner_kind = "Deployment";
        u.consumer.owner_name = name;
        u.node = "node-a";
        u.gpu_model = "A100-80GB";
        u.allocated_us = kH;
        u.compute_us = kH / 10;
        u.peak_memory_bytes = 5'000'000'000;
        u.histogram.compute[1] = 60;  // every cycle in the bucket up to 1/7
        u.histogram.memory[0] = 60;
        usage.push_back(u);
      }
  }
};

TEST(RightsizePlan, TheTotalNeverCountsAGpuTwice) {
  SmallOnes two(2);
  auto plan = PlanRightsizing(two.devices, two.usage, {});
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->workloads.size(), 2u);
  // Each alone: a 1g.10gb (1/7 of the card) instead of the card, 6/7 x $4 x 730 h each.
  const Nanos each = (6 * kHourly * kMonth + 3) / 7;  // rounded half up once
  for (const WorkloadAdvice& a : plan->workloads) {
    EXPECT_EQ(ToString(a.ranked[0].action), "mig-profile");
    EXPECT_EQ(a.ranked[0].target, "1g.10gb");
    EXPECT_EQ(a.ranked[0].monthly_saving_nanos, each);
  }
  // Together they fit one card: the plan frees one GPU, $2,920 a month.
  ASSERT_EQ(plan->consolidation.size(), 1u);
  EXPECT_EQ(plan->consolidation[0].gpus_after, 1);
  EXPECT_EQ(plan->consolidation[0].monthly_saving_nanos, kHourly * kMonth);
  EXPECT_TRUE(plan->consolidation[0].optimal);
  // The two are alternatives for the same GPUs: the larger, 2 x 6/7 of a card, is the total,
  // never their sum.
  EXPECT_EQ(plan->total_monthly_saving_nanos, 2 * each);
  EXPECT_EQ(plan->total_basis, "each workload's best action");
}

// Issue 59: a plan's "before" summed each workload's GPUs while it ran, so 158 jobs of an hour
// each over a day read as 158 GPUs held. It is now the GPU-hours they held over the hours of the
// window's rows, and "after" the GPU-hours of the plan's GPUs in the hours their workloads ran.
TEST(RightsizePlan, APlanCountsTheGpuHoursHeldNotEachWorkloadsGpusWhileItRan) {
  // Two that never run at once (hours 0-11, 12-23), each alone on its GPU: together they held
  // one GPU all day, and one GPU is what a plan would need: nothing to consolidate.
  SmallOnes apart(2);
  std::vector<UsageRow> usage;
  for (const UsageRow& u : apart.usage)
    if ((u.gpu.value == "GPU-0") == (u.hour_us < 12 * kH)) usage.push_back(u);
  auto none = PlanRightsizing(apart.devices, usage, {});
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_TRUE(none->consolidation.empty());

  // Two all day and a third for 2 hours, each on its own GPU: 50 GPU-hours over 24 hours held,
  // 24 on the plan's one GPU; it frees 26/24 of a GPU, x $4 x 730 h.
  SmallOnes three(3);
  usage.clear();
  for (const UsageRow& u : three.usage)
    if (u.gpu.value != "GPU-2" || u.hour_us < 2 * kH) usage.push_back(u);
  auto plan = PlanRightsizing(three.devices, usage, {});
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->consolidation.size(), 1u);
  const rightsizing::ConsolidationPlan& p = plan->consolidation[0];
  EXPECT_EQ(p.gpus_after, 1);
  EXPECT_EQ(p.moves.size(), 3u);
  EXPECT_EQ(p.gpus_before_ppd, (50 * kWholeGpu + 12) / 24);
  EXPECT_EQ(p.gpus_freed_ppd, p.gpus_before_ppd - kWholeGpu);
  EXPECT_EQ(p.monthly_saving_nanos,
            rightsizing::MonthlySaving(p.gpus_freed_ppd, kHourly, 0, kHourly));
  EXPECT_EQ(p.reasons[0],
            "3 low-use workloads of A100-80GB in pool 'on-demand' held 2.08 GPUs on average over "
            "the 24 hours of the window's rows (50.0 GPU-hours); on 1 GPU (packed by peaks, the "
            "fewest possible) they would have needed 1.00 on average (24 GPU-hours: a GPU counts "
            "in an hour when one of its workloads ran then).");
}

// One workload that cannot share a card with the rest must not cost the rest their plan: two
// small ones on whole cards and a third holding half a card with 60 GB need two cards together
// (2.5 held, 0.5 freed); the two alone need one (2 held, 1 freed), so the third stays where it is.
TEST(RightsizePlan, AWorkloadThatFreesLessPackedIsLeftWhereItIs) {
  SmallOnes three(3);
  for (UsageRow& u : three.usage)
    if (u.gpu.value == "GPU-2") {
      u.allocated_us = kH / 2;
      u.peak_memory_bytes = 60'000'000'000;
    }
  auto plan = PlanRightsizing(three.devices, three.usage, {});
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->consolidation.size(), 1u);
  const rightsizing::ConsolidationPlan& p = plan->consolidation[0];
  EXPECT_EQ(p.gpus_after, 1);
  ASSERT_EQ(p.moves.size(), 2u);
  for (const rightsizing::Move& m : p.moves) EXPECT_NE(m.workload, "ml/Deployment/svc-2");
  EXPECT_EQ(p.gpus_freed_ppd, kWholeGpu);
  EXPECT_EQ(p.monthly_saving_nanos, kHourly * kMonth);
  ASSERT_FALSE(p.left_alone.empty());
  EXPECT_EQ(p.left_alone[0],
            "ml/Deployment/svc-2: packed with the others it frees less ($2,920.00 a month "
            "without it)");
}

TEST(RightsizePlan, ANamedWorkloadAloneAndAnUnknownOneIsAnError) {
  SmallOnes three(3);
  RightsizeOptions o;
  o.workload = "ml/Deployment/svc-1";
  auto one = PlanRightsizing(three.devices, three.usage, o);
  ASSERT_TRUE(one) << one.error().message;
  ASSERT_EQ(one->workloads.size(), 1u);
  EXPECT_EQ(one->workloads[0].summary.usage.workload, "ml/Deployment/svc-1");
  o.workload = "ml/Deployment/nope";
  auto none = PlanRightsizing(three.devices, three.usage, o);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(none.error().message.rfind("workload: 'ml/Deployment/nope'", 0), 0u)
      << none.error().message;
}

TEST(RightsizePlan, GpusHeldReadAsPeopleSayThem) {
  EXPECT_EQ(FormatGpus(8 * kWholeGpu), "8 GPUs");
  EXPECT_EQ(FormatGpus(kWholeGpu), "1 GPU");
  EXPECT_EQ(FormatGpus(kWholeGpu / 4), "0.25 GPU");
}

TEST(RightsizePlan, CandidateModelsComeFromTheCatalogCheapestFirst) {
  const auto models = ModelsByClass(cost::DefaultCatalog());
  ASSERT_TRUE(models.count("on-demand"));
  const auto& on_demand = models.at("on-demand");
  ASSERT_GE(on_demand.size(), 3u);
  for (std::size_t i = 1; i < on_demand.size(); ++i)
    EXPECT_LE(on_demand[i - 1].hourly_price_nanos, on_demand[i].hourly_price_nanos);
  for (const auto& m : on_demand) EXPECT_GT(m.memory_bytes, 0) << m.gpu_model;
}

}  // namespace
}  // namespace gpuledger::recommendations

namespace gpuledger::recommendations {
namespace {

// Issue 58: a saving of 45,990,000,000,000,000,000 nanos (a month at $63M a GPU-hour) printed as
// $9,096,511,852.58. A month past int64 nanos is an error naming the workload; just under it,
// every saving is exact and at most that month.
TEST(RightsizePlan, SavingsPastInt64AreAnErrorNeverAWrappedFigure) {
  SmallOnes over(2);
  for (DeviceHour& d : over.devices) d.price_nanos = 63'000'000'000'000'000;
  auto refused = PlanRightsizing(over.devices, over.usage, {});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("passes the largest amount"), std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("ml/Deployment/svc-"), std::string::npos)
      << refused.error().message;

  SmallOnes under(2);
  constexpr Nanos kPrice = 6'000'000'000'000'000;  // a month: 4.38e18 nanos
  for (DeviceHour& d : under.devices) d.price_nanos = kPrice;
  auto plan = PlanRightsizing(under.devices, under.usage, {});
  ASSERT_TRUE(plan) << plan.error().message;
  const Nanos each = static_cast<Nanos>((__int128{6} * kPrice * kMonth + 3) / 7);
  for (const WorkloadAdvice& a : plan->workloads) {
    ASSERT_FALSE(a.ranked.empty());
    EXPECT_EQ(a.ranked[0].monthly_saving_nanos, each);
  }
  EXPECT_EQ(plan->total_monthly_saving_nanos, 2 * each);
}

}  // namespace
}  // namespace gpuledger::recommendations
