#include "store/hour_record.h"

#include <array>

#include <fmt/format.h>

#include "common/varint.h"

namespace gpuledger::store {
namespace {

enum Parts : std::uint64_t { kActivity = 1, kHistogram = 2, kKnownParts = 3 };

}  // namespace

UsageFigures FiguresOf(const UsageRow& u) {
  UsageFigures f;
  static_cast<UsageAmounts&>(f) = u;
  return f;
}

void ApplyFigures(const UsageFigures& f, UsageRow& u) { static_cast<UsageAmounts&>(u) = f; }

void EncodeHourRecord(const DeviceHour& d, const std::vector<UsageFigures>& usage,
                      std::string& out) {
  out.push_back(static_cast<char>(kHourRecordFormat));
  for (std::int64_t v :
       {d.price_nanos, d.energy_price_nanos, d.metered_us, d.unmetered_us, d.unallocated_us,
        d.busy_us, d.idle_us, d.unattributed_us, d.memory_total_bytes, d.unattributed_memory_kib_s,
        d.energy_mj, d.idle_energy_mj, d.unattributed_energy_mj}) {
    PutSigned(v, out);
  }
  PutUnsigned(usage.size(), out);
  for (const UsageFigures& u : usage) {
    PutUnsigned(static_cast<std::uint64_t>(u.consumer), out);
    PutUnsigned(static_cast<std::uint64_t>(u.context), out);
    const Activity& a = u.activity;
    const bool activity = a.sm_active_us != 0 || a.sm_occupancy_us != 0 ||
                          a.tensor_active_us != 0 || a.dram_active_us != 0;
    const bool histogram = !u.histogram.empty();
    PutUnsigned((activity ? kActivity : 0) | (histogram ? kHistogram : 0), out);
    for (std::int64_t v :
         {u.allocated_us, u.compute_us, u.memory_kib_s, u.peak_memory_bytes, u.energy_mj}) {
      PutSigned(v, out);
    }
    if (activity) {
      for (std::int64_t v :
           {a.sm_active_us, a.sm_occupancy_us, a.tensor_active_us, a.dram_active_us}) {
        PutSigned(v, out);
      }
    }
    if (histogram) {
      for (std::int64_t c : u.histogram.compute) PutSigned(c, out);
      for (std::int64_t m : u.histogram.memory) PutSigned(m, out);
    }
  }
}

bool DecodeHourRecord(std::string_view record, DeviceHour& d, std::vector<UsageFigures>& usage,
                      std::string* what) {
  VarintReader r(record, "hour record");
  const std::uint8_t format = r.Byte("format");
  if (r.ok() && format != kHourRecordFormat) {
    r.Fail("format", fmt::format("{} is not one this build reads ({})", format, kHourRecordFormat));
  }
  for (std::int64_t* v :
       {&d.price_nanos, &d.energy_price_nanos, &d.metered_us, &d.unmetered_us, &d.unallocated_us,
        &d.busy_us, &d.idle_us, &d.unattributed_us, &d.memory_total_bytes,
        &d.unattributed_memory_kib_s, &d.energy_mj, &d.idle_energy_mj, &d.unattributed_energy_mj}) {
    *v = r.Signed("device figure");
  }
  const std::int64_t count = r.Count("usage row count");
  usage.clear();
  // Each row takes at least 8 bytes: a count past that is corrupt, not a reason to allocate.
  if (r.ok() && static_cast<std::uint64_t>(count) > r.left() / 8) {
    r.Fail("usage row count", fmt::format("{} is more than {} bytes can hold", count, r.left()));
  }
  if (r.ok()) usage.resize(static_cast<std::size_t>(count));
  for (UsageFigures& u : usage) {
    u.consumer = r.Count("consumer id");
    u.context = r.Count("context id");
    const std::uint64_t parts = r.Unsigned("parts");
    if (r.ok() && (parts & ~std::uint64_t{kKnownParts}) != 0) {
      r.Fail("parts", fmt::format("{:#x} has bits this build does not know", parts));
    }
    for (std::int64_t* v :
         {&u.allocated_us, &u.compute_us, &u.memory_kib_s, &u.peak_memory_bytes, &u.energy_mj}) {
      *v = r.Signed("usage figure");
    }
    if ((parts & kActivity) != 0) {
      Activity& a = u.activity;
      for (std::int64_t* v :
           {&a.sm_active_us, &a.sm_occupancy_us, &a.tensor_active_us, &a.dram_active_us}) {
        *v = r.Signed("activity");
      }
      if (r.ok() && a.sm_active_us == 0 && a.sm_occupancy_us == 0 && a.tensor_active_us == 0 &&
          a.dram_active_us == 0) {
        r.Fail("activity", "is present and all zero");
      }
    }
    if ((parts & kHistogram) != 0) {
      for (std::int64_t& c : u.histogram.compute) c = r.Signed("histogram");
      for (std::int64_t& m : u.histogram.memory) m = r.Signed("histogram");
      if (r.ok() && u.histogram.empty()) r.Fail("histogram", "is present and all zero");
    }
  }
  if (r.ok() && !r.AtEnd()) r.Fail("end", fmt::format("has {} bytes after the last row", r.left()));
  if (!r.ok()) {
    *what = r.what();
    return false;
  }
  return true;
}

}  // namespace gpuledger::store
