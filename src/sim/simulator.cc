#include "sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include <fmt/format.h>

#include "sim/profiles.h"
#include "sim/gpu_interval.h"
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
    SimulateGpu(gi, rng, activity_rng, snap);
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
