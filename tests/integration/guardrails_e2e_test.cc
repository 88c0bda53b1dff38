// Guardrails on the path that ships: scenario -> simulated nodes behind the agent's real source
// interfaces -> real Collectors (detection) -> exposition text -> the server's ingest (findings
// history) -> SQLite -> the findings service (idle allocations, pricing). Expected findings,
// evidence and costs are written here from the scenario and the simulator's truth.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "cost/catalog.h"
#include "ledger/findings.h"
#include "sim/cluster_run.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "store/ledger_store.h"
#include "temp_dir.h"

namespace gpuledger {
namespace {

struct SimRun {
  std::unique_ptr<testing::TempDir> dir;  // outlives the store: members go in reverse order
  std::unique_ptr<store::LedgerStore> store;
  std::map<ConsumerRef, sim::Truth> truth;
  sim::Scenario scenario;
};

SimRun Simulate(std::string_view yaml, Micros step_us = 60 * kMicrosPerSecond) {
  auto scenario = sim::ParseScenario(yaml, "test.yaml");
  EXPECT_TRUE(scenario.ok()) << scenario.error().message;
  SimRun run;
  run.dir = std::make_unique<testing::TempDir>("gpuledger-guardrails");
  auto store = store::OpenSqliteLedger((run.dir->path() / "ledger.db").string());
  EXPECT_TRUE(store.ok());
  run.store = std::move(*store);
  run.scenario = *scenario;
  sim::Simulator simulator(*scenario, step_us);
  auto built = sim::BuildLedger(simulator, *run.store, cost::DefaultCatalog());
  EXPECT_TRUE(built.ok()) << built.error().message;
  run.truth = simulator.truth();
  return run;
}

ledger::FindingsDocument Findings(store::LedgerStore& store,
                                      ledger::ReadServiceOptions kept = {}) {
  ledger::FindingsQuery q;
  q.window = "all";
  ledger::ReadService reads(kept);
  auto doc = ledger::ReadFindingsDocument(store, reads, q, guardrails::DefaultPolicy());
  EXPECT_TRUE(doc.ok()) << doc.error().message;
  return doc.ok() ? *doc : ledger::FindingsDocument{};
}

// The hourly price of a GPU, from a fully metered device-hour of the ledger (the catalog's
// price as the ingest engine applied it: an input here, not what is tested).
Nanos HourlyPrice(store::LedgerStore& store, const std::string& node, const std::string& gpu = "") {
  auto devices = store.ReadDeviceHours({});
  for (const DeviceHour& d : *devices)
    if (d.node == node && (gpu.empty() || d.gpu.value == gpu) && d.metered_us == kMicrosPerHour)
      return d.price_nanos;
  ADD_FAILURE() << "no fully metered hour of " << node;
  return 0;
}

const sim::Truth& TruthOf(const SimRun& run, const std::string& pod) {
  for (const auto& [ref, t] : run.truth)
    if (ref.pod == pod) return t;
  ADD_FAILURE() << "no truth for " << pod;
  static sim::Truth none;
  return none;
}

// Read a day at a time, the days kept in memory or each loaded alone: the same document,
// finding for finding and nano for nano.
TEST(Guardrails, FindingsAreTheSameWhicheverDaysTheReadServiceKeeps) {
  SimRun run = Simulate(sim::ExampleScenarioYaml());
  const ledger::FindingsDocument kept = Findings(*run.store);
  ASSERT_FALSE(kept.findings.empty());
  for (int days : {0, 1}) {
    const ledger::FindingsDocument alone = Findings(*run.store, {.snapshot_days = days});
    EXPECT_EQ(alone.total_cost_nanos, kept.total_cost_nanos) << days;
    EXPECT_EQ(alone.total_gpu_us, kept.total_gpu_us) << days;
    ASSERT_EQ(alone.findings.size(), kept.findings.size()) << days;
    for (std::size_t i = 0; i < kept.findings.size(); ++i) {
      EXPECT_EQ(alone.findings[i].finding, kept.findings[i].finding) << days << " " << i;
      EXPECT_EQ(alone.findings[i].cost_nanos, kept.findings[i].cost_nanos) << days << " " << i;
      EXPECT_EQ(alone.findings[i].gpu_us, kept.findings[i].gpu_us) << days << " " << i;
    }
  }
}

// Every kind the demo's misbehaving workloads should raise, and nothing else.
TEST(Guardrails, TheDemosMisbehaviourGivesExactlyTheExpectedFindings) {
  SimRun run = Simulate(sim::ExampleScenarioYaml());
  ledger::FindingsDocument doc = Findings(*run.store);
  const Micros t0 = run.scenario.start_us;
  const Micros end = t0 + run.scenario.duration_us;
  std::multimap<std::string, const guardrails::PricedFinding*> by;
  for (const auto& p : doc.findings)
    by.emplace(std::string(ToString(p.finding.kind)) + " " + p.finding.subject.pod, &p);
  std::vector<std::string> keys;
  for (const auto& [k, p] : by) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{
                      "idle-allocation jupyter-bob-0", "idle-allocation jupyter-carol-0",
                      "isolation-breach tts-0", "stale-grant vision-finetune-0",
                      "stale-grant vision-finetune-0", "unallocated-access debug-shell",
                      "unmanaged-process user:alice", "visible-devices-override debug-shell"}));
  if (keys.size() != 8) return;
  auto one = [&](const std::string& key) { return *by.find(key)->second; };

