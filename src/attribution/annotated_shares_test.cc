#include "attribution/annotated_shares.h"

#include <gtest/gtest.h>

namespace gpuledger::attribution {
namespace {

constexpr GpuMicros kHour = 3600 * kMicrosPerSecond;

UsageRow Row(const std::string& ns, const std::string& pod, GpuMicros allocated,
             GpuMicros compute) {
  UsageRow r;
  r.consumer.ref = ConsumerRef{ns, pod, PodUid{"uid-" + pod}, "main"};
  r.allocated_us = allocated;
  r.compute_us = compute;
  r.memory_kib_s = compute > 0 ? 1000 : 0;
  return r;
}

GpuMicros Allocated(const LedgerHour& h) {
  GpuMicros sum = h.device.unallocated_us;
  for (const auto& r : h.usage) sum += r.allocated_us;
  return sum;
}

// KAI: a reservation pod holds the GPU for the whole hour; two pods annotated 0.5 and 0.25 run
// on it. They get half and a quarter of the hour; the reservation keeps the quarter nobody uses.
TEST(ApplyAnnotatedShares, KaiFractionsComeOutOfTheReservationPod) {
  LedgerHour h;
  h.device.metered_us = kHour;
  h.device.memory_total_bytes = 80 * kGiB;
  h.usage.push_back(Row(std::string(kKaiReservationNamespace), "gpu-reservation-x", kHour, 0));
  h.usage.push_back(Row("ml", "half", 0, kHour / 5));
  h.usage.back().consumer.annotated_gpu_fraction = 0.5;
  h.usage.push_back(Row("ml", "quarter", 0, kHour / 10));
  h.usage.back().consumer.annotated_gpu_memory_bytes = 20 * kGiB;
  h.usage.push_back(Row("ml", "idle-annotated", 0, 0));  // used nothing in this hour
  h.usage.back().consumer.annotated_gpu_fraction = 0.25;
  ApplyAnnotatedShares(h);
  EXPECT_EQ(h.usage[1].allocated_us, kHour / 2);
  EXPECT_EQ(h.usage[1].share_source, "annotation:gpu-fraction");
  EXPECT_EQ(h.usage[2].allocated_us, kHour / 4);
  EXPECT_EQ(h.usage[2].share_source, "annotation:gpu-memory");
  EXPECT_EQ(h.usage[3].allocated_us, 0);
  EXPECT_EQ(h.usage[0].allocated_us, kHour / 4);
  EXPECT_EQ(Allocated(h), kHour);
}

// Without a reservation pod the fractions come out of the unallocated time, and declarations
// that add up to more than there is are scaled down to it exactly.
TEST(ApplyAnnotatedShares, WithoutAReservationTheUnallocatedTimeIsSplitExactly) {
  LedgerHour h;
  h.device.metered_us = kHour;
  h.device.unallocated_us = kHour / 2;
  h.usage.push_back(Row("web", "granted", kHour / 2, kHour / 4));
  for (const char* pod : {"a", "b", "c"}) {
    h.usage.push_back(Row("ml", pod, 0, kHour / 10));
    h.usage.back().consumer.annotated_gpu_fraction = 0.3;
  }
  ApplyAnnotatedShares(h);
  GpuMicros annotated = 0;
  for (std::size_t i = 1; i < h.usage.size(); ++i) annotated += h.usage[i].allocated_us;
  EXPECT_EQ(annotated, kHour / 2);
  EXPECT_EQ(h.device.unallocated_us, 0);
  EXPECT_EQ(h.usage[0].allocated_us, kHour / 2);
  EXPECT_EQ(Allocated(h), kHour);
}

TEST(ApplyAnnotatedShares, RowsWithoutAnnotationsAreUntouched) {
  LedgerHour h;
  h.device.metered_us = kHour;
  h.device.unallocated_us = kHour;
  h.usage.push_back(Row("ml", "rogue", 0, kHour / 3));
  ApplyAnnotatedShares(h);
  EXPECT_EQ(h.usage[0].allocated_us, 0);
  EXPECT_EQ(h.device.unallocated_us, kHour);
  EXPECT_TRUE(h.usage[0].share_source.empty());
}

}  // namespace
}  // namespace gpuledger::attribution
