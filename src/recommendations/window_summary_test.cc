#include "recommendations/window_summary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "recommendations/rightsize_plan.h"
#include "rightsizing/recommend.h"

namespace gpuledger::recommendations {
namespace {

constexpr Micros kH = kMicrosPerHour;
constexpr Nanos kH100Hourly = 6'880'000'000;  // $6.88 per GPU-hour
constexpr Bytes kCard = 80LL * 1000 * 1000 * 1000;

DeviceHour Device(Micros hour, const std::string& gpu) {
  DeviceHour d;
  d.hour_us = hour;
  d.node = "node-a";
  d.gpu = GpuUuid{gpu};
  d.gpu_model = "H100-80GB";
  d.pricing_class = "on-demand";
  d.price_nanos = kH100Hourly;
  d.metered_us = kH;
  d.memory_total_bytes = kCard;
  return d;
}

UsageRow Row(Micros hour, const std::string& gpu, const std::string& pod, GpuMicros compute,
             Bytes peak) {
  UsageRow u;
  u.hour_us = hour;
  u.gpu = GpuUuid{gpu};
  u.consumer.ref = {"ml", pod, PodUid{pod + "-uid"}, "main"};
  u.consumer.owner_kind = "Job";
  u.consumer.owner_name = "train";
  u.node = "node-a";
  u.gpu_model = "H100-80GB";
  u.allocated_us = kH;
  u.compute_us = compute;
  u.peak_memory_bytes = peak;
  return u;
}

// A training job holding 8 H100s for 48 hours and keeping 2 of them busy (90% of each, in the
// histogram's top bucket), the other 6 idle (every sample at most 5%).
struct EightGpuJob {
  std::vector<DeviceHour> devices;
  std::vector<UsageRow> usage;
  EightGpuJob() {
    for (int h = 0; h < 48; ++h)
      for (int g = 0; g < 8; ++g) {
        const std::string gpu = "GPU-" + std::to_string(g);
        devices.push_back(Device(h * kH, gpu));
        const bool busy = g < 2;
        UsageRow u =
            Row(h * kH, gpu, "train-0", busy ? kH * 9 / 10 : kH / 100, busy ? 60 * kGiB : 2 * kGiB);
        // 60 cycles an hour: busy GPUs above 4/7 every cycle, idle ones at <= 5%.
        u.histogram.compute[busy ? 5 : 0] = 60;
        u.histogram.memory[busy ? 3 : 0] = 60;
        usage.push_back(u);
      }
  }
};

TEST(WindowSummary, EightGpusHeldTwoUsedGivesFewerGpusWithTheSavingByHand) {
  EightGpuJob job;
  SummaryOptions o;
  auto s = *SummarizeWorkloads(job.devices, job.usage, o);
  ASSERT_EQ(s.size(), 1u);
  const auto& w = s[0].usage;
  EXPECT_EQ(w.workload, "ml/Job/train");
  EXPECT_EQ(w.gpus_held_ppd, 8 * kWholeGpu);  // 8 x 48 GPU-hours over 48 hours
  EXPECT_EQ(w.gpus_used, 2.0);                // 2 busy GPUs in every hour
  EXPECT_EQ(w.hourly_price_nanos, kH100Hourly);
  EXPECT_EQ(w.hours_observed, 48.0);
  EXPECT_EQ(w.coverage, 1.0);
  // Sized by the busy GPU-hours only: every one of their samples is in the top bucket.
  EXPECT_EQ(w.compute_p95, 1.0);
  EXPECT_EQ(w.memory_peak_bytes, 60 * kGiB);
  EXPECT_EQ(s[0].compute_samples, 2 * 48 * 60);
  EXPECT_EQ(s[0].pricing_class, "on-demand");

  auto recs = rightsizing::Recommend(w, {});
  ASSERT_FALSE(recs.empty());
  EXPECT_EQ(recs[0].action, rightsizing::Action::kFewerGpus);
  EXPECT_EQ(recs[0].target, "2 GPUs");
  // 6 GPUs freed x $6.88 x 730 h = $30,134.40.
  EXPECT_EQ(recs[0].monthly_saving_nanos, 30'134'400'000'000);
  // The same through the plan `gpuledger rightsize` prints (issue 30).
  auto plan = PlanRightsizing(job.devices, job.usage, {});
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->workloads.size(), 1u);
  EXPECT_EQ(plan->workloads[0].ranked[0].target, "2 GPUs");
  EXPECT_EQ(plan->total_monthly_saving_nanos, 30'134'400'000'000);

