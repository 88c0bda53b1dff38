#pragma once
// The one place a long-running reader (the server) answers reports from (issue 32). It keeps
// the snapshot of the ledger's last `snapshot_days` days, so a report over them is a scan of
// memory; a window reaching further back is read from the store for that query alone. When the
// ledger's generation moves, the kept snapshot reads again only the days written since
// (LedgerStore::ChangesSince; a live server writes the current hour every round), and whole
// when the store cannot say. A report over whole days the ledger keeps summed (day_rollup.h)
// regroups them as held in memory (HeldDays) and takes only its open hours from the kept
// snapshot: at 10,000 GPUs x 30 days a million rows rather than 16 million. Thread-safe; one
// load of the kept snapshot at a time (a window read alone holds up no one).

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "ledger/day_summaries.h"
#include "ledger/devices.h"
#include "ledger/held_days.h"
#include "ledger/held_devices.h"
#include "ledger/reports.h"
#include "ledger/snapshot.h"
#include "store/ledger_store.h"

namespace gpuledger::ledger {

struct ReadServiceOptions {
  // Days of the ledger's rows kept in memory, and most of a server's memory (at 10,000 GPUs
  // about 52 MiB a day): the open hours, and "24h" or "48h" with hourly steps. Reports over
  // whole days further back (filtered or not, steps of days) regroup the held days, devices
  // sum the GPU summaries held by day; the rest of a window reaching further back (hourly
  // steps over "7d") is read for its query alone, a day at a time. 3 days hold a server at
  // 10,000 GPUs x 30 days under 1 GiB (docs/performance.md).
  int snapshot_days = 3;
  // Days kept summed held in memory (HeldDays), which reports over whole days regroup: at
  // 10,000 GPUs about 10 MiB a day.
  int held_days = 35;
  // Connections of their own with which a read of rows outside the kept days reads days in
  // parallel (ReadReports); none: one connection.
  store::StoreOpener open_more;
};

// A reader that keeps nothing between queries (the CLI): every report read from the ledger's
// records a day at a time, with `open_more`'s connections.
ReadServiceOptions OneQueryOptions(store::StoreOpener open_more = {});

struct ReadServiceStats {
  std::int64_t cache_hits = 0;   // answered from the kept snapshot
  std::int64_t cache_loads = 0;  // the kept snapshot loaded whole: first use, or unknown changes
  std::int64_t cache_refreshes = 0;  // the kept snapshot's changed days read again
  std::int64_t direct_reads = 0;     // rows outside the kept days, read for one query
  // Answered from the days the ledger keeps summed while the kept snapshot loaded whole.
  std::int64_t kept_day_reads = 0;
  // Answered from the days held summed in memory (HeldDays), their open hours from the kept
  // snapshot.
  std::int64_t held_day_reads = 0;
  std::int64_t held_days = 0;          // days held now, of every policy and idle handling
  std::int64_t held_rows = 0;          // their rows
  std::int64_t held_device_days = 0;   // days of each GPU's summary held (Devices)
  std::int64_t held_summary_days = 0;  // days of readers' summaries held (Summaries)
  // Whole days that direct reads summed from their rows, the ledger keeping no summed day for
  // them (the slower way; ReadReports).
  std::int64_t days_from_rows = 0;
};

// A window's report and its steps' reports, from one snapshot.
struct SteppedReport {
  report::Report window;
  std::vector<report::Report> steps;
};

// What reads a window a day at a time (ReadService::EachDay): what it gathers from a day's rows
// it keeps, never the rows.
class DayReader {
 public:
  virtual ~DayReader() = default;
  // A read of the window begins: what an earlier try gathered is forgotten.
  virtual void Begin() = 0;
  // The rows of hours `part` (a day, or the part of one the window holds) in `snapshot`, which
  // covers them; parts come oldest first.
  virtual Status OnDay(const Snapshot& snapshot, const TimeRange& part) = 0;
};

class ReadService {
 public:
  explicit ReadService(ReadServiceOptions options = {}) : options_(std::move(options)) {}

