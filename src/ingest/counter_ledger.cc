#include "ingest/counter_ledger.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attribution/annotated_shares.h"
#include "attribution/close_hour.h"
#include "common/apportion.h"
#include "common/counter_units.h"
#include "model/usage.h"

namespace gpuledger::ingest {
namespace {

using json = nlohmann::json;

constexpr std::string_view kStateKind = "gpuledger-counter-ledger";
// 1: double accumulators (read and converted); 2: integers; 3: devices and attribution entries
// carry when they were last seen (read from 1 and 2 as the instance's last scrape). Fields
// added since are appended to their arrays and read as absent (zero, none, "") from a state
// that lacks them, so they need no new version: attribution entries' activity and share
// sources, and consumer accumulators' activity, its quality and rule and the share source.
constexpr int kStateVersion = 3;

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

constexpr std::string_view kDeviceInfo = "gpuledger_device_info";
constexpr std::string_view kAgentStart = "gpuledger_agent_start_time_seconds";
constexpr std::string_view kAttributionInfo = "gpuledger_container_attribution_info";
constexpr std::string_view kMemoryTotal = "gpuledger_device_memory_total_bytes";
constexpr std::string_view kContainerMemoryUsed = "gpuledger_container_memory_used_bytes";
constexpr std::string_view kContainerPeak = "gpuledger_container_memory_peak_bytes";
constexpr std::string_view kContainerPreviousPeak =
    "gpuledger_container_memory_previous_hour_peak_bytes";
constexpr std::string_view kAgentHourStart = "gpuledger_agent_hour_start_seconds";

const CounterKind* FindCounter(std::string_view name) {
  for (const CounterKind& k : kCounters)
    if (k.name == name) return &k;
  return nullptr;
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

// Series identity within an instance: name and labels (values may hold any byte: \x1f and \x1e
// cannot collide with a name, and values are length-prefixed).
std::string SeriesKey(const Sample& s) {
  std::string key = s.name;
  for (const auto& [k, v] : s.labels) {
    key += '\x1f';
    key += k;
    key += '\x1e';
    key += std::to_string(v.size());
    key += ':';
    key += v;
  }
  return key;
}

std::string ConsumerKey(const std::string& gpu, const ConsumerRef& r) {
  return gpu + '\x1f' + r.namespace_name + '\x1f' + r.pod + '\x1f' + r.pod_uid.value + '\x1f' +
         r.container;
}

// "measured:process-samples" -> (Quality "measured", rule "process-samples"); "estimated" ->
// (estimated, ""). The quality is nullopt for text that names none ("", an unknown word).
std::pair<std::optional<Quality>, std::string_view> ParseSource(std::string_view text) {
  std::string_view rule;
  if (auto colon = text.find(':'); colon != std::string_view::npos) {
    rule = text.substr(colon + 1);
    text = text.substr(0, colon);
  }
  return {ParseQuality(text), rule};
}

// A histogram bucket's finite `le` bound as a number (the agent writes them with the shortest
// round-trip decimal, so reading them back gives the same double).
double LeBound(std::string_view le) { return std::strtod(std::string(le).c_str(), nullptr); }

// The UsageHistogram::compute bucket an `le` label names (kComputeShareBounds, "+Inf" the
// last); -1 for a bound that is not one of them (an agent with other buckets).
int ComputeBucketOf(std::string_view le) {
  if (le == "+Inf") return UsageHistogram::kComputeBuckets - 1;
  const double bound = LeBound(le);
  for (int i = 0; i + 1 < UsageHistogram::kComputeBuckets; ++i)
    if (std::fabs(bound - kComputeShareBounds[i]) < 1e-9) return i;
  return -1;
}

// A float64 counter value as the agent's integer (the value must be finite and >= 0).
std::optional<std::int64_t> CountOf(const CounterKind& kind, double value) {
  if (!std::isfinite(value) || value < 0) return std::nullopt;
  return ToCount(value, kind.scale);
}

}  // namespace

struct CounterLedger::Impl {
  struct SeriesState {
    std::int64_t value = 0;  // the agent's integer count
    Micros at_us = 0;
  };
  struct DeviceFacts {
    std::string node, model, sharing, parent;
    Micros seen_us = 0;  // the last scrape that described it (Prune)
  };
  struct Sources {
    std::string compute, memory;
    Micros seen_us = 0;
    std::string activity, share;  // activity_source, share_source ("" from older agents)
  };
  struct InstanceState {
    Micros last_at_us = INT64_MIN;
    std::map<std::string, SeriesState> series;
    std::map<std::string, DeviceFacts> devices;  // gpu uuid -> facts
    std::map<std::string, Sources> attribution;  // ConsumerKey -> sources
  };
  struct ConsumerAcc {
    GpuMicros allocated_us = 0, compute_us = 0;
    KibSeconds memory_kib_s = 0;
    MilliJoules energy_mj = 0;
    Bytes peak_memory_bytes = 0;
    Quality compute_quality = Quality::kNone;
    Quality memory_quality = Quality::kNone;
    std::string rule;
    Activity activity;
    Quality activity_quality = Quality::kNone;
    std::string activity_rule;
    std::string share_source;
    // Cumulative bucket counts of the hour, as the deltas of the agent's `_bucket` counters
    // came (per bucket: UsageHistogram at Close).
    std::array<std::int64_t, UsageHistogram::kComputeBuckets> compute_le{};
    std::array<std::int64_t, UsageHistogram::kMemoryBuckets> memory_le{};
  };
  struct DeviceAcc {
    std::string node, model, sharing;
    GpuMicros metered_us = 0, busy_us = 0, idle_us = 0, unattributed_us = 0;
    MilliJoules energy_mj = 0;
    KibSeconds unattributed_memory_kib_s = 0;
    Bytes memory_total_bytes = 0;
    std::map<ConsumerRef, ConsumerAcc> consumers;
  };
  using HourKey = std::pair<Micros, std::string>;  // (hour, physical gpu uuid)

