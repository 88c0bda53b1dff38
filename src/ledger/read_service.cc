#include "ledger/read_service.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/time_util.h"
#include "ledger/day_parts.h"
#include "ledger/day_rollup.h"
#include "ledger/read_reports.h"
#include "ledger/statements.h"

namespace gpuledger::ledger {
namespace {

// What a part's reports depend on, but for the ledger's generation.
std::string PartKey(const ReportQuery& q) {
  return fmt::format("{} {} {} {} {} {} {}\n{}", q.window.from_us, q.window.to_us, q.step,
                     q.rows_only, report::ToString(q.group_by), cost::ToString(q.policy),
                     cost::ToString(q.idle), FilterKey(q.filter));
}

// Parts answered kept at once: a dashboard's handful of views, each a first and an open day.
constexpr std::size_t kPartAnswers = 16;

// No answer from days kept summed: the kept snapshot answers.
Result<ReadService::MaybeReports> NotFromDays() { return ReadService::MaybeReports(); }

}  // namespace

Result<std::shared_ptr<const Snapshot>> ReadService::SnapshotFor(store::LedgerStore& store,
                                                                 const TimeRange& window) {
  auto kept = KeptSnapshotFor(store, window);
  if (!kept) return kept.error();
  if (*kept != nullptr) return *kept;
  ++direct_reads_;
  return Snapshot::Load(store, window);
}

Status ReadService::EachDay(store::LedgerStore& store, const TimeRange& window, DayReader& reader) {
  for (int attempt = 0; attempt < kRefreshTries; ++attempt) {
    auto generation = store.Generation();
    if (!generation) return generation.status();
    auto extent = store.Extent();
    if (!extent) return extent.status();
    reader.Begin();
    std::shared_ptr<const Snapshot> kept;  // from the first day it covers on
    std::shared_ptr<Snapshot> recycled;    // the last day loaded alone, for the next to fill
    TimeRange alone{0, 0};                 // the hull of the days loaded alone
    const Micros to = std::min(window.to_us, extent->to_us);
    for (Micros t = std::max(window.from_us, extent->from_us); t < to;) {
      const TimeRange part{t, std::min(DayStart(t) + kMicrosPerDay, to)};
      t = part.to_us;
      if (kept == nullptr) {
        auto covering = KeptSnapshotFor(store, {part.from_us, to});
        if (!covering) return covering.status();
        kept = *covering;
      }
      if (kept != nullptr) {
        if (Status s = reader.OnDay(*kept, part); !s.ok()) return s;
        continue;
      }
      if (recycled == nullptr) ++direct_reads_;  // once a read
      auto loaded = Snapshot::Load(store, part, std::move(recycled));
      if (!loaded) return loaded.status();
      if (alone.from_us == alone.to_us) alone.from_us = part.from_us;
      alone.to_us = part.to_us;
      Status s = reader.OnDay(**loaded, part);
      recycled = std::const_pointer_cast<Snapshot>(std::move(*loaded));
      if (!s.ok()) return s;
    }
    if (alone.from_us == alone.to_us) return Status::Ok();  // all from one snapshot
    // The days loaded alone still read as they did when the kept snapshot was taken (after
    // them) when no write since the start touched them.
    auto changes = store.ChangesSince(*generation);
    if (!changes) return changes.status();
    if (*changes != std::nullopt) {
      if (!Overlaps((*changes)->touched, alone)) return Status::Ok();
      continue;
    }
    auto after = store.Generation();  // the store cannot say what changed
    if (!after) return after.status();
    if (*after == *generation) return Status::Ok();
  }
  return Unavailable(
      fmt::format("the ledger was written to during each of {} reads of its days from {} to {}; "
                  "try again",
                  kRefreshTries, FormatRfc3339(window.from_us), FormatRfc3339(window.to_us)));
}

Result<std::vector<DeviceSummary>> ReadService::Devices(store::LedgerStore& store,
                                                        const TimeRange& window) {
  auto kept = KeptSnapshotFor(store, window);
  if (!kept) return kept.error();
  if (*kept != nullptr) return SummarizeDevices(**kept, window);
  // Each try reads the parts not held; they agree when no write landed meanwhile.
  for (int attempt = 0; attempt < kRefreshTries; ++attempt) {
    auto generation = store.Generation();
    if (!generation) return generation.error();
    auto extent = store.Extent();
    if (!extent) return extent.error();
    // The window's days (the first and last may be parts of one).
    struct Part {
      TimeRange range;
      bool holds = false;
      bool held = false;
      std::vector<DeviceSummary> summaries;  // of a part not held
      bool read = false;
    };
    std::vector<Part> parts;
    for (const DayPart& day : DayParts(window, *extent, options_.held_days))
      parts.push_back({day.range, day.holds});
    {
      std::lock_guard held_lock(held_mu_);
      auto synced = SyncHeld(store, *generation);
      if (!synced) return synced.error();
      for (Part& part : parts)
        part.held = *synced && part.holds && held_devices_.Find(part.range.from_us) != nullptr;
      // The open days from the kept snapshot, when it is not busy loading.
      if (std::unique_lock lock(mu_, std::try_to_lock);
          lock.owns_lock() && kept_ != nullptr && kept_generation_ == *generation)
        for (Part& part : parts)
          if (!part.held && Covers(*kept_, kept_extent_, part.range)) {
            part.summaries = SummarizeDevices(*kept_, part.range);
            part.read = true;
          }
    }
    std::shared_ptr<Snapshot> recycled;  // the last part's columns, for the next to fill
    for (Part& part : parts) {
      if (part.held || part.read) continue;
      if (recycled == nullptr) ++direct_reads_;  // once a request
      auto loaded = Snapshot::Load(store, part.range, std::move(recycled));
      if (!loaded) return loaded.error();
      part.summaries = SummarizeDevices(**loaded, part.range);
      recycled = std::const_pointer_cast<Snapshot>(std::move(*loaded));
    }
    auto after = store.Generation();
    if (!after) return after.error();
    if (*after != *generation) continue;
    std::lock_guard held_lock(held_mu_);
    if (held_generation_ != *generation) continue;  // synced past it by another request
    held_devices_.Compact();
    std::vector<HeldDevices::Part> interned;
    interned.reserve(parts.size());  // pointed into below
    std::vector<const HeldDevices::Part*> in_order;
    for (const Part& part : parts) {
      if (!part.held) {
        interned.push_back(held_devices_.Intern(part.summaries));
        if (part.holds) held_devices_.Hold(part.range.from_us, interned.back());
      }
      in_order.push_back(part.held ? held_devices_.Find(part.range.from_us) : &interned.back());
    }
    held_device_days_ = static_cast<std::int64_t>(held_devices_.days());
    if (std::find(in_order.begin(), in_order.end(), nullptr) != in_order.end()) continue;
    return held_devices_.Sum(in_order);
  }
  // Written to during every try: the window whole, in one snapshot.
  ++direct_reads_;
  auto whole = Snapshot::Load(store, window);
  if (!whole) return whole.error();
  return SummarizeDevices(**whole, window);
}

Result<std::shared_ptr<const Snapshot>> ReadService::KeptSnapshotFor(store::LedgerStore& store,
                                                                     const TimeRange& window) {
  // Read before the snapshot: a write landing in between makes the kept copy look older than
  // it is (one extra load later), never newer.
  auto generation = store.Generation();
  if (!generation) return generation.error();
  {
    std::lock_guard lock(mu_);
    if (kept_ && kept_generation_ == *generation && Covers(*kept_, kept_extent_, window)) {
      ++cache_hits_;
      return kept_;
    }
  }
  auto extent = store.Extent();
  if (!extent) return extent.error();
  const TimeRange keep = KeptDays(*extent, options_.snapshot_days);
  // Outside the lock: reports from the kept snapshot do not wait for this one.
  if (window.from_us < keep.from_us && window.to_us > extent->from_us)
    return std::shared_ptr<const Snapshot>();
  std::lock_guard lock(mu_);
  auto kept = KeptAt(store, *generation, *extent);
  if (!kept) return kept.error();
  if (Covers(**kept, kept_extent_, window)) return *kept;
  return std::shared_ptr<const Snapshot>();  // not in the kept days after all (the ledger grew)
}

Result<std::shared_ptr<const Snapshot>> ReadService::KeptAt(store::LedgerStore& store,
                                                            std::int64_t generation,
                                                            const TimeRange& extent) {
  if (kept_ && kept_generation_ == generation) {  // loaded by another request meanwhile
    ++cache_hits_;
    return kept_;
  }
  if (kept_ != nullptr) {
    auto refreshed = RefreshKept(store);
    if (!refreshed) return refreshed.error();
    if (*refreshed != nullptr) return *refreshed;
  }
  loading_ = true;
  auto loaded = Snapshot::Load(store, KeptDays(extent, options_.snapshot_days));
  loading_ = false;
  if (!loaded) return loaded.error();
  kept_ = *loaded;
  kept_generation_ = generation;
  kept_extent_ = extent;
  ++cache_loads_;
  return kept_;
}

Result<std::shared_ptr<const Snapshot>> ReadService::RefreshKept(store::LedgerStore& store) {
  // Each try reads what changed since the kept generation, then those days; a write landing
  // during the read makes the days disagree, so the kept snapshot is trusted only when the
  // generation after the read is the one its changes were read at (then every day holds it).
  for (int attempt = 0; attempt < kRefreshTries; ++attempt) {
    auto changes = store.ChangesSince(kept_generation_);
    if (!changes) return changes.error();
    if (!*changes) break;  // the store cannot say: read whole
    const store::LedgerChanges& c = **changes;
    auto refreshed = Snapshot::Refresh(store, std::move(kept_),
                                       KeptDays(c.extent, options_.snapshot_days), c.touched);
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

Status ReadService::Warm(store::LedgerStore& store, const ReportQuery* hold) {
  auto extent = store.Extent();
  if (!extent) return extent.status();
  if (extent->to_us <= extent->from_us) return Status::Ok();  // nothing to keep yet
  if (hold != nullptr && ReadsDaysSummed(*hold)) {
    // First, so that reports over them answer while the snapshot loads.
    const TimeRange days = DaysHeldFor(*hold, *extent);
    if (days.from_us < days.to_us) {
      auto generation = store.Generation();
      if (!generation) return generation.status();
      std::lock_guard lock(held_mu_);
      auto held = HoldDays(store, DayRollupKind(hold->policy, hold->idle), days, *generation,
                           /*every_day=*/false);
      if (!held) return held.status();
    }
  }
  auto snapshot = SnapshotFor(store, {extent->to_us - kMicrosPerHour, extent->to_us});
  if (!snapshot) return snapshot.status();
  // Each GPU's summary of the days before the kept rows, held: a devices page over them then
  // sums held days rather than reading each day's rows (at 10,000 GPUs x 30 days, 15-18 s).
  auto devices = Devices(store, KeptDays(*extent, options_.held_days));
  return devices ? Status::Ok() : devices.status();
}

TimeRange ReadService::DaysHeldFor(const ReportQuery& query, const TimeRange& extent) const {
  // From the window's first whole day (a step's days start on the window's start) to where the
  // ledger's open hours begin or the window's last whole day ends, the rows after them starting
  // a step; within the last held_days days.
  const TimeRange& w = query.window;
  const Micros from = DayStart(std::max(w.from_us, extent.from_us) + kMicrosPerDay - 1);
  Micros to = std::min(DayStart(extent.to_us - kOpenHours * kMicrosPerHour), DayStart(w.to_us));
  if (query.step > 0 && to > w.from_us) to = w.from_us + (to - w.from_us) / query.step * query.step;
  if (to <= from || from < KeptDays(extent, options_.held_days).from_us) return {0, 0};
  return {from, to};
}

Result<bool> ReadService::SyncHeld(store::LedgerStore& store, std::int64_t generation) {
  if (held_generation_ == generation) return true;
  part_answers_.clear();  // answered at another generation
  if (held_generation_ >= 0) {
    auto changes = store.ChangesSince(held_generation_);
    if (!changes) return changes.error();
    if (*changes) {
      // What the writes since touched, as the ledger dropped its records of those days.
      held_.Drop((*changes)->touched);
      const TimeRange held = KeptDays((*changes)->extent, options_.held_days);
      held_.DropBefore(held.from_us);
      held_devices_.Drop((*changes)->touched);
      held_devices_.DropBefore(held.from_us);
      held_summaries_.Drop((*changes)->touched);
      held_summaries_.DropBefore(held.from_us);
      if (head_rows_ && (Overlaps(head_rows_->range(), (*changes)->touched) ||
                         head_rows_->range().from_us < held.from_us))
        head_rows_ = nullptr;
      held_generation_ = (*changes)->generation;
      return held_generation_ == generation;  // else written since `generation` was read
    }
  }
  held_.Clear();  // nothing held, or held at a generation the store no longer knows
  head_rows_ = nullptr;
  held_devices_.Clear();
  held_summaries_.Clear();
  held_generation_ = generation;
  return true;
}

Result<bool> ReadService::HoldDays(store::LedgerStore& store, const std::string& kind,
                                   const TimeRange& days, std::int64_t generation, bool every_day) {
  auto synced = SyncHeld(store, generation);
  if (!synced || !*synced) return synced;
  held_.Compact();
  // Days not held yet are read from the ledger's records, and held only if no write landed
  // since `generation` (then they are the days as the ledger has them at it).
  std::vector<SummedDay> read;
  std::string bytes;
  bool every = true;
  for (Micros day = days.from_us; day < days.to_us; day += kMicrosPerDay) {
    if (held_.Find(kind, day) != nullptr) continue;
    auto record = store.ReadDayRollup(day, kind);
    if (!record) return record.error();
    SummedDay& summed = read.emplace_back();
    // Not kept (yet), or in bytes this build does not read: the rows answer.
    if (!*record || !DecodeDayRollup(**record, held_.tables(), summed, bytes).ok()) {
      read.pop_back();
      every = false;
      if (every_day) return false;
    }
  }
  if (!read.empty()) {
    auto after = store.Generation();
    if (!after) return after.error();
    if (*after != generation) return false;
    for (SummedDay& day : read) held_.Hold(kind, std::move(day));
  }
  held_days_ = static_cast<std::int64_t>(held_.days());
  held_rows_ = static_cast<std::int64_t>(held_.rows());
  return every;
}

Result<ReadService::MaybeReports> ReadService::FromDaysSummed(store::LedgerStore& store,
                                                              const ReportQuery& query) {
  if (!ReadsDaysSummed(query)) return NotFromDays();
  auto held = FromHeldDays(store, query);
  if (!held || *held || !loading_) return held;
  // Not held, and the snapshot is loading whole: the ledger's records of the days, on this
  // report's own connection.
  ++kept_day_reads_;
  auto reports = ReadDirect(store, query);
  if (!reports) return reports.error();
  return MaybeReports(std::move(*reports));
}

Result<ReadService::MaybeReports> ReadService::FromHeldDays(store::LedgerStore& store,
                                                            const ReportQuery& query) {
  auto generation = store.Generation();
  if (!generation) return generation.error();
  auto extent = store.Extent();
  if (!extent) return extent.error();
  const TimeRange days = DaysHeldFor(query, *extent);
  if (days.from_us >= days.to_us) return NotFromDays();
  const TimeRange& w = query.window;
  const TimeRange around[] = {{w.from_us, days.from_us}, {days.to_us, w.to_us}};
  const std::string kind = DayRollupKind(query.policy, query.idle);

  std::lock_guard held_lock(held_mu_);
  auto held = HoldDays(store, kind, days, *generation, /*every_day=*/true);
  if (!held) return held.error();
  if (!*held) return NotFromDays();
  // The parts around the days, as answered since the last write (a dashboard asks for the same
  // open day again and again), else from rows.
  ReportQuery parts[2] = {query, query};
  std::shared_ptr<const PartAnswer> answered[2];
  bool answers_all = true;
  for (int i = 0; i < 2; ++i) {
    parts[i].window = around[i];  // each starts a step
    if (around[i].from_us < around[i].to_us) answered[i] = AnsweredPart(parts[i]);
    answers_all = answers_all && (answered[i] != nullptr || around[i].from_us >= around[i].to_us);
  }
  // The rows around the days at the same generation: from the kept snapshot when it is there
  // and not busy (a whole load takes tens of seconds at 10,000 GPUs), else read for this
  // report (a day or two).
  std::shared_ptr<const Snapshot> rows[2];
  if (std::unique_lock lock(mu_, std::try_to_lock);
      !answers_all && lock.owns_lock() && kept_ != nullptr) {
    if (kept_generation_ != *generation) {
      auto refreshed = RefreshKept(store);
      if (!refreshed) return refreshed.error();
    }
    for (int i = 0; i < 2; ++i)
      if (kept_ != nullptr && kept_generation_ == *generation &&
          Covers(*kept_, kept_extent_, around[i]))
        rows[i] = kept_;
  }
  // A window's partial first day before the kept snapshot's days (a 30-day window with fewer
  // kept) is the same for a day of reports: its rows are held beside the days, as they are.
  if (rows[0] == nullptr && head_rows_ != nullptr && Covers(*head_rows_, *extent, around[0]))
    rows[0] = head_rows_;
  for (int i = 0; i < 2; ++i) {
    if (rows[i] != nullptr || answered[i] != nullptr || around[i].from_us >= around[i].to_us)
      continue;
    auto loaded = Snapshot::Load(store, around[i]);
    if (!loaded) return loaded.error();
    auto after = store.Generation();
    if (!after) return after.error();
    if (*after != *generation) return NotFromDays();  // written meanwhile
    rows[i] = *loaded;
    if (i == 0) head_rows_ = rows[i];
  }

  DaysSummed summed(query, held_.tables());
  for (Micros day = days.from_us; day < days.to_us; day += kMicrosPerDay) {
    const SummedDay* one = held_.Find(kind, day);
    if (one == nullptr) return NotFromDays();  // cannot be: HoldDays held every one
    summed.Add(*one);
  }
  report::SumCheck sums = summed.sums();
  for (int i = 0; i < 2; ++i) {
    if (around[i].from_us >= around[i].to_us) continue;
    if (answered[i] == nullptr) {
      auto reports = BuildReports(*rows[i], parts[i]);
      if (!reports) return NotFromDays();  // the window read whole names what does not fit
      // A snapshot's sums bound the rows read from it.
      answered[i] = AnswerPart(parts[i], std::move(*reports), rows[i]->sums());
    }
    for (const report::Report& r : answered[i]->reports) summed.AddGrouped(r);
    sums.Merge(answered[i]->sums);
  }
  // Where the sums might not fit, the window read whole decides.
  if (!held_.tables().ok() || !sums.Check().ok()) return NotFromDays();
  ++held_day_reads_;
  return MaybeReports(summed.Finish());
}

std::shared_ptr<const ReadService::PartAnswer> ReadService::AnsweredPart(
    const ReportQuery& part) const {
  const std::string key = PartKey(part);
  for (const auto& a : part_answers_)
    if (a->key == key) return a;
  return nullptr;
}

std::shared_ptr<const ReadService::PartAnswer> ReadService::AnswerPart(
    const ReportQuery& part, std::vector<report::Report> reports, const report::SumCheck& sums) {
  if (part_answers_.size() >= kPartAnswers) part_answers_.pop_front();
  return part_answers_.emplace_back(
      std::make_shared<const PartAnswer>(PartAnswer{PartKey(part), std::move(reports), sums}));
}

Result<std::vector<report::Report>> ReadService::Reports(store::LedgerStore& store,
                                                         const ReportQuery& query) {
  auto summed = FromDaysSummed(store, query);
  if (!summed) return summed.error();
  if (*summed) return std::move(**summed);
  auto snapshot = KeptSnapshotFor(store, query.window);
  if (!snapshot) return snapshot.error();
  if (*snapshot != nullptr) return BuildReports(**snapshot, query);
  // Outside the kept days: a day at a time, so a report holds a day of the ledger, not the
  // window (the kept snapshot is what bounds a server's memory).
  ++direct_reads_;
  return ReadDirect(store, query);
}

Result<report::Report> ReadService::Report(store::LedgerStore& store, const ReportQuery& query) {
  return ReportOfWindow(store, query, [&](const ReportQuery& q) -> Result<report::Report> {
    auto reports = Reports(store, q);
    if (!reports) return reports.error();
    return std::move(reports->front());
  });
}

Result<std::vector<report::Report>> ReadService::ReadDirect(store::LedgerStore& store,
                                                            const ReportQuery& query) {
  int unkept = 0;
  auto reports = ReadReports(store, query, options_.open_more, &unkept);
  days_from_rows_ += unkept;
  return reports;
}

Result<SteppedReport> ReadService::ReportAndSteps(store::LedgerStore& store,
                                                  const ReportQuery& query) {
  auto summed = FromDaysSummed(store, query);  // whose steps sum to its window
  if (!summed) return summed.error();
  if (*summed) return SteppedReport{SumSteps(**summed), std::move(**summed)};
  ReportQuery whole = query;
  whole.step = 0;
  auto snapshot = KeptSnapshotFor(store, query.window);
  if (!snapshot) return snapshot.error();
  auto reports = [&](const ReportQuery& q) {
    return *snapshot != nullptr ? BuildReports(**snapshot, q) : ReadDirect(store, q);
  };
  if (*snapshot == nullptr) ++direct_reads_;
  auto steps = reports(query);
  if (!steps) return steps.error();
  if (StepsSumToWindow(query)) return SteppedReport{SumSteps(*steps), std::move(*steps)};
  auto window = reports(whole);
  if (!window) return window.error();
  return SteppedReport{std::move(window->front()), std::move(*steps)};
}

ReadServiceOptions OneQueryOptions(store::StoreOpener open_more) {
  return {.snapshot_days = 0, .held_days = 0, .open_more = std::move(open_more)};
}

ReadServiceStats ReadService::stats() const {
  return {cache_hits_.load(),        cache_loads_.load(),    cache_refreshes_.load(),
          direct_reads_.load(),      kept_day_reads_.load(), held_day_reads_.load(),
          held_days_.load(),         held_rows_.load(),      held_device_days_.load(),
          held_summary_days_.load(), days_from_rows_.load()};
}

}  // namespace gpuledger::ledger
