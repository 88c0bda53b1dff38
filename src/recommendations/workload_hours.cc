#include "recommendations/workload_hours.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gpuledger::recommendations {
namespace {

using rightsizing::Percentile;
using rightsizing::PercentOf;

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

template <std::size_t N>
bool HasSamples(const std::array<std::int64_t, N>& counts) {
  return std::any_of(counts.begin(), counts.end(), [](std::int64_t c) { return c != 0; });
}

// Nearest-rank percentile of values (reordered in place: selected, not sorted, so a month of
// GPU-hours costs its count, not its count's logarithm too).
template <typename T>
T ValuePercentile(std::vector<T>& values, int percent) {
  if (values.empty()) return T{};
  const auto nth =
      values.begin() + (NearestRank(static_cast<std::int64_t>(values.size()), percent) - 1);
  std::nth_element(values.begin(), nth, values.end());
  return *nth;
}

// The nearest-rank percentile of values given as value -> how many.
std::int64_t CountedPercentile(const std::map<std::int64_t, std::int64_t>& counted, int percent) {
  std::int64_t n = 0;
  for (const auto& [value, count] : counted) n += count;
  if (n == 0) return 0;
  const std::int64_t rank = NearestRank(n, percent);
  std::int64_t seen = 0;
  for (const auto& [value, count] : counted)
    if ((seen += count) >= rank) return value;
  return counted.rbegin()->first;
}

std::uint32_t MibRoundedUp(Bytes bytes) {
  const Bytes mib = (std::max<Bytes>(bytes, 0) + kMiB - 1) / kMiB;
  return static_cast<std::uint32_t>(
      std::min<Bytes>(mib, std::numeric_limits<std::uint32_t>::max()));
}

template <typename T>
void GrowTo(std::vector<T>& v, std::size_t n) {
  if (v.size() < n) v.resize(n);
}

}  // namespace

bool BusyShare(float share) { return share > static_cast<float>(kComputeShareBounds[0]); }

double HistogramPercentile(const std::array<std::int64_t, UsageHistogram::kComputeBuckets>& counts,
                           Percentile p) {
  const int b = PercentileBucket(counts, PercentOf(p));
  return b < 0 ? 0.0 : kComputeShareBounds[static_cast<std::size_t>(b)];
}

double WorkloadHours::GpuHour::Share() const {
  const GpuMicros wall = device.metered_us > 0 ? device.metered_us : kMicrosPerHour;
  return static_cast<double>(compute_us) / static_cast<double>(wall);
}

std::uint32_t WorkloadHours::Workload(const std::string& key, const std::string& namespace_name) {
  auto [it, added] = index_.try_emplace(key, static_cast<std::uint32_t>(accs_.size()));
  if (added) {
    accs_.emplace_back();
    accs_.back().key = key;
    accs_.back().namespace_name = namespace_name;
  }
  return it->second;
}

std::uint32_t WorkloadHours::Pod(const ConsumerRef& c) {
  return pod_names_.Of(c.namespace_name + "/" +
                       (c.pod_uid.value.empty() ? c.pod : c.pod_uid.value));
}

std::uint32_t WorkloadHours::Names::Of(std::string_view name) {
  auto [it, added] = index.try_emplace(std::string(name), static_cast<std::uint32_t>(text.size()));
  if (added) text.emplace_back(name);
  return it->second;
}

void WorkloadHours::Device(Micros hour_us, std::int64_t gpu, const HourDevice& device) {
  if (hour_us != open_hour_us_) CloseHour(hour_us);
  devices_.Emplace(gpu).first = device;
}

void WorkloadHours::Row(std::uint32_t workload, std::uint32_t pod, Micros hour_us, std::int64_t gpu,
                        const UsageRow& figures) {
  if (hour_us != open_hour_us_) return;  // its device-hour was not given
  const HourDevice* device = devices_.Find(gpu);
  if (device == nullptr) return;
  accs_[workload].has_rows = true;
  GpuHour& g = rows_.emplace_back();
  g.workload = workload;
  g.gpu = gpu;
  g.pod = pod;
  g.allocated_us = figures.allocated_us;
  g.compute_us = figures.compute_us;
  g.peak_memory_bytes = figures.peak_memory_bytes;
  g.histogram = figures.histogram;
  g.device = *device;
}