  std::string cluster;
  std::function<ConsumerInfo(const ConsumerRef&)> describe;
  std::map<std::string, InstanceState> instances;
  std::map<HourKey, DeviceAcc> hours;
  std::set<HourKey> touched;
  Micros forgotten_before_us = INT64_MIN;
  Micros latest_us = INT64_MIN;
  Micros observing_since_us = INT64_MAX;  // see CounterLedger::ObserveSince
  std::int64_t ignored = 0;
  std::int64_t resets = 0;
  std::int64_t late_dropped = 0;
  std::int64_t skipped_buckets = 0;  // histogram bucket samples of a layout we do not read
  // What changed since the state was last saved (PendingState): parts to write and to erase.
  bool engine_dirty = false;
  std::set<std::string> dirty_instances, removed_instances;
  std::set<HourKey> dirty_hours, removed_hours;

  DeviceAcc& Acc(Micros hour, const std::string& gpu, const InstanceState& inst) {
    HourKey key{hour, gpu};
    DeviceAcc& acc = hours[key];
    touched.insert(key);
    dirty_hours.insert(key);
    if (auto it = inst.devices.find(gpu); it != inst.devices.end()) {
      if (!it->second.node.empty()) acc.node = it->second.node;
      if (!it->second.model.empty()) acc.model = it->second.model;
      if (!it->second.sharing.empty()) acc.sharing = it->second.sharing;
    }
    return acc;
  }

  void Book(ConsumerAcc& c, const InstanceState& inst, const std::string& gpu,
            const ConsumerRef& ref) {
    auto it = inst.attribution.find(ConsumerKey(gpu, ref));
    if (it == inst.attribution.end()) return;
    // "measured:process-samples": the Quality before ':', the rule after it.
    auto [compute, rule] = ParseSource(it->second.compute);
    if (compute) c.compute_quality = Combine(c.compute_quality, *compute);
    c.rule = MergeRules(c.rule, std::string(rule));
    if (auto [memory, _] = ParseSource(it->second.memory); memory)
      c.memory_quality = Combine(c.memory_quality, *memory);
    // "none" (no activity source) and an older agent's absent label leave the quality kNone.
    auto [activity, activity_rule] = ParseSource(it->second.activity);
    if (activity && *activity != Quality::kNone) {
      c.activity_quality = Combine(c.activity_quality, *activity);
      c.activity_rule = MergeRules(c.activity_rule, std::string(activity_rule));
    }
    c.share_source = MergeRules(c.share_source, it->second.share);
  }

