#include "ledger/snapshot.h"

#include <algorithm>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "billing/reconciled_prices.h"
#include "common/dense_id_map.h"
#include "report/report.h"

namespace gpuledger::ledger {

// Builds a Snapshot from a store scan, rows by key: each key's strings are interned once, when
// the store first names it, and a row maps its keys to the snapshot's indexes. A usage row finds
// its device-hour through the hour's GPU keys (rows come in hour order). Appending (a refresh),
// the scan's hours follow the snapshot's rows and its strings join the snapshot's dictionaries.
class SnapshotLoader final : public store::LedgerScan {
 public:
  SnapshotLoader(Snapshot& s, bool append)
      : s_(s),
        append_(append),
        devices_at_start_(s.devices_.size()),
        rows_at_start_(s.usage_.size()),
        reconciliations_at_start_(s.reconciliations_.size()) {
    if (!append_) {
      s_.rules_.push_back("");
      s_.device_ids_.push_back("");
      s_.label_sets_.emplace_back();
      label_ids_.insert(0);
      return;
    }
    for (std::size_t i = 0; i < s_.label_sets_.size(); ++i)
      label_ids_.insert(static_cast<std::uint32_t>(i));
    for (std::size_t i = 1; i < s_.rules_.size(); ++i)
      rule_ids_.emplace(s_.rules_[i], static_cast<std::uint16_t>(i));
    for (std::size_t i = 1; i < s_.device_ids_.size(); ++i)
      device_id_ids_.emplace(s_.device_ids_[i], static_cast<std::uint32_t>(i));
    for (std::size_t i = 0; i < s_.placements_.size(); ++i)
      placement_ids_.emplace(s_.placements_[i], static_cast<std::uint32_t>(i));
    for (std::size_t i = 0; i < s_.contexts_.size(); ++i)
      context_ids_.emplace(s_.contexts_[i], static_cast<std::uint32_t>(i));
    // A scan's keys are the ledger's: a consumer the snapshot holds keeps its index.
    for (std::size_t i = 0; i < s_.consumer_keys_.size(); ++i)
      consumers_.Emplace(s_.consumer_keys_[i]).first = static_cast<std::uint32_t>(i);
  }

  bool ByKey() const override { return true; }
  Status OnDeviceHour(const DeviceHour& /*device*/) override { return NotKeyed(); }
  Status OnUsage(const UsageRow& /*usage*/) override { return NotKeyed(); }

  Status OnReconciliation(const Reconciliation& r) override {
    s_.reconciliations_.push_back(r);
    return Status::Ok();
  }
  Status OnGpuKey(std::int64_t key, const GpuUuid& gpu) override {
    gpus_.Emplace(key).first = gpu;
    return Status::Ok();
  }
  Status OnPlacementKey(std::int64_t key, const DeviceHour& placement) override {
    placement_keys_.Emplace(key).first = placement;
    return Status::Ok();
  }
  // A key per consumer: each becomes the snapshot's next consumer (appending, unless the
  // snapshot has it already).
  Status OnConsumerKey(std::int64_t key, const ConsumerInfo& consumer) override {
    auto [index, added] = consumers_.Emplace(key);
    if (!added) return Status::Ok();  // appending: the snapshot has it
    index = static_cast<std::uint32_t>(s_.consumers_.size());
    s_.consumer_keys_.push_back(key);
    ConsumerInfo& c = s_.consumers_.emplace_back();
    c.ref = consumer.ref;
    c.owner_kind = consumer.owner_kind;
    c.owner_name = consumer.owner_name;
    c.annotated_gpu_fraction = consumer.annotated_gpu_fraction;
    c.annotated_gpu_memory_bytes = consumer.annotated_gpu_memory_bytes;
    // The labels its rows were written with, each set kept once.
    s_.consumer_labels_.push_back(
        {LabelSetOf(consumer.labels), LabelSetOf(consumer.namespace_labels)});
    return Status::Ok();
  }
  Status OnContextKey(std::int64_t key, const UsageRow& c) override {
    Context& context = contexts_.Emplace(key).first;
    context = Context{c.node, c.gpu_model, c.sharing};
    context.row.compute_quality = c.compute_quality;
    context.row.activity_quality = c.activity_quality;
    context.row.compute_rule = RuleOf(c.compute_rule);
    context.row.activity_rule = RuleOf(c.activity_rule);
    context.row.share_source = RuleOf(c.share_source);
    context.row.device_id = DeviceIdOf(c.device_id);
    return Status::Ok();
  }

