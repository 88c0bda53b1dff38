#include "sim/world.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "sim/sim_util.h"
#include "sim/simulated_node.h"

namespace gpuledger::sim::world {

Power PowerOf(std::string_view model) {
  if (model.starts_with("H100")) return {70, 700};
  if (model.starts_with("H200")) return {75, 700};
  if (model.starts_with("A100")) return {50, 400};
  if (model == "L4") return {16, 72};
  if (model == "T4") return {10, 70};
  return {30, 300};
}

namespace {

// The share of its GPU a grant holds (-1: a DRA claim, its share the driver's), with the
// resource it names.
SharePpd GrantOn(const NodeSpec& spec, const NodeWorld& ns, const PodGrantPlan& gp, Grant& g) {
  SharePpd share = kWholeGpu;
  switch (spec.sharing) {
    case SharingMode::kExclusive:
      g.resource_name = "nvidia.com/gpu";
      break;
    case SharingMode::kTimeSlicing:
    case SharingMode::kMps:
      g.resource_name = "nvidia.com/gpu";
      share = kWholeGpu / spec.replicas;
      break;
    case SharingMode::kMig:
      g.resource_name = "nvidia.com/mig-" + spec.mig_layout[gp.mig];
      share = kWholeGpu / spec.total_slices * ns.mig_slices[gp.mig] / spec.replicas;
      break;
    case SharingMode::kFractional:
      g.resource_name = FractionalResource(spec.fractional_layer);
      share = gp.declared_ppd;
      break;
    case SharingMode::kDra:
      g.resource_name = "gpu.nvidia.com";
      g.dra_claim = gp.dra_claim;
      share = -1;
      break;
  }
  if (gp.declared_ppd > 0) {
    g.declared_ppd = gp.declared_ppd;
    share = gp.declared_ppd;
  }
  return share;
}

// Builds the world's nodes and actors, in the order their process ids are given out.
struct WorldBuilder {
  const Scenario& sc;
  World& world;
  std::vector<int> next_pid;  // per node

  void AddContexts(Actor& a, const std::vector<std::pair<int, int>>& ctx) {
    for (auto& [g, m] : ctx) {
      a.contexts.push_back({g, m, next_pid[a.node]});
      next_pid[a.node] += std::max(1, a.processes) * 7;
    }
  }

  // Each node's GPUs and MIG instances.
  void AddNodes() {
    auto& nodes = world.nodes;
    nodes.resize(sc.nodes.size());
    for (std::size_t n = 0; n < sc.nodes.size(); ++n) {
      const NodeSpec& spec = sc.nodes[n];
      NodeWorld& ns = nodes[n];
      ns.spec = &spec;
      ns.power = PowerOf(spec.gpu_model);
      for (int g = 0; g < spec.gpus; ++g) {
        PhysicalGpu gpu;
        gpu.uuid = GpuUuid("GPU-" + UuidFromHash(HashOf(sc.seed, "gpu", spec.name, g)));
        gpu.model = spec.gpu_model;
        gpu.memory_total_bytes = spec.memory_per_gpu_bytes;
        gpu.sharing = spec.sharing;
        gpu.replicas = spec.replicas;
        gpu.total_slices = spec.total_slices;
        // NVML's sample period: 200 ms as measured on an H200 (five device samples a second,
        // ../shared/data/h200); on models not measured, drawn per GPU in [1/6 s, 1 s].
        std::uint64_t h = HashOf(sc.seed, "period", spec.name, g);
        ns.period_us.push_back(spec.gpu_model.starts_with("H200")
                                   ? 200'000.0
                                   : 1e6 / 6 +
                                         static_cast<double>(h >> 11) * 0x1.0p-53 * (5e6 / 6));
        ns.last_owner.emplace_back();
        for (std::size_t m = 0; m < spec.mig_layout.size(); ++m) {
          MigInstance mi;
          mi.uuid = GpuUuid("MIG-" + UuidFromHash(HashOf(sc.seed, "mig", spec.name, g, m)));
          mi.parent = gpu.uuid;
          mi.profile = spec.mig_layout[m];
          mi.compute_slices = MigComputeSlices(mi.profile);
          mi.memory_total_bytes = MigInstanceMemory(mi.profile, spec.memory_per_gpu_bytes);
          ns.migs.push_back(mi);
          ns.mig_slices.push_back(mi.compute_slices);
        }
        ns.gpus.push_back(std::move(gpu));
      }
    }
  }