  // Adds the integer `delta` over (t0, t1] to the hours it covers, split exactly in proportion
  // to the time in each (largest remainder: the pieces sum to the delta).
  // `bucket`: the histogram bucket index of a kComputeBucket / kMemoryBucket sample.
  void Spread(const CounterKind& kind, const Sample& s, std::int64_t delta, Micros t0, Micros t1,
              const InstanceState& inst, int bucket = -1) {
    const std::string gpu(Label(s.labels, "gpu_uuid"));
    if (gpu.empty() || delta < 0) return;
    const bool consumer = kind.field >= Field::kAllocated;
    if (consumer && delta == 0) return;  // a consumer row only where it has something
    const ConsumerRef ref = consumer ? RefOf(s.labels) : ConsumerRef{};
    std::vector<Micros> hours;
    std::vector<std::uint64_t> overlap;
    for (Micros h = HourStart(t0); h < t1; h += kMicrosPerHour) {
      hours.push_back(h);
      overlap.push_back(
          static_cast<std::uint64_t>(std::min(t1, h + kMicrosPerHour) - std::max(t0, h)));
    }
    const std::vector<std::int64_t> parts = Apportion(delta, overlap);
    for (std::size_t i = 0; i < hours.size(); ++i) {
      const std::int64_t part = parts[i];
      const Micros h = hours[i];
      if (h < forgotten_before_us) {
        if (part != 0) ++late_dropped;
        continue;
      }
      if (consumer && part == 0) continue;
      DeviceAcc& acc = Acc(h, gpu, inst);
      switch (kind.field) {
        case Field::kMetered:
          acc.metered_us += part;
          continue;
        case Field::kBusy:
          acc.busy_us += part;
          continue;
        case Field::kIdle:
          acc.idle_us += part;
          continue;
        case Field::kUnattributed:
          acc.unattributed_us += part;
          continue;
        case Field::kDeviceEnergy:
          acc.energy_mj += part;
          continue;
        case Field::kUnattributedMemory:
          acc.unattributed_memory_kib_s += part;
          continue;
        default:
          break;
      }
      ConsumerAcc& c = acc.consumers[ref];
      switch (kind.field) {
        case Field::kAllocated:
          c.allocated_us += part;
          break;
        case Field::kCompute:
          c.compute_us += part;
          break;
        case Field::kMemory:
          c.memory_kib_s += part;
          break;
        case Field::kSmActive:
          c.activity.sm_active_us += part;
          break;
        case Field::kSmOccupancy:
          c.activity.sm_occupancy_us += part;
          break;
        case Field::kTensorActive:
          c.activity.tensor_active_us += part;
          break;
        case Field::kDramActive:
          c.activity.dram_active_us += part;
          break;
        case Field::kComputeBucket:
          c.compute_le[bucket] += part;
          break;
        case Field::kMemoryBucket:
          c.memory_le[bucket] += part;
          break;
        default:
          c.energy_mj += part;
          break;
      }
      Book(c, inst, gpu, ref);
    }
  }

  // --- State serialisation: shared by the whole State() and its parts. ---

  static std::string InstancePart(const std::string& name) { return "instance/" + name; }
  static std::string HourPart(const HourKey& key) {
    return "hour/" + std::to_string(key.first) + "/" + key.second;
  }

  json EngineJson() const {
    json j;
    j["kind"] = kStateKind;
    j["version"] = kStateVersion;
    j["cluster"] = cluster;
    j["forgotten_before_us"] = forgotten_before_us;
    j["latest_us"] = latest_us;
    j["observing_since_us"] = observing_since_us;
    j["ignored"] = ignored;
    j["resets"] = resets;
    j["late_dropped"] = late_dropped;
    return j;
  }

  // Reads the engine's fields; returns the version (1, 2 or 3). Throws on a malformed field.
  static Result<int> ReadEngine(const json& j, Impl& m) {
    if (!j.is_object() || j.value("kind", "") != kStateKind)
      return InvalidArgument("not a gpuledger counter-ledger state");
    const int version = j.at("version").get<int>();
    if (version < 1 || version > kStateVersion)
      return InvalidArgument("version " + j.at("version").dump() + ", this build reads 1 to " +
                             std::to_string(kStateVersion));
    m.forgotten_before_us = j.at("forgotten_before_us").get<Micros>();
    m.latest_us = j.at("latest_us").get<Micros>();
    m.observing_since_us = j.value("observing_since_us", INT64_MAX);
    m.ignored = j.at("ignored").get<std::int64_t>();
    m.resets = j.at("resets").get<std::int64_t>();
    m.late_dropped = j.at("late_dropped").get<std::int64_t>();
    return version;
  }

  static json InstanceJson(const InstanceState& inst) {
    json series = json::array();
    for (const auto& [key, st] : inst.series) series.push_back({key, st.value, st.at_us});
    json devices = json::object();
    for (const auto& [gpu, f] : inst.devices)
      devices[gpu] = {f.node, f.model, f.sharing, f.parent, f.seen_us};
    json attribution = json::array();
    for (const auto& [key, src] : inst.attribution)
      attribution.push_back({key, src.compute, src.memory, src.seen_us, src.activity, src.share});
    return {{"last_at_us", inst.last_at_us},
            {"series", series},
            {"devices", devices},
            {"attribution", attribution}};
  }

  // Version 1 kept series values in base units (doubles); before 3 entries had no sighting
  // time: the instance's last scrape stands in for it.
  static InstanceState InstanceFrom(const json& ij, int version) {
    InstanceState inst;
    inst.last_at_us = ij.at("last_at_us").get<Micros>();
    for (const auto& s : ij.at("series")) {
      std::string key = s.at(0).get<std::string>();
      std::int64_t value = 0;
      if (version == 1) {
        const CounterKind* kind = FindCounter(key.substr(0, key.find('\x1f')));
        auto c = kind ? CountOf(*kind, s.at(1).get<double>()) : std::nullopt;
        if (!c) continue;
        value = *c;
      } else {
        value = s.at(1).get<std::int64_t>();
      }
      inst.series[std::move(key)] = {value, s.at(2).get<Micros>()};
    }
    for (const auto& [gpu, f] : ij.at("devices").items())
      inst.devices[gpu] = {f.at(0).get<std::string>(), f.at(1).get<std::string>(),
                           f.at(2).get<std::string>(), f.at(3).get<std::string>(),
                           f.size() > 4 ? f.at(4).get<Micros>() : inst.last_at_us};
    for (const auto& a : ij.at("attribution"))
      inst.attribution[a.at(0).get<std::string>()] = {
          a.at(1).get<std::string>(), a.at(2).get<std::string>(),
          a.size() > 3 ? a.at(3).get<Micros>() : inst.last_at_us,
          a.size() > 4 ? a.at(4).get<std::string>() : "",
          a.size() > 5 ? a.at(5).get<std::string>() : ""};
    return inst;
  }

