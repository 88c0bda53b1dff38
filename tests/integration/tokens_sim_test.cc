// Tokens through the path that ships (issue 63): a scenario's inference pods in every sharing
// mode run real agent Collectors; their engines' counters (vLLM, SGLang, TGI, Triton, as each
// exposes them) follow the pods' true GPU busy time and are fed to the server's token engine with
// each collection; the ledger's token hours must equal what the engines counted, exactly, and
// the cost of a token must rest on the pod's own cost in the report.
#include <gtest/gtest.h>

#include <map>
#include <tuple>
#include <vector>

#include "common/apportion.h"
#include "common/rounding.h"
#include "cost/catalog.h"
#include "ledger/read_service.h"
#include "ledger/report_request.h"
#include "ledger/tokens.h"
#include "report/token_costs.h"
#include "sim/cluster_run.h"
#include "sim/engine_exposition.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "store/ledger_store.h"
#include "temp_dir.h"

namespace gpuledger {
namespace {

// Exclusive, time-sliced, MPS and MIG; pods starting and ending inside hours; one of each
// engine. The exclusive pod holds its H100 for whole hours (01:00 to 05:00).
constexpr char kScenario[] = R"(
name: tokens
start: "2026-11-23T00:00:00Z"
duration: 6h
seed: 11
nodes:
  - {name: h100, gpu_model: H100-80GB, gpus: 1, sharing: exclusive}
  - {name: a100, gpu_model: A100-80GB, gpus: 1, sharing: time-slicing, replicas: 2}
  - {name: l4, gpu_model: L4, gpus: 1, sharing: mps, replicas: 4}
  - {name: h200, gpu_model: H200-141GB, gpus: 1, sharing: mig, mig_layout: [3g.71gb, 1g.18gb]}
workloads:
  - namespace: llm
    name: chat
    node: h100
    start: 1h
    end: 5h
    compute: {profile: bursty, mean_duty: 0.4, burst: 5m}
    memory: {bytes: 30GiB}
    inference: {engine: vllm, model: llama-70b, input_per_gpu_second: 1800, output_per_gpu_second: 450}
  - namespace: llm
    name: rag
    node: a100
    start: 20m
    end: 5h40m
    compute: {profile: constant, duty: 0.3}
    memory: {bytes: 20GiB}
    inference: {engine: sglang, model: qwen-14b, input_per_gpu_second: 2500, output_per_gpu_second: 700}
  - namespace: search
    name: embed
    node: a100
    compute: {profile: constant, duty: 0.2}
    memory: {bytes: 8GiB}
    inference: {engine: triton, model: bge-large, input_per_gpu_second: 9000, output_per_gpu_second: 0}
  - namespace: speech
    name: asr
    node: l4
    replicas: 2
    mps_active_thread_percentage: 40
    compute: {profile: constant, duty: 0.25}
    memory: {bytes: 4GiB}
    inference: {engine: vllm, model: whisper-large-v3, input_per_gpu_second: 500, output_per_gpu_second: 150, output_per_request: 60}
  - namespace: llm
    name: small
    mig_profile: 1g.18gb
    start: 2h30m
    compute: {profile: periodic, period: 1h, on: 40m, duty: 0.6}
    memory: {bytes: 10GiB}
    inference: {engine: tgi, model: mistral-7b, input_per_gpu_second: 3000, output_per_gpu_second: 1200}
  - namespace: research
    name: finetune
    mig_profile: 3g.71gb
    compute: {profile: constant, duty: 0.7}
    memory: {bytes: 40GiB}
)";

class TokensSim : public ::testing::Test {
 protected:
  void SetUp() override {
    auto parsed = sim::ParseScenario(kScenario, "tokens.yaml");
    ASSERT_TRUE(parsed) << parsed.error().message;
    scenario_ = *parsed;
    auto opened = store::OpenSqliteLedger((dir_.path() / "ledger.db").string());
    ASSERT_TRUE(opened) << opened.error().message;
    store_ = std::move(*opened);
    sim::Simulator simulator(scenario_, 60 * kMicrosPerSecond);
    auto built = sim::BuildLedger(simulator, *store_, cost::DefaultCatalog());
    ASSERT_TRUE(built) << built.error().message;
    truth_ = simulator.truth();
  }

  // Every inference pod of the scenario with its engine.
  std::map<ConsumerRef, const sim::InferenceSpec*> EnginePods() const {
    std::map<ConsumerRef, const sim::InferenceSpec*> out;
    for (const sim::WorkloadSpec& w : scenario_.workloads)
      if (w.inference)
        for (const sim::PodPlan& pod : w.pods)
          out[ConsumerRef{w.namespace_name, pod.name, PodUid(pod.uid), w.container}] =
              &*w.inference;
    return out;
  }