void WorkloadHours::CloseHour(Micros next_hour_us) {
  std::sort(rows_.begin(), rows_.end(), [](const GpuHour& a, const GpuHour& b) {
    return std::tie(a.workload, a.gpu, a.pod) < std::tie(b.workload, b.gpu, b.pod);
  });
  for (auto first = rows_.begin(); first != rows_.end();) {
    auto last = std::find_if(first, rows_.end(),
                             [&](const GpuHour& g) { return g.workload != first->workload; });
    AddHour(accs_[first->workload], first, last);
    first = last;
  }
  rows_.clear();
  devices_.clear();
  open_hour_us_ = next_hour_us;
}

void WorkloadHours::AddHour(Acc& acc, std::vector<GpuHour>::iterator first,
                            std::vector<GpuHour>::iterator last) {
  // How many GPUs each pod held (an allocation on it): a pod per GPU is a replica per GPU.
  pods_.clear();
  for (auto g = first; g != last; ++g)
    if (g->allocated_us > 0 && (g == first || g[-1].gpu != g->gpu || g[-1].pod != g->pod))
      pods_.push_back(g->pod);
  std::sort(pods_.begin(), pods_.end());
  for (auto p = pods_.begin(); p != pods_.end();) {
    const auto q = std::upper_bound(p, pods_.end(), *p);
    acc.max_gpus_per_pod = std::max<std::int64_t>(acc.max_gpus_per_pod, q - p);
    p = q;
  }
  // Its containers on one GPU are one GPU-hour: their rows added.
  auto kept = first;
  for (auto g = first + 1; g < last; ++g) {
    if (g->gpu != kept->gpu) {
      *++kept = *g;
      continue;
    }
    kept->allocated_us += g->allocated_us;
    kept->compute_us += g->compute_us;
    kept->peak_memory_bytes += g->peak_memory_bytes;
    kept->histogram += g->histogram;
  }
  last = kept + 1;

  GrowTo(acc.allocated_by_model, models_.text.size());
  GrowTo(acc.memory_by_model, models_.text.size());
  GrowTo(acc.allocated_by_class, classes_.text.size());
  for (auto g = first; g != last; ++g) {
    acc.allocated_by_model[g->device.model] += g->allocated_us;
    acc.allocated_by_class[g->device.pricing_class] += g->allocated_us;
  }
  // Only the GPU-hours with an allocation count from here.
  last = std::remove_if(first, last, [](const GpuHour& g) { return g.allocated_us <= 0; });
  if (first == last) return;

  std::array<std::int64_t, kPercentiles> busy_gpus{};
  for (auto g = first; g != last; ++g) {
    acc.allocated_us += g->allocated_us;
    Bytes& memory = acc.memory_by_model[g->device.model];
    memory = std::max(memory, g->device.memory_total_bytes);
    for (int i = 0; i < UsageHistogram::kComputeBuckets; ++i)
      acc.all_compute[i] += g->histogram.compute[i];
    const bool busy_share = BusyShare(static_cast<float>(g->Share()));
    for (std::size_t p = 0; p < kPercentiles; ++p) {
      const int b = PercentileBucket(g->histogram.compute, PercentOf(static_cast<Percentile>(p)));
      if (!(b >= 0 ? b > 0 : busy_share)) continue;
      ++busy_gpus[p];
      for (int i = 0; i < UsageHistogram::kComputeBuckets; ++i)
        acc.busy_compute[p][i] += g->histogram.compute[i];
    }
    for (int i = 0; i < UsageHistogram::kMemoryBuckets; ++i)
      acc.memory[i] += g->histogram.memory[i];
    acc.memory_peak_bytes = std::max(acc.memory_peak_bytes, g->peak_memory_bytes);
  }
  for (std::size_t p = 0; p < kPercentiles; ++p) ++acc.hours_by_busy_gpus[p][busy_gpus[p]];

  // The demand series: the hour's GPUs busiest first (equal compute: the larger memory first,
  // so the series does not depend on how GPUs are named).
  std::sort(first, last, [](const GpuHour& a, const GpuHour& b) {
    return std::tie(b.compute_us, b.peak_memory_bytes) <
           std::tie(a.compute_us, a.peak_memory_bytes);
  });
  DemandSeries& d = acc.demand;
  d.hours.push_back(open_hour_us_);
  d.first.push_back(static_cast<std::uint32_t>(d.compute.size()));
  for (auto g = first; g != last; ++g) {
    d.compute.push_back(static_cast<float>(g->Share()));
    d.memory_mib.push_back(MibRoundedUp(g->peak_memory_bytes));
  }
}