  Status OnKeyedDeviceHour(const DeviceHour& d, std::int64_t gpu_key,
                           std::int64_t placement_key) override {
    // A GPU keeps its placement from hour to hour: its last one is checked first.
    DevicePlacement& placed = device_placements_.Emplace(gpu_key).first;
    if (placed.placement_key != placement_key) {
      const DeviceHour* p = placement_keys_.Find(placement_key);
      const GpuUuid* gpu = gpus_.Find(gpu_key);
      if (p == nullptr || gpu == nullptr) return MissingKey("device-hour");
      placed.placement_key = placement_key;
      placed.placement = PlacementOf(p->cluster, p->node, p->gpu_model, *gpu, p->sharing,
                                     p->pricing_class, p->layout);
      placed.price_state = p->price_state;
    }
    if (d.hour_us != hour_us_ || !hour_started_) StartHour(d.hour_us);
    hour_gpus_.Emplace(gpu_key).first =
        HourDevice{static_cast<std::uint32_t>(s_.devices_.size()), placed.placement};
    DeviceFigures f;
    static_cast<DeviceHourAmounts&>(f) = d;
    f.hour_us = d.hour_us;
    f.placement = placed.placement;
    f.price_state = placed.price_state;
    s_.devices_.push_back(f);
    hour_sums_->AddDevice(d);
    return Status::Ok();
  }

  Status OnKeyedUsage(const UsageRow& u, std::int64_t gpu_key, std::int64_t consumer_key,
                      std::int64_t context_key) override {
    if (u.hour_us != hour_us_ || !hour_started_) StartHour(u.hour_us);
    const HourDevice* device = hour_gpus_.Find(gpu_key);
    if (device == nullptr) return Status::Ok();  // no device-hour: not reported
    Context* c = contexts_.Find(context_key);
    const std::uint32_t* consumer = consumers_.Find(consumer_key);
    if (c == nullptr || consumer == nullptr) return MissingKey("usage row");
    Pending p;
    p.device = device->index;
    // A context names one device's node and model: its rows mostly sit on one placement.
    if (c->device_placement != device->placement) {
      const Placement& dp = s_.placements_[device->placement];
      c->device_placement = device->placement;
      RowContext row = c->row;
      row.placement = c->node == dp.node && c->gpu_model == dp.gpu_model && c->sharing == dp.sharing
                          ? device->placement
                          : PlacementOf(dp.cluster, c->node, c->gpu_model, dp.gpu, c->sharing,
                                        dp.pricing_class, dp.layout);
      c->row_context = ContextOf(row);
    }
    p.context = c->row_context;
    p.consumer = *consumer;
    p.figures = UsageFigures{cost::WeightsOf(u), u.activity};
    hour_rows_.push_back(p);
    hour_sums_->AddUsage(p.figures.weights, p.figures.activity);
    return Status::Ok();
  }

  Status Finish() {
    FlushHour();
    // Rows were appended grouped by device in device order, each counted at its device + 1:
    // the counts summed are the offsets.
    SizeRowCounts();
    for (std::size_t d = devices_at_start_; d < s_.devices_.size(); ++d)
      s_.first_usage_[d + 1] += s_.first_usage_[d];
    ComputeUnusedMemory();
    ApplyReconciliations();
    s_.SumHours();
    return Status::Ok();
  }

 private:
  // What a usage row takes from its context key.
  struct Context {
    std::string node;
    std::string gpu_model;
    SharingMode sharing = SharingMode::kExclusive;
    RowContext row;  // its qualities and rules (the placement is the row's)
    // Its rows' RowContext on the last device placement seen (kNone: none yet).
    std::uint32_t device_placement = kNone;
    std::uint32_t row_context = 0;
  };

  // A device of the hour being read.
  struct HourDevice {
    std::uint32_t index = 0;  // in Snapshot::devices()
    std::uint32_t placement = 0;
  };

  // A GPU key's placement as last seen.
  struct DevicePlacement {
    std::int64_t placement_key = -1;
    std::uint32_t placement = 0;
    PriceState price_state = PriceState::kPriced;
  };

