// Rightsizing read from the ledger a day at a time (the rows streamed into each workload's
// figures, never held) against the whole-window computation (PlanRightsizing over every row
// the store reads back), on random ledgers in SQLite and PostgreSQL: the same document byte for
// byte and the same demand series, for windows that start and end inside days, every
// percentile, a namespace, the CLI's report, the server's read service and the days read in two
// halves at once (appended), from rows and from the days kept for rightsizing; and every
// recommendation offered replays within its allowance on its own window, and no consolidation
// plan puts more than one GPU's memory or compute on one GPU in any hour.
#include "ledger/rightsize.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "http/gzip.h"
#include "ledger/billing_reads.h"
#include "recommendations/rightsize_days.h"
#include "recommendations/rightsize_json.h"
#include "report/window.h"
#include "store_test_env/store_test_env.h"

namespace gpuledger::ledger {
namespace {

using store::testing::Hour;
using store::testing::StoreKind;
using store::testing::StoreKindName;

const char* const kNamespaces[] = {"ml", "web", "research"};

// `hours` hours of 6 GPUs (H100s on demand, L4s on spot): Deployments whose replicas come and
// go across GPUs, Jobs and bare pods, some sharing a GPU; rows with and without histograms;
// host processes and unresolved ones beside them; hours nobody recorded.
std::vector<LedgerHour> RandomLedger(std::mt19937_64& rng, int hours) {
  auto below = [&](std::int64_t n) {
    return static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(n));
  };
  std::vector<LedgerHour> out;
  for (int h = 0; h < hours; ++h)
    for (int g = 0; g < 6; ++g) {
      if (below(10) == 0) continue;
      LedgerHour lh;
      DeviceHour& d = lh.device;
      d.hour_us = Hour(h);
      d.cluster = "c";
      d.node = g < 3 ? "node-a" : "node-b";
      d.gpu = GpuUuid("GPU-" + std::to_string(g));
      d.gpu_model = g < 4 ? "H100-80GB" : "L4";
      d.sharing = g == 2 ? SharingMode::kTimeSlicing : SharingMode::kExclusive;
      d.pricing_class = g < 4 ? "on-demand" : "spot";
      d.price_nanos = g < 4 ? 6'880'000'000 : 700'000'000 + below(1000);
      d.metered_us = below(6) == 0 ? kMicrosPerHour / 2 + below(1000) : kMicrosPerHour;
      d.unmetered_us = kMicrosPerHour - d.metered_us;
      d.memory_total_bytes = (g < 4 ? 80LL : 24LL) << 30;
      // GPUs 0, 1 and 3 each run one small Deployment throughout (a consolidation plan packs
      // them by their p95); the one on GPU 3 bursts to 85% for whole hours its histograms do not
      // show at p95 (every tenth hour), so the plan's replay must move it.
      const bool small = g == 0 || g == 1 || g == 3;
      const int consumers = small ? 1 : g == 2 ? 1 + below(3) : below(2);
      GpuMicros allocated = 0, compute = 0;
      for (int c = 0; c < consumers; ++c) {
        UsageRow u;
        u.hour_us = d.hour_us;
        u.gpu = d.gpu;
        const int kind = small ? 2 : below(12);
        const int ns = small ? 0 : below(3);
        const int owner = small ? 0 : below(3);
        const std::string pod = "p" + std::to_string(owner) + "-" + std::to_string(below(4));
        if (kind == 0) {
          u.consumer.ref = ConsumerRef{std::string(kHostNamespace), "host", PodUid(""),
                                       "dcgm-" + std::to_string(c)};
        } else if (kind == 1) {
          u.consumer.ref = ConsumerRef{std::string(kUnresolvedNamespace), "pid-7", PodUid(""),
                                       std::to_string(c)};
        } else {
          u.consumer.ref =
              ConsumerRef{kNamespaces[ns], pod, PodUid(pod + "-uid"), "c" + std::to_string(c)};
          u.consumer.owner_kind = kind < 8 ? "Deployment" : kind < 10 ? "Job" : "";
          u.consumer.owner_name = u.consumer.owner_kind.empty() ? ""
                                  : small                       ? "small-" + std::to_string(g)
                                                                : "w" + std::to_string(owner);
        }
        u.node = d.node;
        u.gpu_model = d.gpu_model;
        u.sharing = d.sharing;
        u.device_id = d.gpu.value;
        u.allocated_us = consumers == 1 ? d.metered_us : d.metered_us / consumers;
        // Owner 0's workloads use little (consolidation packs them), the others anything.
        u.compute_us = below(u.allocated_us / (owner == 0 ? 4 : 1) + 1);
        if (g == 3 && h % 10 == 0) u.compute_us = u.allocated_us * 85 / 100;
        u.memory_kib_s = below(1'000'000);
        u.peak_memory_bytes = static_cast<Bytes>(below(owner == 0 ? 20'000 : 70'000)) << 20;
        u.compute_quality = below(3) == 0 ? Quality::kEstimated : Quality::kMeasured;
        u.compute_rule = u.compute_quality == Quality::kEstimated ? "process-samples" : "";
        u.memory_quality = Quality::kMeasured;
        if (below(3) != 0) {
          for (std::size_t b = 0; b < u.histogram.compute.size(); ++b)
            u.histogram.compute[b] = below(3) == 0 && (owner != 0 || b < 3) ? below(60) : 0;
          for (auto& m : u.histogram.memory) m = below(2) == 0 ? below(60) : 0;
        }
        allocated += u.allocated_us;
        compute += u.compute_us;
        lh.usage.push_back(std::move(u));
      }
      d.unallocated_us = d.metered_us - allocated;
      d.busy_us = compute;
      d.idle_us = d.metered_us - compute;
      out.push_back(std::move(lh));
    }
  return out;
}

// The plan from every row of the window at once, as the document prints it.
std::string WholeWindowDocument(store::LedgerStore& store, const recommendations::RightsizeQuery& q,
                                const cost::Catalog& catalog,
                                recommendations::RightsizePlan* plan_out) {
  auto extent = store.Extent();
  EXPECT_TRUE(extent.ok());
  auto window = report::ResolveWindow(q.window, *extent);
  EXPECT_TRUE(window.ok());
  auto devices = ledger::ReadPricedDeviceHours(store, *window);
  auto usage = store.ReadUsage(*window);
  EXPECT_TRUE(devices.ok() && usage.ok());
  recommendations::RightsizeOptions o;
  o.summary.from_us = window->from_us;
  o.summary.to_us = window->to_us;
  o.summary.namespace_name = q.namespace_name;
  o.summary.compute_percentile = q.percentile == "p50"   ? rightsizing::Percentile::kP50
                                 : q.percentile == "p99" ? rightsizing::Percentile::kP99
                                                         : rightsizing::Percentile::kP95;
  o.summary.models_by_class = recommendations::ModelsByClass(catalog);
  o.recommend.compute_percentile = o.summary.compute_percentile;
  auto plan = recommendations::PlanRightsizing(*devices, *usage, o);
  EXPECT_TRUE(plan.ok()) << plan.error().message;
  *plan_out = *plan;
  return recommendations::RightsizeToJson({std::move(*plan), *window, 1.2, q.percentile});
}

class RightsizeLedger : public store::testing::EachStoreTest {};

TEST_P(RightsizeLedger, ReadADayAtATimeEqualsTheWholeWindow) {
  std::mt19937_64 rng(20261207);
  const Status written = store_->WriteHours(RandomLedger(rng, 101));  // 4 days and 5 hours
  ASSERT_TRUE(written.ok()) << written.error().message;

  const cost::Catalog catalog = cost::DefaultCatalog();
  ledger::ReadService reads;
  int compared = 0, workloads = 0, gpu_hours = 0, replayed = 0, plans = 0;
  // From rows alone, then with the whole days kept for rightsizing as a server keeps them.
  for (const bool kept : {false, true}) {
    if (kept) {
      auto days =
          recommendations::KeepRightsizeDays(*store_, {Hour(0), Hour(101)}, [] { return false; });
      ASSERT_TRUE(days.ok()) << days.error().message;
      ASSERT_EQ(*days, 4);
    }
    for (const char* window : {"all", "30h", "2d", "77h", "1h"})
      for (const char* percentile : {"p50", "p95", "p99"})
        for (const char* space : {"", "ml"}) {
          recommendations::RightsizeQuery q;
          q.window = window;
          q.percentile = percentile;
          q.namespace_name = space;
          SCOPED_TRACE(std::string(window) + " " + percentile + " '" + space + "'");
          recommendations::RightsizePlan whole;
          const std::string expected = WholeWindowDocument(*store_, q, catalog, &whole);
          // The CLI's report, the server's read service, and the days read in two halves at once.
          for (int way = 0; way < 3; ++way) {
            auto read =
                ReadRightsizePlan(*store_, way == 1 ? &reads : nullptr, q, catalog,
                                  way == 2 ? store::StoreOpener([&] { return ledger_->Open(); })
                                           : store::StoreOpener());
            ASSERT_TRUE(read.ok()) << read.error().message;
            ASSERT_EQ(recommendations::RightsizeToJson(*read), expected);
            ASSERT_EQ(read->plan.workloads.size(), whole.workloads.size());
            for (std::size_t i = 0; i < whole.workloads.size(); ++i) {
              // Every offered recommendation replays within its allowance on its own window.
              const rightsizing::Recommendation& best = read->plan.workloads[i].ranked.front();
              if (best.replay) {
                EXPECT_LE(best.replay->misfit_hours, best.replay->allowed_hours);
                ++replayed;
              }
              const recommendations::DemandSeries& a = read->plan.workloads[i].summary.demand;
              EXPECT_EQ(a, whole.workloads[i].summary.demand);
              gpu_hours += static_cast<int>(a.compute.size());
            }
            // No plan puts more than one GPU's memory or compute on one of its GPUs in any hour:
            // the moved workloads' busiest GPUs, hour by hour, added per GPU of the plan.
            std::map<std::string, const recommendations::WorkloadAdvice*> by_key;
            for (const recommendations::WorkloadAdvice& a : read->plan.workloads)
              by_key[a.summary.usage.workload] = &a;
            for (const rightsizing::ConsolidationPlan& plan : read->plan.consolidation) {
              std::map<std::pair<int, Micros>, std::pair<double, Bytes>> load;
              Bytes card = 0;
              for (const rightsizing::Move& m : plan.moves) {
                const recommendations::WorkloadSummary& s = by_key.at(m.workload)->summary;
                EXPECT_NE(by_key.at(m.workload)->ranked.front().action,
                          rightsizing::Action::kRelease)
                    << m.workload;
                card = s.usage.gpu_memory_bytes;
                for (std::size_t h = 0; h < s.demand.hours.size(); ++h) {
                  const std::size_t busiest = s.demand.Gpus(h).first;
                  auto& [compute, memory] = load[{m.target_gpu, s.demand.hours[h]}];
                  compute += s.demand.compute[busiest];
                  memory += Bytes{s.demand.memory_mib[busiest]} * kMiB;
                }
              }
              for (const auto& [at, sum] : load) {
                EXPECT_LE(sum.first, 1.0 + 1e-5) << plan.gpu_model << " GPU " << at.first;
                EXPECT_LE(sum.second, card) << plan.gpu_model << " GPU " << at.first;
              }
              ++plans;
            }
            workloads += static_cast<int>(whole.workloads.size());
            ++compared;
          }
        }
  }
  EXPECT_EQ(compared, 180);
  EXPECT_GT(workloads, 300);  // the windows hold workloads, not empty plans
  EXPECT_GT(gpu_hours, workloads);
  EXPECT_GT(replayed, 0);
  EXPECT_GT(plans, 0);
}

// A kept day is what is read of it (a day kept empty has no workload), and one that does not
// read (damaged) is read from its rows instead, so the answer stays the whole window's.
TEST_P(RightsizeLedger, KeptDaysAreReadAndDamagedOnesAreNot) {
  std::mt19937_64 rng(7);
  ASSERT_TRUE(store_->WriteHours(RandomLedger(rng, 48)).ok());
  const cost::Catalog catalog = cost::DefaultCatalog();
  recommendations::RightsizeQuery q;
  q.window = "all";
  recommendations::RightsizePlan whole;
  const std::string expected = WholeWindowDocument(*store_, q, catalog, &whole);
  ASSERT_FALSE(whole.workloads.empty());

  auto keep = [&](Micros day, const std::string& bytes) {
    auto generation = store_->Generation();
    ASSERT_TRUE(generation.ok());
    auto written =
        store_->WriteDayRollup(day, recommendations::RightsizeDayKind(), *generation, bytes);
    ASSERT_TRUE(written.ok() && *written);
  };
  auto read = [&] {
    auto answer = ReadRightsizePlan(*store_, nullptr, q, catalog);
    EXPECT_TRUE(answer.ok()) << answer.error().message;
    return answer.ok() ? *answer : recommendations::RightsizeAnswer{};
  };
  auto kept =
      recommendations::KeepRightsizeDays(*store_, {Hour(0), Hour(48)}, [] { return false; });
  ASSERT_TRUE(kept.ok() && *kept == 2);
  auto kinds = store_->KeptDays(recommendations::RightsizeDayKind(), {Hour(0), Hour(48)});
  ASSERT_TRUE(kinds.ok());
  EXPECT_EQ(*kinds, (std::vector<Micros>{Hour(0), Hour(24)}));
  EXPECT_EQ(recommendations::RightsizeToJson(read()), expected);

  recommendations::WorkloadHours nothing;
  nothing.Seal();
  keep(Hour(0), http::Gzip(nothing.Encode()));
  for (const recommendations::WorkloadAdvice& a : read().plan.workloads)
    for (Micros hour : a.summary.demand.hours)
      EXPECT_GE(hour, Hour(24)) << a.summary.usage.workload;

  keep(Hour(0), "not a day");
  EXPECT_EQ(recommendations::RightsizeToJson(read()), expected);
  keep(Hour(0), http::Gzip("\x07"));  // another format
  EXPECT_EQ(recommendations::RightsizeToJson(read()), expected);
}

INSTANTIATE_TEST_SUITE_P(Stores, RightsizeLedger,
                         ::testing::Values(StoreKind::kSqlite, StoreKind::kPostgres),
                         [](const auto& info) { return StoreKindName(info.param); });

}  // namespace
}  // namespace gpuledger::ledger
