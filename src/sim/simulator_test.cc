#include "sim/simulator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "sim/scenario.h"

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
  EXPECT_TRUE(a["a/d1-0/main"] ==
              static_cast<__int128>(kWholeGpu) * 86 * 60 * kMicrosPerSecond +
                  static_cast<__int128>(kWholeGpu / 2) * 87 * 60 * kMicrosPerSecond);
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
      EXPECT_FALSE(s.signals[0].busy_us.has_value());  // physical GPU
      EXPECT_TRUE(s.signals[1].busy_us.has_value());   // instance, DCGM
      for (auto& g : s.grants) EXPECT_EQ(g.device_id.rfind("MIG-", 0), 0u);
    }
    if (s.node == "mps") {
      // NVML samples only the MPS server (the control daemon pod's process), never a client.
      int servers = 0;
      for (auto& p : s.processes) {
        EXPECT_EQ(p.sm_busy_us.has_value(), IsMpsServer(p.comm)) << p.pid;
        if (!IsMpsServer(p.comm)) continue;
        ++servers;
        EXPECT_EQ(p.consumer->namespace_name, "gpu-operator");
        EXPECT_EQ(p.used_memory_bytes, 66 * kMiB);
      }
      EXPECT_EQ(servers, s.processes.empty() ? 0 : 1);
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
  EXPECT_EQ(nodes.size(), 7u);
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

// A GPM-capable exclusive GPU: its counters read the busy time times the workload's efficiency,
// within the ±0.5-point dither; the truth is exact.
constexpr std::string_view kGpmExclusive = R"(name: gpm
start: "2026-11-23T00:00:00Z"
duration: 2h
nodes:
  - {name: h, gpu_model: H100-80GB, gpus: 2}
workloads:
  - {namespace: a, name: lean, node: h, compute: {profile: constant, duty: 0.8},
     efficiency: {sm_active: 0.25, sm_occupancy: 0.5, tensor_active: 0.2, dram_active: 0.9}}
  - {namespace: a, name: plain, node: h, compute: {profile: constant, duty: 0.5}}
)";

TEST(Simulator, GpmActivityOnHopperFollowsEfficiency) {
  Simulator sim(Parse(kGpmExclusive), 60 * kMicrosPerSecond);
  std::vector<Activity> observed(2);  // by GPU index
  sim.Run([&](const NodeSnapshot& s) {
    ASSERT_EQ(s.signals.size(), 2u);
    for (std::size_t g = 0; g < 2; ++g) {
      const DeviceSignals& sig = s.signals[g];
      ASSERT_TRUE(sig.activity.has_value());
      EXPECT_EQ(sig.activity_source, SignalSource::kGpm);
      EXPECT_EQ(sig.busy_source, SignalSource::kNvml);
      const Micros dt = s.duration_us();
      const Activity& a = *sig.activity;
      EXPECT_LE(a.sm_active_us, dt);
      EXPECT_LE(a.dram_active_us, dt);
      observed[g] += a;
    }
  });
  const double dt = 2.0 * kMicrosPerHour;
  const Truth* lean = TruthFor(sim, "lean-0");
  const Truth* plain = TruthFor(sim, "plain-0");
  ASSERT_NE(lean, nullptr);
  ASSERT_NE(plain, nullptr);
  EXPECT_NEAR(lean->compute_gpu_us, 0.8 * dt, 1e-6 * dt);
  EXPECT_NEAR(lean->sm_active_gpu_us, 0.8 * 0.25 * dt, 1e-6 * dt);
  EXPECT_NEAR(lean->sm_occupancy_gpu_us, 0.8 * 0.25 * 0.5 * dt, 1e-6 * dt);
  EXPECT_NEAR(lean->tensor_active_gpu_us, 0.8 * 0.25 * 0.2 * dt, 1e-6 * dt);
  EXPECT_NEAR(lean->dram_active_gpu_us, 0.8 * 0.9 * dt, 1e-6 * dt);
  // The documented defaults: 0.6, 0.35 of SM active, 0.3 of SM active, 0.4.
  EXPECT_NEAR(plain->sm_active_gpu_us, 0.5 * 0.6 * dt, 1e-6 * dt);
  EXPECT_NEAR(plain->sm_occupancy_gpu_us, 0.5 * 0.6 * 0.35 * dt, 1e-6 * dt);
  EXPECT_NEAR(plain->tensor_active_gpu_us, 0.5 * 0.6 * 0.3 * dt, 1e-6 * dt);
  EXPECT_NEAR(plain->dram_active_gpu_us, 0.5 * 0.4 * dt, 1e-6 * dt);
  // First fit: lean on GPU 0, plain on GPU 1. Observed within the dither, and not exact (the
  // dither is there).
  const Activity& a0 = observed[0];
  const Activity& a1 = observed[1];
  EXPECT_NEAR(static_cast<double>(a0.sm_active_us), lean->sm_active_gpu_us, 0.005 * dt);
  EXPECT_NEAR(static_cast<double>(a0.dram_active_us), lean->dram_active_gpu_us, 0.005 * dt);
  EXPECT_NEAR(static_cast<double>(a0.sm_occupancy_us), lean->sm_occupancy_gpu_us, 0.005 * dt);
  EXPECT_NEAR(static_cast<double>(a0.tensor_active_us), lean->tensor_active_gpu_us, 0.005 * dt);
  EXPECT_NEAR(static_cast<double>(a1.sm_active_us), plain->sm_active_gpu_us, 0.005 * dt);
  EXPECT_NE(static_cast<double>(a0.dram_active_us), lean->dram_active_gpu_us);
}