  // The demand series: 8 GPUs every hour, the two busy ones first, at 0.9 of a GPU.
  const DemandSeries& d = s[0].demand;
  ASSERT_EQ(d.hours.size(), 48u);
  ASSERT_EQ(d.compute.size(), 48u * 8);
  const auto [begin, end] = d.Gpus(5);
  ASSERT_EQ(end - begin, 8u);
  EXPECT_FLOAT_EQ(d.compute[begin], 0.9f);
  EXPECT_FLOAT_EQ(d.compute[begin + 1], 0.9f);
  EXPECT_FLOAT_EQ(d.compute[begin + 2], 0.01f);
  EXPECT_EQ(d.memory_mib[begin], 60u * 1024);
  EXPECT_EQ(d.memory_mib[begin + 2], 2u * 1024);
}

TEST(WindowSummary, HistogramPercentilesAreBucketUpperBounds) {
  std::array<std::int64_t, UsageHistogram::kComputeBuckets> counts{};
  EXPECT_EQ(HistogramPercentile(counts, rightsizing::Percentile::kP95), 0.0);
  // 100 samples: 90 at <= 5%, 6 in (1/7, 2/7], 4 in (2/7, 3/7].
  counts = {90, 0, 6, 4, 0, 0};
  EXPECT_EQ(HistogramPercentile(counts, rightsizing::Percentile::kP50), 0.05);
  EXPECT_EQ(HistogramPercentile(counts, rightsizing::Percentile::kP95), 2.0 / 7);  // rank 95
  EXPECT_EQ(HistogramPercentile(counts, rightsizing::Percentile::kP99), 3.0 / 7);  // rank 99
}

TEST(WindowSummary, WithoutHistogramsFallsBackToHourlyMeansAndSaysSo) {
  std::vector<DeviceHour> devices;
  std::vector<UsageRow> usage;
  // 20 hours of one GPU: 19 at 10%, one at 40%; memory peaks 5 GiB, one hour 9 GiB.
  for (int h = 0; h < 20; ++h) {
    devices.push_back(Device(h * kH, "GPU-0"));
    UsageRow u =
        Row(h * kH, "GPU-0", "web-1", h == 7 ? kH * 4 / 10 : kH / 10, h == 7 ? 9 * kGiB : 5 * kGiB);
    u.consumer.owner_kind = "Deployment";
    u.consumer.owner_name = "web";
    usage.push_back(u);
  }
  auto s = *SummarizeWorkloads(devices, usage, {});
  ASSERT_EQ(s.size(), 1u);
  const auto& w = s[0].usage;
  EXPECT_EQ(w.workload, "ml/Deployment/web");
  EXPECT_DOUBLE_EQ(w.compute_p50, 0.1);
  EXPECT_DOUBLE_EQ(w.compute_p95, 0.1);  // rank 19 of 20
  EXPECT_DOUBLE_EQ(w.compute_p99, 0.4);  // rank 20
  EXPECT_EQ(w.memory_peak_bytes, 9 * kGiB);
  EXPECT_EQ(w.memory_p99_bytes, 9 * kGiB);
  EXPECT_NE(s[0].compute_basis.find("hourly means"), std::string::npos);
  EXPECT_EQ(w.gpus_held_ppd, kWholeGpu);
}

// Issue 59: the 8 GPUs as 8 replicas of a Deployment, a GPU each, 2 busy: scale it to 2
// replicas ("fewer-replicas"), the same saving as 2 GPUs; a Deployment whose pod holds several
// GPUs is asked for fewer GPUs a pod.
TEST(WindowSummary, ReplicasOfAGpuEachAreScaledDownAndPodsOfManyGpusAskFewer) {
  EightGpuJob job;
  for (UsageRow& u : job.usage) {
    u.consumer.owner_kind = "Deployment";
    u.consumer.ref.pod = "train-" + u.gpu.value;
    u.consumer.ref.pod_uid = PodUid{u.consumer.ref.pod + "-uid"};
  }
  auto plan = PlanRightsizing(job.devices, job.usage, {});
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->workloads.size(), 1u);
  const WorkloadAdvice& replicas = plan->workloads[0];
  EXPECT_EQ(replicas.summary.usage.workload, "ml/Deployment/train");
  EXPECT_TRUE(replicas.summary.usage.replica_per_gpu);
  EXPECT_EQ(ToString(replicas.ranked[0].action), "fewer-replicas");
  EXPECT_EQ(replicas.ranked[0].target, "2 replicas");
  EXPECT_EQ(replicas.ranked[0].monthly_saving_nanos, 30'134'400'000'000);  // 6 x $6.88 x 730

