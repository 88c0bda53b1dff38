#pragma once
// The agent series the exact-delta engine reads (docs/agent.md): each counter, what it adds to
// and its scale to the ledger's integers, the info and gauge series beside them, and how their
// labels name a consumer, a source and a histogram bucket.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/counter_units.h"
#include "ingest/sample.h"
#include "model/consumer.h"
#include "model/sharing.h"

namespace gpuledger::ingest {

// What a counter adds to, and its scale from the exposition's base unit to the ledger's.
enum class Field {
  kMetered,
  kBusy,
  kIdle,
  kUnattributed,
  kDeviceEnergy,
  kUnattributedMemory,  // per device
  kAllocated,
  kCompute,
  kMemory,
  kConsumerEnergy,  // per (device, consumer)
  kSmActive,
  kSmOccupancy,
  kTensorActive,
  kDramActive,  // per (device, consumer): activity
  kComputeBucket,
  kMemoryBucket,  // per (device, consumer): cumulative histogram bucket counts
};

struct CounterKind {
  std::string_view name;
  Field field;
  CounterScale scale;  // base unit -> the integer the agent counts (common/counter_units.h)
};

inline constexpr std::string_view kDeviceInfo = "gpuledger_device_info";
inline constexpr std::string_view kAgentStart = "gpuledger_agent_start_time_seconds";
inline constexpr std::string_view kAttributionInfo = "gpuledger_container_attribution_info";
inline constexpr std::string_view kMemoryTotal = "gpuledger_device_memory_total_bytes";
inline constexpr std::string_view kContainerMemoryUsed = "gpuledger_container_memory_used_bytes";
inline constexpr std::string_view kContainerPeak = "gpuledger_container_memory_peak_bytes";
inline constexpr std::string_view kContainerPreviousPeak =
    "gpuledger_container_memory_previous_hour_peak_bytes";
inline constexpr std::string_view kAgentHourStart = "gpuledger_agent_hour_start_seconds";

// The counter of that name; null for any other series.
const CounterKind* FindCounter(std::string_view name);

// A float64 counter value as the agent's integer (the value must be finite and >= 0).
std::optional<std::int64_t> CountOf(const CounterKind& kind, double value);

// The value of label `name` ("" when absent).
std::string_view Label(const Labels& labels, std::string_view name);
// The consumer a container series names (namespace, pod, pod_uid, container labels).
ConsumerRef RefOf(const Labels& labels);
// Series identity within an instance: name and labels (values may hold any byte: \x1f and \x1e
// cannot collide with a name, and values are length-prefixed).
std::string SeriesKey(const Sample& s);
// A (GPU, consumer) pair as one string key.
std::string ConsumerKey(const std::string& gpu, const ConsumerRef& r);
// A histogram bucket's finite `le` bound as a number (the agent writes them with the shortest
// round-trip decimal, so reading them back gives the same double).
double LeBound(std::string_view le);
// The UsageHistogram::compute bucket an `le` label names (kComputeShareBounds, "+Inf" the
// last); -1 for a bound that is not one of them (an agent with other buckets).
int ComputeBucketOf(std::string_view le);
// The memory histogram's bounds are bytes of each GPU's memory (eighths of it), so a bucket
// is known by its rank: per (GPU, consumer) the finite `le` values of the scrape, ascending.
using BoundsByConsumer = std::map<std::string, std::vector<double>>;
BoundsByConsumer MemoryBucketBounds(const TargetScrape& scrape);
// The UsageHistogram::memory bucket of a `_bucket` sample; -1 unless its series has the
// agent's layout (three finite bounds and +Inf).
int MemoryBucketOf(const Sample& s, const BoundsByConsumer& bounds);

}  // namespace gpuledger::ingest