// Pre-Hopper: no counters without DCGM; with `dcgm: true` the same figures come from DCGM.
TEST(Simulator, NoActivityBeforeHopperUnlessDcgm) {
  auto yaml = [](std::string_view model, bool dcgm) {
    return fmt::format(R"(name: old
start: "2026-11-23T00:00:00Z"
duration: 1h
nodes:
  - {{name: n, gpu_model: {}, dcgm: {}}}
workloads:
  - {{namespace: a, name: w, compute: {{profile: constant, duty: 0.5}}}}
)",
                       model, dcgm ? "true" : "false");
  };
  for (std::string_view model : {"A100-80GB", "L4", "T4", "A30"}) {
    Simulator sim(Parse(yaml(model, false)), 60 * kMicrosPerSecond);
    sim.Run([&](const NodeSnapshot& s) {
      for (const DeviceSignals& sig : s.signals) {
        EXPECT_FALSE(sig.activity.has_value()) << model;
        EXPECT_EQ(sig.activity_source, SignalSource::kNone) << model;
      }
    });
    // The truth knows what ran, counters or not.
    EXPECT_NEAR(TruthFor(sim, "w-0")->sm_active_gpu_us, 0.5 * 0.6 * kMicrosPerHour, 1) << model;
  }
  Simulator dcgm(Parse(yaml("A100-80GB", true)), 60 * kMicrosPerSecond);
  GpuMicros sm = 0;
  dcgm.Run([&](const NodeSnapshot& s) {
    ASSERT_TRUE(s.signals[0].activity.has_value());
    EXPECT_EQ(s.signals[0].activity_source, SignalSource::kDcgm);
    sm += s.signals[0].activity->sm_active_us;
  });
  EXPECT_NEAR(static_cast<double>(sm), 0.5 * 0.6 * kMicrosPerHour, 0.005 * kMicrosPerHour);
}

