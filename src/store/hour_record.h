#pragma once
// One device-hour and all its usage rows as one compact record (schema 8, issue 37): what a
// store writes atomically (LedgerHour) kept as one row of the `hours` table, keyed by (hour,
// GPU id), whose strings live once in the dictionaries (store/dimensions.h) and whose figures
// are this byte string. Written and read here for every store: the SQL dialects only keep it.
//
// Layout (format 1): a format byte, then LEB128 varints, signed values zigzag-encoded so any
// int64 round-trips exactly and small ones take one byte:
//   1
//   price_nanos energy_price_nanos metered_us unmetered_us unallocated_us busy_us idle_us
//   unattributed_us memory_total_bytes unattributed_memory_kib_s energy_mj idle_energy_mj
//   unattributed_energy_mj                                  (13 signed)
//   usage row count                                         (unsigned)
//   per usage row: consumer id, context id                  (unsigned)
//                  parts: bit 0 activity, bit 1 histogram   (unsigned)
//                  allocated_us compute_us memory_kib_s peak_memory_bytes energy_mj (signed)
//                  [sm_active_us sm_occupancy_us tensor_active_us dram_active_us]  (bit 0)
//                  [compute buckets 0..5, memory buckets 0..3]                     (bit 1)
// A part left out reads back as zeros. Every value has one spelling (shortest varints, parts
// present only when not all zero), so a record that reads back encodes to the same bytes.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/ledger.h"

namespace gpuledger::store {

inline constexpr std::uint8_t kHourRecordFormat = 1;

// A usage row's figures with its dictionary ids; the strings are the dictionaries'.
struct UsageFigures : UsageAmounts {
  std::int64_t consumer = 0;  // consumers.id
  std::int64_t context = 0;   // usage_contexts.id
};

// The figures of a row, ids aside.
UsageFigures FiguresOf(const UsageRow& u);
// Copies the figures into a row (its strings untouched).
void ApplyFigures(const UsageFigures& f, UsageRow& u);

// Appends the record of `device`'s figures (its strings are not part of it) and `usage`.
void EncodeHourRecord(const DeviceHour& device, const std::vector<UsageFigures>& usage,
                      std::string& out);

// Reads a record into `device`'s figures and `usage` (replaced). false, with `what` saying
// where and why, for bytes that are not a record of a format this build reads.
bool DecodeHourRecord(std::string_view record, DeviceHour& device, std::vector<UsageFigures>& usage,
                      std::string* what);

}  // namespace gpuledger::store
