#include "ledger/read_reports.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "billing/reconciled_prices.h"
#include "ledger/day_rollup.h"
#include "ledger/merged_reports.h"
#include "ledger/snapshot.h"

namespace gpuledger::ledger {
namespace {

// Adds the day starting at `day_us` as `store` keeps it summed to `days`; an error (unavailable)
// when it is not kept, or kept in bytes this build does not read: it is then read from its rows.
// `scratch` and `bytes` are the reader's, reused from day to day.
Status ReadKeptDay(store::LedgerStore& store, Micros day_us, const std::string& kind,
                   DayTables& tables, DaysSummed& days, SummedDay& scratch, std::string& bytes) {
  auto kept = store.ReadDayRollup(day_us, kind);
  if (!kept) return kept.status();
  if (!*kept) return Unavailable("not kept");
  if (Status s = DecodeDayRollup(**kept, tables, scratch, bytes); !s) return s;
  days.Add(scratch);
  return Status::Ok();
}

// Sums the day `snapshot` holds and adds it to `days`, as a kept day would be. A read never
// keeps it: only writers do (the server's keeper, the demo: KeepDays), so a report reads a
// read-only ledger as it reads a writable one, and never fails for a write it did not need.
Status AddDayFromRows(const Snapshot& snapshot, const ReportQuery& query,
                      const Parallelism& parallelism, DayTables& tables, DaysSummed& days) {
  auto day = SumDay(snapshot, query, parallelism);
  if (!day) return day.status();
  days.Add(ToSummedDay(day->day, day->sums, tables));
  return Status::Ok();
}

// Days a reader without a snapshot holds at once.
constexpr Micros kPartDays = 1;
// How often the open days are read again when writes keep landing in them.
constexpr int kOpenRereads = 3;

}  // namespace

Result<std::vector<report::Report>> ReadReports(store::LedgerStore& store, const ReportQuery& query,
                                                const store::StoreOpener& open_more,
                                                int* days_from_rows) {
  if (days_from_rows != nullptr) *days_from_rows = 0;
  auto whole = [&]() -> Result<std::vector<report::Report>> {
    auto snapshot = Snapshot::Load(store, query.window);
    if (!snapshot) return snapshot.error();
    return BuildReports(**snapshot, query);
  };
  // Days do not sum to the window there (StepsSumToWindow): read such a report whole.
  const bool platform_labels = !StepsSumToWindow(query);
  const TimeRange days = billing::WholeDays(query.window.from_us, query.window.to_us);
  const Micros part = kPartDays * kMicrosPerDay;
  if (platform_labels || days.to_us - days.from_us <= part) return whole();

  auto generation = store.Generation();
  if (!generation) return generation.error();
  auto extent = store.Extent();
  if (!extent) return extent.error();
  std::vector<TimeRange> parts;
  for (Micros t = days.from_us; t < days.to_us; t += part)
    parts.push_back({std::max(t, query.window.from_us), std::min(t + part, query.window.to_us)});
  // The days a live ledger may still be writing (its last hours, while they stay open to
  // samples): read from rows, never kept, and held apart, so that a write landing in them while
  // the others are read costs reading them again, not the window whole.
  const Micros open_from = extent->to_us - kOpenHours * kMicrosPerHour;
  auto is_open = [&](std::size_t i) { return parts[i].to_us > open_from; };
  std::size_t first_open = parts.size();
  while (first_open > 0 && is_open(first_open - 1)) --first_open;
  const Micros open_days_from = first_open < parts.size()
                                    ? parts[first_open].from_us / kMicrosPerDay * kMicrosPerDay
                                    : days.to_us;

  // Each reader takes a run of days, not every n-th day: a connection learns the strings of the
  // consumers its days name once, and consumers live for days, so runs learn each about once
  // where alternating days had every connection learn nearly all of them (at 10,000 GPUs that
  // was most of a cold report). The parts are added in day order as they come.
  std::vector<store::LedgerStore*> readers = {&store};
  std::vector<std::unique_ptr<store::LedgerStore>> opened;
  const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
  while (open_more && readers.size() < std::min(cores, parts.size())) {
    auto more = open_more();
    if (!more) break;
    opened.push_back(std::move(*more));
    readers.push_back(opened.back().get());
  }
  const Parallelism each{.max_workers = readers.size() > 1 ? 1u : 4u};
  // Whole days are read kept summed where the ledger keeps them (day_rollup.h), and summed from
  // their rows where it does not (a writer keeps them: KeepDays).
  const bool days_summed = ReadsDaysSummed(query);
  const std::string kind = DayRollupKind(query.policy, query.idle);
  // Each reader's own: entries and rules are interned as its days are read.
  std::vector<std::unique_ptr<DayTables>> tables;
  std::vector<DaysSummed> summed;
  summed.reserve(readers.size());
  for (std::size_t r = 0; r < readers.size(); ++r)
    summed.emplace_back(query, *tables.emplace_back(std::make_unique<DayTables>()));
  // Part i from its rows, into `recycled`'s columns; its rows' sums added to `sums`.
  auto from_rows = [&](store::LedgerStore& reader, std::size_t i,
                       std::shared_ptr<Snapshot>& recycled,
                       report::SumCheck& sums) -> Result<std::vector<report::Report>> {
    auto loaded = Snapshot::Load(reader, parts[i], std::move(recycled));
    if (!loaded) return loaded.error();
    auto reports = BuildReports(**loaded, query, each);
    sums.Merge((*loaded)->sums());
    // Only this reader holds it: the next part reads into its columns.
    recycled = std::const_pointer_cast<Snapshot>(std::move(*loaded));
    return reports;
  };
  std::mutex mu;
  std::map<std::size_t, std::vector<report::Report>> done;  // parts not yet added, by index
  std::size_t next = 0;
  MergedReports merged;
  report::SumCheck sums;
  // The open days' reports, by part from first_open: added last.
  std::vector<std::vector<report::Report>> open_parts(parts.size() - first_open);
  report::SumCheck open_sums;
  std::optional<Error> failed;
  std::atomic<int> unkept = 0;  // whole days summed from rows, none kept
  auto read = [&](std::size_t reader) {
    std::shared_ptr<Snapshot> recycled;  // the reader's last part's, for the next to fill
    SummedDay kept_day;                  // the reader's last kept day's, likewise
    std::string kept_bytes;
    const std::size_t first = parts.size() * reader / readers.size();
    const std::size_t last = parts.size() * (reader + 1) / readers.size();
    for (std::size_t i = first; i < last; ++i) {
      {
        std::lock_guard lock(mu);
        if (failed) return;
      }
      const bool whole_day = days_summed && !is_open(i) && parts[i].from_us % kMicrosPerDay == 0 &&
                             parts[i].to_us - parts[i].from_us == kMicrosPerDay;
      Result<std::vector<report::Report>> reports = std::vector<report::Report>{};
      report::SumCheck part_sums;
      if (!whole_day) {
        reports = from_rows(*readers[reader], i, recycled, part_sums);
      } else if (!ReadKeptDay(*readers[reader], parts[i].from_us, kind, *tables[reader],
                              summed[reader], kept_day, kept_bytes)
                      .ok()) {
        // No report of its own: summed[reader] has the day, and its sums (DaysSummed::sums).
        auto loaded = Snapshot::Load(*readers[reader], parts[i], std::move(recycled));
        Status added = loaded
                           ? AddDayFromRows(**loaded, query, each, *tables[reader], summed[reader])
                           : loaded.status();
        if (!added) reports = added.error();
        if (loaded) recycled = std::const_pointer_cast<Snapshot>(std::move(*loaded));
        unkept.fetch_add(1);
      }
      std::lock_guard lock(mu);
      if (!reports) {
        if (!failed) failed = reports.error();
        return;
      }
      if (is_open(i)) {
        open_sums.Merge(part_sums);
        open_parts[i - first_open] = std::move(*reports);
        reports->clear();
      } else {
        sums.Merge(part_sums);
      }
      done.emplace(i, std::move(*reports));
      for (auto it = done.find(next); it != done.end(); it = done.find(next)) {
        if (!it->second.empty()) merged.Add(std::move(it->second));
        done.erase(it);
        ++next;
      }
      if (query.max_sum_bytes > 0 &&
          merged.rows() * MergedReports::kRowBytes > query.max_sum_bytes && !failed) {
        failed = TooManySums(merged.steps(), merged.rows(), query.max_sum_bytes);
        return;
      }
    }
  };
  {
    std::vector<std::jthread> threads;
    for (std::size_t r = 1; r < readers.size(); ++r) threads.emplace_back(read, r);
    read(0);
  }
  if (failed) return *failed;
  if (days_from_rows != nullptr) *days_from_rows = unkept.load();
  for (const auto& t : tables)
    if (!t->ok()) return whole();  // more rule texts than ids
  for (DaysSummed& days : summed) {
    if (days.empty()) continue;
    sums.Merge(days.sums());
    merged.Add(days.Finish());
  }
  // Writes while the days were read: where they touched only the open days (a live ledger's
  // current hours), those are read again until no write lands meanwhile; anywhere else, or
  // sums that might not fit, and the window read whole, in one snapshot, decides (and names
  // what does not fit).
  auto after = store.Generation();
  if (!after) return after.error();
  for (int reread = 0; *after != *generation; ++reread) {
    auto changes = store.ChangesSince(*generation);
    if (!changes) return changes.error();
    const bool in_open_days = *changes && ((*changes)->touched.to_us <= days.from_us ||
                                           (*changes)->touched.from_us >= open_days_from);
    if (!in_open_days || reread == kOpenRereads) return whole();
    *after = (*changes)->generation;
    open_sums = {};
    std::shared_ptr<Snapshot> recycled;
    for (std::size_t i = first_open; i < parts.size(); ++i) {
      auto reports = from_rows(store, i, recycled, open_sums);
      if (!reports) return reports.error();
      open_parts[i - first_open] = std::move(*reports);
    }
    auto now = store.Generation();
    if (!now) return now.error();
    if (*now == *after) break;  // nothing landed while the open days were read again
  }
  for (std::vector<report::Report>& open : open_parts) merged.Add(std::move(open));
  sums.Merge(open_sums);
  if (!sums.Check().ok()) return whole();
  return merged.Finish();
}

}  // namespace gpuledger::ledger
