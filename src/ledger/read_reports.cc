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

// The window cut into parts of kPartDays, and which of them a live ledger may still be writing
// (its last hours, while they stay open to samples): those are read from rows, never kept, and
// held apart, so that a write landing in them while the others are read costs reading them
// again, not the window whole.
struct DayParts {
  std::vector<TimeRange> parts;
  std::size_t first_open = 0;  // the parts from here on are open
  Micros open_from = 0;        // a part that ends after this is open
  Micros open_days_from = 0;   // the first open part's day (the days' end when none is open)

  bool IsOpen(std::size_t i) const { return parts[i].to_us > open_from; }
  std::size_t open_count() const { return parts.size() - first_open; }
};

DayParts CutIntoDays(const TimeRange& window, const TimeRange& days, Micros extent_to_us) {
  DayParts d;
  const Micros part = kPartDays * kMicrosPerDay;
  for (Micros t = days.from_us; t < days.to_us; t += part)
    d.parts.push_back({std::max(t, window.from_us), std::min(t + part, window.to_us)});
  d.open_from = extent_to_us - kOpenHours * kMicrosPerHour;
  d.first_open = d.parts.size();
  while (d.first_open > 0 && d.IsOpen(d.first_open - 1)) --d.first_open;
  d.open_days_from = d.first_open < d.parts.size()
                         ? d.parts[d.first_open].from_us / kMicrosPerDay * kMicrosPerDay
                         : days.to_us;
  return d;
}

// One reader's connection and what it reuses from part to part: the columns of its last
// snapshot, its last kept day's, and the tables its summed days intern entries and rules in.
struct Reader {
  store::LedgerStore* store = nullptr;
  std::unique_ptr<DayTables> tables = std::make_unique<DayTables>();
  std::optional<DaysSummed> summed;
  std::shared_ptr<Snapshot> recycled;
  SummedDay kept_day;
  std::string kept_bytes;
};

// A window read a run of days per reader, in parallel, the parts added in day order as they
// come; the open days held apart, to be read again while writes land in them.
class WindowRead {
 public:
  WindowRead(store::LedgerStore& store, const ReportQuery& query, DayParts days,
             const store::StoreOpener& open_more)
      : query_(query), days_(std::move(days)), open_parts_(days_.open_count()) {
    // Each reader takes a run of days, not every n-th day: a connection learns the strings of
    // the consumers its days name once, and consumers live for days, so runs learn each about
    // once where alternating days had every connection learn nearly all of them (at 10,000 GPUs
    // that was most of a cold report).
    readers_.emplace_back().store = &store;
    const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
    while (open_more && readers_.size() < std::min(cores, days_.parts.size())) {
      auto more = open_more();
      if (!more) break;
      opened_.push_back(std::move(*more));
      readers_.emplace_back().store = opened_.back().get();
    }
    for (Reader& r : readers_) r.summed.emplace(query, *r.tables);
    each_ = Parallelism{.max_workers = readers_.size() > 1 ? 1u : 4u};
  }

  // Reads every part; the first error any reader met.
  std::optional<Error> ReadParts() {
    {
      std::vector<std::jthread> threads;
      for (std::size_t r = 1; r < readers_.size(); ++r)
        threads.emplace_back([this, r] { ReadRun(r); });
      ReadRun(0);
    }
    return failed_;
  }

  // Whole days summed from their rows, none kept.
  int unkept() const { return unkept_.load(); }

  // Adds the days the readers summed; false when a reader's tables ran out of ids (more rule
  // texts than ids), and the window must be read whole.
  bool AddSummedDays() {
    for (const Reader& r : readers_)
      if (!r.tables->ok()) return false;
    for (Reader& r : readers_) {
      if (r.summed->empty()) continue;
      sums_.Merge(r.summed->sums());
      merged_.Add(r.summed->Finish());
    }
    return true;
  }

  // Follows the writes since `generation` (the ledger's before the days were read): where they
  // touched only the open days (a live ledger's current hours), those are read again until no
  // write lands meanwhile. False where they touched anything else, or kept landing: the window
  // is then read whole, in one snapshot.
  Result<bool> FollowWrites(store::LedgerStore& store, std::int64_t generation,
                            const TimeRange& days) {
    auto after = store.Generation();
    if (!after) return after.error();
    for (int reread = 0; *after != generation; ++reread) {
      auto changes = store.ChangesSince(generation);
      if (!changes) return changes.error();
      const bool in_open_days = *changes && ((*changes)->touched.to_us <= days.from_us ||
                                             (*changes)->touched.from_us >= days_.open_days_from);
      if (!in_open_days || reread == kOpenRereads) return false;
      *after = (*changes)->generation;
      open_sums_ = {};
      std::shared_ptr<Snapshot> recycled;
      for (std::size_t i = days_.first_open; i < days_.parts.size(); ++i) {
        auto reports = FromRows(store, i, recycled, open_sums_);
        if (!reports) return reports.error();
        open_parts_[i - days_.first_open] = std::move(*reports);
      }
      auto now = store.Generation();
      if (!now) return now.error();
      if (*now == *after) break;  // nothing landed while the open days were read again
    }
    return true;
  }

  // The reports, open days added last; nullopt when the sums may not fit (the window read whole
  // then decides, and names what does not fit).
  std::optional<std::vector<report::Report>> Finish() {
    for (std::vector<report::Report>& open : open_parts_) merged_.Add(std::move(open));
    sums_.Merge(open_sums_);
    if (!sums_.Check().ok()) return std::nullopt;
    return merged_.Finish();
  }

