#include "ledger/snapshot.h"

#include <algorithm>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "billing/reconciled_prices.h"
#include "report/report.h"

namespace gpuledger::ledger {

using LabelMap = std::map<std::string, std::string>;

// Builds a Snapshot from a store scan, rows by key: each key's strings are interned once, when
// the store first names it, and a row maps its keys to the snapshot's indexes. A usage row finds
// its device-hour through the hour's GPU keys (rows come in hour order).
class SnapshotLoader final : public store::LedgerScan {
 public:
  explicit SnapshotLoader(Snapshot& s) : s_(s) { s_.rules_.push_back(""); }

  bool ByKey() const override { return true; }
  Status OnDeviceHour(const DeviceHour& /*device*/) override { return NotKeyed(); }
  Status OnUsage(const UsageRow& /*usage*/) override { return NotKeyed(); }

  Status OnReconciliation(const Reconciliation& r) override {
    s_.reconciliations_.push_back(r);
    return Status::Ok();
  }
  Status OnPodLabel(const std::string& ns, const std::string& pod, const std::string& uid,
                    const std::string& key, const std::string& value) override {
    pod_labels_[{ns, pod, uid}][key] = value;
    return Status::Ok();
  }
  Status OnNamespaceLabel(const std::string& ns, const std::string& key,
                          const std::string& value) override {
    s_.namespace_labels_[ns][key] = value;
    return Status::Ok();
  }

  Status OnGpuKey(std::int64_t key, const GpuUuid& gpu) override {
    gpus_[key] = gpu;
    return Status::Ok();
  }
  Status OnPlacementKey(std::int64_t key, const DeviceHour& placement) override {
    placement_keys_[key] = placement;
    return Status::Ok();
  }
  Status OnConsumerKey(std::int64_t key, const ConsumerInfo& consumer) override {
    consumers_[key] = ConsumerOf(consumer);
    return Status::Ok();
  }
  Status OnContextKey(std::int64_t key, const UsageRow& c) override {
    contexts_[key] = Context{c.node,
                             c.gpu_model,
                             c.sharing,
                             c.compute_quality,
                             c.activity_quality,
                             RuleOf(c.compute_rule),
                             RuleOf(c.activity_rule),
                             RuleOf(c.share_source)};
    return Status::Ok();
  }

  Status OnKeyedDeviceHour(const DeviceHour& d, std::int64_t gpu_key,
                           std::int64_t placement_key) override {
    auto keys = device_placements_.find({gpu_key, placement_key});
    if (keys == device_placements_.end()) {
      const DeviceHour& p = placement_keys_.at(placement_key);
      const std::uint32_t placement = PlacementOf(p.cluster, p.node, p.gpu_model, gpus_.at(gpu_key),
                                                  p.sharing, p.pricing_class);
      keys =
          device_placements_.try_emplace({gpu_key, placement_key}, placement, p.price_state).first;
    }
    if (d.hour_us != hour_us_ || !hour_started_) StartHour(d.hour_us);
    hour_gpus_[gpu_key] = static_cast<std::uint32_t>(s_.devices_.size());
    DeviceFigures f;
    f.hour_us = d.hour_us;
    f.placement = keys->second.first;
    f.price_state = keys->second.second;
    f.price_nanos = d.price_nanos;
    f.energy_price_nanos = d.energy_price_nanos;
    f.metered_us = d.metered_us;
    f.unmetered_us = d.unmetered_us;
    f.unallocated_us = d.unallocated_us;
    f.busy_us = d.busy_us;
    f.idle_us = d.idle_us;
    f.unattributed_us = d.unattributed_us;
    f.memory_total_bytes = d.memory_total_bytes;
    f.unattributed_memory_kib_s = d.unattributed_memory_kib_s;
    f.energy_mj = d.energy_mj;
    f.idle_energy_mj = d.idle_energy_mj;
    f.unattributed_energy_mj = d.unattributed_energy_mj;
    s_.devices_.push_back(f);
    s_.sums_.AddDevice(d);
    return Status::Ok();
  }

