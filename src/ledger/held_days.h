#pragma once
// Days kept summed that a server holds in memory (issue 32): the records of day_rollup.h read
// once and held as SummedDays, so a report over whole days regroups about a million rows at
// 10,000 GPUs x 30 days instead of scanning 16 million usage rows, and reads nothing from the
// ledger. Held per kind (policy and idle handling, DayRollupKind) and day; the reader drops
// what a write touched (ReadService, from the ledger's changes) as the ledger drops its
// records. Bounded: a handful of kinds, the days the reader keeps, and entries no held day
// names are let go. Not thread-safe.

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "common/time_range.h"
#include "ledger/days_summed.h"

namespace gpuledger::ledger {

class HeldDays {
 public:
  HeldDays() : tables_(std::make_unique<DayTables>()) {}

  // The held day of `kind` starting at `day_us`; nullptr when not held.
  const SummedDay* Find(const std::string& kind, Micros day_us);
  // Holds `day` (read against tables()); the least used kind goes past kHeldKinds.
  void Hold(const std::string& kind, SummedDay day);
  // Drops every held day that `touched` reaches into.
  void Drop(const TimeRange& touched);
  // Drops the held days that start before `from_us`.
  void DropBefore(Micros from_us);
  void Clear();
  // Reads the held days' rows into fresh tables when days were let go since the last time and
  // the tables have doubled since (most of their entries may be no held day's: consumers come
  // and go). Call between reports: it renumbers every entry.
  void Compact();

  DayTables& tables() { return *tables_; }
  std::size_t days() const;
  std::size_t rows() const;

  // Kinds held at once: each is about 140 MB at 10,000 GPUs x 35 days.
  static constexpr std::size_t kHeldKinds = 4;

 private:
  struct Kind {
    std::map<Micros, SummedDay> days;
    std::uint64_t last_used = 0;
  };
  std::unique_ptr<DayTables> tables_;
  std::map<std::string, Kind> kinds_;
  std::uint64_t uses_ = 0;
  std::size_t entries_after_compact_ = 0;
  bool dropped_ = false;  // a day was let go since the last Compact
};

}  // namespace gpuledger::ledger
