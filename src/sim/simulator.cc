#include "sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include <fmt/format.h>

#include "sim/profiles.h"
#include "sim/sample_windows.h"
#include "sim/sim_util.h"
#include "sim/simulated_node.h"
#include "sim/world.h"

namespace gpuledger::sim {

GpuMicros Truth::AllocatedUs() const {
  return static_cast<GpuMicros>((allocated_ppd_us + kWholeGpu / 2) / kWholeGpu);
}

Truth& Truth::operator+=(const Truth& o) {
  allocated_ppd_us += o.allocated_ppd_us;
  compute_gpu_us += o.compute_gpu_us;
  memory_byte_us += o.memory_byte_us;
  sm_active_gpu_us += o.sm_active_gpu_us;
  sm_occupancy_gpu_us += o.sm_occupancy_gpu_us;
  tensor_active_gpu_us += o.tensor_active_gpu_us;
  dram_active_gpu_us += o.dram_active_gpu_us;
  return *this;
}

std::string TruthCsv(const std::map<ConsumerRef, Truth>& truth, bool with_activity) {
  std::string csv = "key,allocated_gpu_us,compute_gpu_us,memory_byte_us";
  if (with_activity)
    csv += ",sm_active_gpu_us,sm_occupancy_gpu_us,tensor_active_gpu_us,dram_active_gpu_us";
  csv += "\n";
  for (const auto& [ref, t] : truth) {
    csv += fmt::format("{},{},{:.0f},{:.0f}", ref.Key(), t.AllocatedUs(), t.compute_gpu_us,
                       t.memory_byte_us);
    if (with_activity)
      csv += fmt::format(",{:.0f},{:.0f},{:.0f},{:.0f}", t.sm_active_gpu_us, t.sm_occupancy_gpu_us,
                         t.tensor_active_gpu_us, t.dram_active_gpu_us);
    csv += "\n";
  }
  return csv;
}

namespace {

constexpr int kMaxSubWindows = 64;

using world::Actor;
using world::BuildWorld;
using world::Context;
using world::kDriverReservation;
using world::NodeWorld;
using world::World;

// The random stream of one node: per node, so one node simulated alone (NodeStepper) draws
// exactly what it draws in a whole-scenario Run.
std::mt19937_64 NodeRng(const Scenario& sc, const NodeSpec& spec) {
  return std::mt19937_64(HashOf(sc.seed, "run", spec.name));
}

// The node's second stream, for the activity counters only: added after NodeRng's draws were
// fixed, so that observing activity leaves every other observation as it was.
std::mt19937_64 ActivityRng(const Scenario& sc, const NodeSpec& spec) {
  return std::mt19937_64(HashOf(sc.seed, "activity", spec.name));
}

// One interval's reading of an activity counter whose true mean over the interval is x in
// [0, 1]: GPM (and DCGM's profiling fields) count in hardware, so the error is small, a dither of
// at most half a percentage point (less near 0 and 100%), reported in percent with 2 decimals.
double ObserveCounter(double x, std::mt19937_64& rng) {
  double p = 100 * std::clamp(x, 0.0, 1.0);
  double d = std::min({0.5, p, 100 - p});
  if (d > 0) p += std::uniform_real_distribution<double>(-d, d)(rng);
  return std::clamp(std::round(p * 100) / 100, 0.0, 100.0) / 100;
}

// Σ fraction x µs of one unit (a physical GPU or a MIG instance) over an interval, relative to
// the unit, as the counters integrate it.
struct UnitActivity {
  double graphics = 0;  // any context busy (GPM GRAPHICS_UTIL, DCGM GR_ENGINE_ACTIVE)
  double sm_active = 0, sm_occupancy = 0, tensor_active = 0, dram_active = 0;
};

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

// Reusable buffers of SimulateInterval.
struct Scratch {
  std::vector<int> active;
  std::vector<SampleEntry> entries;
  std::vector<double> owner_weights;        // GiveWindowsToOwners
  std::vector<UnitActivity> unit_activity;  // per MIG instance of a GPU, then the GPU itself
};

// One physical GPU of a node over an interval [a, b): what the steps of simulating it share.
struct GpuInterval {
  NodeWorld& ns;
  std::vector<Actor>& actors;
  const NodeSpec& spec;
  int g;
  Micros a, b, dt;
  int layout;  // MIG instances per GPU
  bool mig, mps;
  Truth* const* truth_of;
  Scratch& scratch;