  Status OnKeyedUsage(const UsageRow& u, std::int64_t gpu_key, std::int64_t consumer_key,
                      std::int64_t context_key) override {
    if (u.hour_us != hour_us_ || !hour_started_) StartHour(u.hour_us);
    auto device = hour_gpus_.find(gpu_key);
    if (device == hour_gpus_.end()) return Status::Ok();  // no device-hour: not reported
    const DeviceFigures& d = s_.devices_[device->second];
    const Placement& dp = s_.placements_[d.placement];
    const Context& c = contexts_.at(context_key);
    Pending p;
    p.device = device->second;
    p.placement =
        c.node == dp.node && c.gpu_model == dp.gpu_model && c.sharing == dp.sharing
            ? d.placement
            : PlacementOf(dp.cluster, c.node, c.gpu_model, dp.gpu, c.sharing, dp.pricing_class);
    p.consumer = consumers_.at(consumer_key);
    p.weights = cost::WeightsOf(u);
    p.activity = u.activity;
    p.compute_quality = c.compute_quality;
    p.activity_quality = c.activity_quality;
    p.compute_rule = c.compute_rule;
    p.activity_rule = c.activity_rule;
    p.share_source = c.share_source;
    hour_rows_.push_back(p);
    s_.sums_.AddUsage(p.weights, p.activity);
    return Status::Ok();
  }

  Status Finish() {
    FlushHour();
    AttachLabels();
    // Rows were appended grouped by device in device order, each counted at its device + 1:
    // the counts summed are the offsets.
    SizeRowCounts();
    for (std::size_t d = 0; d < s_.devices_.size(); ++d)
      s_.first_usage_[d + 1] += s_.first_usage_[d];
    ComputeUnusedMemory();
    ApplyReconciliations();
    return Status::Ok();
  }

 private:
  // What a usage row takes from its context key.
  struct Context {
    std::string node;
    std::string gpu_model;
    SharingMode sharing = SharingMode::kExclusive;
    Quality compute_quality = Quality::kNone;
    Quality activity_quality = Quality::kNone;
    std::uint16_t compute_rule = 0;
    std::uint16_t activity_rule = 0;
    std::uint16_t share_source = 0;
  };

  struct PairHash {
    std::size_t operator()(const std::pair<std::int64_t, std::int64_t>& p) const {
      return std::hash<std::int64_t>()(p.first * 1'000'003 ^ p.second);
    }
  };

  static Status NotKeyed() { return Internal("the snapshot reads the ledger's rows by key"); }

  struct Pending {
    std::uint32_t device = 0;
    std::uint32_t placement = 0;
    std::uint32_t consumer = 0;
    cost::ConsumerWeights weights;
    Activity activity;
    Quality compute_quality = Quality::kNone;
    Quality activity_quality = Quality::kNone;
    std::uint16_t compute_rule = 0;
    std::uint16_t activity_rule = 0;
    std::uint16_t share_source = 0;
  };

  std::uint32_t PlacementOf(const std::string& cluster, const std::string& node,
                            const std::string& model, const GpuUuid& gpu, SharingMode sharing,
                            const std::string& pricing_class) {
    // A GPU keeps its placement from hour to hour: compare with its last one before hashing.
    auto [last, fresh] = last_placement_.try_emplace(gpu.value, 0);
    if (!fresh) {
      const Placement& p = s_.placements_[last->second];
      if (p.node == node && p.gpu_model == model && p.sharing == sharing && p.cluster == cluster &&
          p.pricing_class == pricing_class)
        return last->second;
    }
    Placement p{cluster, node, model, gpu, sharing, pricing_class};
    auto [it, added] =
        placement_ids_.try_emplace(p, static_cast<std::uint32_t>(s_.placements_.size()));
    if (added) s_.placements_.push_back(std::move(p));
    last->second = it->second;
    return it->second;
  }

  std::uint32_t ConsumerOf(const ConsumerInfo& c) {
    key_.clear();
    for (const std::string* part : {&c.ref.namespace_name, &c.ref.pod, &c.ref.pod_uid.value,
                                    &c.ref.container, &c.owner_kind, &c.owner_name}) {
      key_ += *part;
      key_ += '\x1f';
    }
    auto [it, added] =
        consumer_ids_.try_emplace(key_, static_cast<std::uint32_t>(s_.consumers_.size()));
    if (added) {
      ConsumerInfo info;
      info.ref = c.ref;
      info.owner_kind = c.owner_kind;
      info.owner_name = c.owner_name;
      s_.consumers_.push_back(std::move(info));
    }
    return it->second;
  }

