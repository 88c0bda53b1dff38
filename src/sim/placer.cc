#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "sim/scenario_parser.h"
#include "sim/sim_util.h"

namespace gpuledger::sim::scenario {
namespace {

struct Occupancy {
  Micros start, end;
  SharePpd amount;
};

struct Unit {
  int gpu, mig, replica;
  std::vector<Occupancy> occ;
};

bool Fits(const Unit& u, Micros s, Micros e, SharePpd amount) {
  // Peak concurrent use over [s, e) occurs at s or at the start of an overlapping occupancy.
  std::vector<Micros> points{s};
  for (auto& o : u.occ)
    if (o.start > s && o.start < e) points.push_back(o.start);
  for (Micros t : points) {
    SharePpd used = 0;
    for (auto& o : u.occ)
      if (o.start <= t && t < o.end) used += o.amount;
    if (used + amount > kWholeGpu) return false;
  }
  return true;
}

struct Placer {
  Parser& p;
  Scenario& sc;
  std::vector<std::vector<Unit>> units;                      // per node
  std::map<std::string, std::pair<int, int>> shared_claims;  // ns/claim -> (node, unit)

  void Build() {
    units.resize(sc.nodes.size());
    for (std::size_t n = 0; n < sc.nodes.size(); ++n) {
      auto& node = sc.nodes[n];
      for (int g = 0; g < node.gpus; ++g) {
        switch (node.sharing) {
          case SharingMode::kTimeSlicing:
          case SharingMode::kMps:
            for (int r = 0; r < node.replicas; ++r) units[n].push_back({g, -1, r, {}});
            break;
          case SharingMode::kMig:
            for (int m = 0; m < static_cast<int>(node.mig_layout.size()); ++m)
              for (int r = 0; r < node.replicas; ++r)
                units[n].push_back({g, m, node.replicas > 1 ? r : -1, {}});
            break;
          default:
            units[n].push_back({g, -1, -1, {}});
        }
      }
    }
  }

  bool Compatible(const WorkloadSpec& w, const NodeSpec& n) const {
    if (!w.gpu_model.empty() && n.gpu_model != w.gpu_model) return false;
    if (!w.mig_profile.empty() != (n.sharing == SharingMode::kMig)) return false;
    if (w.fraction_ppd && n.sharing != SharingMode::kFractional) return false;
    if (!w.dra_claim.empty() && n.sharing != SharingMode::kDra) return false;
    if (w.mps_active_thread_percentage && n.sharing != SharingMode::kMps) return false;
    return true;
  }

  bool UnitMatches(const WorkloadSpec& w, const NodeSpec& n, const Unit& u) const {
    if (n.sharing != SharingMode::kMig) return true;
    return StripMe(n.mig_layout[u.mig]) == StripMe(w.mig_profile);
  }

  SharePpd Amount(const WorkloadSpec& w) const {
    return w.fraction_ppd ? *w.fraction_ppd : kWholeGpu;
  }

  PodGrantPlan GrantFor(const WorkloadSpec& w, const NodeSpec& n, const Unit& u,
                        const std::string& claim) const {
    PodGrantPlan g{u.gpu, u.mig, u.replica, 0, claim};
    if (n.sharing == SharingMode::kFractional) g.declared_ppd = Amount(w);
    if (n.sharing == SharingMode::kMps && w.mps_active_thread_percentage)
      g.declared_ppd = kWholeGpu / 100 * *w.mps_active_thread_percentage;
    return g;
  }

  // First fit of `count` distinct units on node n; fills `out` and commits when it fits.
  bool TryNode(const WorkloadSpec& w, int n, int count, Micros s, Micros e, std::vector<int>& out) {
    out.clear();
    auto& node = sc.nodes[n];
    SharePpd amount = Amount(w);
    for (int i = 0; i < static_cast<int>(units[n].size()) && static_cast<int>(out.size()) < count;
         ++i) {
      auto& u = units[n][i];
      if (!UnitMatches(w, node, u) || !Fits(u, s, e, amount)) continue;
      // Whole-GPU modes hold distinct GPUs; a second replica of the same GPU is fine.
      out.push_back(i);
    }
    if (static_cast<int>(out.size()) < count) return false;
    for (int i : out) units[n][i].occ.push_back({s, e, amount});
    return true;
  }