// MIG on Hopper: each instance measures its own busy time (GPM GRAPHICS_UTIL) and activity,
// relative to the instance; the truth is in physical-GPU µs (slices / total). Pre-Hopper MIG
// without DCGM stays unmeasured; with DCGM it is measured by DCGM, as before.
TEST(Simulator, MigInstancesMeasuredByGpmOnHopper) {
  auto yaml = [](std::string_view model, std::string_view layout, std::string_view profile,
                 bool dcgm) {
    return fmt::format(R"(name: mig
start: "2026-11-23T00:00:00Z"
duration: 1h
nodes:
  - {{name: n, gpu_model: {}, sharing: mig, mig_layout: [{}], dcgm: {}}}
workloads:
  - {{namespace: a, name: w, mig_profile: {}, compute: {{profile: constant, duty: 0.7}},
     efficiency: {{sm_active: 0.5, dram_active: 0.3}}}}
)",
                       model, layout, dcgm ? "true" : "false", profile);
  };
  const double dt = kMicrosPerHour;
  {
    Simulator sim(Parse(yaml("H200-141GB", "3g.71gb, 2g.35gb", "3g.71gb", false)),
                  60 * kMicrosPerSecond);
    double busy[2] = {0, 0}, sm[2] = {0, 0}, dram = 0;
    sim.Run([&](const NodeSnapshot& s) {
      ASSERT_EQ(s.signals.size(), 3u);  // the GPU, then its two instances
      EXPECT_FALSE(s.signals[0].busy_us.has_value());
      EXPECT_FALSE(s.signals[0].activity.has_value());  // in MIG mode: per instance only
      for (int m = 0; m < 2; ++m) {
        const DeviceSignals& sig = s.signals[1 + m];
        ASSERT_TRUE(sig.busy_us.has_value());
        EXPECT_EQ(sig.busy_source, SignalSource::kGpm);
        ASSERT_TRUE(sig.activity.has_value());
        EXPECT_EQ(sig.activity_source, SignalSource::kGpm);
        busy[m] += static_cast<double>(*sig.busy_us);
        sm[m] += static_cast<double>(sig.activity->sm_active_us);
        if (m == 0) dram += static_cast<double>(sig.activity->dram_active_us);
      }
    });
    EXPECT_NEAR(busy[0], 0.7 * dt, 0.005 * dt);  // relative to the instance
    EXPECT_NEAR(sm[0], 0.7 * 0.5 * dt, 0.005 * dt);
    EXPECT_NEAR(dram, 0.7 * 0.3 * dt, 0.005 * dt);
    EXPECT_EQ(busy[1], 0);  // the idle instance: measured, zero
    EXPECT_EQ(sm[1], 0);
    const Truth* t = TruthFor(sim, "w-0");
    EXPECT_NEAR(t->compute_gpu_us, 0.7 * 3 / 7 * dt, 1);
    EXPECT_NEAR(t->sm_active_gpu_us, 0.7 * 0.5 * 3 / 7 * dt, 1);
  }
  {
    Simulator sim(Parse(yaml("A100-40GB", "3g.20gb", "3g.20gb", false)), 60 * kMicrosPerSecond);
    sim.Run([&](const NodeSnapshot& s) {
      EXPECT_FALSE(s.signals[1].busy_us.has_value());
      EXPECT_FALSE(s.signals[1].activity.has_value());
    });
  }
  {
    Simulator sim(Parse(yaml("A100-40GB", "3g.20gb", "3g.20gb", true)), 60 * kMicrosPerSecond);
    double busy = 0;
    sim.Run([&](const NodeSnapshot& s) {
      ASSERT_TRUE(s.signals[1].busy_us.has_value());
      EXPECT_EQ(s.signals[1].busy_source, SignalSource::kDcgm);
      EXPECT_EQ(s.signals[1].activity_source, SignalSource::kDcgm);
      busy += static_cast<double>(*s.signals[1].busy_us);
    });
    EXPECT_NEAR(busy, 0.7 * dt, 0.01 * dt);
  }
}

