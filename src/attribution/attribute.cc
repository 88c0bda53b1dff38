#include "attribution/attribute.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "common/apportion.h"

namespace gpuledger::attribution {
namespace {

// A unit a grant or a process can name: the physical GPU itself or one of its MIG instances.
struct Unit {
  const MigInstance* mig = nullptr;  // null: the physical GPU
};

// Per-consumer working state while one physical GPU is attributed.
struct Work {
  ConsumerUsage usage;
  SharePpd declared_or_default_ppd = 0;  // allocation share before over-subscription scaling
  GpuMicros sm_weight = 0;               // Σ per-process SM samples on this GPU
  bool has_samples = false;
  bool has_process = false;  // a process of its own workload (not an MPS server) ran here
  bool mps_server = false;   // it runs the device's MPS server
  bool declared = false;     // a grant declared its share (fractional, MPS active threads)
  Bytes process_bytes = 0;   // Σ memory of its processes here (the MPS split's fallback)
  GpuMicros kernel_us = 0;   // Σ its processes' published kernel time here
  int publishing = 0;        // its processes here that published kernel time
  int silent = 0;            // and those that did not
  std::set<std::string> process_units;  // base ids of the units its processes ran on
  std::set<std::string> rules;
  std::set<std::string> activity_rules;
};

ConsumerRef HostRef(const ProcessObservation& p) {
  return ConsumerRef{std::string(kHostNamespace), p.host_name, PodUid{}, ""};
}

ConsumerRef RefOf(const ProcessObservation& p) { return p.consumer ? *p.consumer : HostRef(p); }

std::string JoinRules(const std::set<std::string>& rules) {
  std::string out;
  for (const auto& r : rules) out += (out.empty() ? "" : "+") + r;
  return out;
}

// The grants and processes that name one physical GPU (or its MIG instances).
struct GpuInputs {
  std::vector<const MigInstance*> migs;
  std::vector<const Grant*> grants;
  std::vector<const ProcessObservation*> processes;
};

class GpuAttributor {
 public:
  GpuAttributor(const NodeSnapshot& snap, const PhysicalGpu& gpu, const GpuInputs& in)
      : snap_(snap), gpu_(gpu), in_(in), migs_(in.migs) {}

  DeviceUsage Run() {
    out_.gpu = gpu_.uuid;
    out_.model = gpu_.model;
    out_.sharing = gpu_.sharing;
    out_.start_us = snap_.start_us;
    out_.end_us = snap_.end_us;
    out_.memory_total_bytes = gpu_.memory_total_bytes;
    dt_ = std::max<Micros>(0, snap_.duration_us());
    Allocate();
    CollectProcesses();
    if (migs_.empty()) {
      ComputeWholeGpu();
    } else {
      ComputeMig();
    }
    Memory();
    Energy();
    Activities();
    for (auto& [ref, w] : work_) {
      w.usage.compute_rule = JoinRules(w.rules);
      w.usage.activity_rule = JoinRules(w.activity_rules);
      out_.consumers.push_back(std::move(w.usage));
    }
    return std::move(out_);
  }

 private:
  // Finds the unit a device id names on this GPU; false when it is elsewhere.
  bool Resolve(std::string_view device_id, Unit& unit) const {
    std::string_view base = BaseDeviceId(device_id);
    if (base == gpu_.uuid.value) return true;
    for (const MigInstance* m : migs_) {
      if (base == m->uuid.value) {
        unit.mig = m;
        return true;
      }
    }
    return false;
  }

  bool IsReplica(std::string_view device_id) const {
    return BaseDeviceId(device_id).size() != device_id.size() || gpu_.replicas > 1;
  }

  Work& WorkFor(const ConsumerRef& ref, std::string_view device_id) {
    auto [it, inserted] = work_.try_emplace(ref);
    if (inserted) {
      it->second.usage.consumer = ref;
      it->second.usage.device_id = std::string(device_id);
    }
    return it->second;
  }

  SharePpd UnitShare(const Unit& unit) const {
    if (unit.mig == nullptr) return kWholeGpu;
    int total = std::max(1, gpu_.total_slices);
    return kWholeGpu / total * std::clamp(unit.mig->compute_slices, 0, total);
  }

