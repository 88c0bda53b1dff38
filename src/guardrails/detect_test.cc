// The agent's guardrails on hand-built nodes: each kind fires on its misbehaviour with the
// evidence written out by hand, and nothing fires on a clean node.
#include "guardrails/detect.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "attribution/attribute.h"

namespace gpuledger::guardrails {
namespace {

const GpuUuid kGpu0{"GPU-00000000-0000-0000-0000-000000000000"};
const GpuUuid kGpu1{"GPU-11111111-1111-1111-1111-111111111111"};
constexpr Micros kCycle = kMicrosPerSecond;

ConsumerRef Pod(const std::string& name) {
  return ConsumerRef{"ml", name, PodUid{"uid-" + name}, "main"};
}

// Two A100-80GB time-sliced four ways, one cycle of one second.
NodeSnapshot TimeSlicedNode() {
  NodeSnapshot s;
  s.node = "n1";
  s.start_us = 100 * kCycle;
  s.end_us = 101 * kCycle;
  for (const GpuUuid& g : {kGpu0, kGpu1})
    s.gpus.push_back(PhysicalGpu{g, "A100-80GB", 80 * kGiB, SharingMode::kTimeSlicing, 4, 7});
  return s;
}

void AddPod(NodeSnapshot& s, const ConsumerRef& who, const std::string& device_id, int pid,
            Bytes memory, const std::string& visible) {
  s.grants.push_back(Grant{who, device_id, "nvidia.com/gpu"});
  ProcessObservation p;
  p.pid = pid;
  p.device = GpuUuid{std::string(BaseDeviceId(device_id))};
  p.consumer = who;
  p.used_memory_bytes = memory;
  p.sm_busy_us = kCycle / 10;
  p.visible_devices = visible;
  p.comm = "python3";
  s.processes.push_back(p);
}

void Signal(NodeSnapshot& s, const GpuUuid& gpu, Bytes used) {
  DeviceSignals d;
  d.device = gpu;
  d.busy_us = kCycle / 2;
  d.memory_used_bytes = used;
  s.signals.push_back(d);
}

std::vector<Observation> ObserveOn(const NodeSnapshot& s, const Policy& policy = DefaultPolicy(),
                                   bool kubernetes = true) {
  return Observe(s, attribution::Attribute(s), policy, kubernetes);
}

NodeSnapshot CleanNode() {
  NodeSnapshot s = TimeSlicedNode();
  AddPod(s, Pod("a"), kGpu0.value + "::0", 10, 10 * kGiB, kGpu0.value);
  AddPod(s, Pod("b"), kGpu0.value + "::1", 11, 12 * kGiB, kGpu0.value);
  AddPod(s, Pod("c"), kGpu1.value + "::0", 12, 20 * kGiB, kGpu1.value);
  Signal(s, kGpu0, 22 * kGiB);
  Signal(s, kGpu1, 20 * kGiB);
  return s;
}

TEST(Observe, ACleanNodeHasNoFindings) { EXPECT_TRUE(ObserveOn(CleanNode()).empty()); }

TEST(Observe, APodWithoutARequestSeeingEveryGpu) {
  NodeSnapshot s = CleanNode();
  ProcessObservation p;
  p.pid = 4242;
  p.device = kGpu0;
  p.consumer = Pod("debug");
  p.used_memory_bytes = 2 * kGiB;
  p.visible_devices = "all";
  p.comm = "python3";
  s.processes.push_back(p);
  auto obs = ObserveOn(s);
  ASSERT_EQ(obs.size(), 2u);
  EXPECT_EQ(obs[0].kind, FindingKind::kUnallocatedAccess);
  EXPECT_EQ(obs[0].subject, Pod("debug"));
  EXPECT_EQ(obs[0].gpu_uuid, kGpu0.value);
  EXPECT_EQ(obs[0].evidence,
            "pids=4242 granted=none memory_bytes=2147483648 NVIDIA_VISIBLE_DEVICES=all");
  EXPECT_EQ(obs[1].kind, FindingKind::kVisibleDevicesOverride);
  EXPECT_EQ(obs[1].evidence, "pids=4242 granted=none NVIDIA_VISIBLE_DEVICES=all ungranted=all");
}

TEST(Observe, VisibleDevicesNamingAnotherGpuByIndexOrUuid) {
  NodeSnapshot s = CleanNode();
  s.processes[0].visible_devices = "0,1";             // pod a holds a replica of GPU 0 only
  s.processes[1].cuda_visible_devices = kGpu1.value;  // pod b names GPU 1 by UUID
  s.processes[2].visible_devices = "void";            // says nothing (CDI)
  auto obs = ObserveOn(s);
  ASSERT_EQ(obs.size(), 2u);
  EXPECT_EQ(obs[0].kind, FindingKind::kVisibleDevicesOverride);
  EXPECT_EQ(obs[0].subject, Pod("a"));
  EXPECT_EQ(obs[0].evidence, "pids=10 granted=" + kGpu0.value +
                                 " NVIDIA_VISIBLE_DEVICES=0,1 ungranted=" + kGpu1.value);
  EXPECT_EQ(obs[1].subject, Pod("b"));
  EXPECT_EQ(obs[1].evidence, "pids=11 granted=" + kGpu0.value + " CUDA_VISIBLE_DEVICES=" +
                                 kGpu1.value + " ungranted=" + kGpu1.value);
}

TEST(Observe, HostProcessesAreUnmanagedOnlyOnKubernetesNodes) {
  NodeSnapshot s = CleanNode();
  ProcessObservation p;
  p.pid = 77;
  p.device = kGpu1;
  p.host_name = "user:alice";
  p.used_memory_bytes = 3 * kGiB;
  p.comm = "python3";
  s.processes.push_back(p);
  ProcessObservation mps = p;  // the sharing layer's own daemon
  mps.pid = 78;
  mps.host_name = "unit:mps";
  mps.comm = std::string(kMpsServerComm);
  s.processes.push_back(mps);
  ProcessObservation gone = p;  // exited before /proc was read
  gone.pid = 79;
  gone.host_name = "pid:79";
  gone.comm.clear();
  s.processes.push_back(gone);
  auto obs = ObserveOn(s);
  ASSERT_EQ(obs.size(), 1u);
  EXPECT_EQ(obs[0].kind, FindingKind::kUnmanagedProcess);
  EXPECT_EQ(obs[0].subject, (ConsumerRef{"__host__", "user:alice", PodUid{}, ""}));
  EXPECT_EQ(obs[0].evidence, "pids=77 comm=python3 memory_bytes=3221225472");
  EXPECT_TRUE(ObserveOn(s, DefaultPolicy(), /*kubernetes=*/false).empty());
}

TEST(Observe, MemoryTogetherNearTheCardAndOnePodOverItsFairShare) {
  NodeSnapshot s = TimeSlicedNode();
  // A quarter of 80 GiB is fair (20 GiB); 5% of the card (4 GiB) is the margin.
  AddPod(s, Pod("a"), kGpu0.value + "::0", 10, 25 * kGiB, kGpu0.value);  // 25 > 24: over
  AddPod(s, Pod("b"), kGpu0.value + "::1", 11, 24 * kGiB, kGpu0.value);  // 24: not over
  AddPod(s, Pod("c"), kGpu0.value + "::2", 12, 28 * kGiB, kGpu0.value);  // over
  Signal(s, kGpu0, 77 * kGiB);  // >= 95% of 80 GiB (76 GiB)
  auto obs = ObserveOn(s);
  ASSERT_EQ(obs.size(), 3u);
  EXPECT_EQ(obs[0].subject, ConsumerRef{});
  EXPECT_EQ(obs[0].evidence,
            "memory_used_bytes=82678120448 memory_total_bytes=85899345920 "
            "threshold=0.950 sharers=ml/a/main,ml/b/main,ml/c/main");
  EXPECT_EQ(obs[1].subject, Pod("a"));
  EXPECT_EQ(obs[1].evidence,
            "memory_bytes=26843545600 fair_share=0.250 memory_total_bytes=85899345920");
  EXPECT_EQ(obs[2].subject, Pod("c"));
  for (const auto& o : obs) EXPECT_EQ(o.kind, FindingKind::kMemoryOversubscribed);
}

TEST(Observe, IsolationBreachesOfADeclaredMemoryCapAndComputeShare) {
  NodeSnapshot s = TimeSlicedNode();
  s.gpus[0].sharing = SharingMode::kFractional;
  AddPod(s, Pod("capped"), kGpu0.value + "-0", 10, 6 * kGiB, kGpu0.value);
  s.grants.back().declared_memory_bytes = 5 * kGiB;
  s.grants.back().declared_ppd = kWholeGpu / 4;
  s.grants.back().share_source = "env:CUDA_DEVICE_SM_LIMIT";
  AddPod(s, Pod("greedy"), kGpu0.value + "-1", 11, 1 * kGiB, kGpu0.value);
  s.grants.back().declared_ppd = kWholeGpu / 10;  // 10% declared
  s.grants.back().share_source = "env:CUDA_DEVICE_SM_LIMIT";
  s.processes[0].sm_busy_us = kCycle / 10;  // 10%: within its 25%
  s.processes[1].sm_busy_us = kCycle / 5;   // 20%: over 10% + 5%
  Signal(s, kGpu0, 7 * kGiB);
  s.signals[0].busy_us = kCycle * 3 / 10;
  auto obs = ObserveOn(s);
  // Two pods split by per-process samples: an estimate, which accuses nobody of compute.
  ASSERT_EQ(obs.size(), 1u);
  EXPECT_EQ(obs[0].kind, FindingKind::kIsolationBreach);
  EXPECT_EQ(obs[0].subject, Pod("capped"));
  EXPECT_EQ(obs[0].evidence, "memory_bytes=6442450944 declared_memory_bytes=5368709120 device_id=" +
                                 kGpu0.value + "-0");

  // Alone on the GPU its compute is measured: 20% against 10% declared + 5%.
  s.processes.erase(s.processes.begin());
  s.grants.erase(s.grants.begin());
  s.signals[0].busy_us = kCycle / 5;
  obs = ObserveOn(s);
  ASSERT_EQ(obs.size(), 1u);
  EXPECT_EQ(obs[0].kind, FindingKind::kIsolationBreach);
  EXPECT_EQ(obs[0].subject, Pod("greedy"));
  EXPECT_EQ(obs[0].evidence,
            "compute_share=0.200 declared_share=0.100 source=env:CUDA_DEVICE_SM_LIMIT");
}

// Issue 31: published kernel time is a claim. Within NVML's measured band (2.11x at worst per
// run on an H200) nobody is accused; a pod that publishes far less than NVML saw it run is.
TEST(Observe, KernelTimeFarBelowWhatNvmlSawIsAMismatch) {
  NodeSnapshot s = TimeSlicedNode();
  AddPod(s, Pod("honest"), kGpu0.value + "::0", 10, kGiB, kGpu0.value);
  AddPod(s, Pod("liar"), kGpu0.value + "::1", 11, kGiB, kGpu0.value);
  AddPod(s, Pod("quiet"), kGpu0.value + "::2", 12, kGiB, kGpu0.value);
  s.processes[0].sm_busy_us = kCycle * 4 / 10;  // NVML's windows: 2x its true 20%
  s.processes[0].kernel_busy_us = kCycle * 2 / 10;
  s.processes[1].sm_busy_us = kCycle * 4 / 10;  // busy 40% by NVML, claims 1%
  s.processes[1].kernel_busy_us = kCycle / 100;
  s.processes[2].sm_busy_us = kCycle / 10;  // publishes nothing: nothing to check
  Signal(s, kGpu0, 3 * kGiB);
  s.signals[0].busy_us = kCycle * 7 / 10;
  auto obs = ObserveOn(s);
  ASSERT_EQ(obs.size(), 1u);
  EXPECT_EQ(obs[0].kind, FindingKind::kKernelTimeMismatch);
  EXPECT_EQ(obs[0].subject, Pod("liar"));
  EXPECT_EQ(obs[0].evidence, "nvml_busy_us=400000 kernel_busy_us=10000 band=1.11");
  EXPECT_EQ(ToString(FindingKind::kKernelTimeMismatch), "kernel-time-mismatch");
}

TEST(Observe, AGrantOfATerminatedPod) {
  NodeSnapshot s = CleanNode();
  s.terminal_grants.push_back(Grant{Pod("done"), kGpu1.value + "::3", "nvidia.com/gpu"});
  auto obs = ObserveOn(s);
  ASSERT_EQ(obs.size(), 1u);
  EXPECT_EQ(obs[0].kind, FindingKind::kStaleGrant);
  EXPECT_EQ(obs[0].gpu_uuid, kGpu1.value);
  EXPECT_EQ(obs[0].evidence, fmt::format("device_id={}::3 resource=nvidia.com/gpu share_ppd={}",
                                         kGpu1.value, kWholeGpu / 4));
}

TEST(Observe, ExemptNamespacesAndKindsTurnedOffAreNotObserved) {
  NodeSnapshot s = CleanNode();
  ProcessObservation p;
  p.pid = 4242;
  p.device = kGpu0;
  p.consumer = Pod("debug");
  p.visible_devices = "all";
  p.comm = "python3";
  s.processes.push_back(p);
  Policy off = DefaultPolicy();
  off.For(FindingKind::kUnallocatedAccess).action = Action::kOff;
  auto obs = ObserveOn(s, off);
  ASSERT_EQ(obs.size(), 1u);
  EXPECT_EQ(obs[0].kind, FindingKind::kVisibleDevicesOverride);
  Policy exempt = DefaultPolicy();
  exempt.exemptions.push_back(Exemption{"ml", {}, {}, 1});
  EXPECT_TRUE(ObserveOn(s, exempt).empty());
}

Observation Breach() {
  return Observation{FindingKind::kIsolationBreach, Pod("a"), kGpu0.value, "memory_bytes=1", 1};
}

TEST(FindingTracker, OpensAfterItsToleranceAndResolvesAfterAbsence) {
  Policy p = DefaultPolicy();  // 5 min tolerance, resolve after 60 s
  FindingTracker t(p, "n1", kMicrosPerHour);
  const Micros t0 = 1000 * kCycle;
  for (int i = 0; i < 299; ++i) t.Update({Breach()}, t0 + i * kCycle, t0 + (i + 1) * kCycle);
  EXPECT_TRUE(t.Current().empty()) << "299 s < 5 min";
  t.Update({Breach()}, t0 + 299 * kCycle, t0 + 300 * kCycle);
  auto open = t.Current();
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].first_seen_us, t0);
  EXPECT_EQ(open[0].last_seen_us, t0 + 300 * kCycle);
  EXPECT_FALSE(open[0].resolved_us);
  EXPECT_EQ(t.opened_total().at(FindingKind::kIsolationBreach), 1);
  // Absent for 59 s: still open; at 60 s: resolved at its last sight.
  Micros at = t0 + 300 * kCycle;
  for (int i = 0; i < 59; ++i, at += kCycle) t.Update({}, at, at + kCycle);
  EXPECT_FALSE(t.Current()[0].resolved_us);
  t.Update({}, at, at + kCycle);
  at += kCycle;
  ASSERT_EQ(t.Current().size(), 1u);
  EXPECT_EQ(t.Current()[0].resolved_us, t0 + 300 * kCycle);
  // Listed as resolved for an hour, then forgotten.
  t.Update({}, at, t0 + 300 * kCycle + kMicrosPerHour + 2 * kCycle);
  EXPECT_TRUE(t.Current().empty());
}