  static constexpr std::uint32_t kNone = UINT32_MAX;
  static Status NotKeyed() { return Internal("the snapshot reads the ledger's rows by key"); }
  static Status MissingKey(std::string_view what) {
    return Internal(fmt::format("the ledger scan sent a {} before the strings of its keys", what));
  }

  struct Pending {
    std::uint32_t device = 0;
    std::uint32_t context = 0;
    std::uint32_t consumer = 0;
    UsageFigures figures;
  };

  // The index of a placement, added when new. Called only when a GPU's or a context's last
  // placement (DevicePlacement, Context) does not match: rarely.
  std::uint32_t PlacementOf(const std::string& cluster, const std::string& node,
                            const std::string& model, const GpuUuid& gpu, SharingMode sharing,
                            const std::string& pricing_class, const std::string& layout) {
    Placement p{cluster, node, model, gpu, sharing, pricing_class, layout};
    auto [it, added] =
        placement_ids_.try_emplace(p, static_cast<std::uint32_t>(s_.placements_.size()));
    if (added) s_.placements_.push_back(std::move(p));
    return it->second;
  }

  // The index of a label set, added when new.
  std::uint32_t LabelSetOf(const LabelMap& labels) {
    if (labels.empty()) return 0;
    if (auto it = label_ids_.find(labels); it != label_ids_.end()) return *it;
    const auto id = static_cast<std::uint32_t>(s_.label_sets_.size());
    s_.label_sets_.push_back(labels);
    label_ids_.insert(id);
    return id;
  }

  // The index of a row context, added when new (as rarely as PlacementOf).
  std::uint32_t ContextOf(const RowContext& row) {
    auto [it, added] =
        context_ids_.try_emplace(row, static_cast<std::uint32_t>(s_.contexts_.size()));
    if (added) s_.contexts_.push_back(row);
    return it->second;
  }

  // The index of a string in one of the snapshot's string dictionaries (0 is ""), added when
  // new: a rule text, a device id.
  template <typename Id>
  static Id Intern(const std::string& text, std::unordered_map<std::string, Id>& ids,
                   std::vector<std::string>& texts) {
    if (text.empty()) return 0;
    auto [it, added] = ids.try_emplace(text, static_cast<Id>(texts.size()));
    if (added) texts.push_back(text);
    return it->second;
  }
  std::uint16_t RuleOf(const std::string& rule) { return Intern(rule, rule_ids_, s_.rules_); }
  std::uint32_t DeviceIdOf(const std::string& id) {
    return Intern(id, device_id_ids_, s_.device_ids_);
  }

  // A new hour: the last one's rows go to the columns.
  void StartHour(Micros hour_us) {
    FlushHour();
    if (hour_started_ && !reserved_) ReserveLikeTheFirstHour(hour_us);
    hour_started_ = true;
    hour_us_ = hour_us;
    hour_gpus_.clear();
    hour_sums_ = &s_.hour_sums_[hour_us];
  }

  // Once the first hour is in: room for the range's other hours at its size. Untouched room is
  // only address space, and growing by doubling would copy the columns and fault their pages
  // in two or three times over.
  void ReserveLikeTheFirstHour(Micros next_hour_us) {
    reserved_ = true;
    const Micros hours = (s_.range_.to_us - next_hour_us) / kMicrosPerHour + 1;
    if (hours <= 1) return;
    // At most 8M entries a column (35 days of 10,000 GPUs): a window far longer than its data
    // must not ask for more address space than the machine would lend.
    const auto room = [&](std::size_t before, std::size_t now) {
      return before +
             std::min<std::size_t>((now - before) * static_cast<std::size_t>(hours) * 11 / 10,
                                   std::size_t{1} << 23);
    };
    const std::size_t devices = room(devices_at_start_, s_.devices_.size());
    s_.devices_.reserve(devices);
    s_.first_usage_.reserve(devices + 1);
    const std::size_t rows = room(rows_at_start_, s_.usage_.size());
    s_.usage_.ForEachColumn([rows](auto& column) { column.reserve(rows); });
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
      u.push_back(p.consumer, p.context, p.figures);
    }
    hour_rows_.clear();
  }

