#include "ingest/counter_ledger.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "common/apportion.h"
#include "model/usage.h"

namespace gpuledger::ingest {
namespace {

using json = nlohmann::json;

constexpr std::string_view kStateKind = "gpuledger-counter-ledger";
constexpr int kStateVersion = 1;

// What a counter adds to, and its scale from the exposition's base unit to the ledger's.
enum class Field {
  kMetered, kBusy, kIdle, kUnattributed, kDeviceEnergy,  // per device
  kAllocated, kCompute, kMemory, kConsumerEnergy,         // per (device, consumer)
};

struct CounterKind {
  std::string_view name;
  Field field;
  double scale;  // seconds -> µs, joules -> mJ, byte-seconds -> byte-µs
};

constexpr CounterKind kCounters[] = {
    {"gpuledger_device_metered_seconds_total", Field::kMetered, 1e6},
    {"gpuledger_device_busy_seconds_total", Field::kBusy, 1e6},
    {"gpuledger_device_idle_seconds_total", Field::kIdle, 1e6},
    {"gpuledger_device_unattributed_seconds_total", Field::kUnattributed, 1e6},
    {"gpuledger_device_energy_joules_total", Field::kDeviceEnergy, 1e3},
    {"gpuledger_container_allocated_gpu_seconds_total", Field::kAllocated, 1e6},
    {"gpuledger_container_compute_gpu_seconds_total", Field::kCompute, 1e6},
    {"gpuledger_container_memory_byte_seconds_total", Field::kMemory, 1e6},
    {"gpuledger_container_energy_joules_total", Field::kConsumerEnergy, 1e3},
};

constexpr std::string_view kDeviceInfo = "gpuledger_device_info";
constexpr std::string_view kAgentStart = "gpuledger_agent_start_time_seconds";
constexpr std::string_view kAttributionInfo = "gpuledger_container_attribution_info";
constexpr std::string_view kMemoryTotal = "gpuledger_device_memory_total_bytes";
constexpr std::string_view kContainerMemoryUsed = "gpuledger_container_memory_used_bytes";

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


// An integer weight for Apportion from a non-negative double (1/1000 of the unit: exact enough
// that rounding to whole units is decided by the largest remainders).
std::uint64_t Weight(double x) {
  if (!(x > 0)) return 0;
  return static_cast<std::uint64_t>(std::llround(x * 1000.0));
}

std::int64_t Round(double x) { return x > 0 ? std::llround(x) : 0; }

}  // namespace

struct CounterLedger::Impl {
  struct SeriesState {
    double value = 0;
    Micros at_us = 0;
  };
  struct DeviceFacts {
    std::string node, model, sharing, parent;
  };
  struct Sources {
    std::string compute, memory;
  };
  struct InstanceState {
    Micros last_at_us = INT64_MIN;
    std::map<std::string, SeriesState> series;
    std::map<std::string, DeviceFacts> devices;     // gpu uuid -> facts
    std::map<std::string, Sources> attribution;     // ConsumerKey -> sources
  };
  struct ConsumerAcc {
    double allocated_us = 0, compute_us = 0, memory_byte_us = 0, energy_mj = 0;
    double peak_memory_bytes = 0;
    Quality compute_quality = Quality::kNone;
    Quality memory_quality = Quality::kNone;
    std::string rule;
  };
  struct DeviceAcc {
    std::string node, model, sharing;
    double metered_us = 0, busy_us = 0, idle_us = 0, unattributed_us = 0, energy_mj = 0;
    double memory_total_bytes = 0;
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

  DeviceAcc& Acc(Micros hour, const std::string& gpu, const InstanceState& inst) {
    HourKey key{hour, gpu};
    DeviceAcc& acc = hours[key];
    touched.insert(key);
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
    std::string_view compute = it->second.compute;
    std::string_view rule;
    if (auto colon = compute.find(':'); colon != std::string_view::npos) {
      rule = compute.substr(colon + 1);
      compute = compute.substr(0, colon);
    }
    if (auto q = ParseQuality(compute)) c.compute_quality = Combine(c.compute_quality, *q);
    c.rule = MergeRules(c.rule, std::string(rule));
    std::string_view memory = it->second.memory;
    if (auto colon = memory.find(':'); colon != std::string_view::npos) memory = memory.substr(0, colon);
    if (auto q = ParseQuality(memory)) c.memory_quality = Combine(c.memory_quality, *q);
  }

