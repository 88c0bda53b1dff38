// What WorkloadHours gathers, kept as bytes and read back (workload_hours_codec.cc): the same
// figures at every percentile, the same bytes again, and bytes cut short or changed are an
// error naming the field, never a crash.
#include "recommendations/workload_hours.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace gpuledger::recommendations {
namespace {

using rightsizing::Percentile;

// A day of random rows: 5 GPUs of two models, 4 workloads in 2 namespaces, pods that move.
WorkloadHours RandomDay(std::mt19937_64& rng, Micros day_us = 0) {
  auto below = [&](std::int64_t n) {
    return static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(n));
  };
  WorkloadHours hours;
  const std::uint32_t models[] = {hours.ModelId("H100-80GB"), hours.ModelId("L4")};
  const std::uint32_t classes[] = {hours.ClassId("on-demand"), hours.ClassId("spot")};
  for (int h = 0; h < 24; ++h) {
    const Micros hour = day_us + h * kMicrosPerHour;
    for (int g = 0; g < 5; ++g)
      hours.Device(
          hour, g,
          {kMicrosPerHour - below(2) * 1000, Bytes{80} << 30,
           models[static_cast<std::size_t>(g / 3)], classes[static_cast<std::size_t>(g % 2)]});
    for (int r = 0; r < 6; ++r) {
      const int w = static_cast<int>(below(4));
      const std::string ns = w < 2 ? "ml" : "web";
      UsageRow u;
      u.allocated_us = below(5) == 0 ? 0 : kMicrosPerHour / (1 + below(3));
      u.compute_us = below(kMicrosPerHour);
      u.peak_memory_bytes = below(Bytes{40} << 30);
      if (below(2) == 0)
        for (auto& c : u.histogram.compute) c = below(30);
      for (auto& m : u.histogram.memory) m = below(2) * below(30);
      ConsumerRef pod{ns, "pod-" + std::to_string(below(5)), PodUid{}, "main"};
      hours.Row(hours.Workload(ns + "/Deployment/w" + std::to_string(w), ns), hours.Pod(pod), hour,
                below(5), u);
    }
  }
  hours.Seal();
  return hours;
}

void ExpectSame(const std::vector<GatheredWorkload>& a, const std::vector<GatheredWorkload>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(a[i].key);
    EXPECT_EQ(a[i].key, b[i].key);
    EXPECT_EQ(a[i].namespace_name, b[i].namespace_name);
    EXPECT_EQ(a[i].gpu_model, b[i].gpu_model);
    EXPECT_EQ(a[i].pricing_class, b[i].pricing_class);
    EXPECT_EQ(a[i].gpu_memory_bytes, b[i].gpu_memory_bytes);
    EXPECT_TRUE(a[i].allocated_us == b[i].allocated_us);
    EXPECT_EQ(a[i].gpus_used, b[i].gpus_used);
    EXPECT_EQ(a[i].max_gpus_per_pod, b[i].max_gpus_per_pod);
    EXPECT_EQ(a[i].compute_p50, b[i].compute_p50);
    EXPECT_EQ(a[i].compute_p95, b[i].compute_p95);
    EXPECT_EQ(a[i].compute_p99, b[i].compute_p99);
    EXPECT_EQ(a[i].compute_samples, b[i].compute_samples);
    EXPECT_EQ(a[i].compute_from_histograms, b[i].compute_from_histograms);
    EXPECT_EQ(a[i].memory_peak_bytes, b[i].memory_peak_bytes);
    EXPECT_EQ(a[i].memory_p99_bytes, b[i].memory_p99_bytes);
    EXPECT_EQ(a[i].demand, b[i].demand);
  }
}

TEST(WorkloadHoursCodec, ReadsBackWhatWasGatheredAtEveryPercentile) {
  std::mt19937_64 rng(59);
  for (int trial = 0; trial < 20; ++trial) {
    const WorkloadHours day = RandomDay(rng);
    const std::string bytes = day.Encode();
    auto read = WorkloadHours::Decode(bytes);
    ASSERT_TRUE(read.ok()) << read.error().message;
    EXPECT_EQ(read->Encode(), bytes);
    for (Percentile p : {Percentile::kP50, Percentile::kP95, Percentile::kP99}) {
      WorkloadHours a = day, b = *read;
      ExpectSame(a.Finish(p), b.Finish(p));
    }
  }
}

// Two days appended, the second read back from bytes with a namespace, are the two days'
// rows of that namespace given at once.
TEST(WorkloadHoursCodec, AppendedDaysAreTheirRowsAtOnce) {
  std::mt19937_64 rng(7);
  const WorkloadHours first = RandomDay(rng);
  const WorkloadHours second = RandomDay(rng, 24 * kMicrosPerHour);
  auto kept = WorkloadHours::Decode(second.Encode());
  ASSERT_TRUE(kept.ok());
  WorkloadHours both = first;
  both.Append(WorkloadHours(*kept));
  WorkloadHours direct = first;
  direct.Append(WorkloadHours(second));
  ExpectSame(both.Finish(Percentile::kP95), direct.Finish(Percentile::kP95));

  WorkloadHours ml;
  ml.Append(std::move(*kept), "ml");
  for (const GatheredWorkload& w : ml.Finish(Percentile::kP95)) EXPECT_EQ(w.namespace_name, "ml");
}

TEST(WorkloadHoursCodec, DamagedBytesAreAnErrorNamingTheField) {
  std::mt19937_64 rng(3);
  const std::string bytes = RandomDay(rng).Encode();
  for (std::size_t n = 0; n < bytes.size(); n += 1 + n / 50) {
    auto cut = WorkloadHours::Decode(bytes.substr(0, n));
    ASSERT_FALSE(cut.ok()) << n;
    EXPECT_NE(cut.error().message.find("workload hours byte"), std::string::npos);
  }
  auto longer = WorkloadHours::Decode(bytes + '\0');
  ASSERT_FALSE(longer.ok());
  EXPECT_NE(longer.error().message.find("followed by more bytes"), std::string::npos);
  // Any byte changed reads as an error or as some day, never past the bytes.
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    std::string changed = bytes;
    changed[i] = static_cast<char>(changed[i] ^ 0x5a);
    (void)WorkloadHours::Decode(changed);
  }
}

}  // namespace
}  // namespace gpuledger::recommendations
