#include "ingest/agent_series.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/strings.h"
#include "ingest/counter_ledger.h"

namespace gpuledger::ingest {
namespace {

constexpr auto kUs = CounterScale::kMicrosPerSecond;
constexpr auto kMj = CounterScale::kMilliPerUnit;
constexpr auto kKib = CounterScale::kKibPerByte;

constexpr CounterKind kCounters[] = {
    {"gpuledger_device_metered_seconds_total", Field::kMetered, kUs},
    {"gpuledger_device_busy_seconds_total", Field::kBusy, kUs},
    {"gpuledger_device_idle_seconds_total", Field::kIdle, kUs},
    {"gpuledger_device_unattributed_seconds_total", Field::kUnattributed, kUs},
    {"gpuledger_device_energy_joules_total", Field::kDeviceEnergy, kMj},
    {"gpuledger_device_unattributed_memory_byte_seconds_total", Field::kUnattributedMemory, kKib},
    {"gpuledger_container_allocated_gpu_seconds_total", Field::kAllocated, kUs},
    {"gpuledger_container_compute_gpu_seconds_total", Field::kCompute, kUs},
    {"gpuledger_container_memory_byte_seconds_total", Field::kMemory, kKib},
    {"gpuledger_container_energy_joules_total", Field::kConsumerEnergy, kMj},
    {"gpuledger_container_sm_active_gpu_seconds_total", Field::kSmActive, kUs},
    {"gpuledger_container_sm_occupancy_gpu_seconds_total", Field::kSmOccupancy, kUs},
    {"gpuledger_container_tensor_active_gpu_seconds_total", Field::kTensorActive, kUs},
    {"gpuledger_container_dram_active_gpu_seconds_total", Field::kDramActive, kUs},
    // The rightsizing histograms' buckets: cumulative counts, each a counter (docs/agent.md).
    {"gpuledger_container_compute_share_bucket", Field::kComputeBucket, CounterScale::kOne},
    {"gpuledger_container_memory_usage_bytes_bucket", Field::kMemoryBucket, CounterScale::kOne},
};

}  // namespace

const CounterKind* FindCounter(std::string_view name) {
  for (const CounterKind& k : kCounters)
    if (k.name == name) return &k;
  return nullptr;
}

std::optional<std::int64_t> CountOf(const CounterKind& kind, double value) {
  if (!std::isfinite(value) || value < 0) return std::nullopt;
  return ToCount(value, kind.scale);
}

const std::vector<std::string>& FedSeriesNames() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> out;
    for (std::string_view n :
         {kDeviceInfo, kAttributionInfo, kAgentStart, kMemoryTotal, kContainerMemoryUsed,
          kContainerPeak, kContainerPreviousPeak, kAgentHourStart})
      out.emplace_back(n);
    for (const CounterKind& k : kCounters) out.emplace_back(k.name);
    return out;
  }();
  return kNames;
}

std::string_view Label(const Labels& labels, std::string_view name) {
  for (const auto& [k, v] : labels)
    if (k == name) return v;
  return {};
}

ConsumerRef RefOf(const Labels& labels) {
  return ConsumerRef{std::string(Label(labels, "namespace")), std::string(Label(labels, "pod")),
                     PodUid{std::string(Label(labels, "pod_uid"))},
                     std::string(Label(labels, "container"))};
}

std::string SeriesKey(const Sample& s) {
  std::string key = s.name;
  for (const auto& [k, v] : s.labels) {
    key += '\x1f';
    key += k;
    key += '\x1e';
    AppendLengthPrefixed(key, v);
  }
  return key;
}

std::string ConsumerKey(const std::string& gpu, const ConsumerRef& r) {
  return gpu + '\x1f' + r.namespace_name + '\x1f' + r.pod + '\x1f' + r.pod_uid.value + '\x1f' +
         r.container;
}

double LeBound(std::string_view le) { return std::strtod(std::string(le).c_str(), nullptr); }

int ComputeBucketOf(std::string_view le) {
  if (le == "+Inf") return UsageHistogram::kComputeBuckets - 1;
  const double bound = LeBound(le);
  for (int i = 0; i + 1 < UsageHistogram::kComputeBuckets; ++i)
    if (std::fabs(bound - kComputeShareBounds[i]) < 1e-9) return i;
  return -1;
}

using BoundsByConsumer = std::map<std::string, std::vector<double>>;
BoundsByConsumer MemoryBucketBounds(const TargetScrape& scrape) {
  BoundsByConsumer out;
  for (const Sample& s : scrape.samples) {
    if (s.name != "gpuledger_container_memory_usage_bytes_bucket") continue;
    const std::string_view le = Label(s.labels, "le");
    if (le == "+Inf") continue;
    out[ConsumerKey(std::string(Label(s.labels, "gpu_uuid")), RefOf(s.labels))].push_back(
        LeBound(le));
  }
  for (auto& [key, bounds] : out) std::sort(bounds.begin(), bounds.end());
  return out;
}
int MemoryBucketOf(const Sample& s, const BoundsByConsumer& bounds) {
  auto it = bounds.find(ConsumerKey(std::string(Label(s.labels, "gpu_uuid")), RefOf(s.labels)));
  if (it == bounds.end() || it->second.size() != UsageHistogram::kMemoryBuckets - 1) return -1;
  const std::string_view le = Label(s.labels, "le");
  if (le == "+Inf") return UsageHistogram::kMemoryBuckets - 1;
  const double bound = LeBound(le);
  auto pos = std::lower_bound(it->second.begin(), it->second.end(), bound);
  return static_cast<int>(pos - it->second.begin());
}

}  // namespace gpuledger::ingest