  EightGpuJob one_pod;  // one pod holding all 8
  for (UsageRow& u : one_pod.usage) u.consumer.owner_kind = "Deployment";
  auto pod = PlanRightsizing(one_pod.devices, one_pod.usage, {});
  ASSERT_TRUE(pod) << pod.error().message;
  EXPECT_FALSE(pod->workloads[0].summary.usage.replica_per_gpu);
  EXPECT_EQ(ToString(pod->workloads[0].ranked[0].action), "fewer-gpus");
}

TEST(WindowSummary, WindowNamespaceAndHostConsumersAreFiltered) {
  EightGpuJob job;
  UsageRow host = job.usage[0];
  host.consumer.ref = {std::string(kHostNamespace), "user:alice", PodUid{}, ""};
  job.usage.push_back(host);
  SummaryOptions o;
  o.namespace_name = "other";
  EXPECT_TRUE(SummarizeWorkloads(job.devices, job.usage, o)->empty());
  o.namespace_name = "";
  o.from_us = 40 * kH;
  auto s = *SummarizeWorkloads(job.devices, job.usage, o);
  ASSERT_EQ(s.size(), 1u);  // the host consumer is left out
  EXPECT_EQ(s[0].usage.hours_observed, 8.0);
}

}  // namespace
}  // namespace gpuledger::recommendations

namespace gpuledger::recommendations {
namespace {

// Issue 30: percentiles from hourly histograms merged over a window equal those of the raw
// per-cycle observations within one bucket, on random data. Each cycle's share is bucketed as
// the agent's collector does (Prometheus `le`: the first bound at or above it, else +Inf),
// hours are summed into ledger rows, some hours are missing (missed scrapes, restarts), and the
// window summary merges them. Every hour keeps at least half its cycles above 5% of a GPU, so
// every hour counts as busy and the raw comparison is over the same cycles.
TEST(WindowSummary, MergedHourlyHistogramsGiveTheRawPercentilesBucket) {
  std::mt19937_64 rng(20261205);
  const auto bucket_of = [](double share) {
    std::size_t i = 0;
    while (i + 1 < kComputeShareBounds.size() && share > kComputeShareBounds[i]) ++i;
    return static_cast<int>(i);
  };
  for (int trial = 0; trial < 200; ++trial) {
    std::uniform_int_distribution<int> hours_dist(1, 72), cycles_dist(30, 60);
    std::uniform_real_distribution<double> busy(0.0501, 1.0), idle(0.0, 0.05), coin(0.0, 1.0);
    const int hours = hours_dist(rng);
    const double idle_fraction = coin(rng) * 0.5;
    std::vector<DeviceHour> devices;
    std::vector<UsageRow> usage;
    std::vector<double> raw;
    for (int h = 0; h < hours; ++h) {
      if (coin(rng) < 0.1) continue;  // an hour nobody recorded
      devices.push_back(Device(h * kH, "GPU-0"));
      UsageRow u = Row(h * kH, "GPU-0", "train-0", 0, 10 * kGiB);
      const int cycles = cycles_dist(rng);
      double sum = 0;
      for (int c = 0; c < cycles; ++c) {
        const double share = c < cycles / 2 || coin(rng) >= idle_fraction ? busy(rng) : idle(rng);
        raw.push_back(share);
        sum += share;
        ++u.histogram.compute[static_cast<std::size_t>(bucket_of(share))];
      }
      u.compute_us = static_cast<GpuMicros>(sum / cycles * kH);
      usage.push_back(u);
    }
    if (raw.empty()) continue;
    std::sort(raw.begin(), raw.end());
    for (const auto& [p, percent] : {std::pair{rightsizing::Percentile::kP50, 50},
                                     {rightsizing::Percentile::kP95, 95},
                                     {rightsizing::Percentile::kP99, 99}}) {
      SummaryOptions o;
      o.compute_percentile = p;
      auto s = *SummarizeWorkloads(devices, usage, o);
      ASSERT_EQ(s.size(), 1u);
      const double merged = p == rightsizing::Percentile::kP50   ? s[0].usage.compute_p50
                            : p == rightsizing::Percentile::kP95 ? s[0].usage.compute_p95
                                                                 : s[0].usage.compute_p99;
      // Nearest rank: the ceil(p x n)-th smallest observation.
      const std::size_t rank = (static_cast<std::size_t>(percent) * raw.size() + 99) / 100;
      const int raw_bucket = bucket_of(raw[std::max<std::size_t>(rank, 1) - 1]);
      const int merged_bucket = bucket_of(merged);
      EXPECT_LE(std::abs(raw_bucket - merged_bucket), 1) << "trial " << trial << " p" << percent;
      EXPECT_EQ(merged, kComputeShareBounds[static_cast<std::size_t>(raw_bucket)])
          << "trial " << trial << " p" << percent << ": the bucket's upper bound exactly";
    }
  }
}

}  // namespace
}  // namespace gpuledger::recommendations