  void Allocate() {
    // DRA: a device is split among the claims on it, a claim among the pods that name it.
    std::map<std::string, std::set<std::string>> claims_on_unit;  // unit id -> claims
    std::map<std::string, std::set<ConsumerRef>> pods_of_claim;   // claim -> consumers
    for (const Grant* gp : in_.grants) {
      const Grant& g = *gp;
      Unit unit;
      if (g.dra_claim.empty() || !Resolve(g.device_id, unit)) continue;
      claims_on_unit[std::string(BaseDeviceId(g.device_id))].insert(g.dra_claim);
      pods_of_claim[g.dra_claim].insert(g.consumer);
    }
    for (const Grant* gp : in_.grants) {
      const Grant& g = *gp;
      Unit unit;
      if (!Resolve(g.device_id, unit)) continue;
      SharePpd share = UnitShare(unit);
      if (g.declared_ppd) {
        share = std::clamp<SharePpd>(*g.declared_ppd, 0, share);
        Work& w = WorkFor(g.consumer, g.device_id);
        w.usage.share_source = g.share_source;
        w.declared = true;
      } else if (!g.dra_claim.empty()) {
        auto claims = claims_on_unit[std::string(BaseDeviceId(g.device_id))].size();
        auto pods = pods_of_claim[g.dra_claim].size();
        share = share / static_cast<SharePpd>(claims) / static_cast<SharePpd>(pods);
      } else if (IsReplica(g.device_id) &&
                 (gpu_.sharing == SharingMode::kTimeSlicing || gpu_.sharing == SharingMode::kMps ||
                  unit.mig != nullptr)) {
        share /= std::max(1, gpu_.replicas);
      }
      WorkFor(g.consumer, g.device_id).declared_or_default_ppd += share;
    }
    // Exact fit: shares that add up to more than the GPU are scaled down to it.
    std::vector<std::uint64_t> weights;
    SharePpd sum = 0;
    for (auto& [ref, w] : work_) {
      weights.push_back(static_cast<std::uint64_t>(w.declared_or_default_ppd));
      sum += w.declared_or_default_ppd;
    }
    if (sum > kWholeGpu) {
      auto scaled = Apportion(kWholeGpu, weights);
      std::size_t i = 0;
      for (auto& [ref, w] : work_) w.usage.allocated_ppd = scaled[i++];
      sum = kWholeGpu;
    } else {
      for (auto& [ref, w] : work_) w.usage.allocated_ppd = w.declared_or_default_ppd;
    }
    out_.unallocated_ppd = kWholeGpu - sum;
  }

  void CollectProcesses() {
    for (const ProcessObservation* pp : in_.processes) {
      const ProcessObservation& p = *pp;
      Unit unit;
      if (!Resolve(p.device.value, unit)) continue;
      Work& w = WorkFor(RefOf(p), p.device.value);
      procs_.push_back(&p);  // its memory is its own, server or not
      if (IsMpsServer(p.comm)) {
        // NVML gives the MPS server the samples of every client's kernels (measured on an
        // H200, ../shared/data/h200): they are the clients' work, never the server's.
        w.mps_server = true;
        if (p.sm_busy_us) server_sm_us_ += std::max<GpuMicros>(0, *p.sm_busy_us);
        continue;
      }
      w.has_process = true;
      w.process_units.insert(std::string(BaseDeviceId(p.device.value)));
      w.process_bytes += std::max<Bytes>(0, p.used_memory_bytes);
      if (p.kernel_busy_us) {
        ++w.publishing;
        w.kernel_us += std::max<GpuMicros>(0, *p.kernel_busy_us);
      } else {
        ++w.silent;
      }
      if (p.sm_busy_us) {
        w.has_samples = true;
        w.sm_weight += std::max<GpuMicros>(0, *p.sm_busy_us);
      }
    }
  }

  const DeviceSignals* SignalFor(const GpuUuid& id) const {
    for (const auto& s : snap_.signals)
      if (s.device == id) return &s;
    return nullptr;
  }

  // Splits `busy` (GPU-µs) over the consumers selected by `in_unit`; returns false when no
  // consumer there has a process (the caller then books it unattributed).
  template <typename Pred>
  bool SplitBusy(GpuMicros busy, Pred in_unit, bool device_measured, std::string_view multi_rule,
                 std::string_view single_rule = "device-activity") {
    std::vector<Work*> present;
    for (auto& [ref, w] : work_)
      if (in_unit(w) && w.has_process) present.push_back(&w);
    if (present.empty()) return false;
    SplitByEstimate(busy, present, device_measured, multi_rule, single_rule);
    return true;
  }

