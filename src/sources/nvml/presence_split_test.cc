// The presence split (presence_split.h) on samples written here, with the numbers worked by hand.
#include "sources/nvml/presence_split.h"

#include <gtest/gtest.h>

namespace gpuledger::nvml {
namespace {

constexpr unsigned long long kMs = 1000;
constexpr Micros kCap = 2'000'000;

// Three device samples 200 ms apart and the one process
// NVML gave each window to, as a real H200 does: the window's value on its owner's sample.
struct Capture {
  std::vector<UtilSample> device{{200 * kMs, 0, 100}, {400 * kMs, 0, 50}, {600 * kMs, 0, 100}};
  std::vector<UtilSample> processes{{200 * kMs, 7, 100}, {400 * kMs, 8, 50}, {600 * kMs, 7, 100}};
};

TEST(SplitByPresence, EachWindowGoesToTheProcessesSampledWithin100Ms) {
  PresenceState state;
  Capture c;
  // The read before was at 0: the first window, (0, 200] at 100%, is pid 7's alone (its own
  // sample at 200 ms is the only one near; pid 8's at 400 ms is 200 ms past it).
  auto out = SplitByPresence(state, c.device, c.processes, 0, kCap);
  // (200, 400] at 50%: 50 x 200 ms, pid 7 (sampled at 200 ms, 100%) and 8 (at 400 ms, 50%) by
  // their SM %: 2/3 and 1/3. (400, 600] at 100%: pid 8 (400 ms) and 7 (600 ms), the same.
  EXPECT_EQ(out[7], 20'000'000 + 6'666'667 + 13'333'333);
  EXPECT_EQ(out[8], 3'333'333 + 6'666'667);
}

TEST(SplitByPresence, TheNextReadSeesTheSamplesNearItsFirstWindow) {
  PresenceState state;
  Capture c;
  SplitByPresence(state, c.device, c.processes, 0, kCap);
  // Only the samples within 100 ms of the next window's start (600 ms) are kept.
  ASSERT_EQ(state.samples.size(), 1u);
  EXPECT_EQ(state.samples.front().ts, 600 * kMs);
  // The next read: (600, 800] at 100%, pid 9 sampled at its end; pid 7 was at its start.
  auto out = SplitByPresence(state, {{800 * kMs, 0, 100}}, {{800 * kMs, 9, 50}}, 0, kCap);
  EXPECT_EQ(out[7], 13'333'333);  // 100 x 200 ms x 100 / (100 + 50)
  EXPECT_EQ(out[9], 6'666'667);
}

TEST(SplitByPresence, AWindowNobodyWasNearGoesToNobody) {
  PresenceState state;
  auto out = SplitByPresence(state, {{200 * kMs, 0, 0}, {400 * kMs, 0, 80}}, {{900 * kMs, 7, 80}},
                             0, kCap);
  EXPECT_TRUE(out.empty());
}

TEST(SplitByPresence, WhatIsCarriedMovesWithAWallClockStep) {
  PresenceState state;
  Capture c;
  SplitByPresence(state, c.device, c.processes, 0, kCap);
  // The clock steps 10 s forward; NVML's next samples are on the new timeline.
  ShiftPresence(state, 10'000 * static_cast<Micros>(kMs));
  EXPECT_EQ(*state.last_device_ts, 10'600 * kMs);
  auto out = SplitByPresence(state, {{10'800 * kMs, 0, 100}}, {{10'800 * kMs, 8, 100}}, 0, kCap);
  // (10,600, 10,800] at 100%: pid 7 (moved to 10,600 ms) and 8 (10,800 ms), even.
  EXPECT_EQ(out[7], 10'000'000);
  EXPECT_EQ(out[8], 10'000'000);
}

TEST(SplitByPresence, WhatIsCarriedIsBounded) {
  PresenceState state;
  std::vector<UtilSample> processes;
  for (unsigned long long i = 1; i <= 5000; ++i) processes.push_back({i * 200 * kMs, 7, 50});
  // Per-process samples and no device sample (a device that stopped sampling): a bounded backlog.
  SplitByPresence(state, {}, processes, 0, kCap);
  EXPECT_LE(state.samples.size(), kPresenceMaxSamples);
}

}  // namespace
}  // namespace gpuledger::nvml