GatheredWorkload WorkloadHours::Figures(Acc& acc, Percentile percentile) const {
  GatheredWorkload w;
  w.key = acc.key;
  w.namespace_name = acc.namespace_name;
  // Of most of its allocated GPU-time; ties go to the first by name.
  auto dominant = [](const std::vector<GpuMicros>& by, const Names& names) -> std::size_t {
    std::size_t best = by.size();
    for (std::size_t i = 0; i < by.size(); ++i)
      if (best == by.size() || by[i] > by[best] ||
          (by[i] == by[best] && names.text[i] < names.text[best]))
        best = i;
    return best;
  };
  if (const std::size_t m = dominant(acc.allocated_by_model, models_);
      m < acc.allocated_by_model.size()) {
    w.gpu_model = models_.text[m];
    w.gpu_memory_bytes = acc.memory_by_model[m];
  }
  if (const std::size_t c = dominant(acc.allocated_by_class, classes_);
      c < acc.allocated_by_class.size())
    w.pricing_class = classes_.text[c];
  w.allocated_us = acc.allocated_us;

  const auto p = static_cast<std::size_t>(percentile);
  const auto& hours_by_busy_gpus = acc.hours_by_busy_gpus[p];
  w.gpus_used = static_cast<double>(CountedPercentile(hours_by_busy_gpus, PercentOf(percentile)));
  w.max_gpus_per_pod = acc.max_gpus_per_pod;
  // Sized by its busy GPU-hours, or all of them when none was busy.
  const bool any_busy = std::any_of(hours_by_busy_gpus.begin(), hours_by_busy_gpus.end(),
                                    [](const auto& counted) { return counted.first > 0; });
  const auto& compute = any_busy ? acc.busy_compute[p] : acc.all_compute;
  if (HasSamples(compute)) {
    w.compute_from_histograms = true;
    w.compute_p50 = HistogramPercentile(compute, Percentile::kP50);
    w.compute_p95 = HistogramPercentile(compute, Percentile::kP95);
    w.compute_p99 = HistogramPercentile(compute, Percentile::kP99);
    for (std::int64_t c : compute) w.compute_samples += c;
  } else {
    // The hourly shares of the sized GPU-hours, from the demand series (none of them had a
    // histogram, so a busy one is one above the first bucket).
    std::vector<float> shares;
    for (float share : acc.demand.compute)
      if (!any_busy || BusyShare(share)) shares.push_back(share);
    // Kept as floats: read back to six decimals (a float holds about seven digits).
    auto at = [&](int percent) { return std::round(ValuePercentile(shares, percent) * 1e6) / 1e6; };
    w.compute_p50 = at(50);
    w.compute_p95 = at(95);
    w.compute_p99 = at(99);
    w.compute_samples = static_cast<std::int64_t>(shares.size());
  }
  w.memory_peak_bytes = acc.memory_peak_bytes;
  if (const int mb = PercentileBucket(acc.memory, 99); mb >= 0) {
    // The bucket's upper bound, in eighths of the GPU's memory, capped at the peak; a GPU
    // whose memory is not known has no eighths: then the peak.
    w.memory_p99_from_histograms = true;
    w.memory_p99_bytes =
        w.gpu_memory_bytes > 0
            ? std::min(w.gpu_memory_bytes / 8 * kMemoryEighthBounds[static_cast<std::size_t>(mb)],
                       w.memory_peak_bytes)
            : w.memory_peak_bytes;
  } else {
    // The p99 of the hourly peaks, from the demand series (in MiB rounded up).
    std::vector<std::uint32_t> peaks = acc.demand.memory_mib;
    w.memory_p99_bytes = std::min(w.memory_peak_bytes, Bytes{ValuePercentile(peaks, 99)} * kMiB);
  }
  w.demand = std::move(acc.demand);
  return w;
}

