#include "rightsizing/consolidation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "rightsizing/recommend.h"

namespace gpuledger::rightsizing {
namespace {

// Independent of the library: try every assignment of items to bins 0..n-1
// (restricted growth strings, so each set partition once) and keep the fewest
// bins that fit.
int BruteForceBins(const std::vector<PackItem>& items, std::int64_t cap_a, std::int64_t cap_b) {
  const int n = static_cast<int>(items.size());
  if (n == 0) return 0;
  int best = n;
  std::vector<int> bin(n, 0);
  // Enumerate restricted growth strings: bin[0] = 0, bin[i] <= max(bin[0..i-1])
  // + 1.
  while (true) {
    int used = *std::max_element(bin.begin(), bin.end()) + 1;
    if (used < best) {
      std::vector<std::int64_t> la(used, 0), lb(used, 0);
      bool ok = true;
      for (int i = 0; i < n && ok; ++i) {
        la[bin[i]] += items[i].a;
        lb[bin[i]] += items[i].b;
        ok = la[bin[i]] <= cap_a && lb[bin[i]] <= cap_b;
      }
      if (ok) best = used;
    }
    // Next string.
    int i = n - 1;
    for (; i > 0; --i) {
      int prefix_max = *std::max_element(bin.begin(), bin.begin() + i);
      if (bin[i] <= prefix_max) {
        ++bin[i];
        break;
      }
    }
    if (i == 0) break;
    std::fill(bin.begin() + i + 1, bin.end(), 0);
  }
  return best;
}

void ExpectValid(const Packing& p, const std::vector<PackItem>& items, std::int64_t cap_a,
                 std::int64_t cap_b) {
  ASSERT_EQ(p.bin_of.size(), items.size());
  std::vector<std::int64_t> la(p.bins, 0), lb(p.bins, 0);
  std::set<int> used;
  for (std::size_t i = 0; i < items.size(); ++i) {
    ASSERT_GE(p.bin_of[i], 0);
    ASSERT_LT(p.bin_of[i], p.bins);
    la[p.bin_of[i]] += items[i].a;
    lb[p.bin_of[i]] += items[i].b;
    used.insert(p.bin_of[i]);
  }
  for (int j = 0; j < p.bins; ++j) {
    EXPECT_LE(la[j], cap_a);
    EXPECT_LE(lb[j], cap_b);
  }
  EXPECT_EQ(static_cast<int>(used.size()), p.bins);  // no empty bin
}

TEST(PackTwoDimensional, RandomSetsEqualBruteForce) {
  std::mt19937 rng(12345);
  const std::int64_t cap = 100;
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 9);  // 1..9 items
    // Mixes of small and large items, so both dimensions bind.
    std::uniform_int_distribution<std::int64_t> size(0, trial % 3 == 0 ? 100 : 60);
    std::vector<PackItem> items;
    for (int i = 0; i < n; ++i) items.push_back({size(rng), size(rng)});
    const int optimum = BruteForceBins(items, cap, cap);

    Packing exact = PackTwoDimensional(items, cap, cap);  // n <= 12: exact
    ExpectValid(exact, items, cap, cap);
    EXPECT_TRUE(exact.optimal);
    EXPECT_EQ(exact.bins, optimum) << "trial " << trial;

    Packing ffd = PackTwoDimensional(items, cap, cap, /*exact_max_items=*/0);
    ExpectValid(ffd, items, cap, cap);
    EXPECT_GE(ffd.bins, optimum);
    EXPECT_LE(ffd.bins, optimum + 1) << "trial " << trial;  // FFD within one GPU here
  }
}

TEST(PackTwoDimensional, ElevenItemsExactEqualsBruteForce) {
  std::mt19937 rng(99);
  std::uniform_int_distribution<std::int64_t> size(5, 55);
  for (int trial = 0; trial < 4; ++trial) {
    std::vector<PackItem> items;
    for (int i = 0; i < 11; ++i) items.push_back({size(rng), size(rng)});
    Packing p = PackTwoDimensional(items, 100, 100);
    ExpectValid(p, items, 100, 100);
    EXPECT_TRUE(p.optimal);
    EXPECT_EQ(p.bins, BruteForceBins(items, 100, 100)) << "trial " << trial;
  }
}

TEST(PackTwoDimensional, TightKnownSet) {
  // Tight in both dimensions: the two full bins must each take one item of
  // every kind.
  std::vector<PackItem> items = {{50, 10}, {50, 10}, {40, 60}, {40, 60}, {10, 30}, {10, 30}};
  // Optimum: {50,10}+{40,60}+{10,30} = (100,100), twice: 2 bins.
  EXPECT_EQ(BruteForceBins(items, 100, 100), 2);
  Packing p = PackTwoDimensional(items, 100, 100);
  ExpectValid(p, items, 100, 100);
  EXPECT_EQ(p.bins, 2);
  EXPECT_TRUE(p.optimal);
}

