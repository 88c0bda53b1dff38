// CounterLedger's state saved and restored: whole (State, Restore) or in parts written as they
// change (PendingState, StateSaved, RestoreParts); counter_state_codec.h writes each part.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/json_text.h"
#include "ingest/counter_ledger.h"
#include "ingest/counter_ledger_impl.h"
#include "ingest/counter_state_codec.h"

namespace gpuledger::ingest {

state::EngineFields CounterLedger::Impl::Engine() const {
  return {forgotten_before_us, latest_us, observing_since_us, ignored, resets, late_dropped};
}

state::json CounterLedger::Impl::EngineJson() const { return state::EngineJson(cluster, Engine()); }

Result<int> CounterLedger::Impl::ReadEngine(const json& j) {
  state::EngineFields e;
  auto version = state::ReadEngine(j, e);
  if (!version.ok()) return version;
  forgotten_before_us = e.forgotten_before_us;
  latest_us = e.latest_us;
  observing_since_us = e.observing_since_us;
  ignored = e.ignored;
  resets = e.resets;
  late_dropped = e.late_dropped;
  return version;
}

void CounterLedger::Impl::MarkAllDirty() {
  engine_dirty = true;
  for (const auto& [name, inst] : instances) dirty_instances.insert(name);
  for (const auto& [key, acc] : hours) dirty_hours.insert(key);
}

std::string CounterLedger::State() const {
  const Impl& m = *impl_;
  json j = m.EngineJson();
  json instances = json::object();
  for (const auto& [name, inst] : m.instances) instances[name] = state::InstanceJson(inst);
  j["instances"] = instances;
  json hours = json::array();
  for (const auto& [key, a] : m.hours) hours.push_back(state::HourJson(key, a));
  j["hours"] = hours;
  return JsonText(j);
}

Status CounterLedger::Restore(std::string_view state_json) {
  // nlohmann reports malformed input by exceptions: they stop here (style rule 5).
  try {
    json j = json::parse(state_json);
    auto fresh = std::make_shared<Impl>();
    fresh->cluster = impl_->cluster;
    fresh->describe = impl_->describe;
    auto version = fresh->ReadEngine(j);
    if (!version) return InvalidArgument("ingest state: " + version.error().message);
    for (const auto& [name, ij] : j.at("instances").items())
      fresh->instances[name] = state::InstanceFrom(ij, *version);
    for (const auto& h : j.at("hours")) {
      Impl::HourKey key;
      Impl::DeviceAcc acc;
      if (Status s = state::HourFrom(h, *version, key, acc); !s.ok())
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
      json ij = state::InstanceJson(it->second);
      ij["name"] = name;
      d.put[state::InstancePart(name)] = JsonText(ij);
    }
  for (const std::string& name : m.removed_instances)
    if (!m.instances.contains(name)) d.erase.insert(state::InstancePart(name));
  for (const Impl::HourKey& key : m.dirty_hours)
    if (auto it = m.hours.find(key); it != m.hours.end())
      d.put[state::HourPart(key)] = JsonText(state::HourJson(key, it->second));
  for (const Impl::HourKey& key : m.removed_hours)
    if (!m.hours.contains(key)) d.erase.insert(state::HourPart(key));
  if (m.engine_dirty || !d.empty()) d.put["engine"] = JsonText(m.EngineJson());
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
        auto v = fresh->ReadEngine(j);
        if (!v) return fail(part, v.error().message);
        if (*v != state::kStateVersion)
          return fail(part, fmt::format("parts of version {}, this build reads {}", *v,
                                        state::kStateVersion));
      } else if (part.starts_with("instance/")) {
        std::string name = part.substr(std::string_view("instance/").size());
        if (j.at("name").get<std::string>() != name) return fail(part, "names another instance");
        fresh->instances[std::move(name)] = state::InstanceFrom(j, state::kStateVersion);
      } else if (part.starts_with("hour/")) {
        Impl::HourKey key;
        Impl::DeviceAcc acc;
        if (Status s = state::HourFrom(j, state::kStateVersion, key, acc); !s.ok())
          return fail(part, s.error().message);
        if (state::HourPart(key) != part) return fail(part, "names another hour or GPU");
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

}  // namespace gpuledger::ingest