  std::uint16_t RuleOf(const std::string& rule) {
    if (rule.empty()) return 0;
    auto [it, added] = rule_ids_.try_emplace(rule, static_cast<std::uint16_t>(s_.rules_.size()));
    if (added) s_.rules_.push_back(rule);
    return it->second;
  }

  // A new hour: the last one's rows go to the columns.
  void StartHour(Micros hour_us) {
    FlushHour();
    hour_started_ = true;
    hour_us_ = hour_us;
    hour_gpus_.clear();
  }

  // The per-device row counts, grown as devices come in (an hour's before its rows).
  void SizeRowCounts() {
    if (s_.first_usage_.size() < s_.devices_.size() + 1)
      s_.first_usage_.resize(s_.devices_.size() + 1, 0);
  }

  // Appends the hour's rows grouped by device-hour, each device's rows in the store's order.
  void FlushHour() {
    // The store sends rows device by device: already in order but for another store's scan.
    auto by_device = [](const Pending& a, const Pending& b) { return a.device < b.device; };
    if (!std::is_sorted(hour_rows_.begin(), hour_rows_.end(), by_device))
      std::stable_sort(hour_rows_.begin(), hour_rows_.end(), by_device);
    UsageColumns& u = s_.usage_;
    SizeRowCounts();
    for (const Pending& p : hour_rows_) {
      ++s_.first_usage_[p.device + 1];
      u.weights.push_back(p.weights);
      u.activity.push_back(p.activity);
      u.consumer.push_back(p.consumer);
      u.placement.push_back(p.placement);
      u.compute_quality.push_back(p.compute_quality);
      u.activity_quality.push_back(p.activity_quality);
      u.compute_rule.push_back(p.compute_rule);
      u.activity_rule.push_back(p.activity_rule);
      u.share_source.push_back(p.share_source);
    }
    hour_rows_.clear();
  }

  void AttachLabels() {
    for (ConsumerInfo& c : s_.consumers_) {
      if (auto it = pod_labels_.find({c.ref.namespace_name, c.ref.pod, c.ref.pod_uid.value});
          it != pod_labels_.end())
        c.labels = it->second;
      if (auto it = s_.namespace_labels_.find(c.ref.namespace_name);
          it != s_.namespace_labels_.end())
        c.namespace_labels = it->second;
    }
  }

  // As the report computes it: capacity less the unattributed and the rows' memory-time,
  // summed saturating in row order.
  void ComputeUnusedMemory() {
    for (std::size_t d = 0; d < s_.devices_.size(); ++d) {
      DeviceFigures& f = s_.devices_[d];
      const KibSeconds capacity =
          cost::MemoryCapacityKibSeconds(f.memory_total_bytes, f.metered_us);
      KibSeconds used = f.unattributed_memory_kib_s;
      for (std::uint32_t i = s_.first_usage_[d]; i < s_.first_usage_[d + 1]; ++i)
        used = report::AddKibSeconds(used, s_.usage_.weights[i].memory_kib_s);
      f.unused_memory_kib_s = static_cast<KibSeconds>(
          std::clamp<__int128>(static_cast<__int128>(capacity) - used, 0, INT64_MAX));
    }
  }

  // Each reconciled node-day's device-hours at their shares of the bill, in device order (as
  // billing::ApplyReconciliations does over the same rows).
  void ApplyReconciliations() {
    std::vector<std::size_t> indexes;
    std::vector<DeviceHour> node_day;
    for (const Reconciliation& r : s_.reconciliations_) {
      indexes.clear();
      node_day.clear();
      const auto [first, last] = s_.DeviceRange(r.day_us, r.day_us + kMicrosPerDay);
      for (std::size_t d = first; d < last; ++d) {
        const DeviceFigures& f = s_.devices_[d];
        if (s_.placements_[f.placement].node != r.node) continue;
        indexes.push_back(d);
        DeviceHour h;
        h.price_nanos = f.price_nanos;
        h.metered_us = f.metered_us;
        node_day.push_back(h);
      }
      const std::vector<Nanos> shares = billing::ScaleToBill(r.billed_nanos, node_day);
      for (std::size_t k = 0; k < indexes.size(); ++k) {
        DeviceFigures& f = s_.devices_[indexes[k]];
        s_.reconciled_[static_cast<std::uint32_t>(indexes[k])] =
            Snapshot::Reconciled{f.price_nanos, &r};
        f.price_nanos = shares[k];
      }
    }
  }