  // The report of `query` (no step) as every reader answers it, the CLI and the API alike:
  // closed months from their statements, late data as adjustments (ledger::ReportOfWindow).
  Result<report::Report> Report(store::LedgerStore& store, const ReportQuery& query);
  Result<std::vector<report::Report>> Reports(store::LedgerStore& store, const ReportQuery& query);
  // The report over query.window and the reports of its steps (query.step > 0) in one pass
  // where the steps sum to the window (StepsSumToWindow), so a page drawing both pays once.
  Result<SteppedReport> ReportAndSteps(store::LedgerStore& store, const ReportQuery& query);
  // A snapshot covering `window` at the ledger's current generation.
  Result<std::shared_ptr<const Snapshot>> SnapshotFor(store::LedgerStore& store,
                                                      const TimeRange& window);
  // Each GPU's summary over `window` (SummarizeDevices): from the kept snapshot when it covers
  // the window; else a day at a time, each whole day that ended before the open hours summed
  // once and held (dropped by the writes that touch it, as the held days are), the hours the
  // kept snapshot holds from it, the others read for the query. A server's memory is its kept
  // days, not the window a devices page asks for.
  Result<std::vector<DeviceSummary>> Devices(store::LedgerStore& store, const TimeRange& window);
  // Reads `window` a day at a time, oldest first, so a reader holds a day of rows rather than the
  // window: the days the kept snapshot holds from it, each other day loaded for this read alone
  // (into the last one's columns). The days agree: a write that lands meanwhile in a day loaded
  // alone starts the read again (reader.Begin()), a few times; then kUnavailable.
  Status EachDay(store::LedgerStore& store, const TimeRange& window, DayReader& reader);
  // Each part of `window` (a day, or the part of one it holds), oldest first, as `summarizer`
  // keeps it: a whole day that ended before the open hours summarized once and held (dropped by
  // the writes that touch it, as the held days are; summarized again where a held one does not
  // serve), the others from the kept snapshot when it is loaded, else read for this read alone
  // a day at a time. The parts agree: a write that lands meanwhile starts the read again, a few
  // times; then kUnavailable.
  Result<std::vector<SummarizedPart>> Summaries(store::LedgerStore& store, const TimeRange& window,
                                                DaySummarizer& summarizer);
  // Loads the kept snapshot now (a server starting), so the first report does not wait for it;
  // first, with `hold`, holds the days the ledger keeps summed of its window, policy and idle
  // handling; last, holds each GPU's summary of the days before the kept rows (Devices). While the
  // snapshot loads whole, a report whose days can be read kept summed (ReadsDaysSummed) regroups
  // the held days (its other hours read for it alone) or reads the ledger's records (ReadReports on
  // the report's own connection) instead of waiting: at 10,000 GPUs seconds where the load takes
  // tens.
  Status Warm(store::LedgerStore& store, const ReportQuery* hold = nullptr);
  ReadServiceStats stats() const;

  using MaybeReports = std::optional<std::vector<report::Report>>;