  // Whole GPUs: consumers whose every process published its kernel time are measured by it
  // (issue 31). All of them publishing: the busy time by kernel time (under MPS their kernels
  // overlap and may sum above it: by it all the same). Some: each publisher gets its kernel
  // time (scaled down to the busy time when they claim more), and the others share what is
  // left by the usual rules. Nobody: the usual rules.
  bool SplitBusyWithKernelTime(GpuMicros busy, bool device_measured, std::string_view multi_rule) {
    std::vector<Work*> publishers, rest;
    for (auto& [ref, w] : work_) {
      if (!w.has_process) continue;
      (w.silent == 0 && w.publishing > 0 ? publishers : rest).push_back(&w);
    }
    if (publishers.empty() && rest.empty()) return false;
    GpuMicros claimed = 0;
    for (const Work* w : publishers) claimed += w->kernel_us;
    if (publishers.empty() || claimed == 0) {
      SplitByEstimate(busy, rest.empty() ? publishers : rest, device_measured, multi_rule,
                      "device-activity");
      return true;
    }
    std::vector<std::uint64_t> weights;
    for (const Work* w : publishers) weights.push_back(static_cast<std::uint64_t>(w->kernel_us));
    if (rest.empty() || claimed >= busy) {
      Give(busy, publishers, weights, Quality::kMeasured, "kernel-time");
      for (Work* w : rest) {  // the publishers' kernels filled the busy time: nothing is left
        w->usage.compute_quality = Combine(w->usage.compute_quality, Quality::kEstimated);
        w->rules.insert("kernel-time-remainder");
      }
      return true;
    }
    Give(claimed, publishers, weights, Quality::kMeasured, "kernel-time");
    if (rest.size() == 1) {  // it takes what is left, as measured as the device's busy time
      Give(busy - claimed, rest, {1}, device_measured ? Quality::kMeasured : Quality::kEstimated,
           "kernel-time-remainder");
    } else {
      SplitByEstimate(busy - claimed, rest, device_measured, multi_rule, "kernel-time-remainder");
      for (Work* w : rest) w->rules.insert("kernel-time-remainder");
    }
    return true;
  }

  // `busy` to `to` by integer `weights` exactly (Apportion), with the quality and rule.
  static void Give(GpuMicros busy, const std::vector<Work*>& to, std::vector<std::uint64_t> weights,
                   Quality quality, std::string_view rule) {
    weights.push_back(0);  // nothing left over: the bucket Apportion needs last
    auto parts = Apportion(busy, weights);
    for (std::size_t i = 0; i < to.size(); ++i) {
      to[i]->usage.compute_us += parts[i];
      to[i]->usage.compute_quality = Combine(to[i]->usage.compute_quality, quality);
      to[i]->rules.insert(std::string(rule));
    }
  }

  // The NVML estimate: per-process samples, else one consumer takes all, else allocation.
  void SplitByEstimate(GpuMicros busy, const std::vector<Work*>& present, bool device_measured,
                       std::string_view multi_rule, std::string_view single_rule) {
    std::vector<std::uint64_t> weights;
    bool samples = std::any_of(present.begin(), present.end(),
                               [](const Work* w) { return w->has_samples && w->sm_weight > 0; });
    std::string_view rule;
    Quality quality;
    if (present.size() == 1) {
      // One consumer takes all of the busy time whatever its samples say: its rule is the
      // single consumer's (device-activity, ±0.3% on a real H200), not the samples' split,
      // whose band (111%) would be claimed for a figure that split nothing.
      weights.push_back(1);
      rule = single_rule;
      quality = samples || device_measured ? Quality::kMeasured : Quality::kEstimated;
    } else if (samples) {
      // Several share it by NVML's per-process samples, an estimate (docs/attribution.md: 9% to
      // 111% off at worst per run on a real H200).
      for (Work* w : present) weights.push_back(static_cast<std::uint64_t>(w->sm_weight));
      rule = "process-samples";
      quality = Quality::kEstimated;
    } else {
      rule = multi_rule;
      quality = Quality::kEstimated;
      for (Work* w : present)
        weights.push_back(
            static_cast<std::uint64_t>(std::max<SharePpd>(w->usage.allocated_ppd, 0)));
      const bool mps = gpu_.sharing == SharingMode::kMps;
      if (mps &&
          std::none_of(present.begin(), present.end(), [](const Work* w) { return w->declared; })) {
        // MPS clients that declared no active-thread share: by the memory they hold.
        for (std::size_t i = 0; i < present.size(); ++i)
          weights[i] = static_cast<std::uint64_t>(present[i]->process_bytes);
        rule = "mps-memory-share";
      }
      if (std::all_of(weights.begin(), weights.end(), [](auto x) { return x == 0; })) {
        std::fill(weights.begin(), weights.end(), 1);
        if (mps) rule = "mps-even-share";
      }
    }
    Give(busy, present, std::move(weights), quality, rule);
  }

