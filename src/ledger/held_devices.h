#pragma once
// Each GPU's summary of whole days (SummarizeDevices of a day) as a server holds them for
// /api/v1/devices over the days before its kept rows (ReadService::Devices). A day's GPUs are
// ids into one table of what rarely changes from day to day (placement, memory, layouts) beside
// their figures: 72 bytes a GPU-day where a DeviceSummary takes about 500, so 30 days of
// 10,000 GPUs are about 22 MB. The reader drops what a write touched, as it drops held days.
// Not thread-safe.

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/text_hash.h"
#include "common/time_range.h"
#include "ledger/devices.h"

namespace gpuledger::ledger {

class HeldDevices {
 public:
  // A GPU's figures over a day or part of one, its placement, memory and layouts as an id.
  struct Gpu {
    std::uint32_t head = 0;
    std::array<std::int64_t, 8> figures{};  // DeviceSummary's, in its order
  };
  using Part = std::vector<Gpu>;

  // `summaries` (SummarizeDevices' answer) as ids into this table.
  Part Intern(const std::vector<DeviceSummary>& summaries);
  // The day held starting at `day_us`; nullptr when not held.
  const Part* Find(Micros day_us) const;
  void Hold(Micros day_us, Part day);
  // Drops every held day that `touched` reaches into.
  void Drop(const TimeRange& touched);
  // Drops the held days that start before `from_us`.
  void DropBefore(Micros from_us);
  void Clear();
  // Reads the held days' ids into a fresh table when days were let go and the table has
  // doubled since the last time (GPUs come and go, MIG layouts change). Renumbers every id:
  // call before interning a request's parts, never between.
  void Compact();
  std::size_t days() const { return days_.size(); }

  // Parts of adjacent windows, in time order, summed as SummarizeDevices over them at once:
  // a GPU takes the placement and memory of its first part, its layouts in the order they first
  // appeared, its figures summed (MergeDevices' rule).
  std::vector<DeviceSummary> Sum(const std::vector<const Part*>& parts) const;

 private:
  struct Head {
    DeviceSummary summary;  // its figures zero
    std::uint32_t gpu = 0;  // by UUID, into gpus_
  };
  std::vector<Head> heads_;
  std::unordered_map<std::string, std::uint32_t, TextHash, std::equal_to<>> head_ids_;
  std::unordered_map<std::string, std::uint32_t, TextHash, std::equal_to<>> gpu_ids_;
  std::map<Micros, Part> days_;
  std::size_t heads_after_compact_ = 0;
  bool dropped_ = false;  // a day was let go since the last Compact
};

}  // namespace gpuledger::ledger