  void Place(WorkloadSpec& w, int wi) {
    std::string path = fmt::format("workloads[{}]", wi);
    for (int i = 0; i < w.replicas && !p.failed(); ++i) {
      PodPlan pod;
      pod.name =
          (w.owner_kind == "Pod" && w.replicas == 1) ? w.name : fmt::format("{}-{}", w.name, i);
      pod.uid = UuidFromHash(HashOf(sc.seed, "pod", w.namespace_name, pod.name));
      Micros s = w.start_us, e = w.end_us;
      if (w.request_none) {
        pod.node = FindNode(w.uses_gpu_node);
        if (pod.node < 0) {
          p.Fail(w.line, path + ".uses_gpu.node", "no node named '" + w.uses_gpu_node + "'");
          return;
        }
        if (w.uses_gpu_index >= sc.nodes[pod.node].gpus) {
          p.Fail(w.line, path + ".uses_gpu.index",
                 fmt::format("node '{}' has {} GPUs", w.uses_gpu_node, sc.nodes[pod.node].gpus));
          return;
        }
        pod.uses_gpu = w.uses_gpu_index;
        w.pods.push_back(std::move(pod));
        continue;
      }
      if (!w.placement_node.empty()) {
        PlaceExplicit(w, path, pod);
        if (p.failed()) return;
        w.pods.push_back(std::move(pod));
        continue;
      }
      std::string claim;
      bool dra_shared = false;
      if (!w.dra_claim.empty()) {
        dra_shared = w.dra_shared;
        claim =
            w.namespace_name + "/" + (w.dra_shared ? w.dra_claim : pod.name + "-" + w.dra_claim);
      }
      if (dra_shared) {
        auto it = shared_claims.find(claim);
        if (it == shared_claims.end()) {
          // The shared claim holds its device for the life of every pod that names it.
          Micros cs = s, ce = e;
          for (auto& o : sc.workloads)
            if (o.namespace_name == w.namespace_name && o.dra_claim == w.dra_claim &&
                o.dra_shared) {
              cs = std::min(cs, o.start_us);
              ce = std::max(ce, o.end_us);
            }
          if (!PlaceUnits(w, path, 1, cs, ce, pod, claim)) return;
          shared_claims[claim] = {pod.node, pod.grants[0].gpu};
        } else {
          auto& node = sc.nodes[it->second.first];
          if (!w.node.empty() && w.node != node.name) {
            p.Fail(w.line, path + ".node",
                   fmt::format("shared claim '{}' is on node '{}'", claim, node.name));
            return;
          }
          pod.node = it->second.first;
          Unit u{it->second.second, -1, -1, {}};
          pod.grants.push_back(GrantFor(w, node, u, claim));
        }
        w.pods.push_back(std::move(pod));
        continue;
      }
      if (sc.nodes.empty() ||
          !PlaceUnits(w, path, sc.nodes.empty() ? 0 : (w.fraction_ppd ? 1 : w.gpus), s, e, pod,
                      claim))
        return;
      if (sc.nodes[pod.node].sharing == SharingMode::kDra && claim.empty()) {
        // A DRA pod without a named claim gets its own, as a ResourceClaimTemplate would.
        for (auto& g : pod.grants) g.dra_claim = w.namespace_name + "/" + pod.name + "-gpu";
      }
      w.pods.push_back(std::move(pod));
    }
  }

  int FindNode(const std::string& name) const {
    for (std::size_t n = 0; n < sc.nodes.size(); ++n)
      if (sc.nodes[n].name == name) return static_cast<int>(n);
    return -1;
  }