  static json HourJson(const HourKey& key, const DeviceAcc& a) {
    json consumers = json::array();
    for (const auto& [ref, c] : a.consumers)
      consumers.push_back({ref.namespace_name,
                           ref.pod,
                           ref.pod_uid.value,
                           ref.container,
                           c.allocated_us,
                           c.compute_us,
                           c.memory_kib_s,
                           c.energy_mj,
                           c.peak_memory_bytes,
                           static_cast<int>(c.compute_quality),
                           static_cast<int>(c.memory_quality),
                           c.rule,
                           c.activity.sm_active_us,
                           c.activity.sm_occupancy_us,
                           c.activity.tensor_active_us,
                           c.activity.dram_active_us,
                           static_cast<int>(c.activity_quality),
                           c.activity_rule,
                           c.share_source,
                           c.compute_le,
                           c.memory_le});
    return {key.first,
            key.second,
            a.node,
            a.model,
            a.sharing,
            a.metered_us,
            a.busy_us,
            a.idle_us,
            a.unattributed_us,
            a.energy_mj,
            a.memory_total_bytes,
            consumers,
            a.unattributed_memory_kib_s};
  }

  // Version 1 kept doubles: hours in µs, mJ and byte-µs.
  static Status HourFrom(const json& h, int version, HourKey& key, DeviceAcc& a) {
    const bool v1 = version == 1;
    auto count = [](const json& v) -> std::int64_t {
      return v.is_number_integer() ? v.get<std::int64_t>() : std::llround(v.get<double>());
    };
    key = {h.at(0).get<Micros>(), h.at(1).get<std::string>()};
    a.node = h.at(2).get<std::string>();
    a.model = h.at(3).get<std::string>();
    a.sharing = h.at(4).get<std::string>();
    a.metered_us = count(h.at(5));
    a.busy_us = count(h.at(6));
    a.idle_us = count(h.at(7));
    a.unattributed_us = count(h.at(8));
    a.energy_mj = count(h.at(9));
    a.memory_total_bytes = count(h.at(10));
    if (!v1) a.unattributed_memory_kib_s = h.at(12).get<KibSeconds>();
    for (const auto& c : h.at(11)) {
      ConsumerRef ref{c.at(0).get<std::string>(), c.at(1).get<std::string>(),
                      PodUid{c.at(2).get<std::string>()}, c.at(3).get<std::string>()};
      ConsumerAcc& ca = a.consumers[ref];
      ca.allocated_us = count(c.at(4));
      ca.compute_us = count(c.at(5));
      ca.memory_kib_s = v1 ? std::llround(c.at(6).get<double>() / kByteMicrosPerKibSecond)
                           : c.at(6).get<KibSeconds>();
      ca.energy_mj = count(c.at(7));
      ca.peak_memory_bytes = count(c.at(8));
      const int cq = c.at(9).get<int>(), mq = c.at(10).get<int>();
      if (cq < 0 || cq > 3 || mq < 0 || mq > 3) return InvalidArgument("bad quality");
      ca.compute_quality = static_cast<Quality>(cq);
      ca.memory_quality = static_cast<Quality>(mq);
      ca.rule = c.at(11).get<std::string>();
      if (c.size() > 12) {  // activity and share source: absent from states written before them
        ca.activity.sm_active_us = c.at(12).get<GpuMicros>();
        ca.activity.sm_occupancy_us = c.at(13).get<GpuMicros>();
        ca.activity.tensor_active_us = c.at(14).get<GpuMicros>();
        ca.activity.dram_active_us = c.at(15).get<GpuMicros>();
        const int aq = c.at(16).get<int>();
        if (aq < 0 || aq > 3) return InvalidArgument("bad activity quality");
        ca.activity_quality = static_cast<Quality>(aq);
        ca.activity_rule = c.at(17).get<std::string>();
        ca.share_source = c.at(18).get<std::string>();
      }
      if (c.size() > 20) {  // histogram buckets: absent from states written before them
        ca.compute_le = c.at(19).get<decltype(ca.compute_le)>();
        ca.memory_le = c.at(20).get<decltype(ca.memory_le)>();
      }
    }
    return Status::Ok();
  }