TEST(FindingTracker, AConditionThatBreaksBeforeItsToleranceStartsOver) {
  FindingTracker t(DefaultPolicy(), "n1", kMicrosPerHour);
  t.Update({Breach()}, 0, 200 * kCycle);
  t.Update({}, 200 * kCycle, 201 * kCycle);
  t.Update({Breach()}, 201 * kCycle, 400 * kCycle);
  EXPECT_TRUE(t.Current().empty()) << "199 s continuous, not 400";
  t.Update({Breach()}, 400 * kCycle, 501 * kCycle);
  ASSERT_EQ(t.Current().size(), 1u);
  EXPECT_EQ(t.Current()[0].first_seen_us, 201 * kCycle);
}

TEST(FindingTracker, KeepsTheEvidenceOfTheWorstCycle) {
  FindingTracker t(DefaultPolicy(), "n1", kMicrosPerHour);
  Observation o{FindingKind::kUnallocatedAccess, Pod("x"), kGpu0.value, "memory_bytes=5", 5};
  t.Update({o}, 0, kCycle);
  o.evidence = "memory_bytes=3";
  o.magnitude = 3;
  t.Update({o}, kCycle, 2 * kCycle);
  EXPECT_EQ(t.Current()[0].evidence, "memory_bytes=5");
  EXPECT_EQ(t.Current()[0].severity, Severity::kCritical);
  EXPECT_EQ(t.Current()[0].node, "n1");
}

}  // namespace
}  // namespace gpuledger::guardrails
