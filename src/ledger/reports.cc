#include "ledger/reports.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "billing/reconciled_prices.h"
#include "ledger/merged_reports.h"
#include "ledger/row_sums.h"
#include "model/compute_band.h"
#include "model/usage.h"

namespace gpuledger::ledger {
namespace {

constexpr std::uint32_t kNoLabels = UINT32_MAX;  // Bucket::idle_labels_from

// The threads that sum `devices` devices.
std::size_t ParallelWorkers(std::size_t devices, const Parallelism& parallelism) {
  return std::clamp<std::size_t>(
      devices / std::max<std::size_t>(parallelism.devices_per_worker, 1), 1,
      std::clamp(std::thread::hardware_concurrency(), 1u, std::max(parallelism.max_workers, 1u)));
}

// One step's report being built.
struct Bucket {
  report::Report report;
  // The consumer whose namespace labels the step's platform row carries: the last row of the
  // idle namespace with namespace labels in the step (as report::BuildReport takes them), or
  // kNoLabels.
  std::uint32_t idle_labels_from = kNoLabels;
};

// A worker's sums for one step.
struct Sums {
  std::vector<RowSums> rows;  // by key id; empty until the worker meets a device of the step
  report::Figures idle;
  report::Figures unattributed;
  report::Totals total;
  std::set<std::string> unpriced;

  // Idle and unattributed carry no quality, rules or activity: their numbers only.
  void AddDevice(const DeviceFigures& f, Nanos idle_cost, Nanos unattributed_cost) {
    idle.allocated_gpu_us += f.unallocated_us;
    idle.compute_gpu_us += f.idle_us;
    idle.memory_kib_s = report::AddKibSeconds(idle.memory_kib_s, f.unused_memory_kib_s);
    idle.energy_mj += f.idle_energy_mj;
    idle.cost_nanos += idle_cost;
    unattributed.compute_gpu_us += f.unattributed_us;
    unattributed.memory_kib_s =
        report::AddKibSeconds(unattributed.memory_kib_s, f.unattributed_memory_kib_s);
    unattributed.energy_mj += f.unattributed_energy_mj;
    unattributed.cost_nanos += unattributed_cost;
    total.device_cost_nanos += f.price_nanos;
    total.metered_us += f.metered_us;
    total.unmetered_us += f.unmetered_us;
    total.busy_us += f.busy_us;
    total.device_hours += 1;
  }

  void Merge(const Sums& o) {
    for (std::size_t k = 0; k < o.rows.size(); ++k) rows[k].Merge(o.rows[k]);
    idle.Add(o.idle);
    unattributed.Add(o.unattributed);
    total.AddSums(o.total);
    unpriced.insert(o.unpriced.begin(), o.unpriced.end());
  }
};

bool ConsumerOnly(const std::vector<report::Dimension>& dims, const Filter& filter) {
  using Kind = report::Dimension::Kind;
  for (const auto& d : dims)
    if (d.kind == Kind::kCluster || d.kind == Kind::kNode || d.kind == Kind::kGpuModel ||
        d.kind == Kind::kDevice || d.kind == Kind::kSharingMode || d.kind == Kind::kEntry)
      return false;
  return !ReadsPlacement(filter);
}

// Report keys as ids, memoised by what a key depends on.
class Keys {
 public:
  Keys(const Snapshot& s, const ReportQuery& q)
      : s_(s),
        q_(q),
        consumer_only_(ConsumerOnly(q.group_by, q.filter)),
        placement_filter_(PlacementPart(q.filter)) {
    if (consumer_only_) by_consumer_.assign(s.consumers().size(), kUnknown);
    if (!placement_filter_.empty()) placement_fails_.assign(s.placements().size(), -1);
  }