  // As the report computes it: capacity less the unattributed and the rows' memory-time,
  // summed saturating in row order.
  void ComputeUnusedMemory() {
    for (std::size_t d = devices_at_start_; d < s_.devices_.size(); ++d) {
      DeviceFigures f = s_.devices_[d];
      const KibSeconds capacity =
          cost::MemoryCapacityKibSeconds(f.memory_total_bytes, f.metered_us);
      KibSeconds used = f.unattributed_memory_kib_s;
      for (std::uint32_t i = s_.first_usage_[d]; i < s_.first_usage_[d + 1]; ++i)
        used = report::AddKibSeconds(used, s_.usage_.figures[i].weights.memory_kib_s);
      f.unused_memory_kib_s = static_cast<KibSeconds>(
          std::clamp<__int128>(static_cast<__int128>(capacity) - used, 0, INT64_MAX));
      s_.devices_.Set(d, f);
    }
  }

  // Each reconciled node-day's device-hours at their shares of the bill, in device order (as
  // billing::ApplyReconciliations does over the same rows).
  void ApplyReconciliations() {
    std::vector<std::size_t> indexes;
    std::vector<DeviceHour> node_day;
    for (std::size_t i = reconciliations_at_start_; i < s_.reconciliations_.size(); ++i) {
      const Reconciliation& r = s_.reconciliations_[i];
      indexes.clear();
      node_day.clear();
      const auto [first, last] = s_.DeviceRange(r.day_us, r.day_us + kMicrosPerDay);
      for (std::size_t d = first; d < last; ++d) {
        const DeviceFigures f = s_.devices_[d];
        if (s_.placements_[f.placement].node != r.node) continue;
        indexes.push_back(d);
        DeviceHour h;
        h.price_nanos = f.price_nanos;
        h.metered_us = f.metered_us;
        node_day.push_back(h);
      }
      const std::vector<Nanos> shares = billing::ScaleToBill(r.billed_nanos, node_day);
      for (std::size_t k = 0; k < indexes.size(); ++k) {
        DeviceFigures f = s_.devices_[indexes[k]];
        s_.reconciled_[static_cast<std::uint32_t>(indexes[k])] =
            Snapshot::Reconciled{f.price_nanos, static_cast<std::uint32_t>(i)};
        f.price_nanos = shares[k];
        s_.devices_.Set(indexes[k], f);
      }
    }
  }

  struct PlacementHash {
    std::size_t operator()(const Placement& p) const {
      return std::hash<std::string>()(p.gpu.value) ^ (std::hash<std::string>()(p.node) << 1);
    }
  };

  Snapshot& s_;
  const bool append_;
  // Where the snapshot's rows stood before this scan: it adds the rows after them.
  const std::size_t devices_at_start_;
  const std::size_t rows_at_start_;
  const std::size_t reconciliations_at_start_;
  report::SumCheck* hour_sums_ = nullptr;  // the current hour's
  std::unordered_map<Placement, std::uint32_t, PlacementHash> placement_ids_;
  std::map<RowContext, std::uint32_t> context_ids_;
  // Label sets by their maps (indexes into label_sets_, compared by what they index).
  struct ByLabels {
    using is_transparent = void;
    const std::vector<LabelMap>* sets;
    const LabelMap& Of(std::uint32_t i) const { return (*sets)[i]; }
    const LabelMap& Of(const LabelMap& m) const { return m; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return Of(a) < Of(b);
    }
  };
  std::set<std::uint32_t, ByLabels> label_ids_{ByLabels{&s_.label_sets_}};
  std::unordered_map<std::string, std::uint16_t> rule_ids_;
  std::unordered_map<std::string, std::uint32_t> device_id_ids_;
  bool hour_started_ = false;
  bool reserved_ = false;
  Micros hour_us_ = 0;
  DenseIdMap<HourDevice> hour_gpus_;  // the hour's devices by GPU key
  // The scan's keys and what they stand for.
  DenseIdMap<GpuUuid> gpus_;
  DenseIdMap<DeviceHour> placement_keys_;
  DenseIdMap<std::uint32_t> consumers_;
  DenseIdMap<Context> contexts_;
  DenseIdMap<DevicePlacement> device_placements_;  // by GPU key
  std::vector<Pending> hour_rows_;
};