 private:
  // Part i from its rows, into `recycled`'s columns; its rows' sums added to `sums`.
  Result<std::vector<report::Report>> FromRows(store::LedgerStore& reader, std::size_t i,
                                               std::shared_ptr<Snapshot>& recycled,
                                               report::SumCheck& sums) const {
    auto loaded = Snapshot::Load(reader, days_.parts[i], std::move(recycled));
    if (!loaded) return loaded.error();
    auto reports = BuildReports(**loaded, query_, each_);
    sums.Merge((*loaded)->sums());
    // Only this reader holds it: the next part reads into its columns.
    recycled = std::const_pointer_cast<Snapshot>(std::move(*loaded));
    return reports;
  }

  // Part i by reader r. A whole closed day is read kept summed where the ledger keeps it
  // (day_rollup.h), else summed from its rows (a writer keeps them: KeepDays); either way it
  // goes into the reader's summed days, with no report of its own. Any other part is reported
  // from its rows, its sums into `part_sums`.
  Result<std::vector<report::Report>> ReadPart(Reader& r, std::size_t i,
                                               report::SumCheck& part_sums) {
    const TimeRange& part = days_.parts[i];
    const bool whole_day = days_summed_ && !days_.IsOpen(i) && part.from_us % kMicrosPerDay == 0 &&
                           part.to_us - part.from_us == kMicrosPerDay;
    if (!whole_day) return FromRows(*r.store, i, r.recycled, part_sums);
    if (ReadKeptDay(*r.store, part.from_us, kind_, *r.tables, *r.summed, r.kept_day, r.kept_bytes)
            .ok())
      return std::vector<report::Report>{};
    unkept_.fetch_add(1);
    auto loaded = Snapshot::Load(*r.store, part, std::move(r.recycled));
    if (!loaded) return loaded.error();
    Status added = AddDayFromRows(**loaded, query_, each_, *r.tables, *r.summed);
    r.recycled = std::const_pointer_cast<Snapshot>(std::move(*loaded));
    if (!added) return added.error();
    return std::vector<report::Report>{};
  }

  // Adds part i's reports in day order (the open days' held apart); false when reading stops.
  bool AddPart(std::size_t i, Result<std::vector<report::Report>> reports,
               const report::SumCheck& part_sums) {
    std::lock_guard lock(mu_);
    if (!reports) {
      if (!failed_) failed_ = reports.error();
      return false;
    }
    if (days_.IsOpen(i)) {
      open_sums_.Merge(part_sums);
      open_parts_[i - days_.first_open] = std::move(*reports);
      reports->clear();
    } else {
      sums_.Merge(part_sums);
    }
    done_.emplace(i, std::move(*reports));
    for (auto it = done_.find(next_); it != done_.end(); it = done_.find(next_)) {
      if (!it->second.empty()) merged_.Add(std::move(it->second));
      done_.erase(it);
      ++next_;
    }
    if (query_.max_sum_bytes > 0 &&
        merged_.rows() * MergedReports::kRowBytes > query_.max_sum_bytes && !failed_) {
      failed_ = TooManySums(merged_.steps(), merged_.rows(), query_.max_sum_bytes);
      return false;
    }
    return true;
  }

  // Reader r's run of days.
  void ReadRun(std::size_t r) {
    const std::size_t n = days_.parts.size();
    const std::size_t first = n * r / readers_.size(), last = n * (r + 1) / readers_.size();
    for (std::size_t i = first; i < last; ++i) {
      {
        std::lock_guard lock(mu_);
        if (failed_) return;
      }
      report::SumCheck part_sums;
      auto reports = ReadPart(readers_[r], i, part_sums);
      if (!AddPart(i, std::move(reports), part_sums)) return;
    }
  }

  const ReportQuery& query_;
  const DayParts days_;
  const bool days_summed_ = ReadsDaysSummed(query_);
  const std::string kind_ = DayRollupKind(query_.policy, query_.idle);
  std::vector<std::unique_ptr<store::LedgerStore>> opened_;
  std::vector<Reader> readers_;
  Parallelism each_;
  std::atomic<int> unkept_ = 0;

  std::mutex mu_;  // guards what follows while the readers run
  std::map<std::size_t, std::vector<report::Report>> done_;  // parts not yet added, by index
  std::size_t next_ = 0;
  MergedReports merged_;
  report::SumCheck sums_;
  std::vector<std::vector<report::Report>> open_parts_;  // by part from first_open: added last
  report::SumCheck open_sums_;
  std::optional<Error> failed_;
};

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
  const TimeRange days = billing::WholeDays(query.window.from_us, query.window.to_us);
  if (!StepsSumToWindow(query) || days.to_us - days.from_us <= kPartDays * kMicrosPerDay)
    return whole();

  auto generation = store.Generation();
  if (!generation) return generation.error();
  auto extent = store.Extent();
  if (!extent) return extent.error();
  WindowRead read(store, query, CutIntoDays(query.window, days, extent->to_us), open_more);
  if (auto failed = read.ReadParts()) return *failed;
  if (days_from_rows != nullptr) *days_from_rows = read.unkept();
  if (!read.AddSummedDays()) return whole();
  auto followed = read.FollowWrites(store, *generation, days);
  if (!followed) return followed.error();
  if (!*followed) return whole();
  auto reports = read.Finish();
  if (!reports) return whole();
  return std::move(*reports);
}

}  // namespace gpuledger::ledger
