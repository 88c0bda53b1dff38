// The read path over a large ledger (issue 32), in one process: loading the kept snapshot
// (what the server's read service does once), then each report and allocation answered from it
// (warm), the peak memory, and the machine's memory-bandwidth floor for the scan: the bytes of
// the columns a report reads divided by the bandwidth of summing a large array here. With
// --refresh, the ledger's last hour is written again as it is (what a live server's every
// ingest round does) and the kept snapshot brought up to date, timed.
// Cold figures of a fresh process are the CLI's (`make bench`, bench/bench_table.py, times them).
//
// Usage: read_path --db SPEC [--repeat 5] [--refresh]
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "ledger/day_rollup.h"
#include "ledger/filter.h"
#include "ledger/read_service.h"
#include "ledger/reports.h"
#include "ledger/snapshot.h"
#include "recommendations/rightsize_days.h"
#include "store/ledger_store.h"

namespace gpuledger {
namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

double PeakRssMib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// Bytes the heap holds now (glibc's count of what is allocated, mmap'ed blocks included).
double HeapMib() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<double>(m.uordblks + m.hblkhd) / (1 << 20);
}

// Bytes per second of summing a 512 MiB array of int64 (best of three): what one core of this
// machine streams from memory.
double SumBandwidth() {
  std::vector<std::int64_t> data(64 << 20, 1);
  double best = 0;
  for (int run = 0; run < 3; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::int64_t sum = std::accumulate(data.begin(), data.end(), std::int64_t{0});
    const double s = Seconds(t0);
    if (sum != static_cast<std::int64_t>(data.size())) return 0;
    best = std::max(best, static_cast<double>(data.size() * sizeof(std::int64_t)) / s);
  }
  return best;
}

// The bytes a report reads: every column of every usage row and every device figure.
double ScanBytes(const ledger::Snapshot& s) {
  return static_cast<double>(s.usage().bytes() + s.devices().bytes() +
                             s.first_usage().size() * sizeof(std::uint32_t));
}

// Counts what a store scan by key sends and keeps nothing: the store's share of a snapshot load.
class CountingScan final : public store::LedgerScan {
 public:
  std::int64_t devices = 0;
  std::int64_t rows = 0;
  std::int64_t keys = 0;
  bool ByKey() const override { return true; }
  Status OnReconciliation(const Reconciliation&) override { return Status::Ok(); }
  Status OnDeviceHour(const DeviceHour&) override { return Internal("expected rows by key"); }
  Status OnUsage(const UsageRow&) override { return Internal("expected rows by key"); }
  Status OnGpuKey(std::int64_t, const GpuUuid&) override { return Key(); }
  Status OnPlacementKey(std::int64_t, const DeviceHour&) override { return Key(); }
  Status OnConsumerKey(std::int64_t, const ConsumerInfo&) override { return Key(); }
  Status OnContextKey(std::int64_t, const UsageRow&) override { return Key(); }
  Status OnKeyedDeviceHour(const DeviceHour&, std::int64_t, std::int64_t) override {
    ++devices;
    return Status::Ok();
  }
  Status OnKeyedUsage(const UsageRow&, std::int64_t, std::int64_t, std::int64_t) override {
    ++rows;
    return Status::Ok();
  }

 private:
  Status Key() {
    ++keys;
    return Status::Ok();
  }
};

// A report run once, then `repeat` times more: the first run's time, the median of the others.
struct Timed {
  double first_s = 0;
  double median_s = 0;
  std::size_t rows = 0;  // of the first report
};
Result<Timed> TimeReports(int repeat,
                          const std::function<Result<std::vector<report::Report>>()>& run) {
  Timed timed;
  std::vector<double> runs;
  for (int i = 0; i <= repeat; ++i) {
    const auto t = std::chrono::steady_clock::now();
    auto reports = run();
    (i == 0 ? timed.first_s : runs.emplace_back()) = Seconds(t);
    if (!reports) return reports.error();
    timed.rows = reports->front().rows.size();
  }
  std::sort(runs.begin(), runs.end());
  timed.median_s = runs.empty() ? timed.first_s : runs[runs.size() / 2];
  return timed;
}

}  // namespace
}  // namespace gpuledger