Result<std::shared_ptr<const Snapshot>> Snapshot::Load(store::LedgerStore& store,
                                                       const TimeRange& range) {
  return Load(store, range, nullptr);
}

Result<std::shared_ptr<const Snapshot>> Snapshot::Load(store::LedgerStore& store,
                                                       const TimeRange& range,
                                                       std::shared_ptr<Snapshot> recycled) {
  std::shared_ptr<Snapshot> snapshot = std::move(recycled);
  if (snapshot == nullptr || snapshot.use_count() > 1) {  // held elsewhere: never overwritten
    snapshot = std::make_shared<Snapshot>();
  } else {
    snapshot->Clear();
  }
  snapshot->range_ = billing::WholeDays(range.from_us, range.to_us);
  SnapshotLoader loader(*snapshot, /*append=*/false);
  if (Status s = store.Scan(snapshot->range_, loader); !s) return s.error();
  if (Status s = loader.Finish(); !s) return s.error();
  return std::shared_ptr<const Snapshot>(std::move(snapshot));
}

Result<std::shared_ptr<const Snapshot>> Snapshot::Refresh(store::LedgerStore& store,
                                                          std::shared_ptr<const Snapshot> kept,
                                                          const TimeRange& range,
                                                          const TimeRange& changed) {
  const TimeRange days = billing::WholeDays(range.from_us, range.to_us);
  auto whole = [&] {
    return Load(store, range, std::const_pointer_cast<Snapshot>(std::move(kept)));
  };
  if (kept == nullptr || kept->range_.from_us > days.from_us || kept->range_.to_us <= days.from_us)
    return whole();
  // Read again from the first changed hour in the range (from its day's start when that day
  // was billed: a bill scales its node-days whole), and the days the range adds.
  Micros reload_from = std::min(kept->range_.to_us, days.to_us);
  if (const Micros from = std::max(changed.from_us, days.from_us); from < changed.to_us) {
    const Micros hour = from - from % kMicrosPerHour;
    const bool billed =
        std::any_of(kept->reconciliations_.begin(), kept->reconciliations_.end(),
                    [&](const Reconciliation& r) { return r.day_us == DayStart(hour); });
    reload_from = std::min(reload_from, billed ? DayStart(hour) : hour);
  }
  if (reload_from <= days.from_us) return whole();

  std::shared_ptr<Snapshot> s = kept.use_count() == 1
                                    ? std::const_pointer_cast<Snapshot>(std::move(kept))
                                    : std::make_shared<Snapshot>(*kept);
  kept = nullptr;
  s->Keep(days.from_us, reload_from);
  s->range_ = days;
  if (reload_from < days.to_us) {
    SnapshotLoader loader(*s, /*append=*/true);
    if (Status st = store.Scan({reload_from, days.to_us}, loader); !st) return st.error();
    if (Status st = loader.Finish(); !st) return st.error();
  }
  return std::shared_ptr<const Snapshot>(std::move(s));
}

void Snapshot::Keep(Micros from_us, Micros to_us) {
  const auto [first, last] = DeviceRange(from_us, to_us);
  const std::uint32_t row_first = first_usage_.empty() ? 0 : first_usage_[first];
  const std::uint32_t row_last = first_usage_.empty() ? 0 : first_usage_[last];
  KeepRange(devices_, first, last);
  if (!first_usage_.empty()) {
    KeepRange(first_usage_, first, last + 1);
    for (std::uint32_t& offset : first_usage_) offset -= row_first;
  }
  usage_.ForEachColumn([&](auto& column) { KeepRange(column, row_first, row_last); });

  // Bills of the kept days, and the kept devices' prices as billed, renumbered.
  std::vector<std::uint32_t> renumbered(reconciliations_.size(), UINT32_MAX);
  std::vector<Reconciliation> bills;
  for (std::size_t i = 0; i < reconciliations_.size(); ++i) {
    if (reconciliations_[i].day_us < from_us || reconciliations_[i].day_us >= to_us) continue;
    renumbered[i] = static_cast<std::uint32_t>(bills.size());
    bills.push_back(std::move(reconciliations_[i]));
  }
  reconciliations_ = std::move(bills);
  std::unordered_map<std::uint32_t, Reconciled> reconciled;
  for (const auto& [d, r] : reconciled_)
    if (d >= first && d < last)
      reconciled.emplace(static_cast<std::uint32_t>(d - first),
                         Reconciled{r.modelled_nanos, renumbered[r.reconciliation]});
  reconciled_ = std::move(reconciled);

  std::erase_if(hour_sums_,
                [&](const auto& hour) { return hour.first < from_us || hour.first >= to_us; });
  SumHours();
  if (first > 0) DropUnusedEntries();
}

