#include "utilization/classify.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "model/compute_band.h"

namespace gpuledger::utilization {
namespace {

constexpr GpuMicros kHour = kMicrosPerHour;                       // 3.6e9 µs: one GPU-hour granted
constexpr KibSeconds kGrantedMemory = 80LL * 1024 * 1024 * 3600;  // 80 GiB for an hour

// NVML only: a grant of one GPU-hour, `compute` µs of util, `memory` KiB-s held.
Inputs Nvml(GpuMicros compute, KibSeconds memory = 1) {
  Inputs in;
  in.allocated_us = kHour;
  in.compute_us = compute;
  in.memory_kib_s = memory;
  in.granted_memory_kib_s = kGrantedMemory;
  return in;
}

// With GPM activity over the whole grant.
Inputs Gpm(GpuMicros compute, GpuMicros sm, GpuMicros dram = 0) {
  Inputs in = Nvml(compute);
  in.activity.sm_active_us = sm;
  in.activity.sm_occupancy_us = sm / 2;
  in.activity.dram_active_us = dram;
  in.activity_allocated_us = in.allocated_us;
  in.activity_compute_us = compute;
  in.activity_quality = Quality::kMeasured;
  in.activity_rule = "gpm";
  return in;
}

std::map<std::string, double> Map(const std::vector<std::pair<std::string, double>>& v) {
  return {v.begin(), v.end()};
}

TEST(Classify, BusyButStarvedNamesUtilAndSmActive) {
  // One GPU-hour granted; NVML util 100% (a kernel resident all hour) but SM active 5%:
  // 0.05 x 3.6e9 = 180,000,000 µs.
  Inputs in = Gpm(3'600'000'000, 180'000'000, 36'000'000);
  Classification c = Classify(in);
  EXPECT_EQ(c.cls, Class::kBusyButStarved);
  EXPECT_EQ(ToString(c.cls), "busy-but-starved");
  auto signals = Map(c.signals);
  ASSERT_EQ(signals.size(), 2u);
  EXPECT_DOUBLE_EQ(signals.at("gpu_util"), 1.0);
  EXPECT_DOUBLE_EQ(signals.at("sm_active"), 0.05);
  auto thresholds = Map(c.thresholds);
  EXPECT_DOUBLE_EQ(thresholds.at("busy_util_at_least"), 0.5);
  EXPECT_DOUBLE_EQ(thresholds.at("starved_sm_per_util_below"), 0.25);
  EXPECT_EQ(c.basis, "gpm");
  EXPECT_FALSE(c.nvml_only);
  EXPECT_EQ(c.reason,
            "GPU util 100% but SM active 5% (< 25% of util): kernels resident, SMs mostly idle");
}

TEST(Classify, UnallocatedIsNotJudged) {
  Inputs in;
  in.compute_us = kHour / 2;
  Classification c = Classify(in);
  EXPECT_EQ(c.cls, Class::kUnallocated);
  EXPECT_TRUE(c.signals.empty());
  EXPECT_TRUE(c.thresholds.empty());
  EXPECT_NE(c.reason.find("0.50 GPU-h used without one"), std::string::npos) << c.reason;
  EXPECT_EQ(c.basis, "nvml-only");
}

TEST(Classify, IdleNeedsNoMemoryAndUtilBelowOnePercent) {
  // 1% of an hour is 36,000,000 µs.
  EXPECT_EQ(Classify(Nvml(0, 0)).cls, Class::kIdle);
  EXPECT_EQ(Classify(Nvml(35'999'999, 0)).cls, Class::kIdle);
  EXPECT_EQ(Classify(Nvml(36'000'000, 0)).cls, Class::kAllocatedButIdle);  // 1% is not < 1%
  EXPECT_EQ(Classify(Nvml(0, 1)).cls, Class::kAllocatedButIdle);           // a process held memory
  Classification c = Classify(Nvml(0, 0));
  EXPECT_DOUBLE_EQ(Map(c.thresholds).at("idle_util_below"), 0.01);
  EXPECT_DOUBLE_EQ(Map(c.signals).at("memory_footprint"), 0.0);
  EXPECT_TRUE(c.nvml_only);
}

TEST(Classify, AllocatedButIdleBelowFivePercent) {
  // 5% of an hour is 180,000,000 µs.
  Classification c = Classify(Nvml(179'999'999, kGrantedMemory / 2));
  EXPECT_EQ(c.cls, Class::kAllocatedButIdle);
  EXPECT_DOUBLE_EQ(Map(c.signals).at("memory_footprint"), 0.5);
  EXPECT_DOUBLE_EQ(Map(c.thresholds).at("allocated_idle_util_below"), 0.05);
  EXPECT_NE(c.reason.find("50% of its memory held"), std::string::npos) << c.reason;
  EXPECT_EQ(Classify(Nvml(180'000'000)).cls, Class::kComputeLight);  // 5% is not < 5%
  // Activity does not rescue an idle grant.
  EXPECT_EQ(Classify(Gpm(100'000'000, 100'000'000)).cls, Class::kAllocatedButIdle);
}

TEST(Classify, BusyButStarvedBoundaries) {
  // util exactly 50% (1.8e9 µs); SM active under 25% of util (4.5e8 µs) is starved ...
  EXPECT_EQ(Classify(Gpm(1'800'000'000, 449'999'999)).cls, Class::kBusyButStarved);
  // ... exactly 25% of util is not (and with DRAM low the grant is used).
  EXPECT_EQ(Classify(Gpm(1'800'000'000, 450'000'000)).cls, Class::kHealthy);
  // Below 50% util the same SM picture is light, not busy.
  Classification light = Classify(Gpm(1'799'999'999, 100'000'000));
  EXPECT_EQ(light.cls, Class::kComputeLight);
  EXPECT_DOUBLE_EQ(Map(light.signals).at("sm_active"), 100'000'000.0 / kHour);
  EXPECT_DOUBLE_EQ(Map(light.thresholds).at("busy_util_at_least"), 0.5);
  // Without activity nobody can tell: util 100% is healthy, and says why it cannot tell.
  Classification nvml = Classify(Nvml(kHour));
  EXPECT_EQ(nvml.cls, Class::kHealthy);
  EXPECT_TRUE(nvml.nvml_only);
  EXPECT_EQ(nvml.basis, "nvml-only");
  EXPECT_NE(nvml.reason.find("NVML only"), std::string::npos) << nvml.reason;
}

TEST(Classify, MemoryBoundWithActivity) {
  // Util 40% (1.44e9 µs of the hour), DRAM active at half of it (7.2e8) and above SM active.
  Classification c = Classify(Gpm(1'440'000'000, 500'000'000, 720'000'000));
  EXPECT_EQ(c.cls, Class::kMemoryBound);
  auto s = Map(c.signals);
  EXPECT_DOUBLE_EQ(s.at("dram_active"), 0.2);
  EXPECT_DOUBLE_EQ(s.at("sm_active"), 500'000'000.0 / kHour);
  EXPECT_DOUBLE_EQ(Map(c.thresholds).at("memory_bound_dram_per_util_at_least"), 0.5);
  EXPECT_EQ(Classify(Gpm(1'440'000'000, 500'000'000, 719'999'999)).cls, Class::kHealthy);
  // DRAM over half of util but SMs busier: compute, not bandwidth, leads.
  EXPECT_EQ(Classify(Gpm(3'000'000'000, 2'600'000'000, 2'500'000'000)).cls, Class::kHealthy);
  // SMs waiting on memory are memory-bound, not starved: util 100%, SM 10%, DRAM 60%.
  EXPECT_EQ(Classify(Gpm(kHour, kHour / 10, kHour * 6 / 10)).cls, Class::kMemoryBound);
  // With activity the footprint rule is not used: 90% of memory at 20% util is light.
  Inputs held = Gpm(720'000'000, 700'000'000);
  held.memory_kib_s = kGrantedMemory * 9 / 10;
  EXPECT_EQ(Classify(held).cls, Class::kComputeLight);
}

TEST(Classify, MemoryBoundNvmlOnlyByFootprint) {
  // 75% of the granted memory-time, util just under 25% (9e8 µs).
  Classification c = Classify(Nvml(899'999'999, kGrantedMemory * 3 / 4));
  EXPECT_EQ(c.cls, Class::kMemoryBound);
  EXPECT_DOUBLE_EQ(Map(c.signals).at("memory_footprint"), 0.75);
  EXPECT_DOUBLE_EQ(Map(c.thresholds).at("memory_bound_footprint_at_least"), 0.75);
  EXPECT_DOUBLE_EQ(Map(c.thresholds).at("compute_light_util_below"), 0.25);
  EXPECT_TRUE(c.nvml_only);
  EXPECT_EQ(Classify(Nvml(899'999'999, kGrantedMemory * 3 / 4 - 1)).cls, Class::kComputeLight);
  EXPECT_EQ(Classify(Nvml(900'000'000, kGrantedMemory)).cls, Class::kHealthy);
  // The device's memory size unknown: no footprint, no footprint rule.
  Inputs unknown = Nvml(899'999'999, kGrantedMemory);
  unknown.granted_memory_kib_s = 0;
  Classification u = Classify(unknown);
  EXPECT_EQ(u.cls, Class::kComputeLight);
  EXPECT_FALSE(Map(u.signals).contains("memory_footprint"));
}

TEST(Classify, ComputeLightBelowAQuarter) {
  Classification c = Classify(Nvml(899'999'999));
  EXPECT_EQ(c.cls, Class::kComputeLight);
  EXPECT_DOUBLE_EQ(Map(c.thresholds).at("compute_light_util_below"), 0.25);
  EXPECT_EQ(Classify(Nvml(900'000'000)).cls, Class::kHealthy);
  EXPECT_EQ(Classify(Gpm(899'999'999, 800'000'000)).cls, Class::kComputeLight);
}

TEST(Classify, HealthyWithActivityNamesWhatItChecked) {
  Classification c = Classify(Gpm(3'240'000'000, 2'880'000'000, 720'000'000));
  EXPECT_EQ(c.cls, Class::kHealthy);
  auto s = Map(c.signals);
  EXPECT_DOUBLE_EQ(s.at("gpu_util"), 0.9);
  EXPECT_DOUBLE_EQ(s.at("sm_active"), 0.8);
  EXPECT_DOUBLE_EQ(s.at("dram_active"), 0.2);
  EXPECT_EQ(c.thresholds.size(), 3u);
  EXPECT_EQ(c.reason, "GPU util 90% with SM active 80% and DRAM active 20%: the grant is used");
}

TEST(Classify, ActivityOverPartOfTheWindowIsJudgedOnThatPart) {
  // dcgm-exporter came up half-way: over its half, util 100% and SM active 10%. Read over the
  // whole grant SM active would look like 5%; over the covered half it is 10%, still starved.
  Inputs in = Nvml(kHour);
  in.activity.sm_active_us = 180'000'000;
  in.activity_allocated_us = kHour / 2;
  in.activity_compute_us = kHour / 2;
  in.activity_quality = Quality::kMeasured;
  in.activity_rule = "dcgm-exporter";
  Classification c = Classify(in);
  EXPECT_EQ(c.cls, Class::kBusyButStarved);
  auto s = Map(c.signals);
  EXPECT_DOUBLE_EQ(s.at("sm_active"), 0.1);
  EXPECT_DOUBLE_EQ(s.at("activity_coverage"), 0.5);
  EXPECT_EQ(c.basis, "dcgm-exporter");
  EXPECT_NE(c.reason.find("activity over 50% of the grant"), std::string::npos) << c.reason;
  // A healthy covered half stays healthy.
  in.activity.sm_active_us = kHour * 2 / 5;
  EXPECT_EQ(Classify(in).cls, Class::kHealthy);
}

TEST(Classify, BasisNamesTheActivitySources) {
  Inputs in = Gpm(kHour, kHour);
  in.activity_rule = "compute-share+gpm";
  EXPECT_EQ(Classify(in).basis, "gpm");
  in.activity_rule = "compute-share+dcgm-exporter+gpm";
  EXPECT_EQ(Classify(in).basis, "dcgm-exporter+gpm");
  in.activity_rule = "dcgm-exporter";
  EXPECT_EQ(Classify(in).basis, "dcgm-exporter");
  in.activity_rule = "something-new";
  EXPECT_EQ(Classify(in).basis, "something-new");
  // Activity figures without a quality (an older agent wrote none) are not a basis.
  in.activity_quality = Quality::kNone;
  Classification c = Classify(in);
  EXPECT_EQ(c.basis, "nvml-only");
  EXPECT_TRUE(c.nvml_only);
}

TEST(Classify, NamesEveryClass) {
  for (auto [cls, name] : {std::pair{Class::kUnallocated, "unallocated"},
                           {Class::kIdle, "idle"},
                           {Class::kAllocatedButIdle, "allocated-but-idle"},
                           {Class::kBusyButStarved, "busy-but-starved"},
                           {Class::kMemoryBound, "memory-bound"},
                           {Class::kComputeLight, "compute-light"},
                           {Class::kHealthy, "healthy"}})
    EXPECT_EQ(ToString(cls), name);
}

// Issue 34: a MIG notebook whose compute was the slice time while a process was present
// (mig-presence, an upper bound) came out `healthy` at +1,340% against the truth. An estimate
// that cannot bear the verdict says `unknown` and why; one measured close (or a measurement)
// still may be healthy.
TEST(Classify, HealthyNeedsAComputeFigureThatCanBearIt) {
  Inputs presence = Nvml(kHour);
  presence.compute_quality = Quality::kEstimated;
  presence.compute_rule = "mig-presence";
  Classification c = Classify(presence);
  EXPECT_EQ(c.cls, Class::kUnknown);
  EXPECT_EQ(c.reason,
            "GPU util 100% is an estimate (rule mig-presence, never measured on real hardware): "
            "too uncertain to call the grant used or light; SM activity would decide it: GPM "
            "(Hopper or newer) or dcgm-exporter beside the agent, or the kernel-time tracer");
  // Issue 60: an estimate's bounds settle what they can. Off by up to 111%, 75% is at least
  // 35.5% of the grant: healthy even so.
  Inputs sliced = Nvml(kHour * 3 / 4);
  sliced.compute_quality = Quality::kEstimated;
  sliced.compute_rule = "process-samples";
  sliced.compute_floor_us = ComputeFloor(sliced.compute_us, Quality::kEstimated, 1.11);
  c = Classify(sliced);
  EXPECT_EQ(c.cls, Class::kHealthy);
  EXPECT_NE(c.reason.find("off by up to 111% on real hardware), so at least 35.5% even so"),
            std::string::npos)
      << c.reason;
  // 40% is at least 19%: across the quarter line, so unknown, saying between what ...
  Inputs straddles = Nvml(kHour * 2 / 5);
  straddles.compute_quality = Quality::kEstimated;
  straddles.compute_rule = "process-samples";
  straddles.compute_floor_us = ComputeFloor(straddles.compute_us, Quality::kEstimated, 1.11);
  c = Classify(straddles);
  EXPECT_EQ(c.cls, Class::kUnknown);
  EXPECT_EQ(ToString(c.cls), "unknown");
  EXPECT_NE(c.reason.find("so between 19% and more of its grant"), std::string::npos) << c.reason;
  // ... and the GPUs' own busy time bounds it from above: 60% leaves it unknown, 20% light.
  straddles.device_busy_us = kHour * 3 / 5;
  c = Classify(straddles);
  EXPECT_EQ(c.cls, Class::kUnknown);
  EXPECT_NE(c.reason.find("so between 19% and 60% of its grant"), std::string::npos) << c.reason;
  straddles.device_busy_us = kHour / 5;
  c = Classify(straddles);
  EXPECT_EQ(c.cls, Class::kComputeLight);
  EXPECT_NE(c.reason.find("the GPUs it ran on were busy 20% of its grant"), std::string::npos)
      << c.reason;
  // No band, no bound: a MIG presence is not bounded by a device busy time.
  presence.device_busy_us = kHour / 10;
  EXPECT_EQ(Classify(presence).cls, Class::kUnknown);
  // A group's floor is its rows': a namespace of a measured training job (half its grant) and a
  // MIG presence (never measured) is at least the measured half, whatever the presence did.
  Inputs mixed = Nvml(kHour * 3 / 4);
  mixed.compute_quality = Quality::kEstimated;
  mixed.compute_rule = "gpm-instance-activity+mig-presence";
  mixed.compute_floor_us = kHour / 2;
  c = Classify(mixed);
  EXPECT_EQ(c.cls, Class::kHealthy);
  EXPECT_NE(c.reason.find("part of it never measured on real hardware), so at least 50% even so"),
            std::string::npos)
      << c.reason;
  Inputs close = sliced;
  close.compute_rule = "device-activity";  // 0.3% on the H200
  EXPECT_EQ(Classify(close).cls, Class::kHealthy);
  EXPECT_EQ(Classify(Nvml(kHour * 3 / 4)).cls, Class::kHealthy);  // measured
  // An idle verdict needs no trust in a high figure: a low estimate still reads idle.
  Inputs quiet = Nvml(0, 0);
  quiet.compute_quality = Quality::kEstimated;
  quiet.compute_rule = "mig-presence";
  EXPECT_EQ(Classify(quiet).cls, Class::kIdle);
}

}  // namespace
}  // namespace gpuledger::utilization