void WorkloadHours::Seal() {
  CloseHour(INT64_MIN);
  rows_ = {};
  pods_ = {};
  devices_ = {};
  pod_names_ = {};
}

void WorkloadHours::Append(WorkloadHours&& later, std::string_view namespace_name) {
  CloseHour(INT64_MIN);
  later.CloseHour(INT64_MIN);
  for (const auto& [key, index] : later.index_) {
    Acc& b = later.accs_[index];
    if (!b.has_rows || (!namespace_name.empty() && b.namespace_name != namespace_name)) continue;
    Acc& a = accs_[Workload(key, b.namespace_name)];
    a.has_rows = true;
    a.allocated_us += b.allocated_us;
    for (std::size_t p = 0; p < kPercentiles; ++p) {
      for (const auto& [gpus, hours] : b.hours_by_busy_gpus[p])
        a.hours_by_busy_gpus[p][gpus] += hours;
      for (std::size_t i = 0; i < a.busy_compute[p].size(); ++i)
        a.busy_compute[p][i] += b.busy_compute[p][i];
    }
    for (std::size_t i = 0; i < a.all_compute.size(); ++i) a.all_compute[i] += b.all_compute[i];
    for (std::size_t i = 0; i < a.memory.size(); ++i) a.memory[i] += b.memory[i];
    a.max_gpus_per_pod = std::max(a.max_gpus_per_pod, b.max_gpus_per_pod);
    a.memory_peak_bytes = std::max(a.memory_peak_bytes, b.memory_peak_bytes);
    // Its models and pricing classes by this gatherer's names.
    for (std::size_t i = 0; i < b.allocated_by_model.size(); ++i) {
      const std::uint32_t m = models_.Of(later.models_.text[i]);
      GrowTo(a.allocated_by_model, models_.text.size());
      GrowTo(a.memory_by_model, models_.text.size());
      a.allocated_by_model[m] += b.allocated_by_model[i];
      a.memory_by_model[m] = std::max(a.memory_by_model[m], b.memory_by_model[i]);
    }
    for (std::size_t i = 0; i < b.allocated_by_class.size(); ++i) {
      const std::uint32_t c = classes_.Of(later.classes_.text[i]);
      GrowTo(a.allocated_by_class, classes_.text.size());
      a.allocated_by_class[c] += b.allocated_by_class[i];
    }
    DemandSeries& d = a.demand;
    if (d.hours.empty()) {  // its first hours: taken whole
      d = std::move(b.demand);
      continue;
    }
    const auto offset = static_cast<std::uint32_t>(d.compute.size());
    d.hours.insert(d.hours.end(), b.demand.hours.begin(), b.demand.hours.end());
    for (std::uint32_t f : b.demand.first) d.first.push_back(f + offset);
    d.compute.insert(d.compute.end(), b.demand.compute.begin(), b.demand.compute.end());
    d.memory_mib.insert(d.memory_mib.end(), b.demand.memory_mib.begin(), b.demand.memory_mib.end());
  }
}

std::vector<GatheredWorkload> WorkloadHours::Finish(Percentile percentile) {
  CloseHour(INT64_MIN);
  std::vector<GatheredWorkload> out;
  out.reserve(accs_.size());
  for (const auto& [key, i] : index_)
    if (accs_[i].has_rows) out.push_back(Figures(accs_[i], percentile));
  accs_.clear();
  index_.clear();
  return out;
}

}  // namespace gpuledger::recommendations