  struct PlacementHash {
    std::size_t operator()(const Placement& p) const {
      return std::hash<std::string>()(p.gpu.value) ^ (std::hash<std::string>()(p.node) << 1);
    }
  };

  Snapshot& s_;
  std::map<std::tuple<std::string, std::string, std::string>, LabelMap> pod_labels_;
  std::unordered_map<std::string, std::uint32_t> last_placement_;
  std::unordered_map<Placement, std::uint32_t, PlacementHash> placement_ids_;
  std::unordered_map<std::string, std::uint32_t> consumer_ids_;
  std::unordered_map<std::string, std::uint16_t> rule_ids_;
  std::string key_;
  bool hour_started_ = false;
  Micros hour_us_ = 0;
  std::unordered_map<std::int64_t, std::uint32_t> hour_gpus_;  // the hour's devices by GPU key
  // The scan's keys and what they stand for.
  std::unordered_map<std::int64_t, GpuUuid> gpus_;
  std::unordered_map<std::int64_t, DeviceHour> placement_keys_;
  std::unordered_map<std::int64_t, std::uint32_t> consumers_;
  std::unordered_map<std::int64_t, Context> contexts_;
  // (GPU key, placement key) -> the device's placement and price state.
  std::unordered_map<std::pair<std::int64_t, std::int64_t>, std::pair<std::uint32_t, PriceState>,
                     PairHash>
      device_placements_;
  std::vector<Pending> hour_rows_;
};

Result<std::shared_ptr<const Snapshot>> Snapshot::Load(store::LedgerStore& store,
                                                       const TimeRange& range) {
  auto snapshot = std::make_shared<Snapshot>();
  snapshot->range_ = billing::WholeDays(range.from_us, range.to_us);
  SnapshotLoader loader(*snapshot);
  if (Status s = store.Scan(snapshot->range_, loader); !s) return s.error();
  if (Status s = loader.Finish(); !s) return s.error();
  return std::shared_ptr<const Snapshot>(std::move(snapshot));
}

std::pair<std::size_t, std::size_t> Snapshot::DeviceRange(Micros from_us, Micros to_us) const {
  auto by_hour = [](const DeviceFigures& d, Micros t) { return d.hour_us < t; };
  const auto first = std::lower_bound(devices_.begin(), devices_.end(), from_us, by_hour);
  const auto last = std::lower_bound(first, devices_.end(), to_us, by_hour);
  return {static_cast<std::size_t>(first - devices_.begin()),
          static_cast<std::size_t>(last - devices_.begin())};
}

void Snapshot::FillDeviceNumbers(std::size_t d, DeviceHour& out) const {
  const DeviceFigures& f = devices_[d];
  out.hour_us = f.hour_us;
  out.sharing = placements_[f.placement].sharing;
  out.price_state = f.price_state;
  out.price_nanos = f.price_nanos;
  out.energy_price_nanos = f.energy_price_nanos;
  out.metered_us = f.metered_us;
  out.unmetered_us = f.unmetered_us;
  out.unallocated_us = f.unallocated_us;
  out.busy_us = f.busy_us;
  out.idle_us = f.idle_us;
  out.unattributed_us = f.unattributed_us;
  out.memory_total_bytes = f.memory_total_bytes;
  out.unattributed_memory_kib_s = f.unattributed_memory_kib_s;
  out.energy_mj = f.energy_mj;
  out.idle_energy_mj = f.idle_energy_mj;
  out.unattributed_energy_mj = f.unattributed_energy_mj;
}

}  // namespace gpuledger::ledger
