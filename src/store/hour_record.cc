#include "store/hour_record.h"

#include <array>

#include <fmt/format.h>

namespace gpuledger::store {
namespace {

enum Parts : std::uint64_t { kActivity = 1, kHistogram = 2, kKnownParts = 3 };

void PutUnsigned(std::uint64_t v, std::string& out) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void PutSigned(std::int64_t v, std::string& out) {
  const auto u = static_cast<std::uint64_t>(v);
  PutUnsigned((u << 1) ^ (v < 0 ? ~std::uint64_t{0} : 0), out);
}

// Reads varints from a record, remembering the first failure.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}

  std::uint64_t Unsigned(std::string_view field) {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= bytes_.size()) return Fail(field, "ends inside it");
      const auto byte = static_cast<std::uint8_t>(bytes_[pos_++]);
      // The tenth byte holds bit 63 only.
      if (shift == 63 && byte > 1) return Fail(field, "is longer than 64 bits");
      v |= std::uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80) == 0) {
        // One spelling per value: a record that reads back encodes to the same bytes.
        if (byte == 0 && shift > 0) return Fail(field, "is not in its shortest form");
        return v;
      }
    }
    return Fail(field, "is longer than 64 bits");
  }
  std::int64_t Signed(std::string_view field) {
    const std::uint64_t u = Unsigned(field);
    return static_cast<std::int64_t>((u >> 1) ^ (~(u & 1) + 1));
  }
  // An id or count: at most INT64_MAX.
  std::int64_t Count(std::string_view field) {
    const std::uint64_t u = Unsigned(field);
    if (u > static_cast<std::uint64_t>(INT64_MAX))
      return static_cast<std::int64_t>(Fail(field, "is past INT64_MAX"));
    return static_cast<std::int64_t>(u);
  }
  std::uint8_t Byte(std::string_view field) {
    if (pos_ >= bytes_.size()) return static_cast<std::uint8_t>(Fail(field, "is missing"));
    return static_cast<std::uint8_t>(bytes_[pos_++]);
  }

  bool ok() const { return what_.empty(); }
  bool AtEnd() const { return pos_ == bytes_.size(); }
  std::size_t left() const { return bytes_.size() - pos_; }
  const std::string& what() const { return what_; }
  std::uint64_t Fail(std::string_view field, std::string_view why) {
    if (what_.empty()) what_ = fmt::format("hour record byte {}: {} {}", pos_, field, why);
    pos_ = bytes_.size();  // every later read fails too, and reads as 0
    return 0;
  }

 private:
  std::string_view bytes_;
  std::size_t pos_ = 0;
  std::string what_;
};

}  // namespace

UsageFigures FiguresOf(const UsageRow& u) {
  UsageFigures f;
  f.allocated_us = u.allocated_us;
  f.compute_us = u.compute_us;
  f.memory_kib_s = u.memory_kib_s;
  f.peak_memory_bytes = u.peak_memory_bytes;
  f.energy_mj = u.energy_mj;
  f.activity = u.activity;
  f.histogram = u.histogram;
  return f;
}

void ApplyFigures(const UsageFigures& f, UsageRow& u) {
  u.allocated_us = f.allocated_us;
  u.compute_us = f.compute_us;
  u.memory_kib_s = f.memory_kib_s;
  u.peak_memory_bytes = f.peak_memory_bytes;
  u.energy_mj = f.energy_mj;
  u.activity = f.activity;
  u.histogram = f.histogram;
}

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
  Reader r(record);
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
