#include "ledger/read_service.h"

#include <algorithm>

#include "ledger/day_rollup.h"

namespace gpuledger::ledger {
namespace {

// Whether `snapshot` holds every row of `window` a ledger of `extent` can have.
bool Covers(const Snapshot& snapshot, const TimeRange& extent, const TimeRange& window) {
  const Micros from = std::max(window.from_us, extent.from_us);
  const Micros to = std::min(window.to_us, extent.to_us);
  return from >= to || (from >= snapshot.range().from_us && to <= snapshot.range().to_us);
}

// The days a ledger of `extent` keeps in memory.
TimeRange KeptDays(const TimeRange& extent, int cached_days) {
  return {std::max(extent.from_us, extent.to_us - cached_days * kMicrosPerDay), extent.to_us};
}

// Refreshes that meet a write each time before the store is read again whole.
constexpr int kRefreshTries = 3;

}  // namespace

Result<std::shared_ptr<const Snapshot>> ReadService::SnapshotFor(store::LedgerStore& store,
                                                                 const TimeRange& window) {
  // Read before the snapshot: a write landing in between makes the kept copy look older than
  // it is (one extra load later), never newer.
  auto generation = store.Generation();
  if (!generation) return generation.error();
  auto kept = [&]() -> std::shared_ptr<const Snapshot> {
    if (kept_ && kept_generation_ == *generation && Covers(*kept_, kept_extent_, window)) {
      ++cache_hits_;
      return kept_;
    }
    return nullptr;
  };
  {
    std::lock_guard lock(mu_);
    if (auto hit = kept()) return hit;
  }
  auto extent = store.Extent();
  if (!extent) return extent.error();
  const TimeRange keep = KeptDays(*extent, options_.cached_days);
  if (window.from_us < keep.from_us && window.to_us > extent->from_us) {
    // Outside the lock: reports from the kept snapshot do not wait for this one.
    ++direct_reads_;
    return Snapshot::Load(store, window);
  }
  std::lock_guard lock(mu_);
  if (auto hit = kept()) return hit;  // loaded by another request meanwhile
  if (kept_ != nullptr) {
    auto refreshed = RefreshKept(store);
    if (!refreshed) return refreshed.error();
    if (*refreshed != nullptr) {
      if (Covers(**refreshed, kept_extent_, window)) return *refreshed;
      // Not in the kept days after all (the ledger grew meanwhile): read for this query.
      ++direct_reads_;
      return Snapshot::Load(store, window);
    }
  }
  loading_ = true;
  auto loaded = Snapshot::Load(store, keep);
  loading_ = false;
  if (!loaded) return loaded.error();
  kept_ = *loaded;
  kept_generation_ = *generation;
  kept_extent_ = *extent;
  ++cache_loads_;
  return kept_;
}

Result<std::shared_ptr<const Snapshot>> ReadService::RefreshKept(store::LedgerStore& store) {
  // Each try reads what changed since the kept generation, then those days; a write landing
  // during the read makes the days disagree, so the kept snapshot is trusted only when the
  // generation after the read is the one the changes were read at (then every day holds it).
  for (int attempt = 0; attempt < kRefreshTries; ++attempt) {
    auto changes = store.ChangesSince(kept_generation_);
    if (!changes) return changes.error();
    if (!*changes) break;  // the store cannot say: read whole
    const store::LedgerChanges& c = **changes;
    auto refreshed = Snapshot::Refresh(store, std::move(kept_),
                                       KeptDays(c.extent, options_.cached_days), c.touched);
    if (!refreshed) return refreshed.error();  // kept_ is gone: the next read loads whole
    kept_ = *refreshed;
    kept_generation_ = c.generation;
    kept_extent_ = c.extent;
    auto after = store.Generation();
    if (!after) return after.error();
    if (*after == c.generation) {
      ++cache_refreshes_;
      return kept_;
    }
  }
  kept_ = nullptr;
  kept_generation_ = -1;
  return std::shared_ptr<const Snapshot>();
}

Status ReadService::Warm(store::LedgerStore& store) {
  auto extent = store.Extent();
  if (!extent) return extent.status();
  if (extent->to_us <= extent->from_us) return Status::Ok();  // nothing to keep yet
  auto snapshot = SnapshotFor(store, {extent->to_us - kMicrosPerHour, extent->to_us});
  return snapshot ? Status::Ok() : snapshot.status();
}

Result<std::vector<report::Report>> ReadService::Reports(store::LedgerStore& store,
                                                         const ReportQuery& query) {
  if (loading_ && ReadsDaysSummed(query)) {
    ++kept_day_reads_;
    return ReadReports(store, query);
  }
  auto snapshot = SnapshotFor(store, query.window);
  if (!snapshot) return snapshot.error();
  return BuildReports(**snapshot, query);
}

Result<SteppedReport> ReadService::ReportAndSteps(store::LedgerStore& store,
                                                  const ReportQuery& query) {
  if (loading_ && ReadsDaysSummed(query)) {  // whose steps sum to its window
    ++kept_day_reads_;
    auto steps = ReadReports(store, query);
    if (!steps) return steps.error();
    return SteppedReport{SumSteps(*steps), std::move(*steps)};
  }
  auto snapshot = SnapshotFor(store, query.window);
  if (!snapshot) return snapshot.error();
  auto steps = BuildReports(**snapshot, query);
  if (!steps) return steps.error();
  if (StepsSumToWindow(query)) return SteppedReport{SumSteps(*steps), std::move(*steps)};
  ReportQuery whole = query;
  whole.step = 0;
  auto window = BuildReports(**snapshot, whole);
  if (!window) return window.error();
  return SteppedReport{std::move(window->front()), std::move(*steps)};
}

ReadServiceStats ReadService::stats() const {
  return {cache_hits_.load(), cache_loads_.load(), cache_refreshes_.load(), direct_reads_.load(),
          kept_day_reads_.load()};
}

}  // namespace gpuledger::ledger
