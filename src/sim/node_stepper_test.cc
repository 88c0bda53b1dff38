// NodeStepper, StateAt and ContainerIdFor against Simulator::Run.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/scenario.h"
#include "sim/simulator.h"

namespace gpuledger::sim {
namespace {

// Every mode, pods starting and ending off the step grid, sawtooth memory, a host process and
// a pod with no grant.
constexpr std::string_view kScenario = R"(name: stepper
start: "2026-11-23T00:50:00Z"
duration: 25m
seed: 11
nodes:
  - {name: ts, gpu_model: A100-80GB, gpus: 2, sharing: time-slicing, replicas: 4}
  - {name: mig, gpu_model: H100-80GB, sharing: mig, mig_layout: [3g.40gb, 2g.20gb, 1g.10gb]}
  - {name: mps, gpu_model: L4, sharing: mps, replicas: 4}
  - name: ex
    gpu_model: T4
    gpus: 2
    host_processes:
      - {name: "user:bob", gpu: 1, compute: {profile: constant, duty: 0.3}, start: 3m, end: 9m}
workloads:
  - {namespace: a, name: t1, node: ts, compute: {profile: constant, duty: 0.2},
     memory: {bytes: 1GiB, peak: 3GiB, period: 7m}, processes: 2}
  - {namespace: a, name: t2, node: ts, gpus: 2, start: 2m13s, end: 17m5s,
     compute: {profile: periodic, period: 3m, on: 1m, duty: 0.9}}
  - {namespace: a, name: t3, node: ts, compute: {profile: bursty, mean_duty: 0.4, burst: 10s}}
  - {namespace: b, name: m1, mig_profile: 3g.40gb, compute: {profile: constant, duty: 0.5}}
  - {namespace: b, name: m2, mig_profile: 1g.10gb, start: 4m, compute: {profile: constant, duty: 1}}
  - {namespace: c, name: p1, node: mps, mps_active_thread_percentage: 25,
     compute: {profile: constant, duty: 0.6}, memory: {bytes: 2GiB}}
  - {namespace: d, name: x1, node: ex, compute: {profile: constant, duty: 0.7}, end: 20m}
  - {namespace: d, name: rogue, owner_kind: Pod, request: none, uses_gpu: {node: ex, index: 1},
     visible_devices: all, compute: {profile: constant, duty: 0.1}}
)";

Scenario Parse() {
  auto sc = ParseScenario(kScenario, "stepper.yaml");
  EXPECT_TRUE(sc.ok()) << sc.error().message;
  return sc.ok() ? *sc : Scenario{};
}

std::string Describe(const std::optional<ConsumerRef>& c) {
  return c ? c->Key() + "@" + c->pod_uid.str() : "-";
}

// Every field of a snapshot, so two can be compared exactly.
std::string Describe(const NodeSnapshot& s) {
  std::string out = fmt::format("{} [{}, {})\n", s.node, s.start_us, s.end_us);
  for (auto& g : s.gpus)
    out += fmt::format(" gpu {} {} {} {} {}\n", g.uuid.str(), g.model, g.memory_total_bytes,
                       g.replicas, g.total_slices);
  for (auto& m : s.mig_instances)
    out += fmt::format(" mig {} {} {} {}\n", m.uuid.str(), m.parent.str(), m.profile,
                       m.memory_total_bytes);
  for (auto& g : s.signals) {
    out += fmt::format(" sig {} {} {} {} {} {}", g.device.str(), g.busy_us.value_or(-1),
                       ToString(g.busy_source), g.memory_used_bytes, g.energy_mj.value_or(-1),
                       ToString(g.activity_source));
    if (g.activity)
      out += fmt::format(" {} {} {} {}", g.activity->sm_active_us, g.activity->sm_occupancy_us,
                         g.activity->tensor_active_us, g.activity->dram_active_us);
    out += "\n";
  }
  for (auto& g : s.grants)
    out += fmt::format(" grant {} {} {} {} {}\n", Describe(g.consumer), g.device_id,
                       g.resource_name, g.declared_ppd.value_or(-1), g.dra_claim);
  for (auto& p : s.processes)
    out +=
        fmt::format(" proc {} {} {} {} {} {} {}\n", p.pid, p.device.str(), Describe(p.consumer),
                    p.host_name, p.used_memory_bytes, p.sm_busy_us.value_or(-1), p.visible_devices);
  return out;
}

std::map<std::string, std::vector<NodeSnapshot>> RunByNode(Micros step) {
  Simulator sim(Parse(), step);
  std::map<std::string, std::vector<NodeSnapshot>> out;
  sim.Run([&](const NodeSnapshot& s) { out[s.node].push_back(s); });
  return out;
}

TEST(NodeStepper, EqualsRunForEachNode) {
  for (Micros step : {Micros{1'000'000}, Micros{7'000'000}, Micros{60'000'000}}) {
    auto by_node = RunByNode(step);
    ASSERT_EQ(by_node.size(), 4u);
    for (auto& [node, want] : by_node) {
      auto stepper = NodeStepper::Create(Parse(), node, step);
      ASSERT_TRUE(stepper.ok()) << stepper.error().message;
      EXPECT_EQ(stepper->gpus().size(), want.front().gpus.size());
      std::vector<NodeSnapshot> got;
      // Irregular advances, including ones that deliver nothing and one far past the end.
      Micros t = stepper->scenario().start_us;
      for (Micros d :
           {Micros{0}, Micros{500'000}, Micros{13'300'000}, Micros{1}, Micros{133'000'000}}) {
        t += d;
        for (auto& s : stepper->AdvanceTo(t)) {
          EXPECT_LE(s.end_us, t);
          got.push_back(std::move(s));
        }
        EXPECT_LE(stepper->position_us(), t);
      }
      while (!stepper->done()) {
        t += 61'000'000;
        for (auto& s : stepper->AdvanceTo(t)) got.push_back(std::move(s));
      }
      EXPECT_TRUE(stepper->AdvanceTo(t + kMicrosPerHour).empty());
      ASSERT_EQ(got.size(), want.size()) << node << " step " << step;
      for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(Describe(got[i]), Describe(want[i])) << node << " #" << i << " step " << step;
    }
  }
}

// Stepped one interval at a time (next_end_us), each node's truth sums to the Simulator's.
TEST(NodeStepper, TruthSoFarAddsUpToTheSimulators) {
  Simulator sim(Parse(), 7'000'000);
  sim.Run([](const NodeSnapshot&) {});
  std::map<ConsumerRef, Truth> sum;
  for (const auto& node : sim.scenario().nodes) {
    auto stepper = NodeStepper::Create(Parse(), node.name, 7'000'000);
    ASSERT_TRUE(stepper.ok());
    double compute_before = -1;
    while (!stepper->done()) {
      const Micros end = stepper->next_end_us();
      ASSERT_EQ(stepper->AdvanceTo(end).size(), 1u);
      EXPECT_EQ(stepper->position_us(), end);
      double compute = 0;
      for (const auto& [ref, t] : stepper->truth()) compute += t.compute_gpu_us;
      EXPECT_GE(compute, compute_before);  // what ran so far only grows
      compute_before = compute;
    }
    for (const auto& [ref, t] : stepper->truth()) sum[ref] += t;
  }
  ASSERT_EQ(sum.size(), sim.truth().size());
  for (const auto& [ref, want] : sim.truth()) {
    ASSERT_TRUE(sum.count(ref)) << ref.Key();
    EXPECT_TRUE(sum[ref].allocated_ppd_us == want.allocated_ppd_us) << ref.Key();
    EXPECT_NEAR(sum[ref].compute_gpu_us, want.compute_gpu_us, 1e-6 * want.compute_gpu_us + 1e-3)
        << ref.Key();
    EXPECT_NEAR(sum[ref].memory_byte_us, want.memory_byte_us, 1e-9 * want.memory_byte_us + 1)
        << ref.Key();
    EXPECT_NEAR(sum[ref].sm_active_gpu_us, want.sm_active_gpu_us,
                1e-6 * want.sm_active_gpu_us + 1e-3)
        << ref.Key();
    EXPECT_NEAR(sum[ref].dram_active_gpu_us, want.dram_active_gpu_us,
                1e-6 * want.dram_active_gpu_us + 1e-3)
        << ref.Key();
  }
  EXPECT_EQ(TruthCsv(sum).substr(0, 51), "key,allocated_gpu_us,compute_gpu_us,memory_byte_us\n");
  // The activity columns come after the old ones, in the order of model/activity.h.
  EXPECT_TRUE(TruthCsv(sum, /*with_activity=*/true)
                  .starts_with("key,allocated_gpu_us,compute_gpu_us,memory_byte_us,"
                               "sm_active_gpu_us,sm_occupancy_gpu_us,tensor_active_gpu_us,"
                               "dram_active_gpu_us\n"));
}

TEST(NodeStepper, UnknownNode) {
  auto stepper = NodeStepper::Create(Parse(), "nope", kMicrosPerSecond);
  ASSERT_FALSE(stepper.ok());
  EXPECT_EQ(stepper.error().code, ErrorCode::kNotFound);
  EXPECT_FALSE(StateAt(Parse(), "nope", 0).ok());
}

TEST(StateAt, AgreesWithSnapshots) {
  Scenario sc = Parse();
  auto by_node = RunByNode(7'000'000);
  int compared = 0;
  for (auto& [node, snaps] : by_node) {
    for (std::size_t i = 0; i < snaps.size(); i += 5) {
      const NodeSnapshot& s = snaps[i];
      for (Micros t : {s.start_us, (s.start_us + s.end_us) / 2, s.end_us - 1}) {
        auto st = StateAt(sc, node, t);
        ASSERT_TRUE(st.ok()) << st.error().message;
        ASSERT_EQ(st->gpus.size(), s.gpus.size());
        for (std::size_t g = 0; g < s.gpus.size(); ++g) EXPECT_EQ(st->gpus[g].uuid, s.gpus[g].uuid);
        ASSERT_EQ(st->mig_instances.size(), s.mig_instances.size());
        ASSERT_EQ(st->grants.size(), s.grants.size()) << node << " at " << t;
        for (std::size_t g = 0; g < s.grants.size(); ++g) {
          EXPECT_EQ(st->grants[g].consumer, s.grants[g].consumer);
          EXPECT_EQ(st->grants[g].device_id, s.grants[g].device_id);
        }
        ASSERT_EQ(st->processes.size(), s.processes.size()) << node << " at " << t;
        for (std::size_t p = 0; p < s.processes.size(); ++p) {
          const auto& a = st->processes[p];
          const auto& b = s.processes[p];
          EXPECT_EQ(a.pid, b.pid);
          EXPECT_EQ(a.device, b.device);
          EXPECT_EQ(a.consumer, b.consumer);
          EXPECT_EQ(a.host_name, b.host_name);
          EXPECT_EQ(a.visible_devices, b.visible_devices);
          EXPECT_FALSE(a.sm_busy_us.has_value());
          // Constant memory equals the interval's average; t1's sawtooth rises 2 GiB / 7 min
          // (4 processes' worth split by 2): within one interval's rise.
          EXPECT_NEAR(static_cast<double>(a.used_memory_bytes),
                      static_cast<double>(b.used_memory_bytes), 40.0 * kMiB);
          if (a.consumer && a.consumer->pod != "t1-0") {
            EXPECT_EQ(a.used_memory_bytes, b.used_memory_bytes);
          }
        }
        for (const auto& pod : st->pods) EXPECT_FALSE(pod.ref.IsHost());
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 100);
  // Outside the scenario nothing runs; the devices are still there.
  auto before = StateAt(sc, "ts", sc.start_us - 1);
  ASSERT_TRUE(before.ok());
  EXPECT_TRUE(before->processes.empty());
  EXPECT_TRUE(before->grants.empty());
  EXPECT_EQ(before->gpus.size(), 2u);
  // request: none: a pod with a process and no grant.
  auto mid = StateAt(sc, "ex", sc.start_us + 5 * 60 * kMicrosPerSecond);
  ASSERT_TRUE(mid.ok());
  bool rogue = false, bob = false;
  for (auto& pod : mid->pods) rogue |= pod.ref.pod == "rogue";
  for (auto& p : mid->processes) bob |= p.host_name == "user:bob";
  EXPECT_TRUE(rogue);
  EXPECT_TRUE(bob);
}

TEST(ContainerIdFor, DeterministicHex) {
  ConsumerRef a{"ns", "pod-0", PodUid("1b2c3d4e-0000-4a4a-8b8b-123456789abc"), "main"};
  ConsumerRef b = a;
  b.container = "sidecar";
  std::string id = ContainerIdFor(a);
  ASSERT_EQ(id.size(), 64u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(id, ContainerIdFor(a));
  EXPECT_NE(id, ContainerIdFor(b));
}

}  // namespace
}  // namespace gpuledger::sim
