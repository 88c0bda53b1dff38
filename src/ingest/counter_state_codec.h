#pragma once
// The exact-delta engine's state as JSON: whole (State/Restore) or in parts (one per agent
// instance and per open hour and GPU). Reads every version this build has written; nlohmann
// throws on a malformed field, and the callers turn that into kInvalidArgument.

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "common/result.h"
#include "ingest/counter_state.h"

namespace gpuledger::ingest::state {

using json = nlohmann::json;

constexpr std::string_view kStateKind = "gpuledger-counter-ledger";
// 1: double accumulators (read and converted); 2: integers; 3: devices and attribution entries
// carry when they were last seen (read from 1 and 2 as the instance's last scrape). Fields
// added since are appended to their arrays and read as absent (zero, none, "") from a state
// that lacks them, so they need no new version: attribution entries' activity and share
// sources, and consumer accumulators' activity, its quality and rule and the share source.
constexpr int kStateVersion = 3;

// The names of the parts: "instance/<name>", "hour/<hour_us>/<gpu uuid>" (and "engine").
std::string InstancePart(const std::string& name);
std::string HourPart(const HourKey& key);

json EngineJson(const std::string& cluster, const EngineFields& e);
// Reads the engine's fields; returns the version (1 to kStateVersion).
Result<int> ReadEngine(const json& j, EngineFields& e);

json InstanceJson(const InstanceState& inst);
// Version 1 kept series values in base units (doubles); before 3 entries had no sighting
// time: the instance's last scrape stands in for it.
InstanceState InstanceFrom(const json& ij, int version);

json HourJson(const HourKey& key, const DeviceAcc& a);
// Version 1 kept doubles: hours in µs, mJ and byte-µs.
Status HourFrom(const json& h, int version, HourKey& key, DeviceAcc& a);

}  // namespace gpuledger::ingest::state