  // The debug pod: no request, its process on GPU 0 of the time-sliced A100s with every GPU
  // visible, from 50h10m to 52h40m. Its GPU time is the truth's (5% duty), at that GPU's price.
  const auto& debug = one("unallocated-access debug-shell");
  EXPECT_EQ(debug.finding.severity, Severity::kCritical);
  EXPECT_EQ(debug.finding.node, "gpu-a100-ts-0");
  EXPECT_EQ(debug.finding.first_seen_us, t0 + 50 * kMicrosPerHour + 10 * 60 * kMicrosPerSecond);
  EXPECT_EQ(debug.finding.resolved_us, t0 + 52 * kMicrosPerHour + 40 * 60 * kMicrosPerSecond);
  EXPECT_EQ(EvidenceValue(debug.finding.evidence, "granted"), "none");
  EXPECT_EQ(EvidenceValue(debug.finding.evidence, "NVIDIA_VISIBLE_DEVICES"), "all");
  EXPECT_EQ(EvidenceValue(debug.finding.evidence, "memory_bytes"), std::to_string(2 * kGiB));
  EXPECT_FALSE(EvidenceValue(debug.finding.evidence, "pids").empty());
  // Its GPU time is its share of NVML's sample windows (each goes whole to one process on a
  // time-sliced GPU): at a 5% duty beside busier pods, over the 2.5 h of at least 9,000 windows,
  // a draw with a standard deviation of about 4% of the truth, hence 15%.
  const double debug_true_us = TruthOf(run, "debug-shell").compute_gpu_us;
  EXPECT_NEAR(static_cast<double>(debug.gpu_us), debug_true_us, 0.15 * debug_true_us);
  const Nanos a100 = HourlyPrice(*run.store, "gpu-a100-ts-0", debug.finding.gpu_uuid);
  const double debug_cost = debug_true_us * static_cast<double>(a100) / kMicrosPerHour;
  EXPECT_NEAR(static_cast<double>(debug.cost_nanos), debug_cost, 0.15 * debug_cost);
  EXPECT_GT(debug.cost_nanos, 0);

  const auto& visible = one("visible-devices-override debug-shell");
  EXPECT_EQ(visible.finding.gpu_uuid, debug.finding.gpu_uuid);
  EXPECT_EQ(EvidenceValue(visible.finding.evidence, "ungranted"), "all");
  EXPECT_EQ(visible.cost_nanos, 0) << "its GPU time is the unallocated-access finding's";

