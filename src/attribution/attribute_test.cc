#include "attribution/attribute.h"

#include <gtest/gtest.h>

namespace gpuledger::attribution {
namespace {

constexpr Micros kDt = 60 * kMicrosPerSecond;

ConsumerRef Pod(const std::string& name) {
  return ConsumerRef{"inference", name, PodUid{"uid-" + name}, "main"};
}

NodeSnapshot OneGpu(SharingMode mode, int replicas = 1) {
  NodeSnapshot s;
  s.node = "n1";
  s.start_us = 0;
  s.end_us = kDt;
  s.gpus.push_back(PhysicalGpu{GpuUuid{"GPU-a"}, "A100-80GB", 80 * kGiB, mode, replicas, 7});
  return s;
}

const ConsumerUsage* Find(const DeviceUsage& u, const std::string& pod) {
  for (const auto& c : u.consumers)
    if (c.consumer.pod == pod) return &c;
  return nullptr;
}

TEST(Attribute, TimeSlicedFourReplicasThreePods) {
  NodeSnapshot s = OneGpu(SharingMode::kTimeSlicing, 4);
  // True duty 20/30/10%; per-process samples inflated by 10% as NVML does; device util 60%.
  const double duty[] = {0.2, 0.3, 0.1};
  for (int i = 0; i < 3; ++i) {
    auto ref = Pod("p" + std::to_string(i));
    s.grants.push_back(Grant{ref, "GPU-a::" + std::to_string(i), "nvidia.com/gpu", {}, ""});
    s.processes.push_back(ProcessObservation{100 + i, GpuUuid{"GPU-a"}, ref, "", kGiB,
                                             static_cast<GpuMicros>(duty[i] * 1.1 * kDt), ""});
  }
  s.signals.push_back(
      DeviceSignals{GpuUuid{"GPU-a"}, static_cast<GpuMicros>(0.6 * kDt), 3 * kGiB, 1000});
  auto out = Attribute(s);
  ASSERT_EQ(out.size(), 1u);
  const DeviceUsage& u = out[0];
  ASSERT_TRUE(CheckConservation(u).ok()) << CheckConservation(u).error().message;
  EXPECT_EQ(u.unallocated_ppd, kWholeGpu / 4);
  for (int i = 0; i < 3; ++i) {
    const ConsumerUsage* c = Find(u, "p" + std::to_string(i));
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->allocated_ppd, kWholeGpu / 4);
    EXPECT_NEAR(c->compute_us, duty[i] * kDt, 0.01 * duty[i] * kDt);
    // Several consumers split by NVML's per-process samples: an estimate on real GPUs.
    EXPECT_EQ(c->compute_quality, Quality::kEstimated);
    EXPECT_EQ(c->compute_rule, "process-samples");
    EXPECT_EQ(c->memory_bytes, kGiB);
  }
  EXPECT_EQ(u.busy_us, static_cast<GpuMicros>(0.6 * kDt));
  EXPECT_EQ(u.unattributed_us, 0);
  EXPECT_EQ(u.idle_us, kDt - u.busy_us);
  EXPECT_EQ(u.unattributed_memory_bytes, 0);
}

// An exclusive GPU's one process has NVML samples too: it takes all of the device's busy time
// whatever they say, and its rule is the one consumer's (device-activity, 0.3% on the H200), not
// the samples' split (111%), which would put a band on a figure that split nothing.
TEST(Attribute, OneConsumerWithSamplesTakesTheDeviceActivityMeasured) {
  NodeSnapshot s = OneGpu(SharingMode::kExclusive);
  s.grants.push_back(Grant{Pod("solo"), "GPU-a", "nvidia.com/gpu", {}, ""});
  s.processes.push_back(ProcessObservation{1, GpuUuid{"GPU-a"}, Pod("solo"), "", kGiB,
                                           static_cast<GpuMicros>(0.33 * kDt), ""});
  s.signals.push_back(DeviceSignals{GpuUuid{"GPU-a"}, kDt / 2, kGiB, 1000});
  auto u = Attribute(s).at(0);
  ASSERT_TRUE(CheckConservation(u).ok());
  EXPECT_EQ(Find(u, "solo")->compute_us, kDt / 2);
  EXPECT_EQ(Find(u, "solo")->compute_quality, Quality::kMeasured);
  EXPECT_EQ(Find(u, "solo")->compute_rule, "device-activity");
}

TEST(Attribute, MigThreeAndTwoSlicesLeaveTwoIdle) {
  NodeSnapshot s = OneGpu(SharingMode::kMig);
  s.mig_instances.push_back(
      MigInstance{GpuUuid{"MIG-3g"}, GpuUuid{"GPU-a"}, "3g.40gb", 3, 40 * kGiB});
  s.mig_instances.push_back(
      MigInstance{GpuUuid{"MIG-2g"}, GpuUuid{"GPU-a"}, "2g.20gb", 2, 20 * kGiB});
  s.grants.push_back(Grant{Pod("big"), "MIG-3g", "nvidia.com/mig-3g.40gb", {}, ""});
  s.grants.push_back(Grant{Pod("small"), "MIG-2g", "nvidia.com/mig-2g.20gb", {}, ""});
  s.processes.push_back(
      ProcessObservation{1, GpuUuid{"MIG-3g"}, Pod("big"), "", 10 * kGiB, {}, ""});
  auto u = Attribute(s).at(0);
  ASSERT_TRUE(CheckConservation(u).ok()) << CheckConservation(u).error().message;
  EXPECT_EQ(Find(u, "big")->allocated_ppd, kWholeGpu / 7 * 3);
  EXPECT_EQ(Find(u, "small")->allocated_ppd, kWholeGpu / 7 * 2);
  EXPECT_EQ(u.unallocated_ppd, kWholeGpu / 7 * 2);
  // No DCGM: the 3g instance's slice time while its process is present, estimated.
  EXPECT_NEAR(Find(u, "big")->compute_us, kDt * 3 / 7, 1);
  EXPECT_EQ(Find(u, "big")->compute_quality, Quality::kEstimated);
  EXPECT_EQ(Find(u, "big")->compute_rule, "mig-presence");
  EXPECT_EQ(Find(u, "small")->compute_us, 0);
  EXPECT_EQ(Find(u, "small")->compute_rule, "no-process");
}

TEST(Attribute, MigWithDcgmActivityIsMeasured) {
  NodeSnapshot s = OneGpu(SharingMode::kMig);
  s.mig_instances.push_back(
      MigInstance{GpuUuid{"MIG-1"}, GpuUuid{"GPU-a"}, "1g.10gb", 1, 10 * kGiB});
  s.grants.push_back(Grant{Pod("x"), "MIG-1", "nvidia.com/mig-1g.10gb", {}, ""});
  s.processes.push_back(ProcessObservation{1, GpuUuid{"MIG-1"}, Pod("x"), "", kGiB, {}, ""});
  s.signals.push_back(DeviceSignals{GpuUuid{"MIG-1"}, kDt / 2, kGiB, {}});
  auto u = Attribute(s).at(0);
  ASSERT_TRUE(CheckConservation(u).ok());
  EXPECT_NEAR(Find(u, "x")->compute_us, kDt / 2 / 7.0, 1);
  EXPECT_EQ(Find(u, "x")->compute_quality, Quality::kMeasured);
}

TEST(Attribute, MpsWithoutSamplesSplitsByThreadShare) {
  NodeSnapshot s = OneGpu(SharingMode::kMps, 4);
  s.grants.push_back(Grant{Pod("a"), "GPU-a::0", "nvidia.com/gpu", kWholeGpu / 100 * 60, ""});
  s.grants.push_back(Grant{Pod("b"), "GPU-a::1", "nvidia.com/gpu", kWholeGpu / 100 * 20, ""});
  s.processes.push_back(ProcessObservation{1, GpuUuid{"GPU-a"}, Pod("a"), "", kGiB, {}, ""});
  s.processes.push_back(ProcessObservation{2, GpuUuid{"GPU-a"}, Pod("b"), "", kGiB, {}, ""});
  s.signals.push_back(DeviceSignals{GpuUuid{"GPU-a"}, kDt / 2, 2 * kGiB, {}});
  auto u = Attribute(s).at(0);
  ASSERT_TRUE(CheckConservation(u).ok());
  EXPECT_EQ(Find(u, "a")->allocated_ppd, kWholeGpu / 100 * 60);
  EXPECT_EQ(u.unallocated_ppd, kWholeGpu / 100 * 20);
  EXPECT_EQ(Find(u, "a")->compute_us, kDt / 2 * 3 / 4);
  EXPECT_EQ(Find(u, "b")->compute_us, kDt / 2 / 4);
  EXPECT_EQ(Find(u, "a")->compute_quality, Quality::kEstimated);
  EXPECT_EQ(Find(u, "a")->compute_rule, "mps-thread-share");
}

// As NVML shows MPS on a real H200 (../shared/data/h200, run1-mps): every client in the compute
// and MPS lists, the server in the compute list, and per-process samples only for the server.
NodeSnapshot MpsWithServer() {
  NodeSnapshot s = OneGpu(SharingMode::kMps, 4);
  ProcessObservation server{9, GpuUuid{"GPU-a"}, Pod("mps-control-daemon"), "", 66 * kMiB, kDt / 2,
                            ""};
  server.comm = std::string(kMpsServerComm);
  s.processes.push_back(server);
  ProcessObservation a{1, GpuUuid{"GPU-a"}, Pod("a"), "", 4 * kGiB, {}, ""};
  ProcessObservation b{2, GpuUuid{"GPU-a"}, Pod("b"), "", 12 * kGiB, {}, ""};
  a.mps_client = b.mps_client = true;
  s.processes.push_back(a);
  s.processes.push_back(b);
  s.signals.push_back(DeviceSignals{GpuUuid{"GPU-a"}, kDt / 2, 17 * kGiB, {}});
  return s;
}

TEST(Attribute, MpsServerSamplesAreItsClientsWork) {
  NodeSnapshot s = MpsWithServer();
  s.grants.push_back(Grant{Pod("a"), "GPU-a::0", "nvidia.com/gpu", kWholeGpu / 100 * 30, ""});
  s.grants.push_back(Grant{Pod("b"), "GPU-a::1", "nvidia.com/gpu", kWholeGpu / 100 * 60, ""});
  auto u = Attribute(s).at(0);
  ASSERT_TRUE(CheckConservation(u).ok()) << CheckConservation(u).error().message;
  // The server's consumer holds its memory and no compute; the busy time goes to the clients
  // by their declared active-thread share, 30:60.
  const ConsumerUsage* server = Find(u, "mps-control-daemon");
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->compute_us, 0);
  EXPECT_EQ(server->memory_bytes, 66 * kMiB);
  EXPECT_EQ(server->compute_rule, "mps-server");
  EXPECT_EQ(Find(u, "a")->compute_us, kDt / 2 / 3);
  EXPECT_EQ(Find(u, "b")->compute_us, kDt / 2 * 2 / 3);
  EXPECT_EQ(Find(u, "a")->compute_quality, Quality::kEstimated);
  EXPECT_EQ(Find(u, "a")->compute_rule, "mps-thread-share");
  EXPECT_EQ(u.unattributed_us, 0);
}