// The counters draw from a stream of their own: NVML's other observations of a GPM-capable
// GPU are those of the same scenario on a GPU without counters, draw for draw.
TEST(Simulator, ActivityLeavesTheOtherObservationsAsTheyWere) {
  auto run = [](std::string_view model) {
    Simulator sim(Parse(fmt::format(R"(name: same
start: "2026-11-23T00:10:00Z"
duration: 3h
nodes:
  - {{name: n0, gpu_model: {}, memory: 80GiB, gpus: 1, sharing: time-slicing, replicas: 4}}
workloads:
  - {{namespace: a, name: p20, compute: {{profile: constant, duty: 0.2}}}}
  - {{namespace: a, name: p30, compute: {{profile: bursty, mean_duty: 0.3, burst: 5m}},
     processes: 2}}
)",
                                    model)),
                  60 * kMicrosPerSecond);
    std::vector<std::int64_t> out;
    sim.Run([&](const NodeSnapshot& s) {
      for (auto& g : s.signals) out.push_back(g.busy_us.value_or(-1));
      for (auto& p : s.processes) out.push_back(p.sm_busy_us.value_or(-1));
    });
    return out;
  };
  EXPECT_EQ(run("H100-80GB"), run("A100-80GB"));
}

TEST(GpmCapable, HopperAndNewer) {
  for (std::string_view m :
       {"H100-80GB", "H100", "H200-141GB", "H20", "H800", "GH200", "B200", "B100", "GB200"})
    EXPECT_TRUE(GpmCapable(m)) << m;
  for (std::string_view m :
       {"A100-80GB", "A100-40GB", "A30", "A10G", "L4", "L40S", "T4", "V100-32GB", "P100", "G1"})
    EXPECT_FALSE(GpmCapable(m)) << m;
}

TEST(ParseScenario, EfficiencyDefaultsAndBounds) {
  auto sc = Parse(R"(name: e
start: "2026-11-23T00:00:00Z"
duration: 1h
nodes: [{name: n, gpu_model: H100-80GB}]
workloads:
  - {namespace: a, name: w, efficiency: {dram_active: 0.9}}
)");
  ASSERT_EQ(sc.workloads.size(), 1u);
  EXPECT_EQ(sc.workloads[0].efficiency.sm_active, 0.6);
  EXPECT_EQ(sc.workloads[0].efficiency.sm_occupancy, 0.35);
  EXPECT_EQ(sc.workloads[0].efficiency.tensor_active, 0.3);
  EXPECT_EQ(sc.workloads[0].efficiency.dram_active, 0.9);
  auto bad = ParseScenario(R"(name: e
start: "2026-11-23T00:00:00Z"
duration: 1h
nodes: [{name: n, gpu_model: H100-80GB}]
workloads:
  - {namespace: a, name: w, efficiency: {sm_active: 1.5}}
)",
                           "e.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("workloads[0].efficiency.sm_active: expected a number in "
                                     "[0, 1]"),
            std::string::npos)
      << bad.error().message;
  auto typo = ParseScenario(R"(name: e
start: "2026-11-23T00:00:00Z"
duration: 1h
nodes: [{name: n, gpu_model: H100-80GB}]
workloads:
  - {namespace: a, name: w, efficiency: {sm_efficiency: 0.5}}
)",
                            "e.yaml");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message.find("unknown key"), std::string::npos);
}

// The example gives classification something to find: a starved trainer and a memory-bound
// decoder next to a healthy one, on GPUs with counters.
TEST(Simulator, ExampleWorkloadsDifferInEfficiency) {
  auto sc = ParseScenario(ExampleScenarioYaml(), "example.yaml");
  ASSERT_TRUE(sc.ok()) << sc.error().message;
  std::map<std::string, EfficiencyProfile> eff;
  for (const WorkloadSpec& w : sc->workloads) eff[w.name] = w.efficiency;
  EXPECT_LT(eff["vision-finetune"].sm_active, 0.2);
  EXPECT_GT(eff["small-llm"].dram_active, 0.8);
  EXPECT_GT(eff["llm-pretrain"].sm_active, 0.9);
  EXPECT_EQ(eff["chat-api"].sm_active, EfficiencyProfile{}.sm_active);
}

}  // namespace
}  // namespace gpuledger::sim