void Snapshot::DropUnusedEntries() {
  constexpr std::uint32_t kDropped = UINT32_MAX;
  std::vector<std::uint32_t> consumer_index(consumers_.size(), kDropped);
  std::vector<std::uint32_t> context_index(contexts_.size(), kDropped);
  std::vector<std::uint32_t> placement_index(placements_.size(), kDropped);
  for (std::uint32_t c : usage_.consumer) consumer_index[c] = 0;
  for (std::uint32_t c : usage_.context) context_index[c] = 0;
  for (std::size_t c = 0; c < contexts_.size(); ++c)
    if (context_index[c] != kDropped) placement_index[contexts_[c].placement] = 0;
  for (std::size_t d = 0; d < devices_.size(); ++d) placement_index[devices_[d].placement] = 0;
  auto compact = [](auto& entries, std::vector<std::uint32_t>& index) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (index[i] == kDropped) continue;
      index[i] = static_cast<std::uint32_t>(kept);
      if (kept != i) entries[kept] = std::move(entries[i]);
      ++kept;
    }
    entries.resize(kept);
  };
  compact(consumers_, consumer_index);
  compact(consumer_keys_, consumer_index);
  compact(consumer_labels_, consumer_index);
  // The label sets kept consumers name (the empty set stays first).
  std::vector<std::uint32_t> label_index(label_sets_.size(), kDropped);
  label_index[0] = 0;
  for (const LabelIds& l : consumer_labels_) label_index[l.pod] = label_index[l.space] = 0;
  compact(label_sets_, label_index);
  for (LabelIds& l : consumer_labels_) {
    l.pod = label_index[l.pod];
    l.space = label_index[l.space];
  }
  compact(contexts_, context_index);
  compact(placements_, placement_index);
  // The device ids kept contexts name ("" stays first).
  std::vector<std::uint32_t> device_id_index(device_ids_.size(), kDropped);
  device_id_index[0] = 0;
  for (const RowContext& c : contexts_) device_id_index[c.device_id] = 0;
  compact(device_ids_, device_id_index);
  for (std::uint32_t& c : usage_.consumer) c = consumer_index[c];
  for (std::uint32_t& c : usage_.context) c = context_index[c];
  for (RowContext& c : contexts_) {
    c.placement = placement_index[c.placement];
    c.device_id = device_id_index[c.device_id];
  }
  for (std::size_t d = 0; d < devices_.size(); ++d) {
    DeviceFigures f = devices_[d];
    f.placement = placement_index[f.placement];
    devices_.Set(d, f);
  }
}

void Snapshot::Clear() {
  devices_.clear();
  first_usage_.clear();
  usage_.ForEachColumn([](auto& column) { column.clear(); });
  consumers_.clear();
  consumer_keys_.clear();
  consumer_labels_.clear();
  label_sets_.clear();
  placements_.clear();
  contexts_.clear();
  rules_.clear();
  device_ids_.clear();
  reconciliations_.clear();
  reconciled_.clear();
  hour_sums_.clear();
  sums_ = {};
}

void Snapshot::SumHours() {
  sums_ = {};
  for (const auto& [hour, sums] : hour_sums_) sums_.Merge(sums);
}

std::pair<std::size_t, std::size_t> Snapshot::DeviceRange(Micros from_us, Micros to_us) const {
  // The first device at or after hour t, from `low` on (devices are in hour order).
  auto first_at = [&](std::size_t low, Micros t) {
    std::size_t high = devices_.size();
    while (low < high) {
      const std::size_t mid = low + (high - low) / 2;
      if (devices_[mid].hour_us < t)
        low = mid + 1;
      else
        high = mid;
    }
    return low;
  };
  const std::size_t first = first_at(0, from_us);
  return {first, first_at(first, to_us)};
}

void Snapshot::FillDeviceNumbers(const DeviceFigures& f, DeviceHour& out) const {
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