 private:
  // The kept snapshot brought to the ledger now by reading its changed days, when the store
  // can say which; nullptr (kept_ dropped) when it cannot. Holds mu_.
  Result<std::shared_ptr<const Snapshot>> RefreshKept(store::LedgerStore& store);
  // The kept snapshot when it covers `window` (brought to the ledger now); nullptr when the
  // window reaches before its days.
  Result<std::shared_ptr<const Snapshot>> KeptSnapshotFor(store::LedgerStore& store,
                                                          const TimeRange& window);
  // The kept snapshot at `generation` (the ledger's now, read before): refreshed, or loaded
  // whole, over the days kept before `extent`'s end. Holds mu_.
  Result<std::shared_ptr<const Snapshot>> KeptAt(store::LedgerStore& store, std::int64_t generation,
                                                 const TimeRange& extent);
  // The whole days of a query's window that may be held ({0, 0} for none).
  TimeRange DaysHeldFor(const ReportQuery& query, const TimeRange& extent) const;
  // Brings the held days to `generation` (the ledger's now): drops what the writes since
  // touched, as the ledger dropped its records of those days. false when the ledger moved past
  // it meanwhile. Holds held_mu_.
  Result<bool> SyncHeld(store::LedgerStore& store, std::int64_t generation);
  // Holds the days `kind` keeps summed in `days` at `generation`, reading those not held from
  // the ledger's records. Whether every day is held now (with `every_day`, it stops at the
  // first that is not kept). Holds held_mu_.
  Result<bool> HoldDays(store::LedgerStore& store, const std::string& kind, const TimeRange& days,
                        std::int64_t generation, bool every_day);
  // The reports of a query that ReadsDaysSummed from days kept summed: the held days, else
  // while the kept snapshot loads whole the ledger's records (ReadReports). nullopt when they
  // cannot answer it (a day not kept): the caller reads the snapshot.
  Result<MaybeReports> FromDaysSummed(store::LedgerStore& store, const ReportQuery& query);
  // FromDaysSummed from the held days. Takes held_mu_, and mu_ when free.
  Result<MaybeReports> FromHeldDays(store::LedgerStore& store, const ReportQuery& query);

  // A part of a held report's window (its first or open day) as answered from rows at
  // held_generation_, with the sums of the rows it was read from.
  struct PartAnswer {
    std::string key;
    std::vector<report::Report> reports;
    report::SumCheck sums;
  };
  // The answer to `part` at held_generation_; nullptr when there is none. Holds held_mu_.
  // Shared, so that a report holding one part's answer keeps it while keeping another's lets
  // the oldest go (issue 58: a pointer into the list outlived its entry and crashed the server).
  std::shared_ptr<const PartAnswer> AnsweredPart(const ReportQuery& part) const;
  // Keeps `reports`, the answer to `part` at held_generation_ (the oldest let go past a
  // handful). Holds held_mu_.
  std::shared_ptr<const PartAnswer> AnswerPart(const ReportQuery& part,
                                               std::vector<report::Report> reports,
                                               const report::SumCheck& sums);

  // ReadReports with open_more, counting its days read from rows.
  Result<std::vector<report::Report>> ReadDirect(store::LedgerStore& store,
                                                 const ReportQuery& query);

  const ReadServiceOptions options_;
  std::mutex mu_;  // held while the kept snapshot loads; stats() never waits for it
  std::shared_ptr<const Snapshot> kept_;
  std::int64_t kept_generation_ = -1;
  TimeRange kept_extent_;
  std::atomic<std::int64_t> cache_hits_ = 0;
  std::atomic<std::int64_t> cache_loads_ = 0;
  std::atomic<std::int64_t> cache_refreshes_ = 0;
  std::atomic<std::int64_t> direct_reads_ = 0;
  std::atomic<std::int64_t> kept_day_reads_ = 0;
  std::atomic<std::int64_t> held_day_reads_ = 0;
  std::atomic<std::int64_t> days_from_rows_ = 0;
  std::mutex held_mu_;  // taken before mu_, never after
  HeldDays held_;       // at held_generation_, under held_mu_
  std::int64_t held_generation_ = -1;
  // The rows of the last window's partial first day read because the kept snapshot's days do
  // not reach it; held and dropped as the held days are.
  std::shared_ptr<const Snapshot> head_rows_;
  // Each GPU's summary of the whole days Devices read, held and dropped as the held days are.
  HeldDevices held_devices_;
  // Readers' summaries of whole days (Summaries), held and dropped as the held days are.
  HeldSummaries held_summaries_;
  // Parts answered since the last write, newest last (under held_mu_).
  std::deque<std::shared_ptr<const PartAnswer>> part_answers_;
  std::atomic<std::int64_t> held_days_ = 0;
  std::atomic<std::int64_t> held_rows_ = 0;
  std::atomic<std::int64_t> held_device_days_ = 0;
  std::atomic<std::int64_t> held_summary_days_ = 0;
  std::atomic<bool> loading_ = false;  // the kept snapshot is loading whole
};

}  // namespace gpuledger::ledger