int main(int argc, char** argv) {
  using namespace gpuledger;
  CLI::App app{"time the ledger read path: snapshot load and warm reports"};
  std::string db;
  int repeat = 5;
  app.add_option("--db", db, "ledger: a path, sqlite:PATH or postgres://URL")->required();
  app.add_option("--repeat", repeat, "warm runs per query (the median is printed)")
      ->capture_default_str();
  bool refresh = false;
  app.add_flag("--refresh", refresh,
               "write the last hour again as it is and time the kept snapshot's refresh");
  CLI11_PARSE(app, argc, argv);

  auto store = store::OpenLedger(db);
  if (!store) {
    fmt::print(stderr, "error: {}\n", store.error().message);
    return 1;
  }
  auto extent = (*store)->Extent();
  if (!extent) {
    fmt::print(stderr, "error: {}\n", extent.error().message);
    return 1;
  }
  {
    CountingScan counted;
    const auto t_scan = std::chrono::steady_clock::now();
    if (Status scanned = (*store)->Scan(*extent, counted); !scanned) {
      fmt::print(stderr, "error: {}\n", scanned.error().message);
      return 1;
    }
    fmt::print("store scan alone (by key): {} device-hours, {} usage rows, {} keys in {:.2f} s\n",
               counted.devices, counted.rows, counted.keys, Seconds(t_scan));
  }
  ledger::ReadService reads;
  const double heap_before = HeapMib();
  const auto t0 = std::chrono::steady_clock::now();
  auto snapshot = reads.SnapshotFor(**store, *extent);
  if (!snapshot) {
    fmt::print(stderr, "error: {}\n", snapshot.error().message);
    return 1;
  }
  const double load_s = Seconds(t0);
  std::shared_ptr<const ledger::Snapshot> kept = std::move(*snapshot);
  const ledger::Snapshot& s = *kept;
  fmt::print(
      "snapshot: {} device-hours, {} usage rows, {} consumers; load {:.2f} s, peak RSS "
      "{:.0f} MiB\n",
      s.devices().size(), s.usage().size(), s.consumers().size(), load_s, PeakRssMib());
  const double devices_mib =
      static_cast<double>(s.devices().bytes() + s.first_usage().size() * sizeof(std::uint32_t)) /
      (1 << 20);
  const double rows_mib = static_cast<double>(s.usage().bytes()) / (1 << 20);
  const double held = HeapMib() - heap_before;
  fmt::print(
      "kept snapshot: {:.0f} MiB on the heap (device-hours {:.0f}, usage rows {:.0f}, consumers "
      "and dictionaries {:.0f})\n",
      held, devices_mib, rows_mib, held - devices_mib - rows_mib);

  const double bandwidth = SumBandwidth();
  const double floor_s = ScanBytes(s) / bandwidth;
  fmt::print("memory floor: {:.0f} MiB of columns at {:.1f} GB/s (one core) = {:.3f} s\n",
             ScanBytes(s) / (1 << 20), bandwidth / 1e9, floor_s);

  struct Query {
    const char* name;
    const char* by;
    Micros step;
    const char* filter = "";
  };
  const Query queries[] = {
      {"report --by namespace", "namespace", 0},
      {"report --by label:team", "label:team", 0},
      {"report --by controller", "controller", 0},
      {"allocation aggregate=namespace step=1d", "namespace", kMicrosPerDay},
      {"allocation aggregate=controller filter=ns-001", "controller", 0, "namespace:ns-001"}};
  auto query_of = [&](const Query& q) {
    ledger::ReportQuery query;
    query.window = *extent;
    query.group_by = *report::ParseGroupBy(q.by);
    query.step = q.step;
    query.filter = *ledger::ParseFilter(q.filter);
    query.rows_only = !query.filter.empty();  // as the allocation API asks
    return query;
  };
  for (const Query& q : queries) {
    auto timed = TimeReports(repeat, [&] { return ledger::BuildReports(s, query_of(q)); });
    if (!timed) {
      fmt::print(stderr, "error: {}\n", timed.error().message);
      return 1;
    }
    fmt::print("warm {:<46} {:>8.3f} s  ({} rows, {:.1f}x the memory floor)\n", q.name,
               timed->median_s, timed->rows, timed->median_s / floor_s);
  }
  fmt::print("peak RSS {:.0f} MiB\n", PeakRssMib());

  // The same reports as the server answers them: regrouped from the days the ledger keeps
  // summed, held in memory (ledger/held_days.h), the open hours from the kept snapshot. The
  // ended days are kept first where they are not (what the server's keeper does).
  ledger::ReportQuery keep;
  const TimeRange ended{extent->from_us, extent->to_us - ledger::kOpenHours * kMicrosPerHour};
  const auto t_keep = std::chrono::steady_clock::now();
  auto kept_days = ledger::KeepDays(**store, keep, ended, [] { return false; });
  if (!kept_days) {
    fmt::print(stderr, "error: {}\n", kept_days.error().message);
    return 1;
  }
  fmt::print("days kept summed: {} kept now in {:.2f} s\n", *kept_days, Seconds(t_keep));
  // And for rightsizing (recommendations/rightsize_days.h), as the keeper does beside them: what
  // `rightsize` and /api/v1/recommendations read of whole days.
  const auto t_rightsize = std::chrono::steady_clock::now();
  auto rightsize_days = recommendations::KeepRightsizeDays(**store, ended, [] { return false; });
  if (!rightsize_days) {
    fmt::print(stderr, "error: {}\n", rightsize_days.error().message);
    return 1;
  }
  fmt::print("days kept for rightsizing: {} kept now in {:.2f} s\n", *rightsize_days,
             Seconds(t_rightsize));
  const double heap_before_held = HeapMib();
  for (const Query& q : queries) {
    auto timed = TimeReports(repeat, [&] { return reads.Reports(**store, query_of(q)); });
    if (!timed) {
      fmt::print(stderr, "error: {}\n", timed.error().message);
      return 1;
    }
    if (&q == &queries[0])
      fmt::print("held days: the first report reads them in {:.3f} s\n", timed->first_s);
    fmt::print("warm {:<46} {:>8.3f} s  ({} rows, from held days)\n", q.name, timed->median_s,
               timed->rows);
  }
  const ledger::ReadServiceStats stats = reads.stats();
  fmt::print("held days: {} days, {} rows, {:.0f} MiB on the heap; {} of {} reports from them\n",
             stats.held_days, stats.held_rows, HeapMib() - heap_before_held, stats.held_day_reads,
             (repeat + 1) * std::size(queries));
  fmt::print("peak RSS {:.0f} MiB\n", PeakRssMib());
  if (refresh) {
    const TimeRange last{extent->to_us - kMicrosPerHour, extent->to_us};
    auto devices = (*store)->ReadDeviceHours(last);
    auto usage = (*store)->ReadUsage(last);
    if (!devices || !usage) {
      fmt::print(stderr, "error: reading the last hour\n");
      return 1;
    }
    std::vector<LedgerHour> hours;
    for (DeviceHour& d : *devices) hours.push_back({std::move(d), {}});
    std::size_t h = 0;  // both in (hour, GPU) order
    for (UsageRow& u : *usage) {
      while (h < hours.size() && hours[h].device.gpu.value != u.gpu.value) ++h;
      if (h == hours.size()) break;
      hours[h].usage.push_back(std::move(u));
    }
    const auto t_write = std::chrono::steady_clock::now();
    if (Status written = (*store)->WriteHours(hours); !written) {
      fmt::print(stderr, "error: {}\n", written.error().message);
      return 1;
    }
    const double write_s = Seconds(t_write);
    kept = nullptr;  // as between two requests: nothing else holds the kept snapshot
    const auto t_refresh = std::chrono::steady_clock::now();
    auto refreshed = reads.SnapshotFor(**store, *extent);
    if (!refreshed) {
      fmt::print(stderr, "error: {}\n", refreshed.error().message);
      return 1;
    }
    fmt::print(
        "refresh after writing the last hour again ({} device-hours, written in {:.2f} s): "
        "{:.2f} s ({} loads, {} refreshes), peak RSS {:.0f} MiB\n",
        hours.size(), write_s, Seconds(t_refresh), reads.stats().cache_loads,
        reads.stats().cache_refreshes, PeakRssMib());
  }
  return 0;
}