  // alice's benchmark over ssh on T4 GPU 1, 30h20m to 33h50m at 40% duty.
  const auto& alice = one("unmanaged-process user:alice");
  EXPECT_EQ(alice.finding.node, "gpu-t4-frac-0");
  EXPECT_EQ(alice.finding.subject.namespace_name, kHostNamespace);
  EXPECT_EQ(alice.finding.first_seen_us, t0 + 30 * kMicrosPerHour + 20 * 60 * kMicrosPerSecond);
  EXPECT_EQ(alice.finding.resolved_us, t0 + 33 * kMicrosPerHour + 50 * 60 * kMicrosPerSecond);
  EXPECT_EQ(EvidenceValue(alice.finding.evidence, "memory_bytes"), std::to_string(3 * kGiB));
  const double alice_true_us = TruthOf(run, "user:alice").compute_gpu_us;
  EXPECT_NEAR(alice_true_us, 0.4 * 3.5 * kMicrosPerHour, 0.02 * alice_true_us);
  const Nanos t4 = HourlyPrice(*run.store, "gpu-t4-frac-0", alice.finding.gpu_uuid);
  const double alice_cost = alice_true_us * static_cast<double>(t4) / kMicrosPerHour;
  EXPECT_NEAR(static_cast<double>(alice.cost_nanos), alice_cost, 0.02 * alice_cost);

  // The Job's two H100s stay listed for 2 h after it ended at 96h40m: 2 h of a whole GPU each.
  const Nanos h100 = HourlyPrice(*run.store, "gpu-h100-0");
  for (auto [it, last] = by.equal_range("stale-grant vision-finetune-0"); it != last; ++it) {
    const guardrails::PricedFinding& stale = *it->second;
    EXPECT_EQ(stale.finding.first_seen_us, t0 + 96 * kMicrosPerHour + 40 * 60 * kMicrosPerSecond);
    EXPECT_EQ(stale.finding.resolved_us, t0 + 98 * kMicrosPerHour + 40 * 60 * kMicrosPerSecond);
    EXPECT_EQ(EvidenceValue(stale.finding.evidence, "share_ppd"), std::to_string(kWholeGpu));
    EXPECT_EQ(stale.gpu_us, 2 * kMicrosPerHour);
    EXPECT_NEAR(static_cast<double>(stale.cost_nanos), 2.0 * static_cast<double>(h100), 3);
  }

  // tts holds 7 GiB under MPS on the L4, whose plugin caps each of 4 replicas at a quarter of
  // the card (in whole MiB), from its start at 12h30m to the end. Priced as the memory over the
  // cap, as a share of the card, for that long.
  const auto& tts = one("isolation-breach tts-0");
  const Bytes l4 = sim::DefaultGpuMemory("L4");
  const Bytes cap = l4 / 4 / kMiB * kMiB;
  EXPECT_EQ(EvidenceValue(tts.finding.evidence, "declared_memory_bytes"), std::to_string(cap));
  EXPECT_EQ(EvidenceValue(tts.finding.evidence, "memory_bytes"), std::to_string(7 * kGiB));
  EXPECT_EQ(tts.finding.first_seen_us, t0 + 12 * kMicrosPerHour + 30 * 60 * kMicrosPerSecond);
  EXPECT_FALSE(tts.finding.resolved_us) << "over its cap until the end";
  EXPECT_EQ(tts.finding.last_seen_us, end);
  const double held_over = static_cast<double>(7 * kGiB - cap) / static_cast<double>(l4) *
                           static_cast<double>(end - tts.finding.first_seen_us);
  EXPECT_NEAR(static_cast<double>(tts.gpu_us), held_over, 1e-4 * held_over);
  const Nanos l4_price = HourlyPrice(*run.store, "gpu-l4-mps-0");
  EXPECT_NEAR(static_cast<double>(tts.cost_nanos),
              held_over * static_cast<double>(l4_price) / kMicrosPerHour,
              1e-4 * held_over * static_cast<double>(l4_price) / kMicrosPerHour);