  testing::TempDir dir_{"gpuledger-tokens-sim"};
  sim::Scenario scenario_;
  std::unique_ptr<store::LedgerStore> store_;
  std::map<ConsumerRef, sim::Truth> truth_;
};

// What each engine counted over its life is what the ledger holds, to the token and the µs:
// counted from each engine's start (it started while the server watched), split over hours.
TEST_F(TokensSim, TheLedgerHoldsExactlyWhatEachEngineCounted) {
  auto rows = store_->ReadTokenHours({INT64_MIN, INT64_MAX});
  ASSERT_TRUE(rows) << rows.error().message;
  std::map<ConsumerRef, sim::EngineCounts> booked;
  for (const TokenHour& r : *rows) {
    sim::EngineCounts& c = booked[r.consumer];
    c.input_tokens += r.input_tokens;
    c.output_tokens += r.output_tokens;
    c.requests += r.requests;
    c.prefill_us += r.prefill_us;
    c.decode_us += r.decode_us;
  }
  const auto pods = EnginePods();
  ASSERT_EQ(pods.size(), 6u);
  for (const auto& [ref, spec] : pods) {
    const sim::EngineCounts counted = sim::EngineCountsOf(*spec, truth_.at(ref));
    EXPECT_GT(counted.input_tokens, 0) << ref.Key();
    const sim::EngineCounts& b = booked[ref];
    EXPECT_EQ(b, counted) << ref.Key() << " (" << spec->engine << "): booked " << b.input_tokens
                          << "/" << b.output_tokens << "/" << b.requests << "/" << b.prefill_us
                          << "/" << b.decode_us << ", counted " << counted.input_tokens << "/"
                          << counted.output_tokens << "/" << counted.requests << "/"
                          << counted.prefill_us << "/" << counted.decode_us;
  }
  EXPECT_EQ(booked.size(), pods.size());  // the fine-tune job serves no tokens
}

// The exclusive pod held its H100 for four whole hours: under idle "share" its cost is four
// GPU-hours at the catalog's H100 price (p5.48xlarge, $55.04 for 8 GPUs), and its tokens' cost
// per 1M is that over what its engine counted, to the nano.
TEST_F(TokensSim, AnExclusivePodsTokensCostItsGpuHoursFromTheCatalog) {
  ledger::TokenRequest request;
  request.group_by = "pod";
  request.idle = "share";
  auto answer = ledger::ReadTokens(*store_, nullptr, request);
  ASSERT_TRUE(answer) << answer.error().message;
  const report::TokenGroup* chat = nullptr;
  for (const report::TokenGroup& g : answer->report.groups)
    if (g.key.starts_with("llm/chat-")) chat = &g;
  ASSERT_NE(chat, nullptr);
  constexpr Nanos kH100Hour = 55'040'000'000 / 8;
  EXPECT_EQ(chat->gpu.cost_nanos, 4 * kH100Hour);
  const sim::InferenceSpec* spec = nullptr;
  ConsumerRef ref;
  for (const auto& [r, s] : EnginePods())
    if (r.pod.starts_with("chat-")) std::tie(ref, spec) = std::tie(r, s);
  const sim::EngineCounts counted = sim::EngineCountsOf(*spec, truth_.at(ref));
  const std::int64_t tokens = counted.input_tokens + counted.output_tokens;
  EXPECT_EQ(report::NanosPerMillion(chat->gpu.cost_nanos, tokens),
            RoundHalfUp(static_cast<__int128>(4 * kH100Hour) * 1'000'000, tokens));
  // vLLM reports prefill and decode time: the split follows them.
  EXPECT_EQ(chat->split, report::kSplitByTime);
  EXPECT_EQ(chat->input_cost_nanos,
            Apportion(4 * kH100Hour, std::vector<std::uint64_t>{
                                         static_cast<std::uint64_t>(counted.prefill_us),
                                         static_cast<std::uint64_t>(counted.decode_us)})[0]);
}

// On every shared GPU, under every policy and idle rule, a token's cost rests on the serving
// pod's own cost in the report by container: one figure everywhere.
TEST_F(TokensSim, EverySharedPodsTokensCostItsReportCostUnderEveryPolicy) {
  for (const char* policy : {"allocation", "compute", "memory", "hybrid:0.5"})
    for (const char* idle : {"keep", "share"}) {
      ledger::TokenRequest request;
      request.group_by = "container";
      request.policy = policy;
      request.idle = idle;
      auto answer = ledger::ReadTokens(*store_, nullptr, request);
      ASSERT_TRUE(answer) << answer.error().message;
      ledger::ReportRequest by_container;
      by_container.group_by = "container";
      by_container.policy = policy;
      by_container.idle = idle;
      auto query = ledger::ParseReportRequest(by_container, *store_->Extent());
      ASSERT_TRUE(query);
      ledger::ReadService reads(ledger::OneQueryOptions());
      auto report = reads.Report(*store_, *query);
      ASSERT_TRUE(report) << report.error().message;
      std::map<std::string, Nanos> cost;
      for (const report::Row& row : report->rows) cost[row.key] = row.figures.cost_nanos;
      ASSERT_EQ(answer->report.groups.size(), 6u) << policy << " " << idle;
      for (const report::TokenGroup& g : answer->report.groups) {
        EXPECT_EQ(g.gpu.cost_nanos, cost.at(g.key)) << g.key << " " << policy << " " << idle;
        EXPECT_EQ(g.input_cost_nanos + g.output_cost_nanos, g.gpu.cost_nanos) << g.key;
      }
    }
}

}  // namespace
}  // namespace gpuledger