  UnitActivity& phys_activity() const {
    return scratch.unit_activity[static_cast<std::size_t>(layout)];
  }
  double UnitOf(const SampleEntry& e) const {  // the entry's unit, as a fraction of the GPU
    return e.mig >= 0 ? static_cast<double>(ns.mig_slices[e.mig]) / spec.total_slices : 1.0;
  }
};

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

// Starts node n's snapshot of [a, b): its devices, and the actors active at a (into
// scratch.active) or lingering after their end (their grants terminal).
void BeginSnapshot(const World& w, std::size_t n, Micros a, Micros b, Scratch& scratch,
                   NodeSnapshot& snap) {
  const NodeWorld& ns = w.nodes[n];
  snap.node = ns.spec->name;
  snap.start_us = a;
  snap.end_us = b;
  snap.gpus = ns.gpus;
  snap.mig_instances = ns.migs;
  snap.grants.clear();
  snap.terminal_grants.clear();
  snap.processes.clear();
  snap.signals.clear();
  scratch.active.clear();
  for (int ai : ns.actors) {
    const Actor& act = w.actors[ai];
    if (act.start <= a && a < act.end) scratch.active.push_back(ai);
    if (act.end <= a && a < act.linger_until)
      snap.terminal_grants.insert(snap.terminal_grants.end(), act.grants.begin(), act.grants.end());
  }
}

// The active actors' grants into `snap`, and their allocation truth over dt: a grant's share,
// or on a DRA device, the device split among its claims and a claim among the pods sharing it.
void AddGrants(const std::vector<Actor>& actors, const std::vector<int>& active, Micros dt,
               Truth* const* truth_of, NodeSnapshot& snap) {
  for (int ai : active) {
    const Actor& act = actors[ai];
    for (std::size_t gi = 0; gi < act.grants.size(); ++gi) {
      snap.grants.push_back(act.grants[gi]);
      SharePpd share = act.share[gi];
      if (share < 0) {
        std::set<std::string> claims;
        int same = 0;
        for (int bi : active)
          for (std::size_t gj = 0; gj < actors[bi].grants.size(); ++gj)
            if (actors[bi].grant_gpu[gj] == act.grant_gpu[gi]) {
              claims.insert(actors[bi].grants[gj].dra_claim);
              if (actors[bi].grants[gj].dra_claim == act.grants[gi].dra_claim) ++same;
            }
        share = kWholeGpu / static_cast<SharePpd>(claims.size()) / std::max(1, same);
      }
      truth_of[ai]->allocated_ppd_us += static_cast<__int128>(share) * dt;
    }
  }
}

// Simulates node `n` over [a, b) (no event of the node inside), draws from `rng` (and the
// activity counters' dither from `activity_rng`), adds to truth_of[actor] (indexed by actor,
// non-null for the node's actors) and fills `snap`. The draws' order is the scenario's
// identity: per GPU, its sub-windows' from `rng`, then its signals' from `activity_rng`.
void SimulateInterval(World& w, std::size_t n, Micros a, Micros b, std::mt19937_64& rng,
                      std::mt19937_64& activity_rng, Truth* const* truth_of, Scratch& scratch,
                      NodeSnapshot& snap) {
  NodeWorld& ns = w.nodes[n];
  const NodeSpec& spec = *ns.spec;
  BeginSnapshot(w, n, a, b, scratch, snap);
  AddGrants(w.actors, scratch.active, b - a, truth_of, snap);
  const int layout = static_cast<int>(spec.mig_layout.size());
  for (int g = 0; g < spec.gpus; ++g) {
    const GpuInterval gi{ns,
                         w.actors,
                         spec,
                         g,
                         a,
                         b,
                         b - a,
                         layout,
                         spec.sharing == SharingMode::kMig,
                         spec.sharing == SharingMode::kMps,
                         truth_of,
                         scratch};
    scratch.unit_activity.assign(static_cast<std::size_t>(layout) + 1, UnitActivity{});
    CollectEntries(gi);
    const GpuUsage usage = SimulateUsage(gi, rng);
    const GpuMemory memory = ObserveProcesses(gi, snap);
    ObserveSignals(gi, usage, memory, activity_rng, snap);
  }
}

}  // namespace

struct Simulator::Impl {
  World world;
  std::vector<Micros> cuts;  // union of the nodes' cuts
};

Simulator::Simulator(Scenario scenario, Micros step_us)
    : scenario_(std::move(scenario)), step_us_(step_us), impl_(std::make_shared<Impl>()) {
  const Scenario& sc = scenario_;
  Micros t_begin = sc.start_us, t_end = sc.start_us + sc.duration_us;
  impl_->world = BuildWorld(sc);
  consumers_ = impl_->world.consumers;
  auto& nodes = impl_->world.nodes;
  auto& actors = impl_->world.actors;
  // Cut times: the step grid from the start, UTC hours, and each node's own actor events.
  std::vector<Micros> common{t_begin, t_end};
  for (Micros t = t_begin + step_us_; t < t_end; t += step_us_) common.push_back(t);
  for (Micros t = HourStart(t_begin) + kMicrosPerHour; t < t_end; t += kMicrosPerHour)
    common.push_back(t);
  std::sort(common.begin(), common.end());
  common.erase(std::unique(common.begin(), common.end()), common.end());
  std::vector<Micros> all = common;
  for (NodeWorld& ns : nodes) {
    std::vector<Micros> extra;
    for (int ai : ns.actors)
      for (Micros t : {actors[ai].start, actors[ai].end})
        if (t > t_begin && t < t_end) extra.push_back(t);
    std::sort(extra.begin(), extra.end());
    std::merge(common.begin(), common.end(), extra.begin(), extra.end(),
               std::back_inserter(ns.cuts));
    ns.cuts.erase(std::unique(ns.cuts.begin(), ns.cuts.end()), ns.cuts.end());
    all.insert(all.end(), extra.begin(), extra.end());
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  impl_->cuts = std::move(all);
  for (auto& [ref, info] : consumers_) truth_[ref] = Truth{};
}

void Simulator::Run(const std::function<void(const NodeSnapshot&)>& sink) {
  for (auto& [ref, t] : truth_) t = Truth{};
  World& w = impl_->world;
  auto& nodes = w.nodes;
  auto& actors = w.actors;
  std::vector<std::mt19937_64> rngs, activity_rngs;
  for (NodeWorld& ns : nodes) {
    rngs.push_back(NodeRng(scenario_, *ns.spec));
    activity_rngs.push_back(ActivityRng(scenario_, *ns.spec));
    std::fill(ns.last_owner.begin(), ns.last_owner.end(), world::WindowOwner{});
  }
  std::vector<std::size_t> next(nodes.size(), 1);
  const auto& cuts = impl_->cuts;
  // Truth lookups by actor (map lookups per interval would dominate large imports).
  std::vector<Truth*> truth_of(actors.size());
  for (std::size_t i = 0; i < actors.size(); ++i) truth_of[i] = &truth_[actors[i].ref];

  NodeSnapshot snap;
  Scratch scratch;
  for (std::size_t ci = 1; ci < cuts.size(); ++ci) {
    Micros b = cuts[ci];
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      NodeWorld& ns = nodes[n];
      if (next[n] >= ns.cuts.size() || ns.cuts[next[n]] != b) continue;
      Micros a = ns.cuts[next[n] - 1];
      ++next[n];
      SimulateInterval(w, n, a, b, rngs[n], activity_rngs[n], truth_of.data(), scratch, snap);
      sink(snap);
    }
  }
}

namespace {

int FindNode(const Scenario& sc, const std::string& node) {
  for (std::size_t n = 0; n < sc.nodes.size(); ++n)
    if (sc.nodes[n].name == node) return static_cast<int>(n);
  return -1;
}

}  // namespace

struct NodeStepper::Impl {
  std::unique_ptr<const Scenario> scenario;  // stable address: the world points into it
  World world;
  std::size_t node = 0;
  Micros step_us = 0;
  Micros begin_us = 0, end_us = 0;
  std::vector<Micros> events;  // the node's actor starts and ends inside (begin, end), sorted
  Micros position_us = 0;
  std::mt19937_64 rng;
  std::mt19937_64 activity_rng;
  std::vector<Truth> truth;  // per actor
  std::vector<Truth*> truth_of;
  Scratch scratch;