  void MarkAllDirty() {
    engine_dirty = true;
    for (const auto& [name, inst] : instances) dirty_instances.insert(name);
    for (const auto& [key, acc] : hours) dirty_hours.insert(key);
  }
  // Cumulative counts to counts per bucket. A delta split over an hour boundary is apportioned
  // per series, so one bucket's piece may round one below the bucket before it: clamped at 0.
  static UsageHistogram PerBucket(const ConsumerAcc& c) {
    UsageHistogram h;
    for (int i = 0; i < UsageHistogram::kComputeBuckets; ++i)
      h.compute[i] = std::max<std::int64_t>(0, c.compute_le[i] - (i > 0 ? c.compute_le[i - 1] : 0));
    for (int i = 0; i < UsageHistogram::kMemoryBuckets; ++i)
      h.memory[i] = std::max<std::int64_t>(0, c.memory_le[i] - (i > 0 ? c.memory_le[i - 1] : 0));
    return h;
  }

  LedgerHour Close(const HourKey& key, const DeviceAcc& a) const {
    attribution::OpenDeviceHour open;
    DeviceHour& d = open.device;
    d.hour_us = key.first;
    d.cluster = cluster;
    d.node = a.node;
    d.gpu = GpuUuid{key.second};
    d.gpu_model = a.model;
    d.sharing = ParseSharingMode(a.sharing).value_or(SharingMode::kExclusive);
    d.metered_us = a.metered_us;
    d.busy_us = a.busy_us;
    d.idle_us = a.idle_us;
    d.unattributed_us = a.unattributed_us;
    d.energy_mj = a.energy_mj;
    d.unattributed_memory_kib_s = a.unattributed_memory_kib_s;
    d.memory_total_bytes = a.memory_total_bytes;
    for (const auto& [ref, c] : a.consumers) {
      UsageRow r;
      r.consumer = describe(ref);
      r.consumer.ref = ref;
      r.node = d.node;
      r.gpu_model = d.gpu_model;
      r.sharing = d.sharing;
      r.allocated_us = c.allocated_us;
      r.compute_us = c.compute_us;
      r.energy_mj = c.energy_mj;
      r.memory_kib_s = c.memory_kib_s;
      r.peak_memory_bytes = c.peak_memory_bytes;
      r.compute_quality = c.compute_quality;
      r.memory_quality = c.memory_quality;
      r.compute_rule = c.rule;
      r.activity = c.activity;
      r.activity_quality = c.activity_quality;
      r.activity_rule = c.activity_rule;
      r.share_source = c.share_source;
      r.histogram = PerBucket(c);
      open.usage.push_back(std::move(r));
    }
    LedgerHour closed = attribution::CloseDeviceHour(std::move(open));
    // Shares only the pod watch knows (KAI/Run:ai annotations) move allocation within the hour.
    attribution::ApplyAnnotatedShares(closed);
    return closed;
  }

  // Raises the peak memory of the sample's consumer in `hour`, where it has a row.
  void RaisePeak(Micros hour, const Sample& s, Bytes bytes) {
    auto h = hours.find({hour, std::string(Label(s.labels, "gpu_uuid"))});
    if (h == hours.end()) return;
    auto c = h->second.consumers.find(RefOf(s.labels));
    if (c != h->second.consumers.end() && bytes > c->second.peak_memory_bytes) {
      c->second.peak_memory_bytes = bytes;
      dirty_hours.insert(h->first);
    }
  }

