// Property test: exact conservation of device time, allocation and energy over 10,000 random
// snapshots covering every sharing mode, grants to missing devices, host processes, pods with
// no grant, over-subscribed fractions, missing signals and absurd inputs. The same snapshots
// through the agent's counters and the ingest engine: tests/integration/engine_property_test.cc.
#include <gtest/gtest.h>

#include <random>

#include "attribution/attribute.h"

namespace gpuledger::attribution {
namespace {

NodeSnapshot RandomSnapshot(std::mt19937_64& rng) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  NodeSnapshot s;
  s.node = "n";
  s.start_us = static_cast<Micros>(rng() % 1'000'000'000);
  s.end_us = s.start_us + 1 + static_cast<Micros>(rng() % (2 * kMicrosPerHour));
  const Micros dt = s.duration_us();
  int gpus = 1 + pick(3);
  std::vector<std::string> units;
  for (int g = 0; g < gpus; ++g) {
    PhysicalGpu gpu{GpuUuid{"GPU-" + std::to_string(g)}, "H100-80GB", 80 * kGiB,
                    static_cast<SharingMode>(pick(6)),   1 + pick(8), pick(4) == 0 ? 4 : 7};
    s.gpus.push_back(gpu);
    units.push_back(gpu.uuid.value);
    if (gpu.sharing == SharingMode::kMig) {
      int left = gpu.total_slices;
      for (int m = 0; left > 0 && m < 4; ++m) {
        int slices = 1 + pick(left);
        left -= slices;
        std::string id = "MIG-" + std::to_string(g) + "-" + std::to_string(m);
        s.mig_instances.push_back(MigInstance{GpuUuid{id}, gpu.uuid, "xg", slices, 10 * kGiB});
        units.push_back(id);
        if (pick(2))
          s.signals.push_back(DeviceSignals{
              GpuUuid{id},
              pick(5) ? std::optional<GpuMicros>(static_cast<GpuMicros>(rng() % (dt + 10)))
                      : std::nullopt,
              static_cast<Bytes>(rng() % (10 * kGiB)),
              {}});
      }
    }
    if (pick(4)) {
      s.signals.push_back(DeviceSignals{
          gpu.uuid,
          pick(4) ? std::optional<GpuMicros>(static_cast<GpuMicros>(rng() % (dt + dt / 2 + 1)))
                  : std::nullopt,
          static_cast<Bytes>(rng() % (80 * kGiB)),
          pick(3) ? std::optional<MilliJoules>(static_cast<MilliJoules>(rng() % 10'000'000))
                  : std::nullopt});
    }
  }
  units.push_back("GPU-elsewhere");
  int consumers = pick(8);
  for (int c = 0; c < consumers; ++c) {
    ConsumerRef ref{"ns" + std::to_string(pick(3)), "pod" + std::to_string(c),
                    PodUid{std::to_string(c)}, "main"};
    int grants = pick(3);
    for (int k = 0; k < grants; ++k) {
      Grant g{ref, units[pick(static_cast<int>(units.size()))], "r", {}, ""};
      if (pick(3) == 0) g.device_id += "::" + std::to_string(pick(8));
      if (pick(4) == 0) g.declared_ppd = static_cast<SharePpd>(rng() % (kWholeGpu + kWholeGpu / 2));
      if (pick(5) == 0) g.dra_claim = "claim" + std::to_string(pick(2));
      s.grants.push_back(g);
    }
    int procs = pick(3);
    for (int p = 0; p < procs; ++p) {
      ProcessObservation o;
      o.pid = 100 + c * 10 + p;
      o.device = GpuUuid{units[pick(static_cast<int>(units.size()))]};
      if (pick(6) == 0)
        o.host_name = "user:u" + std::to_string(p);
      else
        o.consumer = ref;
      o.used_memory_bytes = static_cast<Bytes>(rng() % (20 * kGiB));
      if (pick(2)) o.sm_busy_us = static_cast<GpuMicros>(rng() % (dt + 1));
      // Kernel time (issue 31), claims above the interval included (MPS overlap, a liar).
      if (pick(3) == 0) o.kernel_busy_us = static_cast<GpuMicros>(rng() % (2 * dt + 1));
      s.processes.push_back(o);
    }
  }
  return s;
}

TEST(ConservationProperty, TenThousandRandomSnapshotsConserveExactly) {
  std::mt19937_64 rng(20261202);
  for (int trial = 0; trial < 10'000; ++trial) {
    NodeSnapshot s = RandomSnapshot(rng);
    auto usage = Attribute(s);
    ASSERT_EQ(usage.size(), s.gpus.size());
    for (const auto& u : usage) {
      Status st = CheckConservation(u);
      ASSERT_TRUE(st.ok()) << "trial " << trial << ": " << st.error().message;
    }
  }
}

}  // namespace
}  // namespace gpuledger::attribution