  // Consumers that hold a grant but ran nothing used nothing: a measured zero when the device
  // was observed, only the grant when it was not.
  void MarkIdleHolders(bool observed) {
    for (auto& [ref, w] : work_) {
      if (w.has_process) continue;
      if (w.mps_server) {  // runs only the sharing layer: no compute of its own, by rule
        w.usage.compute_quality = Combine(w.usage.compute_quality, Quality::kEstimated);
        w.rules.insert("mps-server");
        continue;
      }
      w.usage.compute_quality =
          Combine(w.usage.compute_quality, observed ? Quality::kMeasured : Quality::kAllocated);
      w.rules.insert(observed ? "no-process" : "grant-only");
    }
  }

  void ComputeWholeGpu() {
    const DeviceSignals* sig = SignalFor(gpu_.uuid);
    bool have_busy = sig != nullptr && sig->busy_us.has_value();
    GpuMicros sample_sum = 0;
    bool any_samples = false;
    for (auto& [ref, w] : work_) {
      sample_sum += w.sm_weight;
      any_samples = any_samples || w.has_samples;
    }
    // Without a device signal the samples stand for it, the MPS server's (its clients' work)
    // included.
    GpuMicros busy = have_busy ? std::clamp<GpuMicros>(*sig->busy_us, 0, dt_)
                               : std::clamp<GpuMicros>(sample_sum + server_sm_us_, 0, dt_);
    bool observed = have_busy || any_samples;
    std::string_view multi =
        gpu_.sharing == SharingMode::kMps ? "mps-thread-share" : "allocation-share";
    if (busy > 0 && !SplitBusyWithKernelTime(busy, have_busy, multi)) out_.unattributed_us += busy;
    if (busy == 0) {
      for (auto& [ref, w] : work_) {
        if (!w.has_process) continue;
        w.usage.compute_quality =
            Combine(w.usage.compute_quality, observed ? Quality::kMeasured : Quality::kAllocated);
        w.rules.insert(observed ? "device-idle" : "no-signal");
      }
    }
    MarkIdleHolders(observed);
    out_.busy_us = busy;
    out_.idle_us = dt_ - busy;
  }

  // Slice time of each MIG instance (GPU-µs of the physical GPU), apportioned from dt so the
  // parts never exceed it; the last entry is the slices no instance holds.
  std::vector<GpuMicros> SliceTimes() const {
    std::vector<std::uint64_t> slices;
    int used = 0;
    for (const MigInstance* m : migs_) {
      slices.push_back(static_cast<std::uint64_t>(std::max(0, m->compute_slices)));
      used += std::max(0, m->compute_slices);
    }
    slices.push_back(static_cast<std::uint64_t>(std::max(0, gpu_.total_slices - used)));
    return Apportion(dt_, slices);
  }

  // The instance's own busy time names its source: GPM on Hopper and newer, else DCGM.
  static std::string_view InstanceRule(const DeviceSignals& sig) {
    return sig.busy_source == SignalSource::kGpm ? "gpm-instance-activity"
                                                 : "dcgm-instance-activity";
  }

  void ComputeMig() {
    auto slice_time = SliceTimes();
    GpuMicros busy = 0;
    for (std::size_t i = 0; i < migs_.size(); ++i) {
      const MigInstance* m = migs_[i];
      auto in_unit = [&](const Work& w) { return w.process_units.count(m->uuid.value) > 0; };
      const DeviceSignals* sig = SignalFor(m->uuid);
      GpuMicros instance_busy;
      bool measured = sig != nullptr && sig->busy_us.has_value();
      if (measured) {
        // Instance-relative activity scaled to the physical GPU's time.
        GpuMicros rel = std::clamp<GpuMicros>(*sig->busy_us, 0, dt_);
        instance_busy =
            dt_ == 0 ? 0 : static_cast<GpuMicros>(static_cast<__int128>(rel) * slice_time[i] / dt_);
      } else {
        bool present = false;
        for (const ProcessObservation* p : procs_)
          if (p->device == m->uuid) present = true;
        instance_busy = present ? slice_time[i] : 0;
      }
      if (instance_busy > 0) {
        bool split = measured ? SplitBusy(instance_busy, in_unit, true, "allocation-share",
                                          InstanceRule(*sig))
                              : SplitPresence(instance_busy, in_unit);
        if (!split) out_.unattributed_us += instance_busy;
      } else {
        for (auto& [ref, w] : work_)
          if (in_unit(w) && w.has_process) {
            w.usage.compute_quality = Combine(w.usage.compute_quality, Quality::kMeasured);
            w.rules.insert("device-idle");
          }
      }
      busy += instance_busy;
    }
    MarkIdleHolders(true);
    out_.busy_us = std::min(busy, dt_);
    out_.idle_us = dt_ - out_.busy_us;
  }