  // Each workload's pods, with their grants.
  void AddPods() {
    const Micros t_begin = sc.start_us;
    auto& nodes = world.nodes;
    auto& actors = world.actors;
    for (const WorkloadSpec& w : sc.workloads) {
      for (const PodPlan& pod : w.pods) {
        Actor a;
        a.ref = ConsumerRef{w.namespace_name, pod.name, PodUid(pod.uid), w.container};
        a.node = pod.node;
        a.start = t_begin + w.start_us;
        a.end = t_begin + w.end_us;
        a.linger_until = a.end + w.grant_linger_us;
        a.compute = &w.compute;
        a.efficiency = &w.efficiency;
        a.memory = &w.memory;
        a.seed = HashOf(w.compute.seed, pod.name);
        a.processes = w.processes;
        const NodeSpec& spec = sc.nodes[pod.node];
        NodeWorld& ns = nodes[pod.node];
        std::vector<std::pair<int, int>> ctx;
        std::vector<std::string> visible;
        for (const PodGrantPlan& gp : pod.grants) {
          Grant g;
          g.consumer = a.ref;
          const PhysicalGpu& gpu = ns.gpus[gp.gpu];
          std::string base = gp.mig >= 0
                                 ? ns.migs[gp.gpu * spec.mig_layout.size() + gp.mig].uuid.str()
                                 : gpu.uuid.str();
          g.device_id = gp.replica >= 0 ? fmt::format("{}::{}", base, gp.replica) : base;
          const SharePpd share = GrantOn(spec, ns, gp, g);
          a.grants.push_back(std::move(g));
          a.share.push_back(share);
          a.grant_gpu.push_back(gp.gpu);
          std::pair<int, int> c{gp.gpu, gp.mig};
          if (std::find(ctx.begin(), ctx.end(), c) == ctx.end()) {
            ctx.push_back(c);
            visible.push_back(base);
          }
        }
        if (pod.uses_gpu >= 0) ctx.push_back({pod.uses_gpu, -1});
        for (auto& v : visible) a.visible_devices += (a.visible_devices.empty() ? "" : ",") + v;
        if (w.visible_devices_all) a.visible_devices = "all";
        if (a.processes > 0) AddContexts(a, ctx);
        ConsumerInfo info{a.ref, w.owner_kind, w.owner_name, w.labels, {}, {}, {}};
        if (auto it = sc.namespace_labels.find(w.namespace_name); it != sc.namespace_labels.end())
          info.namespace_labels = it->second;
        world.consumers[a.ref] = std::move(info);
        ns.actors.push_back(static_cast<int>(actors.size()));
        actors.push_back(std::move(a));
      }
    }
  }

  // The processes that run outside Kubernetes.
  void AddHostProcesses() {
    const Micros t_begin = sc.start_us;
    auto& nodes = world.nodes;
    auto& actors = world.actors;
    for (std::size_t n = 0; n < sc.nodes.size(); ++n) {
      for (const HostProcessSpec& h : sc.nodes[n].host_processes) {
        Actor a;
        a.host = true;
        a.host_name = h.name;
        a.ref = ConsumerRef{std::string(kHostNamespace), h.name, PodUid(), ""};
        a.node = static_cast<int>(n);
        a.start = t_begin + h.start_us;
        a.end = t_begin + h.end_us;
        a.compute = &h.compute;
        a.efficiency = &h.efficiency;
        a.memory = &h.memory;
        a.seed = h.compute.seed;
        a.processes = 1;
        AddContexts(a, {{h.gpu, -1}});
        world.consumers[a.ref] = ConsumerInfo{a.ref, "Host", h.name, {}, {}, {}, {}};
        nodes[n].actors.push_back(static_cast<int>(actors.size()));
        actors.push_back(std::move(a));
      }
    }
  }

  // Each MPS node runs NVIDIA's MPS control daemon as a DaemonSet pod with no GPU request; the
  // server it starts for the clients (nvidia-cuda-mps-server, 66 MiB on the H200 of
  // ../shared/data/h200 run1-mps) is that pod's process. Added last, so no other pid moves.
  void AddMpsServers() {
    const Micros t_begin = sc.start_us;
    auto& nodes = world.nodes;
    auto& actors = world.actors;
    static const ComputeProfile kNoCompute;
    static const EfficiencyProfile kServerEfficiency;
    static const MemoryProfile kServerMemory{69'206'016, 0, 0};
    for (std::size_t n = 0; n < sc.nodes.size(); ++n) {
      const NodeSpec& spec = sc.nodes[n];
      if (spec.sharing != SharingMode::kMps) continue;
      Actor a;
      a.mps_server = true;
      const std::uint64_t h = HashOf(sc.seed, "mps-control-daemon", spec.name);
      a.ref =
          ConsumerRef{"gpu-operator",
                      fmt::format("nvidia-device-plugin-mps-control-daemon-{:05x}", h & 0xfffff),
                      PodUid(UuidFromHash(h)), "mps-control-daemon-ctr"};
      a.node = static_cast<int>(n);
      a.start = t_begin;
      a.end = t_begin + sc.duration_us;
      a.compute = &kNoCompute;
      a.efficiency = &kServerEfficiency;
      a.memory = &kServerMemory;
      std::vector<std::pair<int, int>> ctx;
      for (int g = 0; g < spec.gpus; ++g) ctx.push_back({g, -1});
      AddContexts(a, ctx);
      world.consumers[a.ref] = ConsumerInfo{a.ref,
                                            "DaemonSet",
                                            "nvidia-device-plugin-mps-control-daemon",
                                            {{"app", "nvidia-device-plugin-mps-control-daemon"}},
                                            {},
                                            {},
                                            {}};
      nodes[n].mps_server = static_cast<int>(actors.size());
      nodes[n].actors.push_back(static_cast<int>(actors.size()));
      actors.push_back(std::move(a));
    }
  }
};

}  // namespace

World BuildWorld(const Scenario& sc) {
  World world;
  WorldBuilder build{sc, world, std::vector<int>(sc.nodes.size(), 1000)};
  build.AddNodes();
  build.AddPods();
  build.AddHostProcesses();
  build.AddMpsServers();
  return world;
}

bool OnGpu(const std::vector<Actor>& actors, const std::vector<int>& active, int ai, int g) {
  auto has_context = [&](int a) {
    for (const Context& c : actors[a].contexts)
      if (c.gpu == g) return true;
    return false;
  };
  if (!has_context(ai)) return false;
  if (!actors[ai].mps_server) return true;
  for (int other : active)
    if (other != ai && !actors[other].mps_server && has_context(other)) return true;
  return false;
}

}  // namespace gpuledger::sim::world