  // The memory histogram's bounds are bytes of each GPU's memory (eighths of it), so a bucket
  // is known by its rank: per (GPU, consumer) the finite `le` values of the scrape, ascending.
  using BoundsByConsumer = std::map<std::string, std::vector<double>>;
  static BoundsByConsumer MemoryBucketBounds(const TargetScrape& scrape) {
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
  // The UsageHistogram::memory bucket of a `_bucket` sample; -1 unless its series has the
  // agent's layout (three finite bounds and +Inf).
  static int MemoryBucketOf(const Sample& s, const BoundsByConsumer& bounds) {
    auto it = bounds.find(ConsumerKey(std::string(Label(s.labels, "gpu_uuid")), RefOf(s.labels)));
    if (it == bounds.end() || it->second.size() != UsageHistogram::kMemoryBuckets - 1) return -1;
    const std::string_view le = Label(s.labels, "le");
    if (le == "+Inf") return UsageHistogram::kMemoryBuckets - 1;
    const double bound = LeBound(le);
    auto pos = std::lower_bound(it->second.begin(), it->second.end(), bound);
    return static_cast<int>(pos - it->second.begin());
  }

  void Feed(const TargetScrape& scrape) {
    InstanceState& inst = instances[scrape.instance];
    engine_dirty = true;
    if (scrape.at_us <= inst.last_at_us) {
      ++ignored;
      return;
    }
    dirty_instances.insert(scrape.instance);
    removed_instances.erase(scrape.instance);
    const Micros at = scrape.at_us;
    const Micros prev_at = inst.last_at_us;
    latest_us = std::max(latest_us, at);
    // An agent first seen, that started while we were already observing: its counters began at
    // zero at its start, inside our window, so they count from there rather than being a
    // baseline. Every ingestion path then books the same totals.
    Micros agent_start_us = INT64_MIN;
    for (const Sample& s : scrape.samples)
      if (s.name == kAgentStart && std::isfinite(s.value) && s.value > 0)
        agent_start_us = ToCount(s.value, kUs);
    const bool count_from_start = prev_at == INT64_MIN && agent_start_us != INT64_MIN &&
                                  agent_start_us >= observing_since_us && agent_start_us < at;
    // Facts first: they label the deltas of this same scrape.
    std::int64_t restarted_us = -1;  // the largest metered counter that went backwards: uptime
    for (const Sample& s : scrape.samples) {
      if (s.name == kDeviceInfo) {
        DeviceFacts& f = inst.devices[std::string(Label(s.labels, "gpu_uuid"))];
        f.node = Label(s.labels, "node");
        f.model = Label(s.labels, "gpu_model");
        f.sharing = Label(s.labels, "sharing_mode");
        f.parent = Label(s.labels, "parent_uuid");
        f.seen_us = at;
      } else if (s.name == kAttributionInfo) {
        Sources& src = inst.attribution[ConsumerKey(std::string(Label(s.labels, "gpu_uuid")),
                                                    RefOf(s.labels))];
        src.compute = Label(s.labels, "compute_source");
        src.memory = Label(s.labels, "memory_source");
        src.activity = Label(s.labels, "activity_source");
        src.share = Label(s.labels, "share_source");
        src.seen_us = at;
      } else if (s.name == "gpuledger_device_metered_seconds_total") {
        auto it = inst.series.find(SeriesKey(s));
        auto count = CountOf(kCounters[0], s.value);
        if (count && it != inst.series.end() && *count < it->second.value)
          restarted_us = std::max(restarted_us, *count);
      }
    }
    // An agent restart: the new counters cover at most its uptime (the largest metered
    // counter), so reset and new series are booked over that, not the whole gap.
    Micros reset_from = count_from_start ? agent_start_us : prev_at;
    if (restarted_us >= 0 && prev_at != INT64_MIN)
      reset_from = std::max(prev_at, at - restarted_us);
    const auto memory_bounds = MemoryBucketBounds(scrape);
    for (const Sample& s : scrape.samples) {
      const CounterKind* kind = FindCounter(s.name);
      if (kind == nullptr) continue;
      const auto value = CountOf(*kind, s.value);
      if (!value) continue;  // not a counter value: keep the last
      int bucket = -1;
      if (kind->field == Field::kComputeBucket || kind->field == Field::kMemoryBucket) {
        bucket = kind->field == Field::kComputeBucket ? ComputeBucketOf(Label(s.labels, "le"))
                                                      : MemoryBucketOf(s, memory_bounds);
        if (bucket < 0) {
          ++skipped_buckets;
          continue;
        }
      }
      auto [it, fresh] = inst.series.try_emplace(SeriesKey(s));
      SeriesState& st = it->second;
      std::int64_t delta = 0;
      Micros from = INT64_MIN;
      if (!fresh && kind->field == Field::kMetered) {
        // Every hour since the last sample gets a row, so a gap shows as unmetered time.
        const std::string gpu(Label(s.labels, "gpu_uuid"));
        for (Micros h = HourStart(st.at_us + 1); h < at && !gpu.empty(); h += kMicrosPerHour)
          if (h >= forgotten_before_us) Acc(h, gpu, inst);
      }
      if (!fresh && *value >= st.value) {
        delta = *value - st.value;
        from = st.at_us;
      } else if (!fresh) {
        ++resets;  // counted since the reset: the new value is the delta
        delta = *value;
        from = std::max(st.at_us, reset_from);
      } else if (prev_at != INT64_MIN || count_from_start) {
        delta = *value;  // a series new on a known agent started from 0 since its last scrape
        from = reset_from;
      }  // else: the first scrape of an agent only sets the baseline
      st.value = *value;
      st.at_us = at;
      if (from != INT64_MIN && from < at) Spread(*kind, s, delta, from, at, inst, bucket);
    }
    // Gauges describe the instant just before the scrape: into the hour that holds it (a
    // scrape on the hour closes the hour before). The agent's hour peaks name their own hour
    // (gpuledger_agent_hour_start_seconds, by its clock): a peak between two scrapes is still
    // the hour's, and the previous hour's peak completes an hour whose last scrape came
    // before its last cycle.
    const Micros hour = HourStart(at - 1);
    Micros agent_hour_us = INT64_MIN;
    for (const Sample& s : scrape.samples)
      if (s.name == kAgentHourStart && std::isfinite(s.value) && s.value > 0)
        agent_hour_us = HourStart(ToCount(s.value, kUs));
    for (const Sample& s : scrape.samples) {
      if (!std::isfinite(s.value) || s.value < 0 || s.value > 9e18) continue;
      const auto bytes = static_cast<Bytes>(std::llround(s.value));
      if (s.name == kMemoryTotal) {
        if (auto h = hours.find({hour, std::string(Label(s.labels, "gpu_uuid"))});
            h != hours.end() && h->second.memory_total_bytes != bytes) {
          h->second.memory_total_bytes = bytes;
          dirty_hours.insert(h->first);
        }
      } else if (s.name == kContainerMemoryUsed) {
        RaisePeak(hour, s, bytes);
      } else if (s.name == kContainerPeak && agent_hour_us != INT64_MIN) {
        RaisePeak(agent_hour_us, s, bytes);
      } else if (s.name == kContainerPreviousPeak && agent_hour_us != INT64_MIN) {
        RaisePeak(agent_hour_us - kMicrosPerHour, s, bytes);
      }
    }
    inst.last_at_us = at;
  }
};

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

CounterLedger::CounterLedger(std::string cluster,
                             std::function<ConsumerInfo(const ConsumerRef&)> describe)
    : impl_(std::make_shared<Impl>()) {
  impl_->cluster = std::move(cluster);
  impl_->describe = describe ? std::move(describe) : [](const ConsumerRef& ref) {
    ConsumerInfo info;
    info.ref = ref;
    return info;
  };
}

void CounterLedger::Feed(const TargetScrape& scrape) { impl_->Feed(scrape); }

std::vector<LedgerHour> CounterLedger::Hours(Micros before_us) const {
  std::vector<LedgerHour> out;
  for (const auto& [key, acc] : impl_->hours) {
    if (key.first >= before_us) break;
    out.push_back(impl_->Close(key, acc));
  }
  return out;
}

std::vector<LedgerHour> CounterLedger::TakeTouched() {
  std::vector<LedgerHour> out;
  for (const auto& key : impl_->touched)
    if (auto it = impl_->hours.find(key); it != impl_->hours.end())
      out.push_back(impl_->Close(key, it->second));
  impl_->touched.clear();
  return out;
}

void CounterLedger::Retouch(const std::vector<LedgerHour>& rows) {
  for (const LedgerHour& h : rows) {
    Impl::HourKey key{h.device.hour_us, h.device.gpu.value};
    if (impl_->hours.contains(key)) impl_->touched.insert(std::move(key));
  }
}

void CounterLedger::Forget(Micros before_us) {
  Impl& m = *impl_;
  before_us = HourStart(before_us);
  if (before_us <= m.forgotten_before_us) return;
  m.forgotten_before_us = before_us;
  m.engine_dirty = true;
  std::erase_if(m.hours, [&](const auto& kv) {
    if (kv.first.first >= before_us) return false;
    m.dirty_hours.erase(kv.first);
    m.removed_hours.insert(kv.first);
    return true;
  });
  std::erase_if(m.touched, [&](const auto& k) { return k.first < before_us; });
  // Series the agent stopped exporting (its instance was scraped since) are dropped once
  // forgotten; a silent instance keeps all its series for when it comes back (until Prune).
  for (auto& [name, inst] : m.instances)
    if (std::erase_if(inst.series, [&](const auto& kv) {
          return kv.second.at_us < before_us && kv.second.at_us < inst.last_at_us;
        }) > 0)
      m.dirty_instances.insert(name);
}

void CounterLedger::Prune(Micros before_us) {
  Impl& m = *impl_;
  for (auto it = m.instances.begin(); it != m.instances.end();) {
    auto& [name, inst] = *it;
    if (inst.last_at_us < before_us) {
      m.dirty_instances.erase(name);
      m.removed_instances.insert(name);
      it = m.instances.erase(it);
      continue;
    }
    const auto stale = [&](const auto& kv) { return kv.second.seen_us < before_us; };
    if (std::erase_if(inst.devices, stale) + std::erase_if(inst.attribution, stale) > 0)
      m.dirty_instances.insert(name);
    ++it;
  }
}

std::string CounterLedger::State() const {
  const Impl& m = *impl_;
  json j = m.EngineJson();
  json instances = json::object();
  for (const auto& [name, inst] : m.instances) instances[name] = Impl::InstanceJson(inst);
  j["instances"] = instances;
  json hours = json::array();
  for (const auto& [key, a] : m.hours) hours.push_back(Impl::HourJson(key, a));
  j["hours"] = hours;
  return j.dump();
}

Status CounterLedger::Restore(std::string_view state_json) {
  // nlohmann reports malformed input by exceptions: they stop here (style rule 5).
  try {
    json j = json::parse(state_json);
    auto fresh = std::make_shared<Impl>();
    fresh->cluster = impl_->cluster;
    fresh->describe = impl_->describe;
    auto version = Impl::ReadEngine(j, *fresh);
    if (!version) return InvalidArgument("ingest state: " + version.error().message);
    for (const auto& [name, ij] : j.at("instances").items())
      fresh->instances[name] = Impl::InstanceFrom(ij, *version);
    for (const auto& h : j.at("hours")) {
      Impl::HourKey key;
      Impl::DeviceAcc acc;
      if (Status s = Impl::HourFrom(h, *version, key, acc); !s.ok())
        return InvalidArgument("ingest state: " + s.error().message);
      fresh->hours[key] = std::move(acc);
      fresh->touched.insert(key);  // re-written after a restart: idempotent
    }
    // A whole state is saved again in parts: every part is pending.
    fresh->MarkAllDirty();
    impl_ = std::move(fresh);
    return Status::Ok();
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("ingest state: ") + e.what());
  }
}

CounterLedger::StateDelta CounterLedger::PendingState() const {
  const Impl& m = *impl_;
  StateDelta d;
  for (const std::string& name : m.dirty_instances)
    if (auto it = m.instances.find(name); it != m.instances.end()) {
      json ij = Impl::InstanceJson(it->second);
      ij["name"] = name;
      d.put[Impl::InstancePart(name)] = ij.dump();
    }
  for (const std::string& name : m.removed_instances)
    if (!m.instances.contains(name)) d.erase.insert(Impl::InstancePart(name));
  for (const Impl::HourKey& key : m.dirty_hours)
    if (auto it = m.hours.find(key); it != m.hours.end())
      d.put[Impl::HourPart(key)] = Impl::HourJson(key, it->second).dump();
  for (const Impl::HourKey& key : m.removed_hours)
    if (!m.hours.contains(key)) d.erase.insert(Impl::HourPart(key));
  if (m.engine_dirty || !d.empty()) d.put["engine"] = m.EngineJson().dump();
  return d;
}

void CounterLedger::StateSaved() {
  Impl& m = *impl_;
  m.engine_dirty = false;
  m.dirty_instances.clear();
  m.removed_instances.clear();
  m.dirty_hours.clear();
  m.removed_hours.clear();
}

Status CounterLedger::RestoreParts(const std::map<std::string, std::string>& parts,
                                   std::string_view name_prefix) {
  auto fresh = std::make_shared<Impl>();
  fresh->cluster = impl_->cluster;
  fresh->describe = impl_->describe;
  auto fail = [&](const std::string& part, const std::string& why) {
    return InvalidArgument(fmt::format("'{}{}': {}", name_prefix, part, why));
  };
  auto engine = parts.find("engine");
  if (engine == parts.end())
    return fail("engine", fmt::format("missing, beside {} other parts", parts.size()));
  for (const auto& [part, text] : parts) {
    // nlohmann reports malformed input by exceptions: they stop here (style rule 5).
    try {
      const json j = json::parse(text);
      if (part == "engine") {
        auto v = Impl::ReadEngine(j, *fresh);
        if (!v) return fail(part, v.error().message);
        if (*v != kStateVersion)
          return fail(part,
                      fmt::format("parts of version {}, this build reads {}", *v, kStateVersion));
      } else if (part.starts_with("instance/")) {
        std::string name = part.substr(std::string_view("instance/").size());
        if (j.at("name").get<std::string>() != name) return fail(part, "names another instance");
        fresh->instances[std::move(name)] = Impl::InstanceFrom(j, kStateVersion);
      } else if (part.starts_with("hour/")) {
        Impl::HourKey key;
        Impl::DeviceAcc acc;
        if (Status s = Impl::HourFrom(j, kStateVersion, key, acc); !s.ok())
          return fail(part, s.error().message);
        if (Impl::HourPart(key) != part) return fail(part, "names another hour or GPU");
        fresh->hours[key] = std::move(acc);
      } else {
        return fail(part, "not a part of the counter-ledger state");
      }
    } catch (const std::exception& e) {
      return fail(part, e.what());
    }
  }
  // Hours re-written after a restart (idempotent); the parts themselves are already stored.
  for (const auto& [key, acc] : fresh->hours) fresh->touched.insert(key);
  impl_ = std::move(fresh);
  return Status::Ok();
}

CounterLedger::Footprint CounterLedger::footprint() const {
  Footprint f;
  f.instances = static_cast<std::int64_t>(impl_->instances.size());
  for (const auto& [name, inst] : impl_->instances) {
    f.series += static_cast<std::int64_t>(inst.series.size());
    f.devices += static_cast<std::int64_t>(inst.devices.size());
    f.attribution += static_cast<std::int64_t>(inst.attribution.size());
  }
  f.hours = static_cast<std::int64_t>(impl_->hours.size());
  return f;
}

std::int64_t CounterLedger::ignored_scrapes() const { return impl_->ignored; }
std::int64_t CounterLedger::resets() const { return impl_->resets; }
std::int64_t CounterLedger::late_dropped() const { return impl_->late_dropped; }
std::int64_t CounterLedger::skipped_buckets() const { return impl_->skipped_buckets; }
Micros CounterLedger::latest_us() const { return impl_->latest_us; }

void CounterLedger::ObserveSince(Micros since_us) { impl_->observing_since_us = since_us; }

}  // namespace gpuledger::ingest
