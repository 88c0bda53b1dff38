#include "sources/sim/simulator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <map>
#include <set>

#include "sources/sim/scenario.h"

namespace gpuledger::sim {
namespace {

Scenario Parse(std::string_view yaml) {
  auto sc = ParseScenario(yaml, "test.yaml");
  EXPECT_TRUE(sc.ok()) << sc.error().message;
  return sc.ok() ? *sc : Scenario{};
}

const Truth* TruthFor(const Simulator& sim, std::string_view pod) {
  for (auto& [ref, t] : sim.truth())
    if (ref.pod == pod) return &t;
  return nullptr;
}

constexpr std::string_view kTimeSliced = R"(name: ts
start: "2026-11-23T00:10:00Z"
duration: 3h
nodes:
  - {name: n0, gpu_model: A100-80GB, gpus: 1, sharing: time-slicing, replicas: 4}
workloads:
  - {namespace: a, name: p20, compute: {profile: constant, duty: 0.2}, memory: {bytes: 1GiB}}
  - {namespace: a, name: p30, compute: {profile: constant, duty: 0.3}, processes: 2}
  - {namespace: a, name: p10, compute: {profile: constant, duty: 0.1}}
)";

TEST(Simulator, TimeSlicedConstantDuties) {
  Simulator sim(Parse(kTimeSliced), 60 * kMicrosPerSecond);
  std::map<std::string, double> observed;  // pod -> Σ sm_busy_us
  double busy = 0, total = 0;
  sim.Run([&](const NodeSnapshot& s) {
    ASSERT_EQ(s.signals.size(), 1u);
    busy += static_cast<double>(*s.signals[0].busy_us);
    total += static_cast<double>(s.duration_us());
    EXPECT_EQ(s.grants.size(), 3u);
    for (auto& p : s.processes) {
      ASSERT_TRUE(p.sm_busy_us.has_value());
      observed[p.consumer->pod] += static_cast<double>(*p.sm_busy_us);
    }
    // Memory: Σ processes + 0.4% driver reservation.
    EXPECT_EQ(s.signals[0].memory_used_bytes,
              kGiB + static_cast<Bytes>(0.004 * static_cast<double>(80 * kGiB)));
  });
  double dt = 3.0 * kMicrosPerHour;
  EXPECT_EQ(total, dt);
  for (auto [pod, duty] : {std::pair{"p20-0", 0.2}, {"p30-0", 0.3}, {"p10-0", 0.1}}) {
    const Truth* t = TruthFor(sim, pod);
    ASSERT_NE(t, nullptr) << pod;
    EXPECT_NEAR(t->compute_gpu_us, duty * dt, 1e-6 * dt) << pod;
    EXPECT_NEAR(observed[pod], duty * dt, 0.10 * duty * dt) << pod;  // inflation up to 10%
    EXPECT_EQ(t->AllocatedUs(), static_cast<GpuMicros>(dt / 4)) << pod;
  }
  EXPECT_NEAR(busy, 0.6 * dt, 0.01 * 0.6 * dt);
  EXPECT_NEAR(TruthFor(sim, "p20-0")->memory_byte_us, static_cast<double>(kGiB) * dt, 1);
}

TEST(Simulator, ContentionScalesDemand) {
  Simulator sim(Parse(R"(name: c
start: "2026-11-23T00:00:00Z"
duration: 1h
nodes:
  - {name: n0, gpu_model: T4, gpus: 1, sharing: time-slicing, replicas: 2}
workloads:
  - {namespace: a, name: x, compute: {profile: constant, duty: 0.9}}
  - {namespace: a, name: y, compute: {profile: constant, duty: 0.6}}
)"),
                60 * kMicrosPerSecond);
  sim.Run([](const NodeSnapshot&) {});
  double dt = kMicrosPerHour;
  EXPECT_NEAR(TruthFor(sim, "x-0")->compute_gpu_us, 0.6 * dt, 1e-6 * dt);
  EXPECT_NEAR(TruthFor(sim, "y-0")->compute_gpu_us, 0.4 * dt, 1e-6 * dt);
}

constexpr std::string_view kMixed = R"(name: m
start: "2026-11-23T00:00:00Z"
duration: 5h
nodes:
  - {name: mig, gpu_model: H200-141GB, sharing: mig, mig_layout: [3g.71gb, 2g.35gb, 1g.18gb],
     dcgm: true}
  - {name: dra, gpu_model: A100-40GB, sharing: dra}
  - {name: mps, gpu_model: L4, sharing: mps, replicas: 4}
  - name: frac
    gpu_model: T4
    sharing: fractional
    host_processes:
      - {name: "user:alice", gpu: 0, compute: {profile: constant, duty: 0.5},
         memory: {bytes: 1GiB}, start: 1h, end: 2h}
workloads:
  - {namespace: a, name: big, mig_profile: 3g.71gb, start: 17m, end: 4h13m,
     compute: {profile: constant, duty: 0.5}}
  - {namespace: a, name: small, mig_profile: 1g.18gb, compute: {profile: periodic, period: 10m,
     on: 5m, duty: 1}}
  - {namespace: a, name: d1, dra_claim: {name: c, shared: true}, start: 7m, end: 3h}
  - {namespace: a, name: d2, dra_claim: {name: c, shared: true}, start: 1h33m}
  - {namespace: a, name: m1, node: mps, mps_active_thread_percentage: 25,
     compute: {profile: bursty, mean_duty: 0.3, burst: 1m}}
  - {namespace: a, name: f1, gpu_milli: 300, start: 29m, end: 2h2m}
  - {namespace: a, name: f2, fraction: 0.5}
  - {namespace: b, name: rogue, owner_kind: Pod, request: none, uses_gpu: {node: frac, index: 0},
     visible_devices: all, compute: {profile: constant, duty: 0.1}}
)";

