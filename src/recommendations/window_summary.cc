#include "recommendations/window_summary.h"

#include <algorithm>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "cost/gpu_speed.h"
#include "model/compute_band.h"
#include "report/report.h"

namespace gpuledger::recommendations {
namespace {

using rightsizing::Percentile;

int PercentOf(Percentile p) {
  switch (p) {
    case Percentile::kP50:
      return 50;
    case Percentile::kP99:
      return 99;
    case Percentile::kP95:
      break;
  }
  return 95;
}

// The 1-based nearest rank of percentile `percent` among `n` samples: ceil(n x percent / 100).
std::int64_t NearestRank(std::int64_t n, int percent) {
  return std::max<std::int64_t>(1, (n * percent + 99) / 100);
}

// The bucket index holding the nearest-rank sample of `counts`; -1 with no samples.
template <std::size_t N>
int PercentileBucket(const std::array<std::int64_t, N>& counts, int percent) {
  std::int64_t n = 0;
  for (std::int64_t c : counts) n += c;
  if (n <= 0) return -1;
  const std::int64_t rank = NearestRank(n, percent);
  std::int64_t seen = 0;
  for (std::size_t i = 0; i < N; ++i) {
    seen += counts[i];
    if (seen >= rank) return static_cast<int>(i);
  }
  return static_cast<int>(N) - 1;
}

// Nearest-rank percentile of values (sorted in place).
template <typename T>
T ValuePercentile(std::vector<T>& values, int percent) {
  if (values.empty()) return T{};
  std::sort(values.begin(), values.end());
  return values[static_cast<std::size_t>(
      NearestRank(static_cast<std::int64_t>(values.size()), percent) - 1)];
}

// n / d rounded half up, d > 0, n >= 0.
std::int64_t RoundHalfUp(__int128 n, __int128 d) {
  return static_cast<std::int64_t>((2 * n + d) / (2 * d));
}

// One GPU of the workload in one hour: its containers' rows on that GPU, added.
struct GpuHour {
  GpuMicros allocated_us = 0;
  GpuMicros compute_us = 0;
  Bytes peak_memory_bytes = 0;  // Σ of its containers' hour peaks on the GPU
  UsageHistogram histogram;
  const DeviceHour* device = nullptr;
  double Share() const {
    const GpuMicros wall =
        device != nullptr && device->metered_us > 0 ? device->metered_us : kMicrosPerHour;
    return static_cast<double>(compute_us) / static_cast<double>(wall);
  }
};

struct Acc {
  std::string namespace_name;
  std::map<std::pair<Micros, std::string>, GpuHour> gpu_hours;  // (hour, gpu uuid)
  std::map<std::string, GpuMicros> allocated_by_model, allocated_by_class;
};

template <typename M>
std::string Dominant(const M& by) {
  std::string best;
  GpuMicros most = -1;
  for (const auto& [name, us] : by)
    if (us > most) most = us, best = name;
  return best;
}

}  // namespace

double HistogramPercentile(const std::array<std::int64_t, UsageHistogram::kComputeBuckets>& counts,
                           Percentile p) {
  const int b = PercentileBucket(counts, PercentOf(p));
  return b < 0 ? 0.0 : kComputeShareBounds[static_cast<std::size_t>(b)];
}

rightsizing::GpuSpeed SpeedOf(std::string_view gpu_model) {
  const cost::GpuDatasheet sheet = cost::GpuModelSpeed(gpu_model);
  return {sheet.memory_bandwidth_gbs, sheet.fp16_dense_tflops};
}

Result<std::vector<WorkloadSummary>> SummarizeWorkloads(std::span<const DeviceHour> devices,
                                                        std::span<const UsageRow> usage,
                                                        const SummaryOptions& o) {
  const std::vector<report::Dimension> by_controller{{report::Dimension::Kind::kController, ""}};
  std::map<std::pair<Micros, std::string>, const DeviceHour*> device_of;
  for (const DeviceHour& d : devices)
    if (d.hour_us >= o.from_us && d.hour_us < o.to_us) device_of[{d.hour_us, d.gpu.value}] = &d;

  std::map<std::string, Acc> accs;
  for (const UsageRow& u : usage) {
    if (u.hour_us < o.from_us || u.hour_us >= o.to_us) continue;
    const ConsumerRef& ref = u.consumer.ref;
    if (ref.IsHost() || ref.namespace_name == kUnresolvedNamespace) continue;
    if (!o.namespace_name.empty() && ref.namespace_name != o.namespace_name) continue;
    auto dev = device_of.find({u.hour_us, u.gpu.value});
    if (dev == device_of.end()) continue;
    Acc& acc = accs[report::KeyOf(u, by_controller)];
    acc.namespace_name = ref.namespace_name;
    GpuHour& g = acc.gpu_hours[{u.hour_us, u.gpu.value}];
    g.device = dev->second;
    g.allocated_us += u.allocated_us;
    g.compute_us += u.compute_us;
    g.peak_memory_bytes += u.peak_memory_bytes;
    g.histogram += u.histogram;
    acc.allocated_by_model[u.gpu_model] += u.allocated_us;
    acc.allocated_by_class[dev->second->pricing_class] += u.allocated_us;
  }
  if (accs.empty()) return std::vector<WorkloadSummary>{};

  // What the ledger charged each workload, and its utilization class: the report's own figures.
  auto rep = report::BuildReport(devices, usage, by_controller, cost::Policy{},
                                 cost::IdleHandling{}, o.from_us, o.to_us);
  if (!rep) return rep.error();
  std::map<std::string, const report::Row*> row_of;
  for (const report::Row& r : rep->rows) row_of[r.key] = &r;

  const int percent = PercentOf(o.compute_percentile);
  std::vector<WorkloadSummary> out;
  for (auto& [key, acc] : accs) {
    WorkloadSummary s;
    rightsizing::WorkloadUsage& w = s.usage;
    w.workload = key;
    s.namespace_name = acc.namespace_name;
    w.gpu_model = Dominant(acc.allocated_by_model);
    s.pricing_class = Dominant(acc.allocated_by_class);
    w.pool = s.pricing_class;

    // Hours held, GPUs held, the busy GPU-hours.
    std::map<Micros, std::vector<const GpuHour*>> by_hour;
    __int128 allocated = 0;
    for (const auto& [k, g] : acc.gpu_hours) {
      if (g.allocated_us <= 0) continue;
      by_hour[k.first].push_back(&g);
      allocated += g.allocated_us;
      if (g.device->gpu_model == w.gpu_model)
        w.gpu_memory_bytes = std::max(w.gpu_memory_bytes, g.device->memory_total_bytes);
    }
    const std::int64_t hours = static_cast<std::int64_t>(by_hour.size());
    if (hours > 0) {
      w.hours_observed = static_cast<double>(hours);
      const Micros first = by_hour.begin()->first, last = by_hour.rbegin()->first;
      const std::int64_t span_hours = (last - first) / kMicrosPerHour + 1;  // whole hours
      w.coverage = static_cast<double>(hours) / static_cast<double>(span_hours);
      w.gpus_held_ppd =
          RoundHalfUp(allocated * kWholeGpu, static_cast<__int128>(hours) * kMicrosPerHour);
    }
    auto busy = [&](const GpuHour& g) {
      const int b = PercentileBucket(g.histogram.compute, percent);
      return b >= 0 ? b > 0 : g.Share() > kComputeShareBounds[0];
    };
    std::vector<std::int64_t> busy_per_hour;
    std::vector<const GpuHour*> sized;  // the GPU-hours percentiles are taken over
    for (const auto& [h, gs] : by_hour) {
      std::int64_t n = 0;
      for (const GpuHour* g : gs)
        if (busy(*g)) ++n, sized.push_back(g);
      busy_per_hour.push_back(n);
    }
    w.gpus_used = static_cast<double>(ValuePercentile(busy_per_hour, percent));
    if (sized.empty())
      for (const auto& [h, gs] : by_hour) sized.insert(sized.end(), gs.begin(), gs.end());

    // Compute percentiles: histogram counts when the rows carry them, else hourly means.
    std::array<std::int64_t, UsageHistogram::kComputeBuckets> compute{};
    std::array<std::int64_t, UsageHistogram::kMemoryBuckets> memory{};
    std::vector<double> shares;
    std::vector<Bytes> peaks;
    for (const GpuHour* g : sized) {
      for (int i = 0; i < UsageHistogram::kComputeBuckets; ++i)
        compute[i] += g->histogram.compute[i];
      shares.push_back(g->Share());
    }
    for (const auto& [h, gs] : by_hour)
      for (const GpuHour* g : gs) {
        for (int i = 0; i < UsageHistogram::kMemoryBuckets; ++i)
          memory[i] += g->histogram.memory[i];
        peaks.push_back(g->peak_memory_bytes);
        w.memory_peak_bytes = std::max(w.memory_peak_bytes, g->peak_memory_bytes);
      }
    for (std::int64_t c : compute) s.compute_samples += c;
    if (s.compute_samples > 0) {
      w.compute_p50 = HistogramPercentile(compute, Percentile::kP50);
      w.compute_p95 = HistogramPercentile(compute, Percentile::kP95);
      w.compute_p99 = HistogramPercentile(compute, Percentile::kP99);
      s.compute_basis = fmt::format("histogram: {} samples", s.compute_samples);
    } else {
      std::vector<double> v = shares;
      w.compute_p50 = ValuePercentile(v, 50);
      w.compute_p95 = ValuePercentile(v, 95);
      w.compute_p99 = ValuePercentile(v, 99);
      s.compute_samples = static_cast<std::int64_t>(shares.size());
      s.compute_basis = fmt::format(
          "hourly means of {} GPU-hours (no histograms in the ledger: bursts under an hour are "
          "averaged)",
          shares.size());
    }
    const int mb = PercentileBucket(memory, 99);
    if (mb >= 0 && w.gpu_memory_bytes > 0) {
      const Bytes upper =
          w.gpu_memory_bytes / 8 * kMemoryEighthBounds[static_cast<std::size_t>(mb)];
      w.memory_p99_bytes = std::min(upper, w.memory_peak_bytes);
      s.memory_basis = "peak: the agent's hour peaks; p99: the memory histogram's bucket";
    } else {
      w.memory_p99_bytes = ValuePercentile(peaks, 99);
      s.memory_basis = "peak: the agent's hour peaks; p99: of the hourly peaks";
    }

    // Its own price per GPU-hour, and the class.
    if (auto r = row_of.find(key); r != row_of.end()) {
      const report::Figures& f = r->second->figures;
      if (f.allocated_gpu_us > 0) {
        w.hourly_price_nanos =
            RoundHalfUp(static_cast<__int128>(f.cost_nanos) * kMicrosPerHour, f.allocated_gpu_us);
        w.compute_of_allocation =
            static_cast<double>(f.compute_gpu_us) / static_cast<double>(f.allocated_gpu_us);
      }
      // How far its compute may be off: an estimate's rules' measured band, none when a rule
      // was never measured or nothing but the grant was known; a measured figure (its own
      // counters: a MIG instance's GPM activity, an exclusive GPU) its rules' band or none.
      w.compute_rule = f.compute_rule;
      const std::optional<double> band = MeasuredComputeBandOfRules(f.compute_rule);
      w.compute_band = f.quality == Quality::kEstimated   ? band
                       : f.quality == Quality::kAllocated ? std::nullopt
                                                          : std::optional(band.value_or(0.0));
      s.utilization = r->second->utilization;
    }
    if (auto m = o.models_by_class.find(s.pricing_class); m != o.models_by_class.end())
      w.other_models = m->second;
    w.speed = SpeedOf(w.gpu_model);
    w.bound = s.utilization.cls == utilization::Class::kMemoryBound
                  ? rightsizing::Bound::kMemoryBandwidth
                  : rightsizing::Bound::kUnknown;

    // The demand series: per hour its GPUs by compute share, busiest first.
    std::size_t shards = 0;
    for (const auto& [h, gs] : by_hour) shards = std::max(shards, gs.size());
    s.demand.shard_compute.assign(shards, std::vector<double>(by_hour.size(), 0.0));
    s.demand.shard_memory.assign(shards, std::vector<Bytes>(by_hour.size(), 0));
    std::size_t hi = 0;
    for (auto& [h, gs] : by_hour) {
      s.demand.hours.push_back(h);
      std::vector<const GpuHour*> sorted = gs;
      std::stable_sort(sorted.begin(), sorted.end(), [](const GpuHour* a, const GpuHour* b) {
        return a->compute_us > b->compute_us;
      });
      for (std::size_t i = 0; i < sorted.size(); ++i) {
        s.demand.shard_compute[i][hi] = sorted[i]->Share();
        s.demand.shard_memory[i][hi] = sorted[i]->peak_memory_bytes;
      }
      ++hi;
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace gpuledger::recommendations