TEST(Attribute, MpsClientsWithoutDeclaredSharesSplitByMemoryElseEvenly) {
  NodeSnapshot s = MpsWithServer();
  auto u = Attribute(s).at(0);
  ASSERT_TRUE(CheckConservation(u).ok());
  EXPECT_EQ(Find(u, "mps-control-daemon")->compute_us, 0);
  EXPECT_EQ(Find(u, "a")->compute_us, kDt / 2 / 4);  // 4 GiB of 16
  EXPECT_EQ(Find(u, "b")->compute_us, kDt / 2 * 3 / 4);
  EXPECT_EQ(Find(u, "a")->compute_rule, "mps-memory-share");

  for (auto& p : s.processes) p.used_memory_bytes = 0;
  u = Attribute(s).at(0);
  ASSERT_TRUE(CheckConservation(u).ok());
  EXPECT_EQ(Find(u, "a")->compute_us, kDt / 4);
  EXPECT_EQ(Find(u, "b")->compute_us, kDt / 4);
  EXPECT_EQ(Find(u, "b")->compute_rule, "mps-even-share");
}

TEST(Attribute, MpsServerAloneLeavesTheBusyTimeUnattributed) {
  NodeSnapshot s = MpsWithServer();
  s.processes.resize(1);  // the clients have exited; the server lingers
  auto u = Attribute(s).at(0);
  ASSERT_TRUE(CheckConservation(u).ok());
  EXPECT_EQ(Find(u, "mps-control-daemon")->compute_us, 0);
  EXPECT_EQ(u.unattributed_us, kDt / 2);
}