  // The key id of usage row i, or -1 when the filter leaves it out, where its placement takes
  // part (ByConsumer() is nullptr). A placement the filter's node, model or mode clauses leave
  // out leaves its rows out without a lookup: a filter for one node reads a sliver.
  std::int32_t Of(std::size_t i) {
    const std::uint32_t consumer = s_.usage().consumer[i];
    const std::uint32_t context = s_.usage().context[i];
    if (!placement_filter_.empty()) {
      const std::uint32_t placement = s_.contexts()[context].placement;
      std::int8_t& fails = placement_fails_[placement];
      if (fails < 0) {
        static const ConsumerInfo kAnyone;  // the clauses read the placement alone
        const Placement& p = s_.placements()[placement];
        fails = Matches(placement_filter_, kAnyone,
                        report::Placed{p.cluster, p.node, p.gpu_model, p.gpu, p.sharing})
                    ? 0
                    : 1;
      }
      if (fails == 1) return -1;
    }
    // A row's context names its placement: memoised by context, a row reads no more.
    const std::uint64_t pair = (static_cast<std::uint64_t>(consumer) << 32) | context;
    auto [it, fresh] = by_pair_.try_emplace(pair, kUnknown);
    if (fresh) it->second = Compute(i);
    return it->second;
  }

  // Where only a row's consumer decides its key: the key id (-1 where the filter leaves it out)
  // of every consumer of usage rows [first_row, last_row), by Snapshot::consumers() index; else
  // nullptr.
  const std::vector<std::int32_t>* ByConsumer(std::uint32_t first_row, std::uint32_t last_row) {
    if (!consumer_only_) return nullptr;
    static const std::string kNone;
    const report::Placed none{kNone, kNone, kNone, GpuUuid{}, SharingMode::kExclusive};
    auto work = [&](std::uint32_t c) {
      if (by_consumer_[c] == kUnknown) by_consumer_[c] = KeyFor(c, none);
    };
    // A window of a few rows a consumer (a day of a 35-day snapshot: the open day of a report
    // over days held summed) works its rows' consumers alone, not the snapshot's every one.
    if (last_row - first_row < 4 * by_consumer_.size()) {
      for (std::uint32_t i = first_row; i < last_row; ++i) work(s_.usage().consumer[i]);
    } else {
      for (std::size_t c = 0; c < by_consumer_.size(); ++c) work(static_cast<std::uint32_t>(c));
    }
    return &by_consumer_;
  }

  // The key of the platform namespace's row on device d (idle handling namespace:NS), or -1
  // when the filter leaves it out.
  // Its namespace labels are those of consumer `labels_from` (kNoLabels: none).
  std::int32_t PlatformOf(std::size_t d, std::uint32_t labels_from) {
    const std::uint64_t memo = (static_cast<std::uint64_t>(s_.devices()[d].placement) << 32) |
                               static_cast<std::uint32_t>(labels_from + 1);
    auto [it, fresh] = platform_.try_emplace(memo, 0);
    if (!fresh) return it->second;
    const Placement& p = s_.placements()[s_.devices()[d].placement];
    UsageRow platform =
        report::PlatformIdleRow(q_.idle.namespace_name, p.node, p.gpu_model, p.gpu, p.sharing);
    if (labels_from != kNoLabels)
      platform.consumer.namespace_labels = s_.labels(labels_from).namespace_labels;
    const report::Placed placed{p.cluster, p.node, p.gpu_model, p.gpu, p.sharing};
    it->second = !q_.filter.empty() && !Matches(q_.filter, platform.consumer, placed)
                     ? -1
                     : static_cast<std::int32_t>(
                           Intern(report::KeyOf(platform.consumer, placed, q_.group_by)));
    return it->second;
  }

  const std::vector<std::string>& names() const { return names_; }

 private:
  static constexpr std::int32_t kUnknown = -2;

  std::int32_t Compute(std::size_t i) {
    const Placement& p = s_.placements()[s_.contexts()[s_.usage().context[i]].placement];
    return KeyFor(s_.usage().consumer[i],
                  report::Placed{p.cluster, p.node, p.gpu_model, p.gpu, p.sharing});
  }

  std::int32_t KeyFor(std::size_t c, const report::Placed& placed) {
    const ConsumerInfo& consumer = s_.consumers()[c];
    const ConsumerLabels labels = s_.labels(c);
    if (!q_.filter.empty() && !Matches(q_.filter, consumer, labels, placed)) return -1;
    return static_cast<std::int32_t>(Intern(report::KeyOf(consumer, labels, placed, q_.group_by)));
  }

  std::uint32_t Intern(std::string key) {
    auto [it, added] = ids_.try_emplace(std::move(key), static_cast<std::uint32_t>(names_.size()));
    if (added) names_.push_back(it->first);
    return it->second;
  }

