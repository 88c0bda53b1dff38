// The compact hour record: every figure round-trips exactly (any int64, random and at the
// edges), left-out parts read back as zero, and bytes that are not a record are refused with
// where and why, never read past their end.

#include "store/hour_record.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <random>

namespace gpuledger::store {
namespace {

using ::testing::HasSubstr;

constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

// A value drawn to reach every varint length and both signs, edges included.
std::int64_t AnyInt64(std::mt19937_64& rng) {
  switch (rng() % 6) {
    case 0:
      return 0;
    case 1:
      return static_cast<std::int64_t>(rng() % 200) - 100;
    case 2:
      return std::array<std::int64_t, 4>{kMin, kMax, kMin + 1, kMax - 1}[rng() % 4];
    default: {
      const int bits = static_cast<int>(rng() % 64);
      const auto magnitude = static_cast<std::int64_t>(rng() >> (64 - bits - 1) >> 1);
      return rng() % 2 == 0 ? magnitude : -magnitude;
    }
  }
}

DeviceHour AnyDevice(std::mt19937_64& rng) {
  DeviceHour d;
  for (std::int64_t* v :
       {&d.price_nanos, &d.energy_price_nanos, &d.metered_us, &d.unmetered_us, &d.unallocated_us,
        &d.busy_us, &d.idle_us, &d.unattributed_us, &d.memory_total_bytes,
        &d.unattributed_memory_kib_s, &d.energy_mj, &d.idle_energy_mj, &d.unattributed_energy_mj}) {
    *v = AnyInt64(rng);
  }
  return d;
}

UsageFigures AnyUsage(std::mt19937_64& rng) {
  UsageFigures u;
  u.consumer = static_cast<std::int64_t>(rng() >> (rng() % 63 + 1));
  u.context = static_cast<std::int64_t>(rng() % 1000);
  for (std::int64_t* v :
       {&u.allocated_us, &u.compute_us, &u.memory_kib_s, &u.peak_memory_bytes, &u.energy_mj})
    *v = AnyInt64(rng);
  if (rng() % 2 == 0) {
    u.activity.sm_active_us = AnyInt64(rng);
    u.activity.tensor_active_us = AnyInt64(rng);
  }
  if (rng() % 2 == 0) {
    for (std::int64_t& c : u.histogram.compute) c = AnyInt64(rng);
    u.histogram.memory[rng() % 4] = AnyInt64(rng);
  }
  return u;
}

bool SameDeviceFigures(const DeviceHour& a, const DeviceHour& b) {
  return std::tie(a.price_nanos, a.energy_price_nanos, a.metered_us, a.unmetered_us,
                  a.unallocated_us, a.busy_us, a.idle_us, a.unattributed_us, a.memory_total_bytes,
                  a.unattributed_memory_kib_s, a.energy_mj, a.idle_energy_mj,
                  a.unattributed_energy_mj) ==
         std::tie(b.price_nanos, b.energy_price_nanos, b.metered_us, b.unmetered_us,
                  b.unallocated_us, b.busy_us, b.idle_us, b.unattributed_us, b.memory_total_bytes,
                  b.unattributed_memory_kib_s, b.energy_mj, b.idle_energy_mj,
                  b.unattributed_energy_mj);
}

bool SameUsage(const UsageFigures& a, const UsageFigures& b) {
  const Activity& x = a.activity;
  const Activity& y = b.activity;
  return std::tie(a.consumer, a.context, a.allocated_us, a.compute_us, a.memory_kib_s,
                  a.peak_memory_bytes, a.energy_mj, x.sm_active_us, x.sm_occupancy_us,
                  x.tensor_active_us, x.dram_active_us) ==
             std::tie(b.consumer, b.context, b.allocated_us, b.compute_us, b.memory_kib_s,
                      b.peak_memory_bytes, b.energy_mj, y.sm_active_us, y.sm_occupancy_us,
                      y.tensor_active_us, y.dram_active_us) &&
         a.histogram == b.histogram;
}

TEST(HourRecord, RandomRecordsRoundTripExactly) {
  std::mt19937_64 rng(37);
  for (int trial = 0; trial < 5'000; ++trial) {
    const DeviceHour device = AnyDevice(rng);
    std::vector<UsageFigures> usage(rng() % 12);
    for (UsageFigures& u : usage) u = AnyUsage(rng);
    std::string record;
    EncodeHourRecord(device, usage, record);

    DeviceHour back;
    std::vector<UsageFigures> back_usage = {UsageFigures{}};  // replaced, not appended to
    std::string what;
    ASSERT_TRUE(DecodeHourRecord(record, back, back_usage, &what)) << what;
    ASSERT_TRUE(SameDeviceFigures(device, back)) << "trial " << trial;
    ASSERT_EQ(back_usage.size(), usage.size());
    for (std::size_t i = 0; i < usage.size(); ++i)
      ASSERT_TRUE(SameUsage(usage[i], back_usage[i])) << "trial " << trial << " row " << i;
  }
}

// A typical hour is small: an exclusive H100 busy for the hour, one row with activity and a
// histogram: 92 bytes for what schema 7 kept as two rows of 365 bytes on average.
TEST(HourRecord, ATypicalHourIsAFewDozenBytes) {
  DeviceHour d;
  d.price_nanos = 3'930'000'000;  // $3.93
  d.metered_us = d.busy_us = kMicrosPerHour;
  d.memory_total_bytes = 85'899'345'920;
  d.energy_mj = 2'520'000'000;
  UsageFigures u;
  u.consumer = 123'456;
  u.context = 812;
  u.allocated_us = u.compute_us = kMicrosPerHour;
  u.memory_kib_s = 3'774'873'600;
  u.peak_memory_bytes = 42'949'672'960;
  u.energy_mj = 2'400'000'000;
  u.activity.sm_active_us = 2'900'000'000;
  u.activity.tensor_active_us = 1'200'000'000;
  u.histogram.compute[5] = 360;
  u.histogram.memory[2] = 360;
  std::string record;
  EncodeHourRecord(d, {u}, record);
  EXPECT_EQ(record.size(), 92u);
}

TEST(HourRecord, BytesThatAreNotARecordAreRefusedSayingWhere) {
  std::string record;
  EncodeHourRecord(DeviceHour{}, {UsageFigures{}}, record);
  DeviceHour d;
  std::vector<UsageFigures> usage;
  std::string what;

  EXPECT_FALSE(DecodeHourRecord("", d, usage, &what));
  EXPECT_THAT(what, HasSubstr("format"));

  std::string newer = record;
  newer[0] = 2;
  EXPECT_FALSE(DecodeHourRecord(newer, d, usage, &what));
  EXPECT_THAT(what, HasSubstr("format 2 is not one this build reads"));

  for (std::size_t cut = 1; cut < record.size(); ++cut) {
    what.clear();
    EXPECT_FALSE(DecodeHourRecord(std::string_view(record).substr(0, cut), d, usage, &what)) << cut;
    EXPECT_THAT(what, HasSubstr("hour record byte"));
  }
  EXPECT_FALSE(DecodeHourRecord(record + '\0', d, usage, &what));
  EXPECT_THAT(what, HasSubstr("1 bytes after the last row"));

  // Eleven continuation bytes: no int64 is that long.
  std::string endless(1, '\1');
  endless.append(11, '\xff');
  EXPECT_FALSE(DecodeHourRecord(endless, d, usage, &what));
  EXPECT_THAT(what, HasSubstr("longer than 64 bits"));

  // A row count the bytes cannot hold allocates nothing.
  std::string huge(1, '\1');
  huge.append(13, '\0');
  huge += "\xff\xff\xff\xff\x0f";
  EXPECT_FALSE(DecodeHourRecord(huge, d, usage, &what));
  EXPECT_THAT(what, HasSubstr("usage row count"));
  EXPECT_TRUE(usage.empty());

  // Unknown parts of a row.
  std::string parts(1, '\1');
  parts.append(13, '\0');
  parts += '\1';            // one row
  parts += "\x01\x01\x04";  // consumer, context, parts = 4
  parts.append(5, '\0');
  EXPECT_FALSE(DecodeHourRecord(parts, d, usage, &what));
  EXPECT_THAT(what, HasSubstr("bits this build does not know"));
}

// The fuzz target's property, on mutations of real records (flipped bits, bytes cut, added or
// repeated): what decodes encodes to the same bytes, so a record has one spelling.
TEST(HourRecord, WhatDecodesEncodesToTheSameBytes) {
  std::mt19937_64 rng(3737);
  int decoded = 0;
  for (int trial = 0; trial < 200'000; ++trial) {
    std::vector<UsageFigures> usage(rng() % 4);
    for (UsageFigures& u : usage) u = AnyUsage(rng);
    std::string record;
    EncodeHourRecord(AnyDevice(rng), usage, record);
    for (int m = 0; m < 1 + static_cast<int>(rng() % 3); ++m) {
      const std::size_t at = rng() % record.size();
      switch (rng() % 4) {
        case 0:
          record[at] = static_cast<char>(record[at] ^ (1 << (rng() % 8)));
          break;
        case 1:
          record.erase(at, 1 + rng() % 3);
          break;
        case 2:
          record.insert(at, 1, static_cast<char>(rng()));
          break;
        default:
          record.insert(at, record.substr(at, 1 + rng() % 4));
          break;
      }
      if (record.empty()) record.push_back('\1');
    }
    DeviceHour d;
    std::vector<UsageFigures> back;
    std::string what;
    if (!DecodeHourRecord(record, d, back, &what)) continue;
    ++decoded;
    std::string again;
    EncodeHourRecord(d, back, again);
    ASSERT_EQ(again, record) << "trial " << trial;
  }
  EXPECT_GT(decoded, 1'000);  // mutations that still decode were tried, not only refusals
}

}  // namespace
}  // namespace gpuledger::store