TEST(Attribute, ExclusiveSingleProcessTakesTheDeviceActivity) {
  NodeSnapshot s = OneGpu(SharingMode::kExclusive);
  s.grants.push_back(Grant{Pod("train"), "GPU-a", "nvidia.com/gpu", {}, ""});
  s.processes.push_back(
      ProcessObservation{7, GpuUuid{"GPU-a"}, Pod("train"), "", 70 * kGiB, {}, ""});
  s.signals.push_back(DeviceSignals{GpuUuid{"GPU-a"}, kDt * 9 / 10, 71 * kGiB, 42'000});
  auto u = Attribute(s).at(0);
  ASSERT_TRUE(CheckConservation(u).ok());
  EXPECT_EQ(Find(u, "train")->allocated_ppd, kWholeGpu);
  EXPECT_EQ(Find(u, "train")->compute_us, kDt * 9 / 10);
  EXPECT_EQ(Find(u, "train")->compute_quality, Quality::kMeasured);
  EXPECT_EQ(u.unattributed_memory_bytes, kGiB);
  // Energy follows busy time: 90% to the pod, 10% idle.
  EXPECT_EQ(Find(u, "train")->energy_mj, 37'800);
  EXPECT_EQ(u.idle_energy_mj, 4'200);
}

TEST(Attribute, BusyTimeWithNoProcessIsUnattributed) {
  NodeSnapshot s = OneGpu(SharingMode::kExclusive);
  s.grants.push_back(Grant{Pod("holder"), "GPU-a", "nvidia.com/gpu", {}, ""});
  s.signals.push_back(DeviceSignals{GpuUuid{"GPU-a"}, kDt / 3, 0, {}});
  auto u = Attribute(s).at(0);
  ASSERT_TRUE(CheckConservation(u).ok());
  EXPECT_EQ(u.unattributed_us, kDt / 3);
  EXPECT_EQ(Find(u, "holder")->compute_us, 0);
}

TEST(Attribute, PodWithoutGrantAndHostProcessAreConsumersWithNoAllocation) {
  NodeSnapshot s = OneGpu(SharingMode::kTimeSlicing, 2);
  s.grants.push_back(Grant{Pod("ok"), "GPU-a::0", "nvidia.com/gpu", {}, ""});
  s.processes.push_back(ProcessObservation{1, GpuUuid{"GPU-a"}, Pod("ok"), "", kGiB, kDt / 10, ""});
  s.processes.push_back(
      ProcessObservation{2, GpuUuid{"GPU-a"}, Pod("rogue"), "", kGiB, kDt / 10, "all"});
  s.processes.push_back(
      ProcessObservation{3, GpuUuid{"GPU-a"}, {}, "user:alice", kGiB, kDt / 5, ""});
  s.signals.push_back(DeviceSignals{GpuUuid{"GPU-a"}, kDt * 4 / 10, 3 * kGiB, {}});
  auto u = Attribute(s).at(0);
  ASSERT_TRUE(CheckConservation(u).ok());
  EXPECT_EQ(Find(u, "rogue")->allocated_ppd, 0);
  EXPECT_EQ(Find(u, "rogue")->compute_us, kDt / 10);
  const ConsumerUsage* host = Find(u, "user:alice");
  ASSERT_NE(host, nullptr);
  EXPECT_TRUE(host->consumer.IsHost());
  EXPECT_EQ(host->compute_us, kDt / 5);
  EXPECT_EQ(u.unallocated_ppd, kWholeGpu / 2);
}

TEST(Attribute, DraSharedClaimSplitsTheDeviceAmongItsPods) {
  NodeSnapshot s = OneGpu(SharingMode::kDra);
  s.grants.push_back(Grant{Pod("a"), "GPU-a", "gpu.nvidia.com", {}, "ml/shared"});
  s.grants.push_back(Grant{Pod("b"), "GPU-a", "gpu.nvidia.com", {}, "ml/shared"});
  auto u = Attribute(s).at(0);
  ASSERT_TRUE(CheckConservation(u).ok());
  EXPECT_EQ(Find(u, "a")->allocated_ppd, kWholeGpu / 2);
  EXPECT_EQ(u.unallocated_ppd, 0);
}

TEST(Attribute, OverSubscribedFractionsAreScaledToTheGpuExactly) {
  NodeSnapshot s = OneGpu(SharingMode::kFractional);
  s.grants.push_back(Grant{Pod("a"), "GPU-a", "gpu_milli", kWholeGpu / 1000 * 700, ""});
  s.grants.push_back(Grant{Pod("b"), "GPU-a", "gpu_milli", kWholeGpu / 1000 * 700, ""});
  auto u = Attribute(s).at(0);
  ASSERT_TRUE(CheckConservation(u).ok());
  EXPECT_EQ(Find(u, "a")->allocated_ppd, kWholeGpu / 2);
  EXPECT_EQ(u.unallocated_ppd, 0);
}

TEST(Attribute, NoSignalsAtAllGivesAllocatedQuality) {
  NodeSnapshot s = OneGpu(SharingMode::kExclusive);
  s.grants.push_back(Grant{Pod("a"), "GPU-a", "nvidia.com/gpu", {}, ""});
  auto u = Attribute(s).at(0);
  ASSERT_TRUE(CheckConservation(u).ok());
  EXPECT_EQ(Find(u, "a")->compute_quality, Quality::kAllocated);
  EXPECT_EQ(u.idle_us, kDt);
}

// Hopper's GPM measures each GPU instance: measured, and the rule names it. Its SM/tensor/DRAM
// activity is the instance's own, scaled to the physical GPU by its 2 of 7 slices.
TEST(Attribute, MigWithGpmIsMeasuredAndCarriesTheInstanceActivity) {
  NodeSnapshot s = OneGpu(SharingMode::kMig);
  s.mig_instances.push_back(
      MigInstance{GpuUuid{"MIG-2"}, GpuUuid{"GPU-a"}, "2g.20gb", 2, 20 * kGiB});
  s.grants.push_back(Grant{Pod("x"), "MIG-2", "nvidia.com/mig-2g.20gb", {}, ""});
  s.processes.push_back(ProcessObservation{1, GpuUuid{"MIG-2"}, Pod("x"), "", kGiB, {}, ""});
  DeviceSignals sig{GpuUuid{"MIG-2"}, kDt * 7 / 10, kGiB, {}};
  sig.busy_source = SignalSource::kGpm;
  sig.activity = Activity{kDt * 7 / 20, kDt / 7, kDt / 14, kDt * 7 / 40};
  sig.activity_source = SignalSource::kGpm;
  s.signals.push_back(sig);
  auto u = Attribute(s).at(0);
  ASSERT_TRUE(CheckConservation(u).ok());
  const ConsumerUsage* x = Find(u, "x");
  // 70% of 2/7 of the GPU (the slice time is whole µs: within one).
  EXPECT_NEAR(x->compute_us, kDt / 10 * 2, 1);
  EXPECT_EQ(x->compute_quality, Quality::kMeasured);
  EXPECT_EQ(x->compute_rule, "gpm-instance-activity");
  EXPECT_NEAR(x->activity.sm_active_us, kDt / 10, 1);         // 35% of 2/7
  EXPECT_NEAR(x->activity.sm_occupancy_us, kDt * 2 / 49, 1);  // 1/7 of 2/7
  EXPECT_NEAR(x->activity.tensor_active_us, kDt / 49, 1);
  EXPECT_NEAR(x->activity.dram_active_us, kDt / 20, 1);
  EXPECT_EQ(x->activity_quality, Quality::kMeasured);
  EXPECT_EQ(x->activity_rule, "gpm");
}

// Two consumers on one time-sliced GPU: the device's activity is split by their compute.
TEST(Attribute, SharedGpuActivityIsSplitByCompute) {
  NodeSnapshot s = OneGpu(SharingMode::kTimeSlicing, 2);
  s.grants.push_back(Grant{Pod("a"), "GPU-a::0", "nvidia.com/gpu", {}, ""});
  s.grants.push_back(Grant{Pod("b"), "GPU-a::1", "nvidia.com/gpu", {}, ""});
  s.processes.push_back(ProcessObservation{1, GpuUuid{"GPU-a"}, Pod("a"), "", kGiB, kDt / 4, ""});
  s.processes.push_back(ProcessObservation{2, GpuUuid{"GPU-a"}, Pod("b"), "", kGiB, kDt / 2, ""});
  DeviceSignals sig{GpuUuid{"GPU-a"}, kDt * 3 / 4, 2 * kGiB, {}};
  sig.activity = Activity{kDt * 3 / 8, kDt * 3 / 16, 0, kDt * 3 / 4};
  sig.activity_source = SignalSource::kDcgm;
  s.signals.push_back(sig);
  auto u = Attribute(s).at(0);
  ASSERT_TRUE(CheckConservation(u).ok());
  EXPECT_EQ(Find(u, "a")->activity.sm_active_us, kDt / 8);
  EXPECT_EQ(Find(u, "b")->activity.sm_active_us, kDt / 4);
  EXPECT_EQ(Find(u, "b")->activity.dram_active_us, kDt / 2);
  EXPECT_EQ(Find(u, "a")->activity_quality, Quality::kEstimated);
  EXPECT_EQ(Find(u, "a")->activity_rule, "compute-share+dcgm-exporter");
}

// No activity source: nothing to say, and the row says so.
TEST(Attribute, WithoutActivityTheQualityIsNone) {
  NodeSnapshot s = OneGpu(SharingMode::kExclusive);
  s.grants.push_back(Grant{Pod("a"), "GPU-a", "nvidia.com/gpu", {}, ""});
  s.processes.push_back(ProcessObservation{1, GpuUuid{"GPU-a"}, Pod("a"), "", kGiB, {}, ""});
  s.signals.push_back(DeviceSignals{GpuUuid{"GPU-a"}, kDt / 2, kGiB, {}});
  auto u = Attribute(s).at(0);
  EXPECT_EQ(Find(u, "a")->activity, Activity{});
  EXPECT_EQ(Find(u, "a")->activity_quality, Quality::kNone);
}

TEST(Attribute, ADeclaredShareKeepsItsSource) {
  NodeSnapshot s = OneGpu(SharingMode::kFractional);
  Grant g{Pod("a"), "GPU-a", "nvidia.com/gpu", kWholeGpu / 10 * 3, ""};
  g.share_source = "resource:nvidia.com/gpucores";
  s.grants.push_back(g);
  auto u = Attribute(s).at(0);
  EXPECT_EQ(Find(u, "a")->allocated_ppd, kWholeGpu / 10 * 3);
  EXPECT_EQ(Find(u, "a")->share_source, "resource:nvidia.com/gpucores");
}

TEST(BaseDeviceId, ReplicaForms) {
  EXPECT_EQ(BaseDeviceId("GPU-a::3"), "GPU-a");
  EXPECT_EQ(BaseDeviceId("MIG-b::0"), "MIG-b");
  EXPECT_EQ(BaseDeviceId("nvidia0/vgpu2"), "nvidia0");
  EXPECT_EQ(BaseDeviceId("GPU-a"), "GPU-a");
  // HAMi's slots of one GPU.
  EXPECT_EQ(BaseDeviceId("GPU-1b2c3d4e-0000-4a4a-8b8b-123456789abc-7"),
            "GPU-1b2c3d4e-0000-4a4a-8b8b-123456789abc");
  EXPECT_EQ(BaseDeviceId("GPU-1b2c3d4e-0000-4a4a-8b8b-123456789abc-x"),
            "GPU-1b2c3d4e-0000-4a4a-8b8b-123456789abc-x");
}

}  // namespace
}  // namespace gpuledger::attribution

namespace gpuledger::attribution {
namespace {

// Three time-sliced pods with NVML samples that are 2x off (as measured on an H200, run 2), and
// `published[i]` kernel time (unset: the pod publishes none).
NodeSnapshot KernelTimeNode(SharingMode mode,
                            const std::vector<std::optional<GpuMicros>>& published,
                            GpuMicros device_busy) {
  NodeSnapshot s = OneGpu(mode, 4);
  const GpuMicros wrong_samples[] = {kDt / 2, kDt / 20, kDt / 10};
  for (std::size_t i = 0; i < published.size(); ++i) {
    auto ref = Pod("k" + std::to_string(i));
    s.grants.push_back(Grant{ref, "GPU-a::" + std::to_string(i), "nvidia.com/gpu", {}, ""});
    ProcessObservation p{
        200 + static_cast<int>(i), GpuUuid{"GPU-a"}, ref, "", kGiB, wrong_samples[i % 3], ""};
    p.kernel_busy_us = published[i];
    s.processes.push_back(p);
  }
  s.signals.push_back(DeviceSignals{GpuUuid{"GPU-a"}, device_busy, 3 * kGiB, 1000});
  return s;
}

// Issue 31: when every process publishes its kernel time, the device's busy time is split by
// it and measured, whatever NVML's samples said.
TEST(Attribute, EveryProcessPublishingSplitsTheBusyTimeByKernelTime) {
  const GpuMicros busy = 36 * kMicrosPerSecond;
  auto out = Attribute(
      KernelTimeNode(SharingMode::kTimeSlicing,
                     {12 * kMicrosPerSecond, 18 * kMicrosPerSecond, 6 * kMicrosPerSecond}, busy));
  const DeviceUsage& u = out[0];
  ASSERT_TRUE(CheckConservation(u).ok()) << CheckConservation(u).error().message;
  const GpuMicros want[] = {12 * kMicrosPerSecond, 18 * kMicrosPerSecond, 6 * kMicrosPerSecond};
  for (int i = 0; i < 3; ++i) {
    const ConsumerUsage* c = Find(u, "k" + std::to_string(i));
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->compute_us, want[i]);
    EXPECT_EQ(c->compute_quality, Quality::kMeasured);
    EXPECT_EQ(c->compute_rule, "kernel-time");
  }
}

// Some publish: they get their kernel time; the silent one the rest of the busy time.
TEST(Attribute, PartialKernelTimeGivesTheRemainderToTheSilent) {
  const GpuMicros busy = 40 * kMicrosPerSecond;
  auto out =
      Attribute(KernelTimeNode(SharingMode::kTimeSlicing,
                               {12 * kMicrosPerSecond, std::nullopt, 6 * kMicrosPerSecond}, busy));
  const DeviceUsage& u = out[0];
  ASSERT_TRUE(CheckConservation(u).ok()) << CheckConservation(u).error().message;
  EXPECT_EQ(Find(u, "k0")->compute_us, 12 * kMicrosPerSecond);
  EXPECT_EQ(Find(u, "k2")->compute_us, 6 * kMicrosPerSecond);
  EXPECT_EQ(Find(u, "k0")->compute_rule, "kernel-time");
  EXPECT_EQ(Find(u, "k1")->compute_us, 22 * kMicrosPerSecond);
  EXPECT_EQ(Find(u, "k1")->compute_rule, "kernel-time-remainder");
  EXPECT_EQ(Find(u, "k1")->compute_quality, Quality::kMeasured);  // busy minus measured claims
  EXPECT_FALSE(ExplainComputeRule("kernel-time-remainder").empty());
}

// MPS clients run concurrently: their kernel time sums above the device's busy time, which is
// split by it all the same, exactly.
TEST(Attribute, OverlappingMpsKernelTimeIsScaledToTheBusyTime) {
  const GpuMicros busy = 30 * kMicrosPerSecond;
  auto out = Attribute(
      KernelTimeNode(SharingMode::kMps,
                     {30 * kMicrosPerSecond, 15 * kMicrosPerSecond, 15 * kMicrosPerSecond}, busy));
  const DeviceUsage& u = out[0];
  ASSERT_TRUE(CheckConservation(u).ok()) << CheckConservation(u).error().message;
  EXPECT_EQ(Find(u, "k0")->compute_us, 15 * kMicrosPerSecond);
  EXPECT_EQ(Find(u, "k1")->compute_us + Find(u, "k2")->compute_us, 15 * kMicrosPerSecond);
  EXPECT_EQ(u.busy_us, busy);
}

}  // namespace
}  // namespace gpuledger::attribution