  const Snapshot& s_;
  const ReportQuery& q_;
  const bool consumer_only_;
  std::vector<std::int32_t> by_consumer_;
  Filter placement_filter_;                   // what the filter asks of where a row was
  std::vector<std::int8_t> placement_fails_;  // by placement: -1 unknown, 0 passes, 1 fails
  std::unordered_map<std::uint64_t, std::int32_t> by_pair_;
  std::unordered_map<std::uint64_t, std::int32_t> platform_;
  std::unordered_map<std::string, std::uint32_t> ids_;
  std::vector<std::string> names_;
};

// `bands`: each of the snapshot's rules' band (MeasuredComputeBandOfRules), by rule id.
void AddRow(RowSums& a, const UsageFigures& figures, const RowContext& c, Nanos cost,
            const DeviceFigures& device, const std::vector<std::optional<double>>& bands) {
  const cost::ConsumerWeights& w = figures.weights;
  a.present = true;
  a.allocated_us += w.allocated_us;
  a.compute_us += w.compute_us;
  a.memory_kib_s = report::AddKibSeconds(a.memory_kib_s, w.memory_kib_s);
  a.energy_mj += w.energy_mj;
  a.cost_nanos += cost;
  a.quality = Combine(a.quality, c.compute_quality);
  a.compute_rule.Add(c.compute_rule);
  a.activity += figures.activity;
  if (c.activity_quality != Quality::kNone) {
    a.activity_allocated_us += w.allocated_us;
    a.activity_compute_us += w.compute_us;
    a.activity_quality = Combine(a.activity_quality, c.activity_quality);
    a.activity_rule.Add(c.activity_rule);
  }
  a.granted_memory_kib_s = report::AddKibSeconds(
      a.granted_memory_kib_s,
      cost::MemoryCapacityKibSeconds(device.memory_total_bytes, w.allocated_us));
  a.share_source.Add(c.share_source);
  a.naive_compute_us = report::AddSaturating(a.naive_compute_us, device.busy_us);
  a.naive_cost_nanos = report::AddSaturating(a.naive_cost_nanos, device.price_nanos);
  a.compute_floor_us += ComputeFloor(w.compute_us, c.compute_quality, bands[c.compute_rule]);
}

// The window's sums, checked as report::BuildReport checks them (only when the snapshot's
// whole sums do not fit, so a window's may not).
Status CheckSums(const Snapshot& s, std::size_t first, std::size_t last) {
  report::SumCheck sums;
  DeviceHour d;
  for (std::size_t k = first; k < last; ++k) {
    s.FillDeviceNumbers(k, d);
    sums.AddDevice(d);
    for (std::uint32_t i = s.first_usage()[k]; i < s.first_usage()[k + 1]; ++i) {
      const UsageFigures f = s.usage().figures[i];
      sums.AddUsage(f.weights, f.activity);
    }
  }
  return sums.Check();
}

}  // namespace

Error TooManySums(std::size_t steps, std::size_t sums, std::size_t max_bytes) {
  return InvalidArgument(fmt::format(
      "step: {} sums by step and group over {} steps pass the {} MiB a report may hold here: "
      "lengthen the step, narrow the window, group by fewer or coarser levels, or filter",
      sums, steps, max_bytes >> 20));
}

Micros StepLength(const ReportQuery& query) {
  const Micros from = query.window.from_us;
  const Micros to = std::max(query.window.to_us, from);
  return query.step > 0 ? query.step : std::max<Micros>(to - from, 1);
}

std::vector<report::Report> StepReports(const ReportQuery& query) {
  const Micros from = query.window.from_us;
  const Micros to = std::max(query.window.to_us, from);
  const Micros step = StepLength(query);
  std::vector<report::Report> out;
  for (Micros t = from; t < to || out.empty(); t += step) {
    report::Report& r = out.emplace_back();
    r.from_us = t;
    r.to_us = query.step > 0 ? std::min(t + step, to) : to;
    r.group_by = query.group_by;
    r.policy = query.policy;
    r.idle_handling = query.idle;
    if (to <= from) break;
  }
  return out;
}

// With idle going to a namespace: the row each step's platform row takes that namespace's labels
// from, in `buckets`.
void MarkIdleNamespaceLabels(const Snapshot& s, const ReportQuery& q,
                             std::vector<Bucket>& buckets) {
  const UsageColumns& u = s.usage();
  // The platform row carries the idle namespace's labels of its last row in the step, labels
  // being those in force when each row was written (report::BuildReport takes namespace
  // labels from the step's rows, the last one winning).
  std::vector<bool> is_idle_namespace(s.consumers().size());
  for (std::size_t c = 0; c < s.consumers().size(); ++c)
    is_idle_namespace[c] = s.consumers()[c].ref.namespace_name == q.idle.namespace_name &&
                           !s.labels(c).namespace_labels.empty();
  for (Bucket& b : buckets) {
    const auto [first, last] = s.DeviceRange(b.report.from_us, b.report.to_us);
    for (std::uint32_t i = s.first_usage()[last]; i > s.first_usage()[first]; --i)
      if (is_idle_namespace[u.consumer[i - 1]]) {
        b.idle_labels_from = u.consumer[i - 1];
        break;
      }
  }
}

// The workers' sums of each step merged, in device order, into the steps' reports.
std::vector<report::Report> MergeParts(const std::vector<std::vector<Sums>>& parts,
                                       const Keys& keys, const std::vector<std::string>& rules,
                                       std::vector<Bucket>& buckets) {
  std::vector<report::Report> out;
  out.reserve(buckets.size());
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    Sums total;
    total.rows.resize(keys.names().size());
    for (const std::vector<Sums>& part : parts) total.Merge(part[i]);
    report::Report& r = buckets[i].report;
    r.idle = total.idle;
    r.unattributed = total.unattributed;
    r.total = total.total;
    FinishRows(total.rows, keys.names(), rules, total.unpriced, r);
    out.push_back(std::move(r));
  }
  return out;
}