  bool PlaceUnits(const WorkloadSpec& w, const std::string& path, int count, Micros s, Micros e,
                  PodPlan& pod, const std::string& claim) {
    std::vector<int> chosen;
    for (std::size_t n = 0; n < sc.nodes.size(); ++n) {
      auto& node = sc.nodes[n];
      if (!w.node.empty() && node.name != w.node) continue;
      if (!Compatible(w, node)) continue;
      if (TryNode(w, static_cast<int>(n), count, s, e, chosen)) {
        pod.node = static_cast<int>(n);
        for (int i : chosen) pod.grants.push_back(GrantFor(w, node, units[n][i], claim));
        return true;
      }
    }
    std::string where = !w.node.empty()        ? "node '" + w.node + "'"
                        : !w.gpu_model.empty() ? "any " + w.gpu_model + " node"
                                               : "any node";
    p.Fail(w.line, path,
           fmt::format("workload '{}/{}' pod {}: no room on {} for {} {} from {}s to {}s",
                       w.namespace_name, w.name, pod.name, where, count,
                       w.mig_profile.empty() ? "GPU share(s)" : w.mig_profile + " instance(s)",
                       s / kMicrosPerSecond, e / kMicrosPerSecond));
    return false;
  }

  void PlaceExplicit(const WorkloadSpec& w, const std::string& path, PodPlan& pod) {
    int n = FindNode(w.placement_node);
    if (n < 0) {
      p.Fail(w.line, path + ".placement.node", "no node named '" + w.placement_node + "'");
      return;
    }
    auto& node = sc.nodes[n];
    pod.node = n;
    std::string claim =
        w.dra_claim.empty()
            ? (node.sharing == SharingMode::kDra ? w.namespace_name + "/" + pod.name + "-gpu" : "")
            : w.namespace_name + "/" + w.dra_claim;
    for (int g : w.placement_gpus) {
      if (g < 0 || g >= node.gpus) {
        p.Fail(w.line, path + ".placement.gpus",
               fmt::format("GPU index {} out of range: node '{}' has {}", g, node.name, node.gpus));
        return;
      }
      bool replicated = node.sharing == SharingMode::kTimeSlicing ||
                        node.sharing == SharingMode::kMps || node.sharing == SharingMode::kMig;
      if (!replicated) {
        // Explicit placement is trusted (it comes from a real scheduler's decisions): no
        // capacity check, so an imported over-commitment shows as over-subscription.
        Unit u{g, -1, -1, {}};
        units[n][static_cast<std::size_t>(g)].occ.push_back({w.start_us, w.end_us, Amount(w)});
        pod.grants.push_back(GrantFor(w, node, u, claim));
        continue;
      }
      bool done = false;
      for (auto& u : units[n]) {
        if (u.gpu != g || !UnitMatches(w, node, u) || !Fits(u, w.start_us, w.end_us, kWholeGpu))
          continue;
        u.occ.push_back({w.start_us, w.end_us, kWholeGpu});
        pod.grants.push_back(GrantFor(w, node, u, claim));
        done = true;
        break;
      }
      if (!done) {
        p.Fail(w.line, path + ".placement.gpus",
               fmt::format("no free replica or instance on GPU {} of node '{}'", g, node.name));
        return;
      }
    }
  }
};

}  // namespace

void PlaceWorkloads(Parser& p, Scenario& sc) {
  Placer placer{p, sc, {}, {}};
  placer.Build();
  // Explicit placements first, so first-fit pods see the capacity they take.
  for (std::size_t i = 0; i < sc.workloads.size() && !p.failed(); ++i)
    if (!sc.workloads[i].placement_node.empty()) placer.Place(sc.workloads[i], static_cast<int>(i));
  for (std::size_t i = 0; i < sc.workloads.size() && !p.failed(); ++i)
    if (sc.workloads[i].placement_node.empty()) placer.Place(sc.workloads[i], static_cast<int>(i));
}

}  // namespace gpuledger::sim::scenario