std::map<std::string, __int128> AllocatedByPod(Micros step) {
  Simulator sim(Parse(kMixed), step);
  sim.Run([](const NodeSnapshot&) {});
  std::map<std::string, __int128> out;
  for (auto& [ref, t] : sim.truth()) out[ref.Key()] = t.allocated_ppd_us;
  return out;
}

TEST(Simulator, AllocationTruthIndependentOfStep) {
  auto a = AllocatedByPod(60 * kMicrosPerSecond);
  auto b = AllocatedByPod(7 * kMicrosPerSecond);
  ASSERT_EQ(a.size(), b.size());
  for (auto& [k, v] : a) EXPECT_TRUE(v == b[k]) << k;
  // Independent numbers: MIG 3g of 7 for 3h56m; fractional 300 milli for 1h33m.
  EXPECT_TRUE(a["a/big-0/main"] ==
              static_cast<__int128>(kWholeGpu / 7 * 3) * (236 * 60 * kMicrosPerSecond));
  EXPECT_TRUE(a["a/f1-0/main"] ==
              static_cast<__int128>(300 * 720720) * (93 * 60 * kMicrosPerSecond));
  // DRA: d1 alone 7m..1h33m (86 min), shared with d2 1h33m..3h (87 min).
  EXPECT_TRUE(a["a/d1-0/main"] == static_cast<__int128>(kWholeGpu) * 86 * 60 * kMicrosPerSecond +
                                      static_cast<__int128>(kWholeGpu / 2) * 87 * 60 *
                                          kMicrosPerSecond);
  EXPECT_TRUE(a["a/m1-0/main"] == static_cast<__int128>(kWholeGpu / 4) * 5 * kMicrosPerHour);
  EXPECT_TRUE(a["b/rogue/main"] == 0);
}

