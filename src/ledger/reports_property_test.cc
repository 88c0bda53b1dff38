// The read service's reports against the plain computation (report::BuildReport over the rows
// the store reads back, priced as billed), integer for integer, on random ledgers in SQLite and
// PostgreSQL: every policy and idle handling, groupings, steps, windows and filters.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "billing/reconciled_prices.h"
#include "http/gzip.h"
#include "ledger/billing_reads.h"
#include "ledger/day_rollup.h"
#include "ledger/devices.h"
#include "ledger/export_rows.h"
#include "ledger/read_reports.h"
#include "ledger/read_service.h"
#include "ledger/reports.h"
#include "report/report_json.h"
#include "store/ledger_store.h"
#include "store_test_env/forwarding_store.h"
#include "store_test_env/store_test_env.h"

namespace gpuledger::ledger {
namespace {

using store::testing::Hour;
using store::testing::MakeTestLedger;
using store::testing::StoreKind;
using store::testing::StoreKindName;

// A report's rows as its document writes them (the rest of the report left empty).
std::string RowsText(const report::Report& r) {
  report::Report rows;
  rows.rows = r.rows;
  return report::ReportToJson(rows);
}

const char* const kRules[] = {"", "process-samples", "mps-thread-share", "device-activity",
                              "process-samples+device-activity"};
const char* const kNamespaces[] = {"ml", "web", "platform", "research"};

// A random ledger: `hours` hours of a few GPUs on two nodes, every sharing mode, consumers
// with pod and namespace labels that change over time, credits and unpriced hours, electricity
// parts, and bills for some node-days.
struct RandomLedger {
  std::vector<LedgerHour> hours;
  std::vector<Reconciliation> reconciliations;
};

// `relabel` false: every consumer keeps its labels throughout (as a ledger before schema 11 kept
// them).
RandomLedger MakeRandomLedger(std::mt19937_64& rng, int hours, bool relabel = true) {
  auto below = [&](int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); };
  RandomLedger out;
  const int gpus = 1 + below(5);
  for (int h = 0; h < hours; ++h) {
    for (int g = 0; g < gpus; ++g) {
      if (below(8) == 0) continue;  // a device-hour nobody recorded
      LedgerHour lh;
      DeviceHour& d = lh.device;
      d.hour_us = Hour(h);
      d.cluster = "c";
      d.node = g % 2 == 0 ? "node-a" : "node-b";
      d.gpu = GpuUuid("GPU-" + std::to_string(g));
      d.gpu_model = g == 3 ? "NVIDIA L4" : "NVIDIA H100";
      d.sharing = static_cast<SharingMode>(g % 6);
      d.pricing_class = "on-demand";
      d.price_state = below(20) == 0 ? PriceState::kUnpriced : PriceState::kPriced;
      d.price_nanos = d.price_state == PriceState::kUnpriced ? 0
                      : below(25) == 0                       ? -below(1'000'000)
                                                             : below(4'000'000'000);
      d.energy_price_nanos = below(3) == 0 && d.price_nanos > 0 ? d.price_nanos / 5 : 0;
      d.metered_us = below(5) == 0 ? below(static_cast<int>(kMicrosPerHour)) : kMicrosPerHour;
      d.unmetered_us = kMicrosPerHour - d.metered_us;
      d.memory_total_bytes = (below(2) == 0 ? 80LL : 24LL) << 30;
      const int consumers = below(4);
      GpuMicros allocated = 0;
      GpuMicros compute = 0;
      for (int c = 0; c < consumers; ++c) {
        UsageRow u;
        u.hour_us = d.hour_us;
        u.gpu = d.gpu;
        const int ns = below(4);
        const int pod = below(6);
        u.consumer.ref = ConsumerRef{kNamespaces[ns], "pod-" + std::to_string(pod),
                                     PodUid("uid-" + std::to_string(pod)), "c" + std::to_string(c)};
        u.consumer.owner_kind = below(2) == 0 ? "Deployment" : "";
        u.consumer.owner_name = u.consumer.owner_kind.empty() ? "" : "dep-" + std::to_string(pod);
        // Labels as they were in the hour (issue 38): pod 4 is relabelled halfway through, and
        // namespace platform's label changes twice a day.
        if (pod % 3 != 0)
          u.consumer.labels = {
              {"team", std::string(pod % 2 == 0 ? "alpha" : "beta") +
                           (relabel && pod == 4 && h >= hours / 2 ? "-relabelled" : "")}};
        if (ns != 1)
          u.consumer.namespace_labels = {
              {"team", "ns-team-" + std::to_string(ns) +
                           (relabel && ns == 2 && h % 24 >= 12 ? "-pm" : "")}};
        u.node = d.node;
        u.gpu_model = d.gpu_model;
        u.sharing = d.sharing;
        u.device_id = d.gpu.value + "/" + std::to_string(c);
        u.allocated_us = below(static_cast<int>(d.metered_us / 4 + 1));
        u.compute_us = below(static_cast<int>(u.allocated_us + 1));
        u.memory_kib_s = below(2) == 0 ? 0 : below(1'000'000'000);
        u.peak_memory_bytes = 1 << 20;
        u.energy_mj = below(3) == 0 ? 0 : below(1'000'000);
        u.compute_quality = static_cast<Quality>(below(4));
        u.memory_quality = Quality::kMeasured;
        u.compute_rule = kRules[below(5)];
        if (below(2) == 0) {
          u.activity = Activity{u.compute_us / 2, u.compute_us / 3, u.compute_us / 5, 7};
          u.activity_quality = static_cast<Quality>(below(3));
          u.activity_rule = kRules[below(5)];
        }
        u.share_source = below(4) == 0 ? "annotation" : "";
        if (below(40) == 0) {
          // Figures past the snapshot's packed widths (ledger/packed_ints.h), and at their
          // edges: kept exactly all the same.
          u.memory_kib_s = (std::int64_t{1} << 48) - 1 + below(3);
          u.energy_mj = (std::int64_t{1} << 32) - 2 + below(3);
          u.activity.dram_active_us = (std::int64_t{1} << 33) + below(1000);
        }
        allocated += u.allocated_us;
        compute += u.compute_us;
        lh.usage.push_back(std::move(u));
      }
      d.unallocated_us = d.metered_us - allocated;
      d.unattributed_us = below(3) == 0 ? 0 : below(1000);
      d.busy_us = compute + d.unattributed_us;
      d.idle_us = d.metered_us - d.busy_us;
      d.unattributed_memory_kib_s = below(1'000'000);
      d.idle_energy_mj = below(100'000);
      d.unattributed_energy_mj = below(100'000);
      d.energy_mj = d.idle_energy_mj + d.unattributed_energy_mj;
      if (below(40) == 0) {
        // Past the snapshot's packed widths (ledger/packed_figures.h): kept exactly.
        d.energy_mj += std::int64_t{1} << 32;
        d.unattributed_memory_kib_s = (std::int64_t{1} << 48) + below(1000);
      }
      out.hours.push_back(std::move(lh));
    }
  }
  for (int day = 0; day * 24 < hours; ++day)
    for (const char* node : {"node-a", "node-b"})
      if (below(2) == 0) {
        Reconciliation r;
        r.node = node;
        r.day_us = DayStart(Hour(day * 24));
        r.billed_nanos = below(10) == 0 ? -below(1000) : below(2'000'000'000);
        r.factor = "1/1";
        r.currency = "USD";
        r.bill_file = "bill.csv";
        out.reconciliations.push_back(r);
      }
  return out;
}

// An export's text as written.
struct TextSink final : ExportSink {
  std::string text;
  int restarts = 0;
  Status Restart() override {
    ++restarts;
    text.clear();
    return Status::Ok();
  }
  Status Write(std::string_view part) override {
    text += part;
    return Status::Ok();
  }
};

// The plain computation: priced device-hours and usage read back, one BuildReport per step,
// rows kept when their key's first level is the namespace or node the filter's clause names.
std::vector<std::string> PlainReports(store::LedgerStore& store, const ReportQuery& q,
                                      const std::string& only_first_level) {
  auto devices = ledger::ReadPricedDeviceHours(store, q.window);
  EXPECT_TRUE(devices.ok());
  auto usage = store.ReadUsage(q.window);
  EXPECT_TRUE(usage.ok());
  std::vector<std::string> out;
  const Micros step = q.step > 0 ? q.step : q.window.to_us - q.window.from_us;
  for (Micros t = q.window.from_us; t < q.window.to_us; t += step) {
    auto r = report::BuildReport(*devices, *usage, q.group_by, q.policy, q.idle, t,
                                 std::min(t + step, q.window.to_us));
    EXPECT_TRUE(r.ok()) << r.error().message;
    if (!only_first_level.empty())
      std::erase_if(r->rows, [&](const report::Row& row) {
        return !row.key.starts_with(only_first_level + "/") && row.key != only_first_level;
      });
    out.push_back(report::ReportToJson(*r));
  }
  return out;
}

// Every field of each GPU's summary, a line each: two lists compare as their texts.
std::string DevicesText(const std::vector<DeviceSummary>& devices) {
  std::string out;
  for (const DeviceSummary& d : devices) {
    const Placement& p = d.placement;
    out += fmt::format("{} {} {} {} {} {} {} [{}] {} ", p.gpu.value, p.cluster, p.node, p.gpu_model,
                       static_cast<int>(p.sharing), p.pricing_class, p.layout,
                       fmt::join(d.layouts, ","), d.memory_total_bytes);
    out += fmt::format("{} {} {} {} {} {} {} {}\n", d.metered_us, d.unmetered_us, d.busy_us,
                       d.idle_us, d.unattributed_us, d.unallocated_us, d.energy_mj, d.cost_nanos);
  }
  return out;
}

// `hour` with one more usage row, of a consumer no other row names, taken from its idle time:
// a late sample landing in an hour already written.
LedgerHour WithALateRow(LedgerHour hour) {
  UsageRow extra;
  extra.hour_us = hour.device.hour_us;
  extra.gpu = hour.device.gpu;
  extra.consumer.ref = ConsumerRef{"late", "pod-late", PodUid("uid-late"), "c"};
  extra.node = hour.device.node;
  extra.gpu_model = hour.device.gpu_model;
  extra.sharing = hour.device.sharing;
  extra.allocated_us = 1;
  hour.usage.push_back(extra);
  hour.device.unallocated_us -= 1;
  return hour;
}

// A bill for node-a's day starting at `day_us`, posted late: it reprices that day.
Reconciliation ALateBill(Micros day_us) {
  Reconciliation bill;
  bill.node = "node-a";
  bill.day_us = day_us;
  bill.billed_nanos = 123'456'789;
  bill.factor = "1/1";
  bill.currency = "USD";
  bill.bill_file = "late-bill.csv";
  return bill;
}

class ReportsProperty : public store::testing::EachStoreTest {};

TEST_P(ReportsProperty, EqualThePlainComputationIntegerForInteger) {
  std::mt19937_64 rng(20261205);
  const int hours = 60;
  const RandomLedger random = MakeRandomLedger(rng, hours);
  ASSERT_TRUE(store_->WriteHours(random.hours).ok());
  ASSERT_TRUE(store_->WriteReconciliations(random.reconciliations).ok());

  const char* const policies[] = {"allocation", "compute", "memory", "hybrid:0.35"};
  const char* const idles[] = {"keep", "share", "namespace:platform", "namespace:ml"};
  const char* const groupings[] = {
      "namespace", "label:team", "controller",       "node,gpu_model",
      "device",    "container",  "pod,sharing_mode", "namespace,label:team"};
  int compared = 0;
  int summed = 0;
  int rows_only_compared = 0;
  int rows_seen = 0;
  for (int trial = 0; trial < 48; ++trial) {
    ReportQuery q;
    q.policy = *cost::ParsePolicy(policies[trial % 4]);
    q.idle = *cost::ParseIdleHandling(idles[(trial / 4) % 4]);
    const std::string by = groupings[trial % 8];
    q.group_by = *report::ParseGroupBy(by);
    const int from = static_cast<int>(rng() % 30);
    const int to = from + 1 + static_cast<int>(rng() % (hours - from));
    q.window = {Hour(from), Hour(to)};
    q.step = trial % 3 == 0 ? 0 : (1 + static_cast<Micros>(rng() % 12)) * kMicrosPerHour;
    std::string only_first_level;
    if (by.starts_with("namespace") && trial % 2 == 0) {
      // Trial 8 names the namespace idle goes to (its platform rows are on every device).
      only_first_level = kNamespaces[(trial / 4 + trial / 16) % 4];
      q.filter = *ParseFilter("namespace:\"" + only_first_level + "\"");
    } else if (by == "node,gpu_model" && trial % 16 == 3) {
      only_first_level = "node-b";  // the key's first level is its node
      q.filter = *ParseFilter("node:\"node-b\"");
    }
    // Every other query read by several connections at once, a day each.
    auto ours = trial % 2 == 0 ? ReadReports(*store_, q)
                               : ReadReports(*store_, q, [&] { return ledger_->Open(); });
    ASSERT_TRUE(ours.ok()) << ours.error().message;
    // Summed in parts by several threads, the same answer.
    auto snapshot = Snapshot::Load(*store_, q.window);
    ASSERT_TRUE(snapshot.ok());
    auto parts =
        BuildReports(**snapshot, q, Parallelism{.devices_per_worker = 7, .max_workers = 3});
    ASSERT_TRUE(parts.ok());
    ASSERT_EQ(parts->size(), ours->size());
    for (std::size_t i = 0; i < ours->size(); ++i)
      EXPECT_EQ(report::ReportToJson((*parts)[i]), report::ReportToJson((*ours)[i]));
    // Only the rows of a filter: the same rows, no totals.
    if (!q.filter.empty()) {
      ReportQuery rows_only = q;
      rows_only.rows_only = true;
      auto only = BuildReports(**snapshot, rows_only);
      ASSERT_TRUE(only.ok());
      ASSERT_EQ(only->size(), parts->size());
      for (std::size_t i = 0; i < only->size(); ++i) {
        EXPECT_EQ(RowsText((*only)[i]), RowsText((*parts)[i])) << "trial " << trial;
        EXPECT_EQ((*only)[i].total.device_hours, 0);
        ++rows_only_compared;
      }
    }
    // The steps summed: the window's report, as if it were asked for without a step.
    if (q.step > 0 && StepsSumToWindow(q)) {
      ReportQuery whole = q;
      whole.step = 0;
      EXPECT_EQ(report::ReportToJson(SumSteps(*parts)),
                PlainReports(*store_, whole, only_first_level).front())
          << "trial " << trial << " by " << by;
      ++summed;
    }
    const std::vector<std::string> plain = PlainReports(*store_, q, only_first_level);
    ASSERT_EQ(ours->size(), plain.size()) << "trial " << trial;
    for (std::size_t i = 0; i < plain.size(); ++i) {
      EXPECT_EQ(report::ReportToJson((*ours)[i]), plain[i])
          << "trial " << trial << " step " << i << " by " << by << " policy " << policies[trial % 4]
          << " idle " << idles[(trial / 4) % 4];
      ++compared;
      rows_seen += static_cast<int>((*ours)[i].rows.size());
    }
  }
  EXPECT_GT(compared, 48);
  EXPECT_GT(summed, 20);
  EXPECT_GT(rows_only_compared, 20);

  // Export rows from the snapshot: billing::BuildExportRows' rows over the same ledger.
  int exported_days = 0;
  for (int trial = 0; trial < 16; ++trial) {
    billing::ExportRequest request;
    const int from = static_cast<int>(rng() % 40);
    request.from_us = Hour(from);
    request.to_us = Hour(from + 1 + static_cast<int>(rng() % (hours - from)));
    request.period = trial % 2 == 0 ? billing::ChargePeriod::kDay : billing::ChargePeriod::kHour;
    request.policy = *cost::ParsePolicy(policies[trial % 4]);
    request.idle = *cost::ParseIdleHandling(idles[(trial / 4) % 4]);
    const TimeRange days = billing::WholeDays(request.from_us, request.to_us);
    auto devices = store_->ReadDeviceHours(days);
    auto usage = store_->ReadUsage({request.from_us, request.to_us});
    auto recs = store_->ReadReconciliations(days);
    ASSERT_TRUE(devices.ok() && usage.ok() && recs.ok());
    const std::vector<billing::ExportRow> plain =
        *billing::BuildExportRows(request, *devices, *usage, *recs);
    auto snapshot = Snapshot::Load(*store_, {request.from_us, request.to_us});
    ASSERT_TRUE(snapshot.ok());
    const std::vector<billing::ExportRow> ours = *BuildExportRows(**snapshot, request);
    EXPECT_GT(plain.size(), 0u);
    EXPECT_EQ(billing::RenderPlainCsv(ours), billing::RenderPlainCsv(plain)) << "trial " << trial;
    // Written a day at a time through the read service (its kept days from memory, the others
    // alone): the text of the window's rows whole, byte for byte, FOCUS and plain.
    ReadService reads({.snapshot_days = trial % 3});
    for (ExportFormat format : {ExportFormat::kFocus, ExportFormat::kPlain}) {
      TextSink sink;
      Status written = WriteExport(*store_, reads, request, format, sink);
      ASSERT_TRUE(written.ok()) << written.error().message;
      EXPECT_EQ(sink.text, format == ExportFormat::kFocus ? billing::RenderFocusCsv(request, ours)
                                                          : billing::RenderPlainCsv(ours))
          << "trial " << trial;
      EXPECT_EQ(sink.restarts, 0);
    }
    exported_days += reads.stats().direct_reads > 0;
  }
  EXPECT_GT(exported_days, 4) << "days read alone";

  // Each GPU's sums over a window: the priced device-hours' sums, GPU by GPU.
  for (int from = 0; from < hours; from += 17) {
    const TimeRange window{Hour(from), Hour(std::min(from + 30, hours))};
    auto snapshot = Snapshot::Load(*store_, window);
    ASSERT_TRUE(snapshot.ok());
    auto devices = ledger::ReadPricedDeviceHours(*store_, window);
    ASSERT_TRUE(devices.ok());
    std::map<std::string, std::pair<Nanos, GpuMicros>> plain;
    std::map<std::string, const DeviceHour*> first_hour;  // the GPU's earliest in the window
    for (const DeviceHour& d : *devices) {
      if (d.hour_us < window.from_us || d.hour_us >= window.to_us) continue;
      plain[d.gpu.value].first += d.price_nanos;
      plain[d.gpu.value].second += d.busy_us;
      first_hour.try_emplace(d.gpu.value, &d);
    }
    const std::vector<DeviceSummary> summaries = SummarizeDevices(**snapshot, window);
    ASSERT_EQ(summaries.size(), plain.size());
    for (const DeviceSummary& summary : summaries) {
      const std::string& gpu = summary.placement.gpu.value;
      EXPECT_EQ(summary.cost_nanos, plain[gpu].first);
      EXPECT_EQ(summary.busy_us, plain[gpu].second);
      const DeviceHour& first = *first_hour.at(gpu);
      EXPECT_EQ(summary.placement.node, first.node) << gpu;
      EXPECT_EQ(summary.placement.sharing, first.sharing) << gpu;
      EXPECT_EQ(summary.memory_total_bytes, first.memory_total_bytes) << gpu;
    }
  }
  EXPECT_GT(rows_seen, 500);  // the reports compared are not empty ones
}

// Issue 37: the compact layout (schema 8) changes no number. The same random ledger, written as
// the build of schema 7 wrote it and migrated on open, and written by this build: both read
// back every row exactly as written, labels included, and every report is the same, integer
// for integer.
TEST_P(ReportsProperty, TheCompactLayoutChangesNoNumber) {
  std::string skip;
  auto migrated = MakeTestLedger(GetParam(), skip);
  if (!migrated) GTEST_SKIP() << skip;
  auto direct = MakeTestLedger(GetParam(), skip);
  ASSERT_TRUE(direct);
  std::mt19937_64 rng(37);
  const int hours = 72;
  // Schema 7 kept one label set per pod and namespace: labels that never change read back.
  RandomLedger random = MakeRandomLedger(rng, hours, /*relabel=*/false);
  Status written = migrated->WriteAsVersion7(random.hours);
  ASSERT_TRUE(written) << written.error().message;
  auto old_layout = migrated->Open();
  ASSERT_TRUE(old_layout.ok()) << old_layout.error().message;
  auto new_layout = direct->Open();
  ASSERT_TRUE(new_layout.ok()) << new_layout.error().message;
  ASSERT_TRUE((*new_layout)->WriteHours(random.hours).ok());
  for (auto* store : {&*old_layout, &*new_layout})
    ASSERT_TRUE((*store)->WriteReconciliations(random.reconciliations).ok());

  // Every row as written, in the order reads return them.
  std::sort(random.hours.begin(), random.hours.end(), [](const LedgerHour& a, const LedgerHour& b) {
    return std::tie(a.device.hour_us, a.device.gpu.value) <
           std::tie(b.device.hour_us, b.device.gpu.value);
  });
  std::vector<std::string> want_devices;
  std::vector<std::string> want_usage;
  for (LedgerHour& hour : random.hours) {
    // An unpriced hour is stored as pricing class "unpriced" (since schema 1): its class is not
    // kept.
    if (hour.device.price_state == PriceState::kUnpriced) hour.device.pricing_class.clear();
    want_devices.push_back(store::testing::Describe(hour.device));
    std::sort(hour.usage.begin(), hour.usage.end(), [](const UsageRow& a, const UsageRow& b) {
      const ConsumerRef& x = a.consumer.ref;
      const ConsumerRef& y = b.consumer.ref;
      return std::tie(x.namespace_name, x.pod, x.container, x.pod_uid.value) <
             std::tie(y.namespace_name, y.pod, y.container, y.pod_uid.value);
    });
    for (const UsageRow& u : hour.usage) want_usage.push_back(store::testing::Describe(u));
  }
  ASSERT_GT(want_usage.size(), 200u);
  for (auto* store : {&*old_layout, &*new_layout}) {
    std::vector<std::string> devices;
    for (const DeviceHour& d : store::testing::MustReadDevices(**store))
      devices.push_back(store::testing::Describe(d));
    EXPECT_EQ(devices, want_devices);
    std::vector<std::string> usage;
    for (const UsageRow& u : store::testing::MustReadUsage(**store))
      usage.push_back(store::testing::Describe(u));
    EXPECT_EQ(usage, want_usage);
  }

  const char* const groupings[] = {"namespace", "label:team", "controller", "device,pod"};
  const char* const policies[] = {"allocation", "compute", "memory", "hybrid:0.35"};
  for (int trial = 0; trial < 16; ++trial) {
    ReportQuery q;
    q.policy = *cost::ParsePolicy(policies[trial % 4]);
    q.idle = *cost::ParseIdleHandling(trial % 2 == 0 ? "keep" : "share");
    q.group_by = *report::ParseGroupBy(groupings[(trial / 4) % 4]);
    const int from = static_cast<int>(rng() % 40);
    q.window = {Hour(from), Hour(from + 1 + static_cast<int>(rng() % (hours - from)))};
    q.step = trial % 3 == 0 ? 0 : (1 + static_cast<Micros>(rng() % 12)) * kMicrosPerHour;
    auto old_reports = ReadReports(**old_layout, q);
    auto new_reports = ReadReports(**new_layout, q);
    ASSERT_TRUE(old_reports.ok() && new_reports.ok());
    ASSERT_EQ(old_reports->size(), new_reports->size());
    for (std::size_t i = 0; i < old_reports->size(); ++i)
      EXPECT_EQ(report::ReportToJson((*old_reports)[i]), report::ReportToJson((*new_reports)[i]))
          << "trial " << trial << " step " << i;
  }
}

// A server's kept snapshot follows the ledger by reading again only the days written since
// (Snapshot::Refresh): after each random write (hours rewritten with new labels, hours added
// past the end so old days fall out of the kept ones, a bill for a kept day) every report from
// the read service equals the one from a snapshot loaded fresh, and no write loads it whole.
TEST_P(ReportsProperty, ARefreshedSnapshotEqualsOneLoadedFresh) {
  store::LedgerStore& store = *store_;
  std::mt19937_64 rng(3205);
  auto below = [&](int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); };
  int hours = 24 * 4;
  const RandomLedger start = MakeRandomLedger(rng, hours);
  ASSERT_TRUE(store.WriteHours(start.hours).ok());
  ASSERT_TRUE(store.WriteReconciliations(start.reconciliations).ok());

  ReadService reads(ReadServiceOptions{.snapshot_days = 3});
  const char* const groupings[] = {"namespace", "label:team", "controller", "device,pod",
                                   "namespace,label:team"};
  const char* const idles[] = {"keep", "share", "namespace:platform", "namespace:web"};
  std::shared_ptr<const Snapshot> held;  // a reader still holding the kept snapshot
  ASSERT_TRUE(reads.SnapshotFor(store, {Hour(hours - 1), Hour(hours)}).ok());
  int refreshes = 0;
  for (int round = 0; round < 24; ++round) {
    // The write: hours of another random ledger over the last two days (their consumers
    // relabelled), or a day more of hours, or a bill for a kept day.
    const int kind = round % 3;
    RandomLedger more = MakeRandomLedger(rng, hours + (kind == 1 ? 24 : 0));
    if (kind == 2) {
      Reconciliation bill;
      bill.node = below(2) == 0 ? "node-a" : "node-b";
      bill.day_us = DayStart(Hour(hours - 1 - below(48)));
      bill.billed_nanos = below(2'000'000'000);
      bill.factor = "1/1";
      bill.currency = "USD";
      bill.bill_file = "bill-" + std::to_string(round) + ".csv";
      ASSERT_TRUE(store.WriteReconciliations(std::vector{bill}).ok());
    } else {
      const int from = kind == 1 ? hours : hours - 1 - below(48);
      std::vector<LedgerHour> written;
      for (LedgerHour& h : more.hours) {
        if (h.device.hour_us < Hour(from) || below(3) == 0) continue;
        for (UsageRow& u : h.usage) {
          if (!u.consumer.labels.empty()) u.consumer.labels["team"] += "-" + std::to_string(round);
          u.consumer.namespace_labels = {{"team", "ns-" + std::to_string(round)}};
          if (below(4) == 0) u.consumer.namespace_labels.clear();
        }
        written.push_back(std::move(h));
      }
      if (written.empty()) written.push_back(more.hours.back());
      ASSERT_TRUE(store.WriteHours(written).ok());
      if (kind == 1) hours += 24;
    }
    if (round % 4 == 3) {
      auto snapshot = reads.SnapshotFor(store, {Hour(hours - 1), Hour(hours)});
      ASSERT_TRUE(snapshot.ok());
      held = *snapshot;  // the next refresh copies rather than changes it
    } else if (round % 4 == 0) {
      held = nullptr;
    }

    for (int trial = 0; trial < 5; ++trial) {
      ReportQuery q;
      q.policy = *cost::ParsePolicy(trial % 2 == 0 ? "allocation" : "hybrid:0.35");
      q.idle = *cost::ParseIdleHandling(idles[(round + trial) % 4]);
      q.group_by = *report::ParseGroupBy(groupings[trial]);
      const int from = hours - 1 - below(72);
      q.window = {Hour(from), Hour(from + 1 + below(hours - from))};
      q.step = trial % 2 == 0 ? 0 : (1 + below(12)) * kMicrosPerHour;
      auto ours = reads.Reports(store, q);
      ASSERT_TRUE(ours.ok()) << ours.error().message;
      auto fresh = Snapshot::Load(store, q.window);
      ASSERT_TRUE(fresh.ok());
      auto want = BuildReports(**fresh, q);
      ASSERT_TRUE(want.ok());
      ASSERT_EQ(ours->size(), want->size());
      for (std::size_t i = 0; i < want->size(); ++i)
        EXPECT_EQ(report::ReportToJson((*ours)[i]), report::ReportToJson((*want)[i]))
            << "round " << round << " trial " << trial << " step " << i;
    }
    const TimeRange last_day{Hour(hours - 24), Hour(hours)};
    auto kept = reads.SnapshotFor(store, last_day);
    auto fresh = Snapshot::Load(store, last_day);
    ASSERT_TRUE(kept.ok() && fresh.ok());
    auto ours = SummarizeDevices(**kept, last_day);
    auto want = SummarizeDevices(**fresh, last_day);
    ASSERT_EQ(ours.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(ours[i].placement, want[i].placement);
      EXPECT_EQ(ours[i].cost_nanos, want[i].cost_nanos);
      EXPECT_EQ(ours[i].busy_us, want[i].busy_us);
    }
    // Bounded as it is refreshed: each label set is kept once, and only while a consumer names it.
    const Snapshot& k = **kept;
    std::set<LabelMap> named = {LabelMap{}};
    for (std::size_t c = 0; c < k.consumers().size(); ++c) {
      named.insert(k.labels(c).labels);
      named.insert(k.labels(c).namespace_labels);
    }
    EXPECT_EQ(k.label_sets().size(), named.size()) << "round " << round;
    EXPECT_EQ(reads.stats().cache_loads, 1) << "round " << round;
    EXPECT_GT(reads.stats().cache_refreshes, refreshes) << "round " << round;
    refreshes = static_cast<int>(reads.stats().cache_refreshes);
  }
}

// Days kept summed (day_rollup.h): a report reads them where a keeper kept them and sums the
// others from their rows, answering as the plain computation either way, and never writes; a
// write drops the days it touches, and a kept day this build cannot read is summed from its
// rows.
TEST_P(ReportsProperty, DaysKeptSummedAnswerAsTheirRows) {
  store::LedgerStore& store = *store_;
  std::mt19937_64 rng(20261206);
  const int hours = 5 * 24;
  const RandomLedger random = MakeRandomLedger(rng, hours);
  ASSERT_TRUE(store.WriteHours(random.hours).ok());
  ASSERT_TRUE(store.WriteReconciliations(random.reconciliations).ok());
  auto kept = [&](int day, const ReportQuery& q) {
    auto body = store.ReadDayRollup(Hour(24 * day), DayRollupKind(q.policy, q.idle));
    EXPECT_TRUE(body.ok());
    return body.ok() && body->has_value();
  };

  const char* const policies[] = {"allocation", "compute", "memory", "hybrid:0.35"};
  const char* const idles[] = {"keep", "share", "namespace:platform"};
  const char* const groupings[] = {"namespace", "label:team",       "controller", "node,gpu_model",
                                   "device",    "pod,sharing_mode", "cluster"};
  int read_kept = 0;
  int stepped_read_kept = 0;  // steps of whole days, read kept
  int filtered_read_kept = 0;
  for (int trial = 0; trial < 36; ++trial) {
    ReportQuery q;
    q.policy = *cost::ParsePolicy(policies[trial % 4]);
    q.idle = *cost::ParseIdleHandling(idles[(trial / 4) % 3]);
    q.group_by = *report::ParseGroupBy(groupings[trial % 7]);
    // Every other window starts on a day, where steps of whole days read kept days too.
    const int from =
        trial % 2 == 0 ? 24 * static_cast<int>(rng() % 2) : static_cast<int>(rng() % 30);
    q.window = {Hour(from), Hour(hours - static_cast<int>(rng() % 30))};
    q.step = (trial / 2) % 3 == 0 ? 0 : (trial / 2) % 3 * kMicrosPerDay;
    std::string only;  // a filter's: rows whose key starts with it
    if (trial % 7 == 0) {
      only = kNamespaces[(trial / 7) % 4];
      q.filter = *ParseFilter("namespace:\"" + only + "\"");
    } else if (trial % 7 == 3) {
      only = "node-b";
      q.filter = *ParseFilter("node:\"node-b\"");
    }
    // A keeper (a writer: the server, the demo) kept this query's days in two trials of three.
    if (trial % 3 != 2)
      ASSERT_TRUE(KeepDays(store, q, {Hour(0), Hour(hours)}, [] { return false; }).ok());
    const bool was_kept = kept(2, q);
    auto ours = trial % 4 < 2 ? ReadReports(store, q)
                              : ReadReports(store, q, [&] { return ledger_->Open(); });
    ASSERT_TRUE(ours.ok()) << ours.error().message;
    const std::vector<std::string> plain = PlainReports(store, q, only);
    ASSERT_EQ(ours->size(), plain.size()) << "trial " << trial;
    for (std::size_t i = 0; i < plain.size(); ++i)
      EXPECT_EQ(report::ReportToJson((*ours)[i]), plain[i])
          << "trial " << trial << " step " << i << " by " << groupings[trial % 7];
    EXPECT_EQ(kept(2, q), was_kept) << "trial " << trial;  // a read wrote nothing
    if (!ReadsDaysSummed(q)) continue;                     // read from rows: nothing read kept
    if (was_kept) ++read_kept;
    if (was_kept && q.step > 0) ++stepped_read_kept;
    if (was_kept && !q.filter.empty()) ++filtered_read_kept;
  }
  EXPECT_GT(filtered_read_kept, 2);
  EXPECT_GT(read_kept, 8);
  EXPECT_GT(stepped_read_kept, 2);

  ReportQuery q;
  q.policy = *cost::ParsePolicy("hybrid:0.7");  // a kind no trial above kept
  q.idle = *cost::ParseIdleHandling("share");
  q.group_by = *report::ParseGroupBy("namespace");
  q.window = {Hour(0), Hour(hours)};
  auto answers_as_rows = [&](const std::string& when) {
    auto ours = ReadReports(store, q);
    ASSERT_TRUE(ours.ok()) << ours.error().message;
    EXPECT_EQ(report::ReportToJson(ours->front()), PlainReports(store, q, "").front()) << when;
  };
  answers_as_rows("first read");
  for (int day = 0; day < 5; ++day) EXPECT_FALSE(kept(day, q)) << "day " << day;  // read only
  // A keeper keeps the days that ended (a server leaves the ledger's last hours, which it may
  // still be writing); a report reads them so.
  auto keep = [&] { return KeepDays(store, q, {Hour(0), Hour(96)}, [] { return false; }); };
  ASSERT_TRUE(keep().ok());
  for (int day = 0; day < 4; ++day) EXPECT_TRUE(kept(day, q)) << "day " << day;
  EXPECT_FALSE(kept(4, q));
  answers_as_rows("kept");

  // A late row in day 2: that day is dropped, the others stay, and the answer moves with it.
  const LedgerHour late = WithALateRow(random.hours[random.hours.size() / 2]);
  ASSERT_EQ(late.device.hour_us / kMicrosPerDay, Hour(60) / kMicrosPerDay);
  ASSERT_TRUE(store.WriteHours(std::span(&late, 1)).ok());
  EXPECT_FALSE(kept(2, q));
  EXPECT_TRUE(kept(1, q) && kept(3, q));
  answers_as_rows("after a late row");
  EXPECT_FALSE(kept(2, q));
  EXPECT_EQ(*keep(), 1);
  EXPECT_TRUE(kept(2, q));

  // A bill for day 3 reprices it: dropped, and summed again at the bill.
  const Reconciliation bill = ALateBill(Hour(72));
  ASSERT_TRUE(store.WriteReconciliations(std::span(&bill, 1)).ok());
  EXPECT_FALSE(kept(3, q));
  EXPECT_TRUE(kept(2, q));
  answers_as_rows("after a bill");

  // Bytes this build cannot read: the day is summed from its rows, and left as it is.
  auto generation = store.Generation();
  ASSERT_TRUE(generation.ok());
  const std::string kind = DayRollupKind(q.policy, q.idle);
  EXPECT_FALSE(*store.WriteDayRollup(Hour(24), kind, *generation - 1, "stale"));
  ASSERT_TRUE(*store.WriteDayRollup(Hour(24), kind, *generation, "not a day"));
  answers_as_rows("after damage");
  auto left = store.ReadDayRollup(Hour(24), kind);
  ASSERT_TRUE(left.ok() && left->has_value());
  EXPECT_EQ(**left, "not a day");
  DayTables tables;
  SummedDay decoded;
  std::string scratch;

  // A keeper (what a server runs in the background) keeps each day not kept, once; asked to
  // stop, none. A report then reads them all kept.
  q.policy = *cost::ParsePolicy("hybrid:0.5");
  const TimeRange all_days{Hour(0), Hour(hours)};
  auto stopped = KeepDays(store, q, all_days, [] { return true; });
  ASSERT_TRUE(stopped.ok()) << stopped.error().message;
  EXPECT_EQ(*stopped, 0);
  auto keeps = KeepDays(store, q, all_days, [] { return false; });
  ASSERT_TRUE(keeps.ok()) << keeps.error().message;
  EXPECT_EQ(*keeps, 5);
  EXPECT_EQ(*KeepDays(store, q, all_days, [] { return false; }), 0);
  EXPECT_EQ(store.KeptDays(DayRollupKind(q.policy, q.idle), all_days)->size(), 5u);
  answers_as_rows("kept by a keeper");
  Status damaged =
      DecodeDayRollup(http::Gzip(std::string("\x02\x02", 2)), tables, decoded, scratch);
  ASSERT_FALSE(damaged.ok());
  EXPECT_EQ(damaged.error().message, "day kept summed byte 2: day end ends inside it");
  EXPECT_TRUE(decoded.rows.empty());
}

// A server's read service regroups the days the ledger keeps summed as it holds them in
// memory, the window's other hours from its kept snapshot: the plain computation's answer for
// every policy, idle handling, grouping, window and step, while the ledger is written under
// it (a late row, a bill, a day appended), each write dropping the held days it touched.
TEST_P(ReportsProperty, DaysHeldInMemoryAnswerAsTheirRows) {
  auto writer = ledger_->Open();
  ASSERT_TRUE(writer.ok()) << writer.error().message;
  store::LedgerStore& store = *store_;
  std::mt19937_64 rng(20261208);
  const int days = 6;
  const RandomLedger random = MakeRandomLedger(rng, days * 24);
  std::vector<LedgerHour> first_days;
  std::vector<LedgerHour> last_day;
  for (const LedgerHour& h : random.hours)
    (h.device.hour_us < Hour((days - 1) * 24) ? first_days : last_day).push_back(h);
  ASSERT_TRUE((*writer)->WriteHours(first_days).ok());
  ASSERT_TRUE((*writer)->WriteReconciliations(random.reconciliations).ok());

  // Four kinds, as many as are held at once: a stale day held would show.
  const char* const policies[] = {"allocation", "hybrid:0.35"};
  const char* const idles[] = {"keep", "namespace:platform"};
  const char* const groupings[] = {"namespace", "label:team",       "controller", "node,gpu_model",
                                   "device",    "pod,sharing_mode", "cluster"};
  // `service`'s reports (or its window's and steps') of `q` are the plain computation's.
  auto answers_as_plain = [&](ReadService& service, const ReportQuery& q, bool stepped,
                              const std::string& what, const std::string& only = "") {
    const std::vector<std::string> plain = PlainReports(store, q, only);
    std::vector<report::Report> ours;
    if (stepped) {
      auto both = service.ReportAndSteps(store, q);
      ASSERT_TRUE(both.ok()) << both.error().message;
      ours = std::move(both->steps);
      if (q.step == 0) ours = {std::move(both->window)};
    } else {
      auto reports = service.Reports(store, q);
      ASSERT_TRUE(reports.ok()) << reports.error().message;
      ours = std::move(*reports);
    }
    ASSERT_EQ(ours.size(), plain.size()) << what;
    for (std::size_t i = 0; i < plain.size(); ++i)
      EXPECT_EQ(report::ReportToJson(ours[i]), plain[i]) << what << " step " << i;
    if (q.filter.empty()) return;
    // Only the rows of a filter (the allocation API's filtered answer): the same rows, no totals.
    ReportQuery rows_only = q;
    rows_only.rows_only = true;
    auto only_rows = service.Reports(store, rows_only);
    ASSERT_TRUE(only_rows.ok()) << only_rows.error().message;
    ASSERT_EQ(only_rows->size(), plain.size()) << what;
    for (std::size_t i = 0; i < plain.size(); ++i) {
      EXPECT_EQ(RowsText((*only_rows)[i]), RowsText(ours[i])) << what << " rows only, step " << i;
      EXPECT_EQ((*only_rows)[i].total.device_hours, 0) << what;
    }
  };
  ReadService reads(ReadServiceOptions{.snapshot_days = 35});
  // A server keeping two days of rows: a window's first day and any report it cannot regroup
  // are read for the report alone.
  ReadService short_reads(ReadServiceOptions{.snapshot_days = 2});
  int trial = 0;
  auto answers_as_rows = [&](const std::string& when, int written_days) {
    const std::int64_t held_before = reads.stats().held_day_reads;
    const std::int64_t short_held_before = short_reads.stats().held_day_reads;
    const int hours = written_days * 24;
    for (int n = 0; n < 24; ++n, ++trial) {
      ReportQuery q;
      q.policy = *cost::ParsePolicy(policies[trial % 2]);
      q.idle = *cost::ParseIdleHandling(idles[(trial / 2) % 2]);
      q.group_by = *report::ParseGroupBy(groupings[trial % 7]);
      const int from =
          trial % 2 == 0 ? 24 * static_cast<int>(rng() % 2) : static_cast<int>(rng() % 30);
      q.window = {Hour(from), Hour(hours - static_cast<int>(rng() % 30))};
      q.step = (trial / 2) % 3 == 0 ? 0 : (trial / 2) % 3 * kMicrosPerDay;
      // Filters on who (a namespace, which idle may go to) and where (a node), read from the
      // held days' entries; the rows kept are those whose key starts with what is named.
      std::string only;
      if (trial % 7 == 0 && trial % 3 != 2) {
        only = kNamespaces[(trial / 7) % 4];
        q.filter = *ParseFilter("namespace:\"" + only + "\"");
      } else if (trial % 7 == 3) {
        only = "node-b";
        q.filter = *ParseFilter("node:\"node-b\"");
      }
      // What a server's keeper does for its policy: here for most trials' policies.
      if (trial % 5 != 4) {
        const TimeRange ended{Hour(0), Hour(hours) - kOpenHours * kMicrosPerHour};
        ASSERT_TRUE(KeepDays(store, q, ended, [] { return false; }).ok());
      }
      for (ReadService* service : {&reads, &short_reads})
        answers_as_plain(*service, q, trial % 3 == 2,
                         fmt::format("{} trial {} by {}{}{}", when, trial, groupings[trial % 7],
                                     only.empty() ? "" : " only " + only,
                                     service == &reads ? "" : ", two days of rows kept"),
                         only);
    }
    EXPECT_GT(reads.stats().held_day_reads - held_before, 6) << when;
    EXPECT_GT(short_reads.stats().held_day_reads - short_held_before, 6) << when;
    // Each GPU's summary: the two-day reader's from days it holds summed (asked twice: the
    // second answer is theirs) and the hours around them, as one snapshot of the window.
    for (const TimeRange window :
         {TimeRange{Hour(0), Hour(hours)}, TimeRange{Hour(5), Hour(hours - 7)}}) {
      auto plain = Snapshot::Load(store, window);
      ASSERT_TRUE(plain.ok()) << plain.error().message;
      const std::string want = DevicesText(SummarizeDevices(**plain, window));
      for (ReadService* service : {&reads, &short_reads, &short_reads}) {
        auto ours = service->Devices(store, window);
        ASSERT_TRUE(ours.ok()) << ours.error().message;
        EXPECT_EQ(DevicesText(*ours), want) << when << " devices from hour " << window.from_us;
      }
    }
    EXPECT_GT(short_reads.stats().held_device_days, 2) << when;
  };
  answers_as_rows("first", days - 1);
  EXPECT_GT(reads.stats().held_days, 3);

  // A late row in day 2, and bills repricing days 3 and 0.
  const LedgerHour late = WithALateRow(first_days[first_days.size() / 2]);
  ASSERT_TRUE((*writer)->WriteHours(std::span(&late, 1)).ok());
  answers_as_rows("after a late row", days - 1);
  // The open day's rows answered once are answered again, until a write lands in them.
  ReportQuery open_day;
  open_day.policy = *cost::ParsePolicy("allocation");
  open_day.idle = *cost::ParseIdleHandling("keep");
  open_day.group_by = *report::ParseGroupBy("namespace");
  open_day.window = {Hour(0), Hour((days - 1) * 24)};
  for (const char* when : {"open day", "open day again"})
    for (ReadService* service : {&reads, &short_reads})
      answers_as_plain(*service, open_day, false, when);
  const LedgerHour late_open = WithALateRow(first_days.back());
  ASSERT_TRUE((*writer)->WriteHours(std::span(&late_open, 1)).ok());
  for (ReadService* service : {&reads, &short_reads})
    answers_as_plain(*service, open_day, false, "open day after a late row in it");
  const Reconciliation bill = ALateBill(Hour(72));
  ASSERT_TRUE((*writer)->WriteReconciliations(std::span(&bill, 1)).ok());
  answers_as_rows("after a bill", days - 1);
  // And one repricing the first day, which the two-day reader holds the rows of as a window's
  // partial first day.
  ReportQuery from_day_0;
  from_day_0.policy = *cost::ParsePolicy("allocation");
  from_day_0.idle = *cost::ParseIdleHandling("keep");
  from_day_0.group_by = *report::ParseGroupBy("namespace");
  from_day_0.window = {Hour(5), Hour((days - 1) * 24)};
  answers_as_plain(short_reads, from_day_0, false, "from day 0");
  const Reconciliation first_day_bill = ALateBill(Hour(0));
  ASSERT_TRUE((*writer)->WriteReconciliations(std::span(&first_day_bill, 1)).ok());
  answers_as_plain(short_reads, from_day_0, false, "from day 0, after a bill for it");
  answers_as_rows("after a bill for the first day", days - 1);

  // A day appended: the one before it closes, and the kept days move on.
  ASSERT_TRUE((*writer)->WriteHours(last_day).ok());
  answers_as_rows("after a day appended", days);
  EXPECT_GT(reads.stats().cache_refreshes, 0);
  EXPECT_GT(short_reads.stats().direct_reads, 8);  // the reports it could not regroup
}

// The real store, with a write into the ledger landing while a day is read: what a live server
// does every round while a report reads.
class WritesWhileRead : public store::testing::ForwardingStore {
 public:
  WritesWhileRead(store::LedgerStore& real, std::function<void()> write)
      : ForwardingStore(real), write_(std::move(write)) {}
  int whole_window_scans = 0;  // scans of more than a day: the window read whole

  Status Scan(const TimeRange& r, store::LedgerScan& scan) override {
    if (r.to_us - r.from_us > kMicrosPerDay) ++whole_window_scans;
    Status read = ForwardingStore::Scan(r, scan);
    if (writes_left_ > 0 && r.to_us - r.from_us <= kMicrosPerDay) {
      --writes_left_;
      write_();
    }
    return read;
  }
  void WriteDuringNextReads(int n) { writes_left_ = n; }

 private:
  std::function<void()> write_;
  int writes_left_ = 0;
};

// A write into the last day while the others are read (a live ledger's current hour) costs
// reading that day again, not the window whole; a write into an earlier day reads it whole.
// Either way the answer is the ledger's after the write.
TEST_P(ReportsProperty, AWriteIntoTheLastDayWhileReadingRereadsThatDayAlone) {
  auto writer = ledger_->Open();
  ASSERT_TRUE(writer.ok()) << writer.error().message;
  std::mt19937_64 rng(20261207);
  const int hours = 4 * 24;
  const RandomLedger random = MakeRandomLedger(rng, hours);
  ASSERT_TRUE((*writer)->WriteHours(random.hours).ok());
  int written = 0;
  LedgerHour rewritten = random.hours.back();  // an hour of the last day, written again
  WritesWhileRead store(*store_, [&] {
    rewritten.device.price_nanos += 1'000'000;
    ASSERT_TRUE((*writer)->WriteHours(std::span(&rewritten, 1)).ok());
    ++written;
  });
  ReportQuery q;
  q.policy = *cost::ParsePolicy("allocation");
  q.idle = *cost::ParseIdleHandling("keep");
  q.group_by = *report::ParseGroupBy("namespace");
  q.window = {Hour(0), Hour(hours)};
  for (int writes = 1; writes <= 2; ++writes) {
    store.WriteDuringNextReads(writes);  // the second time, also while the last day is re-read
    auto ours = ReadReports(store, q);
    ASSERT_TRUE(ours.ok()) << ours.error().message;
    EXPECT_EQ(report::ReportToJson(ours->front()), PlainReports(**writer, q, "").front());
    EXPECT_EQ(store.whole_window_scans, 0) << writes << " writes";
  }
  EXPECT_EQ(written, 3);

  // Into the first day: the window read whole, and right.
  rewritten = random.hours.front();
  store.WriteDuringNextReads(1);
  auto ours = ReadReports(store, q);
  ASSERT_TRUE(ours.ok()) << ours.error().message;
  EXPECT_EQ(report::ReportToJson(ours->front()), PlainReports(**writer, q, "").front());
  EXPECT_EQ(store.whole_window_scans, 1);
}

INSTANTIATE_TEST_SUITE_P(Stores, ReportsProperty,
                         ::testing::Values(StoreKind::kSqlite, StoreKind::kPostgres),
                         [](const auto& info) { return StoreKindName(info.param); });

}  // namespace
}  // namespace gpuledger::ledger