  // MIG without the instance's own counters (GPM needs Hopper or newer; DCGM is optional): the
  // instance's slice time goes to the consumers whose processes are present, split by
  // allocation share (estimated, "mig-presence").
  template <typename Pred>
  bool SplitPresence(GpuMicros instance_time, Pred in_unit) {
    std::vector<Work*> present;
    for (auto& [ref, w] : work_)
      if (in_unit(w) && w.has_process) present.push_back(&w);
    if (present.empty()) return false;
    std::vector<std::uint64_t> weights;
    weights.reserve(present.size() + 1);
    for (Work* w : present)
      weights.push_back(static_cast<std::uint64_t>(std::max<SharePpd>(1, w->usage.allocated_ppd)));
    weights.push_back(0);
    auto parts = Apportion(instance_time, weights);
    for (std::size_t i = 0; i < present.size(); ++i) {
      present[i]->usage.compute_us += parts[i];
      present[i]->usage.compute_quality =
          Combine(present[i]->usage.compute_quality, Quality::kEstimated);
      present[i]->rules.insert("mig-presence");
    }
    return true;
  }

  void Memory() {
    Bytes process_bytes = 0;
    std::map<ConsumerRef, Bytes> per_consumer;
    for (const ProcessObservation* p : procs_) {
      Bytes b = std::max<Bytes>(0, p->used_memory_bytes);
      per_consumer[RefOf(*p)] += b;
      process_bytes += b;
    }
    for (auto& [ref, bytes] : per_consumer) {
      Work& w = work_.at(ref);
      w.usage.memory_bytes += bytes;
      w.usage.peak_memory_bytes = std::max(w.usage.peak_memory_bytes, bytes);
      w.usage.memory_quality = Quality::kMeasured;
    }
    Bytes device_used = 0;
    bool have_used = false;
    if (const DeviceSignals* s = SignalFor(gpu_.uuid)) {
      device_used = s->memory_used_bytes;
      have_used = true;
    }
    if (!have_used || !migs_.empty()) {
      Bytes sum = 0;
      for (const MigInstance* m : migs_)
        if (const DeviceSignals* s = SignalFor(m->uuid)) sum += s->memory_used_bytes;
      if (!migs_.empty()) device_used = std::max(device_used, sum);
    }
    Bytes unexplained = std::max<Bytes>(0, device_used - process_bytes);
    out_.unattributed_memory_bytes = unexplained;
  }

  void Energy() {
    const DeviceSignals* sig = SignalFor(gpu_.uuid);
    if (sig == nullptr || !sig->energy_mj) return;
    MilliJoules energy = std::max<MilliJoules>(0, *sig->energy_mj);
    out_.energy_mj = energy;
    std::vector<std::uint64_t> weights;
    for (auto& [ref, w] : work_) weights.push_back(static_cast<std::uint64_t>(w.usage.compute_us));
    weights.push_back(static_cast<std::uint64_t>(out_.unattributed_us));
    weights.push_back(static_cast<std::uint64_t>(out_.idle_us));
    auto parts = Apportion(energy, weights);
    std::size_t i = 0;
    for (auto& [ref, w] : work_) w.usage.energy_mj = parts[i++];
    out_.unattributed_energy_mj = parts[i++];
    out_.idle_energy_mj = parts[i];
  }

  // SM/tensor/DRAM activity of each unit (the GPU, or each MIG instance, scaled to the physical
  // GPU by its slice time) goes to the consumers with a process on it: all of it when one is
  // there (measured), else split by their compute (estimated, "compute-share"). A unit with
  // activity but no process keeps it: activity is a signal, not a conserved quantity.
  void Activities() {
    if (migs_.empty()) {
      if (const DeviceSignals* sig = SignalFor(gpu_.uuid); sig && sig->activity)
        SplitActivity(*sig, dt_, [&](const Work&) { return true; });
      return;
    }
    auto slice_time = SliceTimes();
    for (std::size_t i = 0; i < migs_.size(); ++i) {
      const MigInstance* m = migs_[i];
      if (const DeviceSignals* sig = SignalFor(m->uuid); sig && sig->activity)
        SplitActivity(*sig, slice_time[i],
                      [&](const Work& w) { return w.process_units.count(m->uuid.value) > 0; });
    }
  }