Result<std::vector<report::Report>> BuildReports(const Snapshot& s, const ReportQuery& q,
                                                 const Parallelism& parallelism) {
  const Micros from = q.window.from_us;
  const Micros to = std::max(q.window.to_us, from);
  const Micros step = StepLength(q);
  std::vector<Bucket> buckets;
  for (report::Report& heading : StepReports(q)) buckets.push_back({std::move(heading)});
  if (!s.sums_fit())
    for (const Bucket& b : buckets) {
      const auto [first, last] = s.DeviceRange(b.report.from_us, b.report.to_us);
      if (Status fits = CheckSums(s, first, last); !fits.ok()) return fits.error();
    }

  const UsageColumns& u = s.usage();
  const bool namespace_idle = q.idle.kind == cost::IdleHandling::Kind::kNamespace;
  if (namespace_idle) MarkIdleNamespaceLabels(s, q, buckets);

  // In order: each row's key (memoised; -1 where the filter leaves it out), and when idle goes
  // to a namespace, each device's platform key.
  Keys keys(s, q);
  // Named, not bound: the workers below capture them.
  const std::pair<std::size_t, std::size_t> range = s.DeviceRange(from, to);
  const std::size_t first = range.first;
  const std::size_t last = range.second;
  const std::uint32_t row_base = s.first_usage()[first];
  // A key per consumer where the consumer alone decides it (no array of a key per row: at
  // 10,000 GPUs x 30 days that was 40 MB to fill and fault in per report), else per row.
  const std::vector<std::int32_t>* consumer_key = keys.ByConsumer(row_base, s.first_usage()[last]);
  std::vector<std::int32_t> row_key;
  if (consumer_key == nullptr) {
    row_key.resize(s.first_usage()[last] - row_base);
    for (std::size_t i = 0; i < row_key.size(); ++i) row_key[i] = keys.Of(row_base + i);
  }
  auto key_of = [&](std::uint32_t i) {
    return consumer_key != nullptr ? (*consumer_key)[u.consumer[i]] : row_key[i - row_base];
  };
  auto bucket_of = [&](std::size_t d) {
    return static_cast<std::size_t>((s.devices()[d].hour_us - from) / step);
  };
  std::vector<std::int32_t> platform_key;
  if (namespace_idle) {
    platform_key.resize(last - first);
    for (std::size_t d = first; d < last; ++d)
      platform_key[d - first] = keys.PlatformOf(d, buckets[bucket_of(d)].idle_labels_from);
  }
  const std::size_t key_count = keys.names().size();
  // Each worker sums every step's groups in an array of its own.
  if (q.max_sum_bytes > 0 &&
      buckets.size() * key_count * sizeof(RowSums) * ParallelWorkers(last - first, parallelism) >
          q.max_sum_bytes)
    return TooManySums(buckets.size(), buckets.size() * key_count, q.max_sum_bytes);

  // Whether device d has a row the report keeps (rows_only skips the others).
  auto kept = [&](std::size_t d, std::uint32_t row_first, std::uint32_t row_count) {
    if (namespace_idle && platform_key[d - first] >= 0) return true;
    for (std::uint32_t k = 0; k < row_count; ++k)
      if (key_of(row_first + k) >= 0) return true;
    return false;
  };
  std::vector<std::optional<double>> bands;  // by rule id, for AddRow's floors
  bands.reserve(s.rules().size());
  for (const std::string& rule : s.rules()) bands.push_back(MeasuredComputeBandOfRules(rule));
  // The devices in contiguous parts, a worker each with sums of its own, merged in device order.
  auto sum_part = [&](std::size_t part_first, std::size_t part_last, std::vector<Sums>& sums) {
    sums.resize(buckets.size());
    DeviceHour device;
    std::vector<UsageFigures> figures;
    std::vector<cost::ConsumerWeights> weights;
    for (std::size_t d = part_first; d < part_last; ++d) {
      const DeviceFigures f = s.devices()[d];
      Sums& b = sums[static_cast<std::size_t>((f.hour_us - from) / step)];
      if (b.rows.empty()) b.rows.resize(key_count);
      const std::uint32_t row_first = s.first_usage()[d];
      const std::uint32_t row_count = s.first_usage()[d + 1] - row_first;
      if (q.rows_only && !kept(d, row_first, row_count)) continue;
      s.FillDeviceNumbers(f, device);
      figures.resize(row_count);
      weights.resize(row_count);
      for (std::uint32_t k = 0; k < row_count; ++k) {
        figures[k] = u.figures[row_first + k];
        weights[k] = figures[k].weights;
      }
      const cost::DeviceHourCost split = cost::SplitDeviceHour(device, weights, q.policy, q.idle);
      for (std::uint32_t k = 0; k < row_count; ++k) {
        const std::int32_t key = key_of(row_first + k);
        if (key >= 0)
          AddRow(b.rows[static_cast<std::size_t>(key)], figures[k],
                 s.contexts()[u.context[row_first + k]], split.consumers[k], f, bands);
      }
      Nanos idle_cost = split.idle;
      if (namespace_idle && split.idle != 0) {
        // The platform namespace pays for idle capacity; idle keeps its time, not its cost.
        if (const std::int32_t key = platform_key[d - first]; key >= 0) {
          b.rows[static_cast<std::size_t>(key)].present = true;
          b.rows[static_cast<std::size_t>(key)].cost_nanos += split.idle;
        }
        idle_cost = 0;
      }
      if (q.rows_only) continue;
      b.AddDevice(f, idle_cost, split.unattributed);
      if (f.price_state == PriceState::kUnpriced)
        b.unpriced.insert(s.placements()[f.placement].gpu_model);
    }
  };
  const std::size_t devices = last - first;
  const std::size_t workers = ParallelWorkers(devices, parallelism);
  std::vector<std::vector<Sums>> parts(workers);
  {
    std::vector<std::jthread> threads;
    for (std::size_t w = 1; w < workers; ++w)
      threads.emplace_back([&, w] {
        sum_part(first + devices * w / workers, first + devices * (w + 1) / workers, parts[w]);
      });
    sum_part(first, first + devices / workers, parts[0]);
  }

  return MergeParts(parts, keys, s.rules(), buckets);
}

bool StepsSumToWindow(const ReportQuery& query) {
  return query.idle.kind != cost::IdleHandling::Kind::kNamespace ||
         std::none_of(query.group_by.begin(), query.group_by.end(), [](const report::Dimension& d) {
           return d.kind == report::Dimension::Kind::kLabel;
         });
}

report::Report SumSteps(const std::vector<report::Report>& steps) {
  if (steps.empty()) return {};
  MergedReports merged;
  for (const report::Report& step : steps) merged.Add({step});
  report::Report window = std::move(merged.Finish().front());
  window.to_us = steps.back().to_us;
  return window;
}

}  // namespace gpuledger::ledger