  // The node's next cut after t < end_us: the same points as Simulator's precomputed ns.cuts
  // (step grid from the start, UTC hours, the node's events, the end), found without storing
  // a week of step points.
  Micros NextCut(Micros t) const {
    Micros c = std::min(end_us, begin_us + ((t - begin_us) / step_us + 1) * step_us);
    c = std::min(c, HourStart(t) + kMicrosPerHour);
    auto it = std::upper_bound(events.begin(), events.end(), t);
    if (it != events.end()) c = std::min(c, *it);
    return c;
  }
};

Result<NodeStepper> NodeStepper::Create(Scenario scenario, const std::string& node,
                                        Micros step_us) {
  int n = FindNode(scenario, node);
  if (n < 0) return NotFound("scenario '" + scenario.name + "' has no node '" + node + "'");
  auto impl = std::make_shared<Impl>();
  impl->scenario = std::make_unique<const Scenario>(std::move(scenario));
  const Scenario& sc = *impl->scenario;
  impl->world = BuildWorld(sc);
  impl->node = static_cast<std::size_t>(n);
  impl->step_us = step_us;
  impl->begin_us = sc.start_us;
  impl->end_us = sc.start_us + sc.duration_us;
  impl->position_us = impl->begin_us;
  const NodeWorld& ns = impl->world.nodes[impl->node];
  for (int ai : ns.actors)
    for (Micros t : {impl->world.actors[ai].start, impl->world.actors[ai].end})
      if (t > impl->begin_us && t < impl->end_us) impl->events.push_back(t);
  std::sort(impl->events.begin(), impl->events.end());
  impl->events.erase(std::unique(impl->events.begin(), impl->events.end()), impl->events.end());
  impl->rng = NodeRng(sc, *ns.spec);
  impl->activity_rng = ActivityRng(sc, *ns.spec);
  impl->truth.resize(impl->world.actors.size());
  for (Truth& t : impl->truth) impl->truth_of.push_back(&t);
  return NodeStepper(std::move(impl));
}

std::vector<NodeSnapshot> NodeStepper::AdvanceTo(Micros sim_time_us) {
  Impl& m = *impl_;
  std::vector<NodeSnapshot> out;
  while (m.position_us < m.end_us) {
    Micros b = m.NextCut(m.position_us);
    if (b > sim_time_us) break;
    NodeSnapshot snap;
    SimulateInterval(m.world, m.node, m.position_us, b, m.rng, m.activity_rng, m.truth_of.data(),
                     m.scratch, snap);
    out.push_back(std::move(snap));
    m.position_us = b;
  }
  return out;
}

Micros NodeStepper::position_us() const { return impl_->position_us; }
Micros NodeStepper::next_end_us() const {
  return done() ? impl_->end_us : impl_->NextCut(impl_->position_us);
}
std::map<ConsumerRef, Truth> NodeStepper::truth() const {
  std::map<ConsumerRef, Truth> out;
  for (int ai : impl_->world.nodes[impl_->node].actors) {
    out[impl_->world.actors[ai].ref] += impl_->truth[ai];
  }
  return out;
}
bool NodeStepper::done() const { return impl_->position_us >= impl_->end_us; }
const Scenario& NodeStepper::scenario() const { return *impl_->scenario; }
const NodeSpec& NodeStepper::node() const { return *impl_->world.nodes[impl_->node].spec; }
const std::vector<PhysicalGpu>& NodeStepper::gpus() const {
  return impl_->world.nodes[impl_->node].gpus;
}
const std::vector<MigInstance>& NodeStepper::mig_instances() const {
  return impl_->world.nodes[impl_->node].migs;
}

Result<NodeState> StateAt(const Scenario& scenario, const std::string& node, Micros sim_time_us) {
  int n = FindNode(scenario, node);
  if (n < 0) return NotFound("scenario '" + scenario.name + "' has no node '" + node + "'");
  World w = BuildWorld(scenario);
  const NodeWorld& ns = w.nodes[n];
  const NodeSpec& spec = *ns.spec;
  NodeState out;
  out.node = spec.name;
  out.at_us = sim_time_us;
  out.gpus = ns.gpus;
  out.mig_instances = ns.migs;
  std::vector<int> active;
  for (int ai : ns.actors)
    if (w.actors[ai].start <= sim_time_us && sim_time_us < w.actors[ai].end) active.push_back(ai);
  for (int ai : active) {
    const Actor& act = w.actors[ai];
    for (const Grant& g : act.grants) out.grants.push_back(g);
    if (!act.host) out.pods.push_back(w.consumers.at(act.ref));
  }
  // Processes in the order a snapshot lists them: by GPU, then actor, then context.
  int layout = static_cast<int>(spec.mig_layout.size());
  for (int g = 0; g < spec.gpus; ++g) {
    for (int ai : active) {
      const Actor& act = w.actors[ai];
      if (!world::OnGpu(w.actors, active, ai, g)) continue;
      for (const Context& c : act.contexts) {
        if (c.gpu != g) continue;
        Bytes per_proc = static_cast<Bytes>(
            std::llround(MemoryAt(*act.memory, sim_time_us - act.start) / act.processes));
        for (int p = 0; p < act.processes; ++p) {
          ProcessObservation po;
          po.pid = c.first_pid + p;
          po.device = c.mig >= 0 ? ns.migs[g * layout + c.mig].uuid : ns.gpus[g].uuid;
          if (act.host) {
            po.host_name = act.host_name;
          } else {
            po.consumer = act.ref;
          }
          po.used_memory_bytes = per_proc;
          po.visible_devices = act.visible_devices;
          if (act.mps_server) po.comm = std::string(kMpsServerComm);
          out.processes.push_back(std::move(po));
        }
      }
    }
  }
  return out;
}

std::string ContainerIdFor(const ConsumerRef& ref) {
  std::string id;
  for (std::uint64_t i = 0; i < 4; ++i)
    id += fmt::format("{:016x}", HashOf(i, "container", ref.namespace_name, ref.pod,
                                        ref.pod_uid.str(), ref.container));
  return id;
}

}  // namespace gpuledger::sim