  // Adds `delta` (ledger units) over (t0, t1] to the hours it covers, in proportion to time.
  void Spread(const CounterKind& kind, const Sample& s, double delta, Micros t0, Micros t1,
              const InstanceState& inst) {
    const std::string gpu(Label(s.labels, "gpu_uuid"));
    if (gpu.empty()) return;
    const bool consumer = kind.field >= Field::kAllocated;
    if (consumer && !(delta > 0)) return;  // a consumer row only where it has something
    const ConsumerRef ref = consumer ? RefOf(s.labels) : ConsumerRef{};
    const double span = static_cast<double>(t1 - t0);
    double given = 0;
    for (Micros h = HourStart(t0 + 1); h < t1; h += kMicrosPerHour) {
      const Micros end = std::min(t1, h + kMicrosPerHour);
      const Micros begin = std::max(t0, h);
      // The last piece takes the rest so the pieces sum to the delta exactly.
      const double part = end == t1 ? delta - given : delta * static_cast<double>(end - begin) / span;
      given += part;
      if (h < forgotten_before_us) {
        if (part != 0) ++late_dropped;
        continue;
      }
      DeviceAcc* acc = &Acc(h, gpu, inst);
      if (!consumer) {
        switch (kind.field) {
          case Field::kMetered: acc->metered_us += part; break;
          case Field::kBusy: acc->busy_us += part; break;
          case Field::kIdle: acc->idle_us += part; break;
          case Field::kUnattributed: acc->unattributed_us += part; break;
          default: acc->energy_mj += part; break;
        }
        continue;
      }
      if (!(part > 0)) continue;
      ConsumerAcc& c = acc->consumers[ref];
      switch (kind.field) {
        case Field::kAllocated: c.allocated_us += part; break;
        case Field::kCompute: c.compute_us += part; break;
        case Field::kMemory: c.memory_byte_us += part; break;
        default: c.energy_mj += part; break;
      }
      Book(c, inst, gpu, ref);
    }
  }

  LedgerHour Close(const HourKey& key, const DeviceAcc& a) const {
    LedgerHour out;
    DeviceHour& d = out.device;
    d.hour_us = key.first;
    d.cluster = cluster;
    d.node = a.node;
    d.gpu = GpuUuid{key.second};
    d.gpu_model = a.model;
    d.sharing = ParseSharingMode(a.sharing).value_or(SharingMode::kExclusive);
    d.metered_us = std::clamp<GpuMicros>(Round(a.metered_us), 0, kMicrosPerHour);
    d.unmetered_us = kMicrosPerHour - d.metered_us;
    d.memory_total_bytes = Round(a.memory_total_bytes);
    {
      std::uint64_t w[] = {Weight(a.busy_us), Weight(a.idle_us)};
      auto p = Apportion(d.metered_us, w);
      d.busy_us = p[0];
      d.idle_us = p[1];
    }
    std::vector<std::uint64_t> compute_w, alloc_w, energy_w;
    double allocated_sum = 0, energy_sum = 0;
    for (const auto& [ref, c] : a.consumers) {
      compute_w.push_back(Weight(c.compute_us));
      alloc_w.push_back(Weight(c.allocated_us));
      energy_w.push_back(Weight(c.energy_mj));
      allocated_sum += c.allocated_us;
      energy_sum += c.energy_mj;
    }
    compute_w.push_back(Weight(a.unattributed_us));
    auto compute = Apportion(d.busy_us, compute_w);
    d.unattributed_us = compute.back();
    // Unallocated is what the grants left of the metered time; more granted than metered
    // (float noise, over-subscription) scales the grants down to the metered time.
    alloc_w.push_back(Weight(std::max(0.0, a.metered_us - allocated_sum)));
    auto allocated = Apportion(d.metered_us, alloc_w);
    d.unallocated_us = allocated.back();
    // Energy: the consumers' shares as counted; the rest split between unattributed and idle
    // by their time, as attribution splits it.
    d.energy_mj = Round(a.energy_mj);
    const double rest = std::max(0.0, a.energy_mj - energy_sum);
    const double unattr_idle = static_cast<double>(d.unattributed_us + d.idle_us);
    energy_w.push_back(unattr_idle > 0 ? Weight(rest * static_cast<double>(d.unattributed_us) / unattr_idle) : 0);
    energy_w.push_back(unattr_idle > 0 ? Weight(rest * static_cast<double>(d.idle_us) / unattr_idle) : Weight(rest));
    auto energy = Apportion(d.energy_mj, energy_w);
    d.idle_energy_mj = energy.back();
    d.unattributed_energy_mj = energy[energy.size() - 2];
    std::size_t i = 0;
    for (const auto& [ref, c] : a.consumers) {
      UsageRow r;
      r.hour_us = key.first;
      r.gpu = d.gpu;
      r.consumer = describe(ref);
      r.consumer.ref = ref;
      r.node = d.node;
      r.gpu_model = d.gpu_model;
      r.sharing = d.sharing;
      r.allocated_us = allocated[i];
      r.compute_us = compute[i];
      r.energy_mj = energy[i];
      r.memory_byte_us = c.memory_byte_us;
      r.peak_memory_bytes = Round(c.peak_memory_bytes);
      r.compute_quality = c.compute_quality;
      r.memory_quality = c.memory_quality;
      r.compute_rule = c.rule;
      out.usage.push_back(std::move(r));
      ++i;
    }
    return out;
  }