TEST(PackTwoDimensional, LargeSetFirstFitOnly) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::int64_t> size(1, 40);
  std::vector<PackItem> items;
  for (int i = 0; i < 200; ++i) items.push_back({size(rng), size(rng)});
  Packing p = PackTwoDimensional(items, 100, 100);
  ExpectValid(p, items, 100, 100);
  std::int64_t sa = 0, sb = 0;
  for (auto& it : items) {
    sa += it.a;
    sb += it.b;
  }
  EXPECT_GE(p.bins, (std::max(sa, sb) + 99) / 100);
}

constexpr Nanos kA100Hourly = 3'430'881'250;  // p4de.24xlarge $27.44705 / 8

ConsolidationInput SixInferencePods() {
  ConsolidationInput in;
  in.gpu_model = "A100-80GB";
  in.pool = "p4de";
  in.gpu_memory_bytes = 80 * kGiB;
  in.hourly_price_nanos = kA100Hourly;
  // Each holds a whole GPU; 10 GiB peak (12 GiB with headroom), 15% p95
  // compute.
  for (int i = 0; i < 6; ++i)
    in.workloads.push_back({"web/Deployment/pod-" + std::to_string(i), 10 * kGiB, 0.15, kWholeGpu});
  in.workloads.push_back({"ml/Job/busy", 70 * kGiB, 0.9, kWholeGpu});  // not low-use
  return in;
}

TEST(PlanConsolidation, SixInferencePodsOntoTwoGpus) {
  ConsolidationInput in = SixInferencePods();
  // Compute 6 x 0.15 = 0.9 and memory 6 x 12 GiB = 72 GiB <= 80 GiB: all six
  // fit one GPU.
  ConsolidationPlan plan = PlanConsolidation(in, ConsolidationOptions{});
  EXPECT_EQ(plan.gpus_after, 1);
  EXPECT_TRUE(plan.optimal);
  EXPECT_EQ(plan.gpus_before_ppd, 6 * kWholeGpu);
  EXPECT_EQ(plan.gpus_freed_ppd, 5 * kWholeGpu);
  // 5 GPUs x $3.43088125 x 730 = $12,522.7165625 -> 12,522,716,562,500 nanos.
  EXPECT_EQ(plan.monthly_saving_nanos, 5 * kA100Hourly * 730);
  ASSERT_EQ(plan.moves.size(), 6u);
  for (const Move& m : plan.moves) EXPECT_EQ(m.target_gpu, 0);
  ASSERT_EQ(plan.left_alone.size(), 1u);
  EXPECT_NE(plan.left_alone[0].find("ml/Job/busy"), std::string::npos);

  // With 30% compute each: 1.8 GPUs of compute -> 2 GPUs, 4 freed.
  for (int i = 0; i < 6; ++i) in.workloads[i].compute_p95 = 0.3;
  plan = PlanConsolidation(in, ConsolidationOptions{});
  EXPECT_EQ(plan.gpus_after, 2);
  EXPECT_EQ(plan.monthly_saving_nanos, 4 * kA100Hourly * 730);
}

TEST(PlanConsolidation, MigSlices) {
  ConsolidationInput in = SixInferencePods();
  ConsolidationOptions o;
  o.mig = true;
  // 15% compute > 1/7 = 14.3%: two compute slices; 12 GiB = 12.9e9 bytes > 10
  // GB: 20 GB. So 2g.20gb (2 compute slices of 7, 2 memory slices of 8) each;
  // three fit a card (6 of 7 compute slices): 2 GPUs.
  ConsolidationPlan plan = PlanConsolidation(in, o);
  EXPECT_EQ(plan.gpus_after, 2);
  ASSERT_EQ(plan.moves.size(), 6u);
  for (const Move& m : plan.moves) EXPECT_EQ(m.profile, "2g.20gb");
  EXPECT_EQ(plan.monthly_saving_nanos, 4 * kA100Hourly * 730);

  // 12% compute: one slice, 1g.20gb (1 compute, 2 memory slices); six need 12
  // memory slices of 8: still 2 GPUs, though compute alone (6 of 7) would fit
  // one.
  for (int i = 0; i < 6; ++i) in.workloads[i].compute_p95 = 0.12;
  plan = PlanConsolidation(in, o);
  EXPECT_EQ(plan.gpus_after, 2);
  for (const Move& m : plan.moves) EXPECT_EQ(m.profile, "1g.20gb");
  // Four of them fill a card's memory slices.
  int on_first = 0;
  for (const Move& m : plan.moves) on_first += m.target_gpu == 0;
  EXPECT_EQ(on_first, 4);

  in.gpu_model = "L4";
  plan = PlanConsolidation(in, o);
  EXPECT_EQ(plan.gpus_after, 0);
  EXPECT_EQ(plan.left_alone.size(), in.workloads.size());
}

}  // namespace
}  // namespace gpuledger::rightsizing
