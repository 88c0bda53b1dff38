#include "ingest/counter_state_codec.h"

#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "common/counter_units.h"
#include "common/json_text.h"
#include "common/rounding.h"
#include "ingest/agent_series.h"

namespace gpuledger::ingest::state {

std::string InstancePart(const std::string& name) { return "instance/" + name; }
std::string HourPart(const HourKey& key) {
  return "hour/" + std::to_string(key.first) + "/" + key.second;
}

json EngineJson(const std::string& cluster, const EngineFields& e) {
  json j;
  j["kind"] = kStateKind;
  j["version"] = kStateVersion;
  j["cluster"] = cluster;
  j["forgotten_before_us"] = e.forgotten_before_us;
  j["latest_us"] = e.latest_us;
  j["observing_since_us"] = e.observing_since_us;
  j["ignored"] = e.ignored;
  j["resets"] = e.resets;
  j["late_dropped"] = e.late_dropped;
  return j;
}

Result<int> ReadEngine(const json& j, EngineFields& e) {
  if (!j.is_object() || j.value("kind", "") != kStateKind)
    return InvalidArgument("not a gpuledger counter-ledger state");
  const int version = j.at("version").get<int>();
  if (version < 1 || version > kStateVersion)
    return InvalidArgument("version " + JsonText(j.at("version")) + ", this build reads 1 to " +
                           std::to_string(kStateVersion));
  e.forgotten_before_us = j.at("forgotten_before_us").get<Micros>();
  e.latest_us = j.at("latest_us").get<Micros>();
  e.observing_since_us = j.value("observing_since_us", INT64_MAX);
  e.ignored = j.at("ignored").get<std::int64_t>();
  e.resets = j.at("resets").get<std::int64_t>();
  e.late_dropped = j.at("late_dropped").get<std::int64_t>();
  return version;
}

json InstanceJson(const InstanceState& inst) {
  json series = json::array();
  for (const auto& [key, st] : inst.series) series.push_back({key, st.value, st.at_us});
  json devices = json::object();
  for (const auto& [gpu, f] : inst.devices)
    devices[gpu] = {f.node, f.model, f.sharing, f.parent, f.seen_us, f.layout};
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
InstanceState InstanceFrom(const json& ij, int version) {
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
    inst.devices[gpu] = {f.at(0).get<std::string>(),
                         f.at(1).get<std::string>(),
                         f.at(2).get<std::string>(),
                         f.at(3).get<std::string>(),
                         f.size() > 4 ? f.at(4).get<Micros>() : inst.last_at_us,
                         f.size() > 5 ? f.at(5).get<std::string>() : ""};
  for (const auto& a : ij.at("attribution"))
    inst.attribution[a.at(0).get<std::string>()] = {
        a.at(1).get<std::string>(), a.at(2).get<std::string>(),
        a.size() > 3 ? a.at(3).get<Micros>() : inst.last_at_us,
        a.size() > 4 ? a.at(4).get<std::string>() : "",
        a.size() > 5 ? a.at(5).get<std::string>() : ""};
  return inst;
}

json HourJson(const HourKey& key, const DeviceAcc& a) {
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
          a.unattributed_memory_kib_s,
          a.layout};
}

// Version 1 kept doubles: hours in µs, mJ and byte-µs.
Status HourFrom(const json& h, int version, HourKey& key, DeviceAcc& a) {
  const bool v1 = version == 1;
  // The callers catch what the JSON library throws; a count that is no int64 joins them.
  auto whole = [](double v) {
    const std::optional<std::int64_t> n = RoundToInt64(v);
    if (!n) throw std::out_of_range("a count that is not a finite 64-bit number");
    return *n;
  };
  auto count = [&](const json& v) -> std::int64_t {
    return v.is_number_integer() ? v.get<std::int64_t>() : whole(v.get<double>());
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
  if (h.size() > 13) a.layout = h.at(13).get<std::string>();  // absent before layouts
  for (const auto& c : h.at(11)) {
    ConsumerRef ref{c.at(0).get<std::string>(), c.at(1).get<std::string>(),
                    PodUid{c.at(2).get<std::string>()}, c.at(3).get<std::string>()};
    ConsumerAcc& ca = a.consumers[ref];
    ca.allocated_us = count(c.at(4));
    ca.compute_us = count(c.at(5));
    ca.memory_kib_s =
        v1 ? whole(c.at(6).get<double>() / kByteMicrosPerKibSecond) : c.at(6).get<KibSeconds>();
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

}  // namespace gpuledger::ingest::state
