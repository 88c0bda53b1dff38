#pragma once
// The one place a long-running reader (the server) answers reports from (issue 32). It keeps
// the snapshot of the ledger's last `cached_days` days, so a report over them is a scan of
// memory; a window reaching further back is read from the store for that query alone. When the
// ledger's generation moves, the kept snapshot reads again only the days written since
// (LedgerStore::ChangesSince; a live server writes the current hour every round), and whole
// when the store cannot say. Thread-safe; one load of the kept snapshot at a time (a window
// read alone holds up no one).

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "common/result.h"
#include "ledger/reports.h"
#include "ledger/snapshot.h"
#include "store/ledger_store.h"

namespace gpuledger::ledger {

struct ReadServiceOptions {
  int cached_days = 35;  // a 30-day window with room; at 10,000 GPUs about 3.4 GiB
};

struct ReadServiceStats {
  std::int64_t cache_hits = 0;   // answered from the kept snapshot
  std::int64_t cache_loads = 0;  // the kept snapshot loaded whole: first use, or unknown changes
  std::int64_t cache_refreshes = 0;  // the kept snapshot's changed days read again
  std::int64_t direct_reads = 0;     // windows outside the kept days, read for one query
  // Answered from the days the ledger keeps summed while the kept snapshot loaded whole.
  std::int64_t kept_day_reads = 0;
};

// A window's report and its steps' reports, from one snapshot.
struct SteppedReport {
  report::Report window;
  std::vector<report::Report> steps;
};

class ReadService {
 public:
  explicit ReadService(ReadServiceOptions options = {}) : options_(options) {}

  Result<std::vector<report::Report>> Reports(store::LedgerStore& store, const ReportQuery& query);
  // The report over query.window and the reports of its steps (query.step > 0) in one pass
  // where the steps sum to the window (StepsSumToWindow), so a page drawing both pays once.
  Result<SteppedReport> ReportAndSteps(store::LedgerStore& store, const ReportQuery& query);
  // A snapshot covering `window` at the ledger's current generation.
  Result<std::shared_ptr<const Snapshot>> SnapshotFor(store::LedgerStore& store,
                                                      const TimeRange& window);
  // Loads the kept snapshot now (a server starting), so the first report does not wait for it.
  // While it loads whole, a report whose days can be read kept summed (ReadsDaysSummed) reads
  // them instead of waiting (ReadReports on the report's own connection): at 10,000 GPUs seconds
  // where the load takes tens.
  Status Warm(store::LedgerStore& store);
  ReadServiceStats stats() const;

 private:
  // The kept snapshot brought to the ledger now by reading its changed days, when the store
  // can say which; nullptr (kept_ dropped) when it cannot. Holds mu_.
  Result<std::shared_ptr<const Snapshot>> RefreshKept(store::LedgerStore& store);

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
  std::atomic<bool> loading_ = false;  // the kept snapshot is loading whole
};

}  // namespace gpuledger::ledger