TEST(Simulator, SnapshotsPerModeAndHours) {
  Simulator sim(Parse(kMixed), 60 * kMicrosPerSecond);
  Micros last_end = 0;
  int host_seen = 0, rogue_seen = 0;
  sim.Run([&](const NodeSnapshot& s) {
    EXPECT_EQ(HourStart(s.start_us), HourStart(s.end_us - 1)) << "interval crosses an hour";
    EXPECT_GE(s.end_us, last_end);
    last_end = s.end_us;
    if (s.node == "mig") {
      EXPECT_EQ(s.mig_instances.size(), 3u);
      for (auto& p : s.processes) EXPECT_FALSE(p.sm_busy_us.has_value());
      EXPECT_FALSE(s.signals[0].busy_us.has_value());   // physical GPU
      EXPECT_TRUE(s.signals[1].busy_us.has_value());    // instance, DCGM
      for (auto& g : s.grants) EXPECT_EQ(g.device_id.rfind("MIG-", 0), 0u);
    }
    if (s.node == "mps") {
      for (auto& p : s.processes) EXPECT_FALSE(p.sm_busy_us.has_value());
      for (auto& g : s.grants) {
        EXPECT_NE(g.device_id.find("::"), std::string::npos);
        EXPECT_EQ(*g.declared_ppd, kWholeGpu / 4);
      }
    }
    if (s.node == "dra")
      for (auto& g : s.grants) {
        EXPECT_EQ(g.dra_claim, "a/c");
        EXPECT_EQ(g.resource_name, "gpu.nvidia.com");
      }
    for (auto& p : s.processes) {
      if (!p.consumer) {
        EXPECT_EQ(p.host_name, "user:alice");
        ++host_seen;
      } else if (p.consumer->pod == "rogue") {
        EXPECT_EQ(p.visible_devices, "all");
        ++rogue_seen;
      }
    }
  });
  EXPECT_EQ(last_end, sim.scenario().start_us + 5 * kMicrosPerHour);
  EXPECT_GT(host_seen, 0);
  EXPECT_GT(rogue_seen, 0);
  ConsumerRef host{std::string(kHostNamespace), "user:alice", PodUid(), ""};
  ASSERT_TRUE(sim.truth().contains(host));
  EXPECT_EQ(sim.consumers().at(host).owner_kind, "Host");
  EXPECT_NEAR(sim.truth().at(host).compute_gpu_us, 0.5 * kMicrosPerHour, 1);
  EXPECT_NEAR(sim.truth().at(host).memory_byte_us, static_cast<double>(kGiB) * kMicrosPerHour, 1);
  // MIG truth: 3/7 of the GPU at duty 0.5 for 3h56m.
  for (auto& [ref, t] : sim.truth()) {
    if (ref.pod == "big-0") {
      EXPECT_NEAR(t.compute_gpu_us, 0.5 * 3 / 7 * 236 * 60 * kMicrosPerSecond, 1);
    }
  }
}

TEST(Simulator, DeterministicForSeed) {
  auto run = [] {
    Simulator sim(Parse(kMixed), 60 * kMicrosPerSecond);
    std::vector<std::int64_t> out;
    sim.Run([&](const NodeSnapshot& s) {
      for (auto& g : s.signals) out.push_back(g.busy_us.value_or(-1));
      for (auto& p : s.processes) out.push_back(p.sm_busy_us.value_or(-1) + p.pid);
    });
    return out;
  };
  EXPECT_EQ(run(), run());
}

TEST(Simulator, ExampleRunsAWeek) {
  auto sc = ParseScenario(ExampleScenarioYaml(), "example.yaml");
  ASSERT_TRUE(sc.ok()) << sc.error().message;
  Simulator sim(*sc, 60 * kMicrosPerSecond);
  auto t0 = std::chrono::steady_clock::now();
  long long snaps = 0;
  std::set<std::string> nodes;
  sim.Run([&](const NodeSnapshot& s) {
    ++snaps;
    nodes.insert(s.node);
  });
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "example: 168h at step 60s: " << snaps << " snapshots in " << secs << " s\n";
  EXPECT_EQ(nodes.size(), 6u);
  EXPECT_GE(snaps, 6 * 10080);
  // The exclusive training job holds 2 whole GPUs from 2h30m to 140h15m.
  for (auto& [ref, t] : sim.truth()) {
    if (ref.pod == "llm-pretrain-0") {
      EXPECT_EQ(t.AllocatedUs(), 2 * (140 * kMicrosPerHour + 15 * 60 * kMicrosPerSecond -
                                      150 * 60 * kMicrosPerSecond));
    }
  }
  EXPECT_EQ(sim.consumers().size(), sim.truth().size());
}

}  // namespace
}  // namespace gpuledger::sim