  void Feed(const TargetScrape& scrape) {
    InstanceState& inst = instances[scrape.instance];
    if (scrape.at_us <= inst.last_at_us) {
      ++ignored;
      return;
    }
    const Micros at = scrape.at_us;
    const Micros prev_at = inst.last_at_us;
    latest_us = std::max(latest_us, at);
    // An agent first seen, that started while we were already observing: its counters began at
    // zero at its start, inside our window, so they count from there rather than being a
    // baseline. Every ingestion path then books the same totals.
    Micros agent_start_us = INT64_MIN;
    for (const Sample& s : scrape.samples)
      if (s.name == kAgentStart && std::isfinite(s.value) && s.value > 0)
        agent_start_us = static_cast<Micros>(std::llround(s.value * 1e6));
    const bool count_from_start = prev_at == INT64_MIN && agent_start_us != INT64_MIN &&
                                  agent_start_us >= observing_since_us && agent_start_us < at;
    // Facts first: they label the deltas of this same scrape.
    double restarted_s = -1;  // the largest metered counter that went backwards: agent uptime
    for (const Sample& s : scrape.samples) {
      if (s.name == kDeviceInfo) {
        DeviceFacts& f = inst.devices[std::string(Label(s.labels, "gpu_uuid"))];
        f.node = Label(s.labels, "node");
        f.model = Label(s.labels, "gpu_model");
        f.sharing = Label(s.labels, "sharing_mode");
        f.parent = Label(s.labels, "parent_uuid");
      } else if (s.name == kAttributionInfo) {
        Sources& src = inst.attribution[ConsumerKey(std::string(Label(s.labels, "gpu_uuid")), RefOf(s.labels))];
        src.compute = Label(s.labels, "compute_source");
        src.memory = Label(s.labels, "memory_source");
      } else if (s.name == "gpuledger_device_metered_seconds_total" && std::isfinite(s.value)) {
        auto it = inst.series.find(SeriesKey(s));
        if (it != inst.series.end() && s.value < it->second.value)
          restarted_s = std::max(restarted_s, s.value);
      }
    }
    // An agent restart: the new counters cover at most its uptime (the largest metered
    // counter), so reset and new series are booked over that, not the whole gap.
    Micros reset_from = count_from_start ? agent_start_us : prev_at;
    if (restarted_s >= 0 && prev_at != INT64_MIN)
      reset_from = std::max(prev_at, at - static_cast<Micros>(std::ceil(restarted_s * 1e6)));
    for (const Sample& s : scrape.samples) {
      const CounterKind* kind = FindCounter(s.name);
      if (kind == nullptr) continue;
      if (!std::isfinite(s.value) || s.value < 0) continue;  // not a counter value: keep the last
      auto [it, fresh] = inst.series.try_emplace(SeriesKey(s));
      SeriesState& st = it->second;
      double delta = 0;
      Micros from = INT64_MIN;
      if (!fresh && kind->field == Field::kMetered) {
        // Every hour since the last sample gets a row, so a gap shows as unmetered time.
        const std::string gpu(Label(s.labels, "gpu_uuid"));
        for (Micros h = HourStart(st.at_us + 1); h < at && !gpu.empty(); h += kMicrosPerHour)
          if (h >= forgotten_before_us) Acc(h, gpu, inst);
      }
      if (!fresh && s.value >= st.value) {
        delta = s.value - st.value;
        from = st.at_us;
      } else if (!fresh) {
        ++resets;  // counted since the reset: the new value is the delta
        delta = s.value;
        from = std::max(st.at_us, reset_from);
      } else if (prev_at != INT64_MIN || count_from_start) {
        delta = s.value;  // a series new on a known agent started from 0 since its last scrape
        from = reset_from;
      }  // else: the first scrape of an agent only sets the baseline
      st.value = s.value;
      st.at_us = at;
      if (from != INT64_MIN && from < at) Spread(*kind, s, delta * kind->scale, from, at, inst);
    }
    // Gauges into the hour of the scrape.
    const Micros hour = HourStart(at);
    for (const Sample& s : scrape.samples) {
      if (!std::isfinite(s.value)) continue;
      if (s.name == kMemoryTotal) {
        if (auto h = hours.find({hour, std::string(Label(s.labels, "gpu_uuid"))}); h != hours.end())
          h->second.memory_total_bytes = s.value;
      } else if (s.name == kContainerMemoryUsed) {
        auto h = hours.find({hour, std::string(Label(s.labels, "gpu_uuid"))});
        if (h == hours.end()) continue;
        auto c = h->second.consumers.find(RefOf(s.labels));
        if (c != h->second.consumers.end())
          c->second.peak_memory_bytes = std::max(c->second.peak_memory_bytes, s.value);
      }
    }
    inst.last_at_us = at;
  }
};

CounterLedger::CounterLedger(std::string cluster,
                             std::function<ConsumerInfo(const ConsumerRef&)> describe)
    : impl_(std::make_shared<Impl>()) {
  impl_->cluster = std::move(cluster);
  impl_->describe = describe ? std::move(describe)
                             : [](const ConsumerRef& ref) {
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

void CounterLedger::Forget(Micros before_us) {
  Impl& m = *impl_;
  before_us = HourStart(before_us);
  if (before_us <= m.forgotten_before_us) return;
  m.forgotten_before_us = before_us;
  std::erase_if(m.hours, [&](const auto& kv) { return kv.first.first < before_us; });
  std::erase_if(m.touched, [&](const auto& k) { return k.first < before_us; });
  // Series the agent stopped exporting (its instance was scraped since) are dropped once
  // forgotten; a silent instance keeps all its series for when it comes back.
  for (auto& [name, inst] : m.instances)
    std::erase_if(inst.series, [&](const auto& kv) {
      return kv.second.at_us < before_us && kv.second.at_us < inst.last_at_us;
    });
}

std::string CounterLedger::State() const {
  const Impl& m = *impl_;
  json j;
  j["kind"] = kStateKind;
  j["version"] = kStateVersion;
  j["cluster"] = m.cluster;
  j["forgotten_before_us"] = m.forgotten_before_us;
  j["latest_us"] = m.latest_us;
  j["observing_since_us"] = m.observing_since_us;
  j["ignored"] = m.ignored;
  j["resets"] = m.resets;
  j["late_dropped"] = m.late_dropped;
  json instances = json::object();
  for (const auto& [name, inst] : m.instances) {
    json series = json::array();
    for (const auto& [key, st] : inst.series) series.push_back({key, st.value, st.at_us});
    json devices = json::object();
    for (const auto& [gpu, f] : inst.devices) devices[gpu] = {f.node, f.model, f.sharing, f.parent};
    json attribution = json::array();
    for (const auto& [key, src] : inst.attribution) attribution.push_back({key, src.compute, src.memory});
    instances[name] = {{"last_at_us", inst.last_at_us}, {"series", series}, {"devices", devices},
                       {"attribution", attribution}};
  }
  j["instances"] = instances;
  json hours = json::array();
  for (const auto& [key, a] : m.hours) {
    json consumers = json::array();
    for (const auto& [ref, c] : a.consumers)
      consumers.push_back({ref.namespace_name, ref.pod, ref.pod_uid.value, ref.container,
                           c.allocated_us, c.compute_us, c.memory_byte_us, c.energy_mj,
                           c.peak_memory_bytes, static_cast<int>(c.compute_quality),
                           static_cast<int>(c.memory_quality), c.rule});
    hours.push_back({key.first, key.second, a.node, a.model, a.sharing, a.metered_us, a.busy_us,
                     a.idle_us, a.unattributed_us, a.energy_mj, a.memory_total_bytes, consumers});
  }
  j["hours"] = hours;
  return j.dump();
}

Status CounterLedger::Restore(std::string_view state_json) {
  // nlohmann reports malformed input by exceptions: they stop here (style rule 5).
  try {
    json j = json::parse(state_json);
    if (!j.is_object() || j.value("kind", "") != kStateKind)
      return InvalidArgument("ingest state: not a gpuledger counter-ledger state");
    if (j.at("version").get<int>() != kStateVersion)
      return InvalidArgument("ingest state: version " + j.at("version").dump() + ", this build reads " +
                             std::to_string(kStateVersion));
    auto fresh = std::make_shared<Impl>();
    fresh->cluster = impl_->cluster;
    fresh->describe = impl_->describe;
    fresh->forgotten_before_us = j.at("forgotten_before_us").get<Micros>();
    fresh->latest_us = j.at("latest_us").get<Micros>();
    fresh->observing_since_us = j.value("observing_since_us", INT64_MAX);
    fresh->ignored = j.at("ignored").get<std::int64_t>();
    fresh->resets = j.at("resets").get<std::int64_t>();
    fresh->late_dropped = j.at("late_dropped").get<std::int64_t>();
    for (const auto& [name, ij] : j.at("instances").items()) {
      Impl::InstanceState& inst = fresh->instances[name];
      inst.last_at_us = ij.at("last_at_us").get<Micros>();
      for (const auto& s : ij.at("series"))
        inst.series[s.at(0).get<std::string>()] = {s.at(1).get<double>(), s.at(2).get<Micros>()};
      for (const auto& [gpu, f] : ij.at("devices").items())
        inst.devices[gpu] = {f.at(0).get<std::string>(), f.at(1).get<std::string>(),
                             f.at(2).get<std::string>(), f.at(3).get<std::string>()};
      for (const auto& a : ij.at("attribution"))
        inst.attribution[a.at(0).get<std::string>()] = {a.at(1).get<std::string>(), a.at(2).get<std::string>()};
    }
    for (const auto& h : j.at("hours")) {
      Impl::HourKey key{h.at(0).get<Micros>(), h.at(1).get<std::string>()};
      Impl::DeviceAcc& a = fresh->hours[key];
      a.node = h.at(2).get<std::string>();
      a.model = h.at(3).get<std::string>();
      a.sharing = h.at(4).get<std::string>();
      a.metered_us = h.at(5).get<double>();
      a.busy_us = h.at(6).get<double>();
      a.idle_us = h.at(7).get<double>();
      a.unattributed_us = h.at(8).get<double>();
      a.energy_mj = h.at(9).get<double>();
      a.memory_total_bytes = h.at(10).get<double>();
      for (const auto& c : h.at(11)) {
        ConsumerRef ref{c.at(0).get<std::string>(), c.at(1).get<std::string>(),
                        PodUid{c.at(2).get<std::string>()}, c.at(3).get<std::string>()};
        Impl::ConsumerAcc& ca = a.consumers[ref];
        ca.allocated_us = c.at(4).get<double>();
        ca.compute_us = c.at(5).get<double>();
        ca.memory_byte_us = c.at(6).get<double>();
        ca.energy_mj = c.at(7).get<double>();
        ca.peak_memory_bytes = c.at(8).get<double>();
        const int cq = c.at(9).get<int>(), mq = c.at(10).get<int>();
        if (cq < 0 || cq > 3 || mq < 0 || mq > 3) return InvalidArgument("ingest state: bad quality");
        ca.compute_quality = static_cast<Quality>(cq);
        ca.memory_quality = static_cast<Quality>(mq);
        ca.rule = c.at(11).get<std::string>();
      }
      fresh->touched.insert(key);  // re-written after a restart: idempotent
    }
    impl_ = std::move(fresh);
    return Status::Ok();
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("ingest state: ") + e.what());
  }
}

std::int64_t CounterLedger::ignored_scrapes() const { return impl_->ignored; }
std::int64_t CounterLedger::resets() const { return impl_->resets; }
std::int64_t CounterLedger::late_dropped() const { return impl_->late_dropped; }
Micros CounterLedger::latest_us() const { return impl_->latest_us; }

void CounterLedger::ObserveSince(Micros since_us) { impl_->observing_since_us = since_us; }

}  // namespace gpuledger::ingest
