// ReadService::Summaries: readers' summaries of a window's days, held for the days that ended.
#include <fmt/format.h>

#include "common/time_util.h"
#include "ledger/day_parts.h"
#include "ledger/read_service.h"

namespace gpuledger::ledger {

Result<std::vector<SummarizedPart>> ReadService::Summaries(store::LedgerStore& store,
                                                           const TimeRange& window,
                                                           DaySummarizer& summarizer) {
  const std::string key = summarizer.Key();
  for (int attempt = 0; attempt < kRefreshTries; ++attempt) {
    auto generation = store.Generation();
    if (!generation) return generation.error();
    auto extent = store.Extent();
    if (!extent) return extent.error();
    const std::vector<DayPart> days = DayParts(window, *extent, options_.held_days);
    std::vector<SummarizedPart> parts(days.size());
    std::shared_ptr<const Snapshot> kept;  // the kept snapshot, when it is loaded and current
    TimeRange kept_extent;
    {
      std::lock_guard held_lock(held_mu_);
      auto synced = SyncHeld(store, *generation);
      if (!synced) return synced.error();
      for (std::size_t i = 0; i < days.size(); ++i) {
        parts[i].range = days[i].range;
        if (*synced && days[i].holds)
          parts[i].summary = held_summaries_.Find(key, days[i].range.from_us);
      }
      if (std::unique_lock lock(mu_, std::try_to_lock);
          lock.owns_lock() && kept_ != nullptr && kept_generation_ == *generation) {
        kept = kept_;
        kept_extent = kept_extent_;
      }
    }
    std::vector<char> summarized(days.size());
    std::shared_ptr<Snapshot> recycled;  // the last day loaded alone, for the next to fill
    TimeRange alone{0, 0};               // the hull of the days loaded alone
    for (std::size_t i = 0; i < parts.size(); ++i) {
      SummarizedPart& part = parts[i];
      if (part.summary != nullptr && summarizer.Serves(*part.summary, part.range)) continue;
      std::shared_ptr<const Snapshot> rows;
      if (kept != nullptr && Covers(*kept, kept_extent, part.range)) {
        ++cache_hits_;
        rows = kept;
      } else {
        if (recycled == nullptr) ++direct_reads_;  // once a read
        auto loaded = Snapshot::Load(store, part.range, std::move(recycled));
        if (!loaded) return loaded.error();
        rows = *loaded;
        if (alone.from_us == alone.to_us) alone.from_us = part.range.from_us;
        alone.to_us = part.range.to_us;
      }
      auto summary = summarizer.Summarize(store, *rows, part.range);
      if (!summary) return summary.error();
      part.summary = *summary;
      summarized[i] = 1;
      if (rows != kept) recycled = std::const_pointer_cast<Snapshot>(std::move(rows));
    }
    // The days loaded alone still read as they did at `generation` (the kept snapshot's and
    // the held days') when no write since touched them.
    if (alone.from_us != alone.to_us) {
      auto changes = store.ChangesSince(*generation);
      if (!changes) return changes.error();
      if (*changes != std::nullopt) {
        if (Overlaps((*changes)->touched, alone)) continue;
      } else {
        auto after = store.Generation();  // the store cannot say what changed
        if (!after) return after.error();
        if (*after != *generation) continue;
      }
    }
    std::lock_guard held_lock(held_mu_);
    if (held_generation_ == *generation)
      for (std::size_t i = 0; i < parts.size(); ++i)
        if (summarized[i] && days[i].holds)
          held_summaries_.Hold(key, days[i].range.from_us, parts[i].summary);
    held_summary_days_ = static_cast<std::int64_t>(held_summaries_.days());
    return parts;
  }
  return Unavailable(
      fmt::format("the ledger was written to during each of {} reads of its days from {} to {}; "
                  "try again",
                  kRefreshTries, FormatRfc3339(window.from_us), FormatRfc3339(window.to_us)));
}

}  // namespace gpuledger::ledger