  // The idle notebooks: a quarter of an A100 (time-sliced replica) and a 0.25 fraction of a
  // T4, the whole week, never busy.
  const auto& bob = one("idle-allocation jupyter-bob-0");
  EXPECT_EQ(bob.finding.severity, Severity::kInfo);
  EXPECT_EQ(bob.finding.first_seen_us, t0);
  EXPECT_FALSE(bob.finding.resolved_us);
  EXPECT_EQ(EvidenceValue(bob.finding.evidence, "hours"), "168");
  EXPECT_EQ(bob.gpu_us, 168 * kMicrosPerHour / 4);
  EXPECT_NEAR(
      static_cast<double>(bob.cost_nanos),
      168.0 / 4 *
          static_cast<double>(HourlyPrice(*run.store, "gpu-a100-ts-0", bob.finding.gpu_uuid)),
      168);
  const auto& carol = one("idle-allocation jupyter-carol-0");
  EXPECT_EQ(carol.gpu_us, 168 * kMicrosPerHour / 4);

  // The totals are the findings' sums, and the summary says the money.
  Nanos total = 0;
  for (const auto& p : doc.findings) total += p.cost_nanos;
  EXPECT_EQ(doc.total_cost_nanos, total);
  EXPECT_NE(guardrails::Summary(debug).find("it was never granted: $"), std::string::npos);
}

// A clean cluster, every sharing mode, over a simulated day: not one finding.
constexpr char kClean[] = R"(
name: clean
start: "2026-11-23T00:00:00Z"
duration: 24h
seed: 11
nodes:
  - {name: h100, gpu_model: H100-80GB, gpus: 2, sharing: exclusive, dcgm: true}
  - {name: ts, gpu_model: A100-80GB, gpus: 1, sharing: time-slicing, replicas: 4}
  - {name: mig, gpu_model: H200-141GB, gpus: 1, sharing: mig, mig_layout: [3g.71gb, 2g.35gb, 1g.18gb, 1g.18gb]}
  - {name: mps, gpu_model: L4, gpus: 1, sharing: mps, replicas: 4}
  - {name: dra, gpu_model: A100-40GB, gpus: 1, sharing: dra}
  - {name: frac, gpu_model: T4, gpus: 1, sharing: fractional}
workloads:
  - {namespace: ml, name: train, node: h100, gpus: 2, compute: {profile: constant, duty: 0.9}, memory: {bytes: 60GiB}}
  - {namespace: ml, name: chat, node: ts, replicas: 3, compute: {profile: bursty, mean_duty: 0.3, burst: 5m}, memory: {bytes: 16GiB}}
  - {namespace: ml, name: lora, mig_profile: 3g.71gb, compute: {profile: constant, duty: 0.6}, memory: {bytes: 40GiB}}
  - {namespace: ml, name: small, mig_profile: 1g.18gb, compute: {profile: periodic, period: 1h, on: 30m, duty: 0.5}, memory: {bytes: 10GiB}}
  - {namespace: ml, name: asr, node: mps, replicas: 2, mps_active_thread_percentage: 30, compute: {profile: constant, duty: 0.3}, memory: {bytes: 4GiB}}
  - {namespace: ml, name: tts, node: mps, compute: {profile: constant, duty: 0.2}, memory: {bytes: 3GiB}}
  - {namespace: ml, name: ingest, dra_claim: {name: shared, shared: true}, compute: {profile: constant, duty: 0.3}, memory: {bytes: 10GiB}}
  - {namespace: ml, name: index, dra_claim: {name: shared, shared: true}, start: 2h, end: 20h, compute: {profile: constant, duty: 0.2}, memory: {bytes: 8GiB}}
  - {namespace: ml, name: ocr, gpu_milli: 500, compute: {profile: constant, duty: 0.3}, memory: {bytes: 6GiB}}
  - {namespace: ml, name: thumbs, gpu_milli: 250, start: 1h, end: 23h, compute: {profile: constant, duty: 0.1}, memory: {bytes: 2GiB}}
)";

TEST(Guardrails, ACleanClusterOverADayHasNoFindings) {
  SimRun run = Simulate(kClean);
  ledger::FindingsDocument doc = Findings(*run.store);
  for (const auto& p : doc.findings) ADD_FAILURE() << "unexpected: " << guardrails::Summary(p);
  EXPECT_TRUE(doc.findings.empty());
}

}  // namespace
}  // namespace gpuledger
