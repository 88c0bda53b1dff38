// The collector's hourly memory peaks in simulated time: a scenario's node behind the agent's
// real source interfaces (sim::SimulatedNode), a real Collector cycling once per 60 s interval
// on a ManualClock, its exposition parsed back. Expected values are computed here by hand from
// the scenario: per interval the agent sees the interval's mean memory (the simulator's
// MemoryIntegral over it), so on a sawtooth from B to B + R over a period P the interval that
// starts at phase f shows B + R x (f + 30 s) / P.
#include "agent/collector.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

#include "common/clock.h"
#include "prometheus/exposition_parser.h"
#include "sim/scenario.h"
#include "sim/simulated_node.h"
#include "sim/simulator.h"
#include "sources/procfs/proc_source.h"

namespace gpuledger::agent {
namespace {

constexpr Micros kS = kMicrosPerSecond;
constexpr Micros kT0 = 1'795'392'000LL * kS;  // 2026-11-23T00:00:00Z, the scenario's start

// "saw": a sawtooth from 10 GiB to 20 GiB over 100 minutes, all three hours. "short": 4 GiB
// for the first 20 minutes only. Each has a GPU of its own.
constexpr char kScenario[] = R"(
name: peaks
start: "2026-11-23T00:00:00Z"
duration: 3h
seed: 3
nodes:
  - {name: n1, gpu_model: A100-80GB, gpus: 2, sharing: exclusive}
workloads:
  - {namespace: ml, name: saw, compute: {profile: constant, duty: 0.25},
     memory: {bytes: 10GiB, peak: 20GiB, period: 100m}}
  - {namespace: ml, name: short, end: 20m, compute: {profile: constant, duty: 0.25},
     memory: {bytes: 4GiB}}
)";

// The exposition after the cycle that ended at each of these offsets from kT0.
std::map<Micros, std::string> ExpositionsAt(const std::vector<Micros>& offsets) {
  auto scenario = sim::ParseScenario(kScenario, "peaks.yaml");
  EXPECT_TRUE(scenario.ok()) << scenario.error().message;
  sim::Simulator simulator(*scenario, 60 * kS);
  ManualClock clock(kT0, kT0);
  sim::SimulatedNode world("n1");
  procfs::ProcSource procs(world);
  Collector collector(CollectorOptions{"n1", 0, 3600 * kS, true}, world, procs, &world, &world,
                      clock);
  std::map<Micros, std::string> out;
  simulator.Run([&](const NodeSnapshot& snap) {
    clock.Set(snap.end_us);
    world.Show(snap);
    collector.Cycle();
    for (Micros offset : offsets)
      if (snap.end_us == kT0 + offset) out[offset] = collector.Exposition()->text;
  });
  return out;
}

// The value of `name` for pod `pod` (any pod when empty), if exported.
std::optional<double> Value(const std::string& text, const std::string& name,
                            const std::string& pod = "") {
  auto parsed = prometheus::ParseExposition(text);
  EXPECT_TRUE(parsed) << parsed.error().message;
  if (!parsed) return std::nullopt;
  for (const auto& s : parsed->samples) {
    if (s.name != name) continue;
    if (pod.empty()) return s.value;
    for (const auto& [k, v] : s.labels)
      if (k == "pod" && v == pod) return s.value;
  }
  return std::nullopt;
}

constexpr char kPeak[] = "gpuledger_container_memory_peak_bytes";
constexpr char kPrevious[] = "gpuledger_container_memory_previous_hour_peak_bytes";
constexpr char kHourStart[] = "gpuledger_agent_hour_start_seconds";

TEST(CollectorHourPeaks, CurrentAndPreviousHourFollowTheAgentsClock) {
  const auto at =
      ExpositionsAt({1800 * kS, 3600 * kS, 3660 * kS, 7200 * kS, 7260 * kS, 10800 * kS});
  ASSERT_EQ(at.size(), 6u);
  constexpr double kGiB4 = 4294967296;
  // B = R = 10 GiB = 10737418240, P = 6000 s.
  // 0:30: the intervals so far start at phases 0..1740 s: 1770/6000 = 0.295 -> 1.295 B.
  const std::string& m30 = at.at(1800 * kS);
  EXPECT_EQ(Value(m30, kHourStart), static_cast<double>(kT0 / kS));
  EXPECT_EQ(Value(m30, kPeak, "saw-0"), 13904956621);  // 13904956620.8
  EXPECT_EQ(Value(m30, kPeak, "short-0"), kGiB4);      // gone since 0:20, its hour's peak stays
  EXPECT_EQ(Value(m30, kPrevious, "saw-0"), std::nullopt);  // the agent saw no earlier hour
  // 1:00: the cycle that ends on the hour closes hour 0 (its interval lies in it). Its
  // intervals start at phases 0..3540 s: 3570/6000 = 0.595 -> 1.595 B, at the hour's end.
  const std::string& m60 = at.at(3600 * kS);
  EXPECT_EQ(Value(m60, kHourStart), static_cast<double>(kT0 / kS));
  EXPECT_EQ(Value(m60, kPeak, "saw-0"), 17126182093);  // 17126182092.8
  EXPECT_EQ(Value(m60, kPrevious, "saw-0"), std::nullopt);
  // 1:01: hour 1, one interval (phase 3600 s: 3630/6000 = 0.605 -> 1.605 B); hour 0 is the
  // previous one, also for "short", not seen in hour 1.
  const std::string& m61 = at.at(3660 * kS);
  EXPECT_EQ(Value(m61, kHourStart), static_cast<double>((kT0 + 3600 * kS) / kS));
  EXPECT_EQ(Value(m61, kPeak, "saw-0"), 17233556275);  // 17233556275.2
  EXPECT_EQ(Value(m61, kPrevious, "saw-0"), 17126182093);
  EXPECT_EQ(Value(m61, kPeak, "short-0"), std::nullopt);
  EXPECT_EQ(Value(m61, kPrevious, "short-0"), kGiB4);
  // 2:00: hour 1 ends; its peak is at phase 5940 s (5970/6000 = 0.995 -> 1.995 B), 0:39 into
  // it, not at its end (phase 1140 s, 1170/6000 = 0.195 -> 1.195 B).
  const std::string& m120 = at.at(7200 * kS);
  EXPECT_EQ(Value(m120, kHourStart), static_cast<double>((kT0 + 3600 * kS) / kS));
  EXPECT_EQ(Value(m120, kPeak, "saw-0"), 21421149389);  // 21421149388.8
  // What a scrape on the hour saw before: about 1.195 B = 12831113396.8 (the last cycle's
  // memory is the simulator's sampled figure, within a few hundred kB of the interval mean).
  EXPECT_NEAR(Value(m120, "gpuledger_container_memory_used_bytes", "saw-0").value_or(-1),
              12831113397, 1e6);
  EXPECT_EQ(Value(m120, kPrevious, "saw-0"), 17126182093);
  EXPECT_EQ(Value(m120, kPrevious, "short-0"), kGiB4);
  // 2:01: "short" was seen in neither hour 2 nor hour 1: its entry is gone. Hour 2's first
  // interval is at phase 1200 s: 1230/6000 = 0.205 -> 1.205 B.
  const std::string& m121 = at.at(7260 * kS);
  EXPECT_EQ(Value(m121, kPeak, "short-0"), std::nullopt);
  EXPECT_EQ(Value(m121, kPrevious, "short-0"), std::nullopt);
  EXPECT_EQ(Value(m121, kPeak, "saw-0"), 12938588979);  // 12938588979.2
  EXPECT_EQ(Value(m121, kPrevious, "saw-0"), 21421149389);
  // 3:00: hour 2's intervals start at phases 1200..4740 s: 4770/6000 = 0.795 -> 1.795 B.
  const std::string& m180 = at.at(10800 * kS);
  EXPECT_EQ(Value(m180, kPeak, "saw-0"), 19273665741);  // 19273665740.8
  EXPECT_EQ(Value(m180, kPrevious, "saw-0"), 21421149389);
}

TEST(CollectorHourPeaks, NoHourBeforeTheFirstCycle) {
  auto scenario = sim::ParseScenario(kScenario, "peaks.yaml");
  ASSERT_TRUE(scenario.ok()) << scenario.error().message;
  ManualClock clock(kT0, kT0);
  sim::SimulatedNode world("n1");
  procfs::ProcSource procs(world);
  Collector collector(CollectorOptions{"n1", 0, 3600 * kS, true}, world, procs, &world, &world,
                      clock);
  const std::string text = collector.Exposition()->text;
  EXPECT_EQ(Value(text, kHourStart), std::nullopt);
  EXPECT_EQ(Value(text, kPeak), std::nullopt);
  EXPECT_NE(text.find("# TYPE gpuledger_agent_hour_start_seconds gauge"), std::string::npos);
}

}  // namespace
}  // namespace gpuledger::agent
