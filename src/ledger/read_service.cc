#include "ledger/read_service.h"

#include <algorithm>

namespace gpuledger::ledger {
namespace {

// Whether `snapshot` holds every row of `window` a ledger of `extent` can have.
bool Covers(const Snapshot& snapshot, const TimeRange& extent, const TimeRange& window) {
  const Micros from = std::max(window.from_us, extent.from_us);
  const Micros to = std::min(window.to_us, extent.to_us);
  return from >= to || (from >= snapshot.range().from_us && to <= snapshot.range().to_us);
}

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
  const TimeRange keep{
      std::max(extent->from_us, extent->to_us - options_.cached_days * kMicrosPerDay),
      extent->to_us};
  if (window.from_us < keep.from_us && window.to_us > extent->from_us) {
    // Outside the lock: reports from the kept snapshot do not wait for this one.
    ++direct_reads_;
    return Snapshot::Load(store, window);
  }
  std::lock_guard lock(mu_);
  if (auto hit = kept()) return hit;  // loaded by another request meanwhile
  auto loaded = Snapshot::Load(store, keep);
  if (!loaded) return loaded.error();
  kept_ = *loaded;
  kept_generation_ = *generation;
  kept_extent_ = *extent;
  ++cache_loads_;
  return kept_;
}

Result<std::vector<report::Report>> ReadService::Reports(store::LedgerStore& store,
                                                         const ReportQuery& query) {
  auto snapshot = SnapshotFor(store, query.window);
  if (!snapshot) return snapshot.error();
  return BuildReports(**snapshot, query);
}

ReadServiceStats ReadService::stats() const {
  return {cache_hits_.load(), cache_loads_.load(), direct_reads_.load()};
}

}  // namespace gpuledger::ledger
