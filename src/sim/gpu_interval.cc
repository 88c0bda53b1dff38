#include "sim/gpu_interval.h"

#include <algorithm>
#include <cmath>

#include "sim/profiles.h"
#include "sim/sim_util.h"
#include "sim/simulated_node.h"

namespace gpuledger::sim {
namespace {

constexpr int kMaxSubWindows = 64;

using world::Actor;
using world::Context;
using world::kDriverReservation;

// One interval's reading of an activity counter whose true mean over the interval is x in
// [0, 1]: GPM (and DCGM's profiling fields) count in hardware, so the error is small, a dither of
// at most half a percentage point (less near 0 and 100%), reported in percent with 2 decimals.
double ObserveCounter(double x, std::mt19937_64& rng) {
  double p = 100 * std::clamp(x, 0.0, 1.0);
  double d = std::min({0.5, p, 100 - p});
  if (d > 0) p += std::uniform_real_distribution<double>(-d, d)(rng);
  return std::clamp(std::round(p * 100) / 100, 0.0, 100.0) / 100;
}

GpuMicros ObservedUs(double integral, Micros dt, std::mt19937_64& rng) {
  if (dt <= 0) return 0;
  return std::llround(ObserveCounter(integral / static_cast<double>(dt), rng) *
                      static_cast<double>(dt));
}

Activity Observe(const UnitActivity& u, Micros dt, std::mt19937_64& rng) {
  Activity a;
  a.sm_active_us = ObservedUs(u.sm_active, dt, rng);
  a.sm_occupancy_us = ObservedUs(u.sm_occupancy, dt, rng);
  a.tensor_active_us = ObservedUs(u.tensor_active, dt, rng);
  a.dram_active_us = ObservedUs(u.dram_active, dt, rng);
  return a;
}

// What a GPU's sub-windows add up to for its signals.
struct GpuUsage {
  std::int64_t busy_acc = 0;               // percent x µs, physical GPU
  std::vector<std::int64_t> mig_busy_acc;  // percent x µs, per instance
  double activity = 0;                     // Σ busy fraction x µs (energy)
};

// The GPU's contexts of the node's active actors, one entry each, into scratch.entries.
void CollectEntries(const GpuInterval& gi) {
  auto& entries = gi.scratch.entries;
  const auto& active = gi.scratch.active;
  entries.clear();
  for (int ai : active) {
    Actor& act = gi.actors[ai];
    if (!world::OnGpu(gi.actors, active, ai, gi.g)) continue;
    for (std::size_t c = 0; c < act.contexts.size(); ++c)
      if (act.contexts[c].gpu == gi.g) {
        SampleEntry e{ai, static_cast<int>(c), act.contexts[c].mig, 0, 1, {}};
        e.sm_acc.assign(act.processes, 0);
        entries.push_back(std::move(e));
      }
  }
}

// Entry e's busy time over a sub-window of `len` µs, scaled by contention, into its actor's
// truth and its unit's activity, as the workload's efficiency (EfficiencyProfile) spends it.
void AccrueBusy(const GpuInterval& gi, const SampleEntry& e, Micros len) {
  const double u = e.u * e.scale;
  const double unit = gi.UnitOf(e);
  Truth& truth = *gi.truth_of[e.actor];
  truth.compute_gpu_us += u * unit * static_cast<double>(len);
  const EfficiencyProfile& eff = *gi.actors[e.actor].efficiency;
  const double busy = u * static_cast<double>(len);  // unit-relative µs
  const double sm = busy * eff.sm_active;
  UnitActivity& ua =
      e.mig >= 0 ? gi.scratch.unit_activity[static_cast<std::size_t>(e.mig)] : gi.phys_activity();
  ua.sm_active += sm;
  ua.sm_occupancy += sm * eff.sm_occupancy;
  ua.tensor_active += sm * eff.tensor_active;
  ua.dram_active += busy * eff.dram_active;
  truth.sm_active_gpu_us += sm * unit;
  truth.sm_occupancy_gpu_us += sm * eff.sm_occupancy * unit;
  truth.tensor_active_gpu_us += sm * eff.tensor_active * unit;
  truth.dram_active_gpu_us += busy * eff.dram_active * unit;
}

// The sub-window [sa, sb): each entry's demand, contention (demand over a unit's capacity is
// scaled down proportionally), the units' busy fractions as the counters read them, and who
// NVML's sample windows go to. `mig_sum` is per instance, reused.
void SimulateSubWindow(const GpuInterval& gi, Micros sa, Micros sb, std::vector<double>& mig_sum,
                       GpuUsage& usage, std::mt19937_64& rng) {
  const Micros len = sb - sa;
  const std::size_t g = static_cast<std::size_t>(gi.g);
  auto& entries = gi.scratch.entries;
  double sum = 0;
  std::fill(mig_sum.begin(), mig_sum.end(), 0.0);
  for (SampleEntry& e : entries) {
    Actor& act = gi.actors[e.actor];
    e.u = ProfileIntegral(*act.compute, act.seed, sa - act.start, sb - act.start) /
          static_cast<double>(len);
    (e.mig >= 0 ? mig_sum[e.mig] : sum) += e.u;
  }
  for (SampleEntry& e : entries) {
    double total = e.mig >= 0 ? mig_sum[e.mig] : sum;
    e.scale = total > 1 ? 1 / total : 1;
    AccrueBusy(gi, e, len);
  }
  const double whole = std::min(1.0, sum);
  double phys_busy = whole;
  for (int m = 0; m < gi.layout; ++m) {
    double s = std::min(1.0, mig_sum[m]);
    gi.scratch.unit_activity[static_cast<std::size_t>(m)].graphics += s * static_cast<double>(len);
    phys_busy += s * gi.ns.mig_slices[m] / gi.spec.total_slices;
    if (gi.mig && gi.spec.has_dcgm && s > 0) usage.mig_busy_acc[m] += ObservePercent(s, rng) * len;
  }
  phys_busy = std::min(1.0, phys_busy);
  usage.activity += phys_busy * static_cast<double>(len);
  if (gi.mig) return;
  if (whole <= 0) {
    gi.ns.last_owner[g] = {};
    return;
  }
  const int percent = ObservePercent(whole, rng);
  usage.busy_acc += percent * len;
  if (!gi.mps) {
    GiveWindowsToOwners(entries, gi.actors, sa, sb, gi.ns.period_us[g], percent,
                        gi.ns.last_owner[g], gi.scratch.owner_weights, rng);
  } else {  // MPS: NVML gives every window to the server's process, never to a client
    for (SampleEntry& e : entries)
      if (gi.actors[e.actor].mps_server) e.sm_acc[0] += percent * len;
  }
}

// The GPU's usage over the interval, in sub-windows of about one NVML sample period (at most
// kMaxSubWindows).
GpuUsage SimulateUsage(const GpuInterval& gi, std::mt19937_64& rng) {
  GpuUsage usage;
  usage.mig_busy_acc.assign(gi.layout, 0);
  if (gi.scratch.entries.empty()) {
    gi.ns.last_owner[static_cast<std::size_t>(gi.g)] = {};
    return usage;
  }
  int k = static_cast<int>(std::min<double>(
      kMaxSubWindows, std::ceil(static_cast<double>(gi.dt) / gi.ns.period_us[gi.g])));
  k = std::max(k, 1);
  std::vector<double> mig_sum(gi.layout);
  for (int j = 0; j < k; ++j) {
    Micros sa = gi.a + gi.dt * j / k, sb = gi.a + gi.dt * (j + 1) / k;
    if (sb - sa > 0) SimulateSubWindow(gi, sa, sb, mig_sum, usage, rng);
  }
  return usage;
}

// Memory in use on the GPU, as NVML reads it: the whole GPU's and each instance's.
struct GpuMemory {
  Bytes phys = 0;
  std::vector<Bytes> mig;
};

// The entries' processes, as NVML lists them (their memory, and on a time-sliced GPU the sample
// windows each owns), into `snap`; each actor's memory truth.
GpuMemory ObserveProcesses(const GpuInterval& gi, NodeSnapshot& snap) {
  GpuMemory memory;
  memory.mig.assign(gi.layout, 0);
  for (SampleEntry& e : gi.scratch.entries) {
    Actor& act = gi.actors[e.actor];
    double mem_int = MemoryIntegral(*act.memory, gi.a - act.start, gi.b - act.start);
    gi.truth_of[e.actor]->memory_byte_us += mem_int;
    Bytes per_proc =
        static_cast<Bytes>(std::llround(mem_int / static_cast<double>(gi.dt) / act.processes));
    const Context& c = act.contexts[e.ctx];
    const GpuUuid& dev =
        e.mig >= 0 ? gi.ns.migs[gi.g * gi.layout + e.mig].uuid : gi.ns.gpus[gi.g].uuid;
    for (int p = 0; p < act.processes; ++p) {
      ProcessObservation po;
      po.pid = c.first_pid + p;
      po.device = dev;
      if (act.host) {
        po.host_name = act.host_name;
      } else {
        po.consumer = act.ref;
      }
      po.used_memory_bytes = per_proc;
      if (!gi.mig && e.mig < 0 && (!gi.mps || act.mps_server))
        po.sm_busy_us = (e.sm_acc[p] + 50) / 100;
      if (act.mps_server) po.comm = std::string(kMpsServerComm);
      po.visible_devices = act.visible_devices;
      snap.processes.push_back(std::move(po));
    }
    memory.phys += per_proc * act.processes;
    if (e.mig >= 0) memory.mig[e.mig] += per_proc * act.processes;
  }
  return memory;
}

// The GPU's signals and its MIG instances', as the agent reads them, into `snap`. Who measures
// activity: dcgm-exporter where it runs, else NVML GPM on Hopper and newer.
void ObserveSignals(const GpuInterval& gi, const GpuUsage& usage, const GpuMemory& memory,
                    std::mt19937_64& activity_rng, NodeSnapshot& snap) {
  const NodeSpec& spec = gi.spec;
  const bool gpm = GpmCapable(spec.gpu_model);
  const bool counters = spec.has_dcgm || gpm;
  const SignalSource counter_source = spec.has_dcgm ? SignalSource::kDcgm : SignalSource::kGpm;
  DeviceSignals sig;
  sig.device = gi.ns.gpus[gi.g].uuid;
  if (!gi.mig) sig.busy_us = (usage.busy_acc + 50) / 100;
  if (!gi.mig && counters) {  // in MIG mode the counters are per instance
    sig.activity = Observe(gi.phys_activity(), gi.dt, activity_rng);
    sig.activity_source = counter_source;
  }
  sig.memory_used_bytes = memory.phys;
  if (!gi.scratch.entries.empty())
    sig.memory_used_bytes +=
        static_cast<Bytes>(kDriverReservation * static_cast<double>(spec.memory_per_gpu_bytes));
  const auto& power = gi.ns.power;
  sig.energy_mj = std::llround((power.idle_w * static_cast<double>(gi.dt) +
                                (power.max_w - power.idle_w) * usage.activity) /
                               1000.0);
  snap.signals.push_back(std::move(sig));
  for (int m = 0; m < gi.layout; ++m) {
    const MigInstance& mi = gi.ns.migs[gi.g * gi.layout + m];
    DeviceSignals ms;
    ms.device = mi.uuid;
    const UnitActivity& ua = gi.scratch.unit_activity[static_cast<std::size_t>(m)];
    if (spec.has_dcgm) {
      ms.busy_us = (usage.mig_busy_acc[m] + 50) / 100;
      ms.busy_source = SignalSource::kDcgm;
    } else if (gpm) {
      ms.busy_us = ObservedUs(ua.graphics, gi.dt, activity_rng);  // GPM GRAPHICS_UTIL
      ms.busy_source = SignalSource::kGpm;
    }
    if (counters) {
      ms.activity = Observe(ua, gi.dt, activity_rng);
      ms.activity_source = counter_source;
    }
    ms.memory_used_bytes = memory.mig[m];
    if (memory.mig[m] > 0)
      ms.memory_used_bytes +=
          static_cast<Bytes>(kDriverReservation * static_cast<double>(mi.memory_total_bytes));
    snap.signals.push_back(std::move(ms));
  }
}

}  // namespace

void SimulateGpu(const GpuInterval& gi, std::mt19937_64& rng, std::mt19937_64& activity_rng,
                 NodeSnapshot& snap) {
  gi.scratch.unit_activity.assign(static_cast<std::size_t>(gi.layout) + 1, UnitActivity{});
  CollectEntries(gi);
  const GpuUsage usage = SimulateUsage(gi, rng);
  const GpuMemory memory = ObserveProcesses(gi, snap);
  ObserveSignals(gi, usage, memory, activity_rng, snap);
}

}  // namespace gpuledger::sim