  template <typename Pred>
  void SplitActivity(const DeviceSignals& sig, GpuMicros unit_time, Pred in_unit) {
    std::vector<Work*> present;
    for (auto& [ref, w] : work_)
      if (in_unit(w) && w.has_process) present.push_back(&w);
    if (present.empty() || dt_ == 0) return;
    std::vector<std::uint64_t> weights;
    weights.reserve(present.size());
    for (Work* w : present)
      weights.push_back(static_cast<std::uint64_t>(std::max<GpuMicros>(0, w->usage.compute_us)));
    if (std::all_of(weights.begin(), weights.end(), [](auto x) { return x == 0; }))
      for (std::size_t i = 0; i < present.size(); ++i)
        weights[i] =
            static_cast<std::uint64_t>(std::max<SharePpd>(1, present[i]->usage.allocated_ppd));
    weights.push_back(0);
    const Quality quality = present.size() == 1 ? Quality::kMeasured : Quality::kEstimated;
    auto split = [&](GpuMicros relative, GpuMicros Activity::*field) {
      GpuMicros scaled = static_cast<GpuMicros>(
          static_cast<__int128>(std::clamp<GpuMicros>(relative, 0, dt_)) * unit_time / dt_);
      auto parts = Apportion(scaled, weights);
      for (std::size_t i = 0; i < present.size(); ++i)
        present[i]->usage.activity.*field += parts[i];
    };
    split(sig.activity->sm_active_us, &Activity::sm_active_us);
    split(sig.activity->sm_occupancy_us, &Activity::sm_occupancy_us);
    split(sig.activity->tensor_active_us, &Activity::tensor_active_us);
    split(sig.activity->dram_active_us, &Activity::dram_active_us);
    for (Work* w : present) {
      w->usage.activity_quality = Combine(w->usage.activity_quality, quality);
      w->activity_rules.insert(std::string(ToString(sig.activity_source)));
      if (present.size() > 1) w->activity_rules.insert("compute-share");
    }
  }

  const NodeSnapshot& snap_;
  const PhysicalGpu& gpu_;
  const GpuInputs& in_;
  std::vector<const MigInstance*> migs_;
  std::vector<const ProcessObservation*> procs_;
  std::map<ConsumerRef, Work> work_;
  GpuMicros server_sm_us_ = 0;  // Σ the MPS server's per-process samples (its clients' work)
  DeviceUsage out_;
  Micros dt_ = 0;
};

}  // namespace

std::vector<DeviceUsage> Attribute(const NodeSnapshot& snapshot) {
  // One pass to hand each GPU its own grants and processes: a node of 8 GPUs and 200
  // containers is attributed in O(GPUs + grants + processes), not their product.
  std::vector<GpuInputs> inputs(snapshot.gpus.size());
  std::unordered_map<std::string_view, std::size_t> gpu_of;  // GPU or MIG uuid -> GPU index
  for (std::size_t i = 0; i < snapshot.gpus.size(); ++i)
    gpu_of.emplace(snapshot.gpus[i].uuid.value, i);
  for (const MigInstance& m : snapshot.mig_instances) {
    auto it = gpu_of.find(m.parent.value);
    if (it == gpu_of.end()) continue;
    inputs[it->second].migs.push_back(&m);
    gpu_of.emplace(m.uuid.value, it->second);
  }
  for (const Grant& g : snapshot.grants)
    if (auto it = gpu_of.find(BaseDeviceId(g.device_id)); it != gpu_of.end())
      inputs[it->second].grants.push_back(&g);
  for (const ProcessObservation& p : snapshot.processes)
    if (auto it = gpu_of.find(BaseDeviceId(p.device.value)); it != gpu_of.end())
      inputs[it->second].processes.push_back(&p);
  std::vector<DeviceUsage> out;
  out.reserve(snapshot.gpus.size());
  for (std::size_t i = 0; i < snapshot.gpus.size(); ++i)
    out.push_back(GpuAttributor(snapshot, snapshot.gpus[i], inputs[i]).Run());
  return out;
}

}  // namespace gpuledger::attribution
