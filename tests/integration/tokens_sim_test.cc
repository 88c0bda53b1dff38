// Tokens through the path that ships (issue 63): a scenario's inference pods in every sharing
// mode run real agent Collectors; their engines' counters (vLLM, SGLang, TGI, Triton, as each
// exposes them) follow the pods' true GPU busy time and are fed to the server's token engine with
// each collection; the ledger's token hours must equal what the engines counted, exactly, and
// the cost of a token must rest on the pod's own cost in the report.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "common/apportion.h"
#include "common/csv.h"
#include "common/rounding.h"
#include "cost/catalog.h"
#include "http/gzip.h"
#include "ingest/token_ledger.h"
#include "io/file_util.h"
#include "ledger/read_service.h"
#include "ledger/report_request.h"
#include "ledger/tokens.h"
#include "model/compute_band.h"
#include "prometheus/exposition_parser.h"
#include "report/token_costs.h"
#include "sim/cluster_run.h"
#include "sim/engine_exposition.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "store/ledger_store.h"
#include "temp_dir.h"
#include "test_paths.h"

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

  // The tokens report of the whole ledger by `by`, under `policy` and `idle`.
  auto Tokens(const char* by, const char* policy = "allocation", const char* idle = "keep") {
    ledger::TokenRequest request;
    request.group_by = by;
    request.policy = policy;
    request.idle = idle;
    return ledger::ReadTokens(*store_, nullptr, request);
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
  auto answer = Tokens("pod", "allocation", "share");
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
      auto answer = Tokens("container", policy, idle);
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

// What each consumer of the scenario held, read off its YAML above: where, which share of the
// physical GPU (exclusive 1, a time-slice replica of 2, an MPS client at 40% of its threads, MIG
// 1g and 3g of 7 slices), from when to when (offsets), and its bytes. The MPS control daemon
// the device plugin runs holds memory on the L4 too; its bytes are the simulator's.
struct Held {
  std::string pod;  // pod name
  std::string node, gpu_model;
  std::int64_t share_num = 0, share_den = 1;
  Micros from_us = 0, to_us = 0;
  Bytes bytes = 0;
};

constexpr Micros kHour = kMicrosPerHour;
constexpr Bytes kGiB = Bytes{1} << 30;

std::vector<Held> HeldByScenario(Bytes daemon_bytes) {
  return {
      {"chat-0", "h100", "H100-80GB", 1, 1, 1 * kHour, 5 * kHour, 30 * kGiB},
      {"rag-0", "a100", "A100-80GB", 1, 2, kHour / 3, 5 * kHour + 2 * kHour / 3, 20 * kGiB},
      {"embed-0", "a100", "A100-80GB", 1, 2, 0, 6 * kHour, 8 * kGiB},
      {"asr-0", "l4", "L4", 2, 5, 0, 6 * kHour, 4 * kGiB},
      {"asr-1", "l4", "L4", 2, 5, 0, 6 * kHour, 4 * kGiB},
      {"nvidia-device-plugin-mps-control-daemon-9928e", "l4", "L4", 0, 1, 0, 6 * kHour,
       daemon_bytes},
      {"small-0", "h200", "H200-141GB", 1, 7, 2 * kHour + kHour / 2, 6 * kHour, 10 * kGiB},
      {"finetune-0", "h200", "H200-141GB", 3, 7, 0, 6 * kHour, 40 * kGiB},
  };
}

// $/1M tokens computed here, from the scenario, the simulator's truth and the catalog alone, for
// the exclusive, time-sliced, MPS and MIG pods: per device-hour the price is the catalog's, the
// weights are what each consumer held (allocation: its share of the hour's µs; memory: its
// KiB-s), the idle bucket last, largest remainders (design section 4); `share` spreads the idle
// part over the hour's consumers by the same weights. Both policies' inputs are exact on real
// hardware (grants; per-process bytes), so the figures must match to the nano. The one
// exception is a MIG slice's allocation: 3/7 of an hour is no whole number of µs, so the ledger
// rounds it, and its cost may differ by one µs of the GPU's price per hour (3 nanos on an H200).
// The device-side figures a consumer cannot know (capacity, memory nobody's processes held)
// are the device-hour's own.
TEST_F(TokensSim, SharedPodsTokenCostsFromTheTruthAndTheCatalogUnderAllocationAndMemory) {
  const auto pods = EnginePods();
  std::map<std::string, ConsumerRef> refs;  // pod name -> its consumer
  Bytes daemon_bytes = 0;
  for (const auto& [ref, t] : truth_) {
    refs[ref.pod] = ref;
    if (ref.namespace_name == "gpu-operator")
      daemon_bytes = static_cast<Bytes>(t.memory_byte_us / static_cast<double>(6 * kHour));
  }
  const std::vector<Held> held = HeldByScenario(daemon_bytes);
  auto extent = store_->Extent();
  ASSERT_TRUE(extent);
  auto devices = store_->ReadDeviceHours(*extent);
  ASSERT_TRUE(devices) << devices.error().message;
  const cost::Catalog catalog = cost::DefaultCatalog();
  const Micros start = scenario_.start_us;

  for (const char* policy : {"allocation", "memory"})
    for (const char* idle : {"keep", "share"}) {
      std::map<std::string, Nanos> expected;  // pod name -> cost
      for (const DeviceHour& d : *devices) {
        const Micros hour_from = d.hour_us - start, hour_to = hour_from + kHour;
        std::vector<const Held*> here;
        std::vector<std::uint64_t> weights;
        std::uint64_t used = 0;
        for (const Held& h : held) {
          const Micros overlap = std::min(h.to_us, hour_to) - std::max(h.from_us, hour_from);
          if (h.node != d.node || overlap <= 0) continue;
          const std::uint64_t w =
              policy == std::string("allocation")
                  ? static_cast<std::uint64_t>(
                        RoundHalfUp(static_cast<__int128>(overlap) * h.share_num, h.share_den))
                  : static_cast<std::uint64_t>(h.bytes / 1024 * (overlap / kMicrosPerSecond));
          here.push_back(&h);
          weights.push_back(w);
          used += w;
        }
        const std::uint64_t unattributed =
            policy == std::string("allocation")
                ? 0
                : static_cast<std::uint64_t>(d.unattributed_memory_kib_s);
        const std::uint64_t capacity =
            policy == std::string("allocation")
                ? static_cast<std::uint64_t>(kHour)
                : static_cast<std::uint64_t>(
                      RoundHalfUp(static_cast<__int128>(d.memory_total_bytes) * 3600, 1024));
        std::vector<std::uint64_t> all = weights;
        all.push_back(unattributed);
        all.push_back(capacity - used - unattributed);  // the idle bucket, last
        const Nanos price = catalog.Find(d.gpu_model, "on-demand")->hourly_nanos;
        ASSERT_EQ(d.price_nanos, price) << d.node;
        const std::vector<std::int64_t> parts = Apportion(price, all);
        std::vector<std::int64_t> idle_parts(here.size(), 0);
        if (idle == std::string("share") && used > 0) idle_parts = Apportion(parts.back(), weights);
        for (std::size_t i = 0; i < here.size(); ++i)
          expected[here[i]->pod] += parts[i] + idle_parts[i];
      }

      auto answer = Tokens("pod", policy, idle);
      ASSERT_TRUE(answer) << answer.error().message;
      ASSERT_EQ(answer->report.groups.size(), pods.size());
      for (const report::TokenGroup& g : answer->report.groups) {
        const std::string pod = g.key.substr(g.key.find('/') + 1);
        const ConsumerRef& ref = refs.at(pod);
        const sim::EngineCounts counted = sim::EngineCountsOf(*pods.at(ref), truth_.at(ref));
        const std::int64_t tokens = counted.input_tokens + counted.output_tokens;
        ASSERT_EQ(g.tokens(), tokens) << pod;
        const Nanos cost = expected.at(pod);
        const Nanos per_million = RoundHalfUp(static_cast<__int128>(cost) * 1'000'000, tokens);
        const bool mig_allocation =
            ref.pod.starts_with("small-") && policy != std::string("memory");
        // One µs of an H200-hour, per hour the slice was held (4), and what that is per 1M.
        const Nanos slack = mig_allocation ? 4 * 3 : 0;
        EXPECT_NEAR(g.gpu.cost_nanos, cost, slack) << pod << " " << policy << " " << idle;
        EXPECT_NEAR(*report::NanosPerMillion(g.gpu.cost_nanos, tokens), per_million,
                    mig_allocation ? RoundHalfUp(slack * 1'000'000, tokens) + 1 : 0)
            << pod << " " << policy << " " << idle;
      }
    }
}

// Under `compute` (and `hybrid`'s compute part) a pod pays for the GPU time it was measured to
// use: exact on an exclusive GPU and a MIG slice with its own counters, estimated under
// time-slicing and MPS. Against the time the simulator knows each pod used, the token cost is
// off by no more than the band its own figure carries (compute_error_band, measured on a real
// H200; MIG's rules were never measured on real hardware, and carry none: the simulator's GPM
// model is held to 1% there).
TEST_F(TokensSim, ComputeTokenCostsAreWithinTheBandTheirFigureCarries) {
  const cost::Catalog catalog = cost::DefaultCatalog();
  std::map<std::string, std::string> model_of = {
      {"chat-0", "H100-80GB"}, {"rag-0", "A100-80GB"}, {"embed-0", "A100-80GB"},
      {"asr-0", "L4"},         {"asr-1", "L4"},        {"small-0", "H200-141GB"}};
  auto answer = Tokens("pod", "compute", "keep");
  ASSERT_TRUE(answer) << answer.error().message;
  for (const report::TokenGroup& g : answer->report.groups) {
    const std::string pod = g.key.substr(g.key.find('/') + 1);
    double used_us = 0;
    for (const auto& [ref, t] : truth_)
      if (ref.pod == pod) used_us = t.compute_gpu_us;
    const double price =
        static_cast<double>(catalog.Find(model_of.at(pod), "on-demand")->hourly_nanos);
    const double truth_cost = price * used_us / static_cast<double>(kHour);
    const std::optional<double> band = MeasuredComputeBandOfRules(g.gpu.compute_rule);
    const double allowed = band ? *band : 0.01;
    const double error = (static_cast<double>(g.gpu.cost_nanos) - truth_cost) / truth_cost;
    std::printf("%s: %s, band %s, cost %+.3f%% against the truth\n", pod.c_str(),
                g.gpu.compute_rule.c_str(), band ? std::to_string(*band).c_str() : "none",
                100 * error);
    EXPECT_LE(std::abs(error), allowed) << pod << " " << g.gpu.compute_rule;
    EXPECT_EQ(g.gpu.quality,
              pod == "chat-0" || pod == "small-0" ? Quality::kMeasured : Quality::kEstimated)
        << pod;
  }
}

// Faults against the truth: the chat engine (vLLM, which says when its process started) and the
// small one (TGI, which does not) counted minute by minute as the simulator runs, then fed to
// the server's token engine as a scraper would have seen them: every minute; with a third of the
// scrapes missed; and with the engine restarted midway, its counters back at zero. Missed
// scrapes lose no token. A restart loses exactly what the old process counted after its last
// scrape (no scraper saw it); TGI's restart, known only by its counters going down, the same.
TEST_F(TokensSim, ResetsRestartsAndMissedScrapesAgainstTheTruth) {
  const auto pods = EnginePods();
  sim::Simulator again(scenario_, 60 * kMicrosPerSecond);
  std::map<ConsumerRef, std::vector<std::pair<Micros, sim::EngineCounts>>> seen;
  again.Run([&](const NodeSnapshot& snap) {
    if (snap.end_us % (60 * kMicrosPerSecond) != 0) return;
    for (const auto& [ref, spec] : pods) {
      // Each engine once a minute, with its own node's interval.
      const bool mine = (snap.node == "h100" && ref.pod.starts_with("chat-")) ||
                        (snap.node == "h200" && ref.pod.starts_with("small-"));
      auto truth = again.truth().find(ref);
      if (mine && truth != again.truth().end())
        seen[ref].emplace_back(snap.end_us, sim::EngineCountsOf(*spec, truth->second));
    }
  });
  ASSERT_EQ(seen.size(), 2u);
  auto minus = [](sim::EngineCounts a, const sim::EngineCounts& b) {
    a.input_tokens -= b.input_tokens;
    a.output_tokens -= b.output_tokens;
    a.requests -= b.requests;
    a.prefill_us -= b.prefill_us;
    a.decode_us -= b.decode_us;
    return a;
  };
  for (const auto& [ref, counts] : seen) {
    const sim::InferenceSpec& spec = *pods.at(ref);
    const std::size_t n = counts.size(), restart = n / 2;
    // Feeds the scrapes `keep` says were made; from `restart` on (when set) the engine is a new
    // process started then, whose counters began at zero. Returns the input tokens booked.
    auto booked = [&](auto keep, bool restarted) {
      ingest::TokenLedger tokens("cluster");
      for (std::size_t i = 0; i < n; ++i) {
        if (!keep(i)) continue;
        const bool after = restarted && i >= restart;
        const sim::EngineCounts c =
            after ? minus(counts[i].second, counts[restart].second) : counts[i].second;
        auto parsed = prometheus::ParseExposition(
            sim::EngineExposition(spec, c, after ? counts[restart].first : scenario_.start_us));
        EXPECT_TRUE(parsed) << parsed.error().message;
        tokens.Feed({ref, spec.model, counts[i].first, std::move(parsed->samples)});
      }
      std::int64_t sum = 0;
      for (const TokenHour& r : tokens.Hours(INT64_MAX)) sum += r.input_tokens;
      return sum;
    };
    // The first scrape is the baseline (the engine started before these scrapes were read).
    const std::int64_t counted = counts.back().second.input_tokens - counts[0].second.input_tokens;
    ASSERT_GT(counted, 0) << ref.Key();
    EXPECT_EQ(booked([](std::size_t) { return true; }, false), counted) << ref.Key();
    EXPECT_EQ(booked([&](std::size_t i) { return i % 3 != 1 || i + 1 == n; }, false), counted)
        << ref.Key() << ": missed scrapes";
    // Restarted at `restart`, the scrape just before it missed: the old process's tokens since
    // the scrape before that were never seen.
    const std::int64_t unseen =
        counts[restart].second.input_tokens - counts[restart - 2].second.input_tokens;
    ASSERT_GT(unseen, 0) << ref.Key();
    EXPECT_EQ(booked([&](std::size_t i) { return i != restart - 1 && i != restart; }, true),
              counted - unseen)
        << ref.Key() << " (" << spec.engine << "): restarted";
  }
}

// Rates driven by a real trace: two engines whose pods' GPU duty cycles replay the Alibaba GenAI
// serving trace (../shared/data/alibaba-genai-v2026, read, never copied; per-pod duty cycles of
// a production Stable Diffusion serving cluster: the load shape of a real serving fleet, the
// tokens per GPU-second declared). Each pod's true GPU time is the trace's duty integrated here
// from the raw CSV, and the ledger holds exactly the tokens its engine counted from that time.
// Skips, saying so, without the shared data.
TEST(TokensGenAiTrace, EnginesFollowTheTracesDutyCyclesExactly) {
  const std::string duty_csv =
      std::string(test_paths::kSharedData) + "/alibaba-genai-v2026/pod_gpu_duty_cycle_anon.csv.gz";
  auto gz = ReadFile(duty_csv);
  if (!gz) GTEST_SKIP() << "no shared data: " << duty_csv;
  auto csv = http::Gunzip(*gz);
  ASSERT_TRUE(csv) << csv.error().message;
  auto records = ParseCsv(*csv, duty_csv);
  ASSERT_TRUE(records) << records.error().message;
  const auto& header = (*records)[0].fields;
  auto column = [&](std::string_view name) {
    for (std::size_t i = 0; i < header.size(); ++i)
      if (header[i].value == name) return i;
    return header.size();
  };
  const std::size_t t = column("timestamp_anon"), v = column("value"), ip = column("container_ip");
  ASSERT_LT(std::max({t, v, ip}), header.size());
  std::map<std::string, std::vector<std::pair<double, double>>> samples;  // ip -> (s, %)
  for (std::size_t i = 1; i < records->size(); ++i) {
    const auto& f = (*records)[i].fields;
    if (f.size() <= std::max({t, v, ip}) || f[v].value.empty()) continue;
    samples[f[ip].value].emplace_back(std::stod(f[t].value), std::stod(f[v].value));
  }
  // The two busiest pods the trace follows for over 6 hours.
  constexpr double kSpan = 6 * 3600;
  std::vector<std::pair<double, std::string>> busiest;
  for (auto& [name, series] : samples) {
    std::sort(series.begin(), series.end());
    if (series.back().first - series.front().first <= kSpan) continue;
    double sum = 0;
    for (const auto& [at, percent] : series) sum += percent;
    busiest.emplace_back(sum / static_cast<double>(series.size()), name);
  }
  ASSERT_GE(busiest.size(), 2u);
  std::sort(busiest.rbegin(), busiest.rend());
  // Each pod's busy GPU-µs over its 6 hours: each sample's duty held until the next.
  auto busy_us = [&](const std::string& name) {
    const auto& series = samples.at(name);
    const double t0 = series.front().first;
    double sum = 0;
    for (std::size_t i = 0; i < series.size() && series[i].first - t0 < kSpan; ++i) {
      const double until =
          i + 1 < series.size() ? std::min(series[i + 1].first - t0, kSpan) : kSpan;
      sum += std::clamp(series[i].second / 100, 0.0, 1.0) * (until - (series[i].first - t0)) * 1e6;
    }
    return sum;
  };

  // A serving workload on the H100s whose duty cycle is trace pod `ip`'s.
  auto serving = [&](const char* name, const std::string& ip, const char* engine,
                     const char* model, int input, int output) {
    return fmt::format(
        "  - {{namespace: serve, name: {}, node: h100, memory: {{bytes: 24GiB}},\n"
        "     compute: {{profile: series, file: \"{}\", where: {{container_ip: {}}}}},\n"
        "     inference: {{engine: {}, model: {}, input_per_gpu_second: {}, "
        "output_per_gpu_second: {}}}}}\n",
        name, duty_csv, ip, engine, model, input, output);
  };
  const std::string yaml =
      std::string(R"(
name: tokens-genai
start: "2026-11-23T00:00:00Z"
duration: 6h
seed: 5
nodes:
  - {name: h100, gpu_model: H100-80GB, gpus: 2, sharing: exclusive}
workloads:
)") + serving("images", busiest[0].second, "vllm", "llama-8b", 2400, 600) +
      serving("chat", busiest[1].second, "sglang", "qwen-7b", 3000, 900);
  auto scenario = sim::ParseScenario(yaml, "tokens-genai.yaml");
  ASSERT_TRUE(scenario) << scenario.error().message;
  testing::TempDir dir("gpuledger-tokens-genai");
  auto store = store::OpenSqliteLedger((dir.path() / "ledger.db").string());
  ASSERT_TRUE(store) << store.error().message;
  sim::Simulator simulator(*scenario, 60 * kMicrosPerSecond);
  auto built = sim::BuildLedger(simulator, **store, cost::DefaultCatalog());
  ASSERT_TRUE(built) << built.error().message;
  auto rows = (*store)->ReadTokenHours({INT64_MIN, INT64_MAX});
  ASSERT_TRUE(rows) << rows.error().message;
  std::map<std::string, sim::EngineCounts> booked;
  for (const TokenHour& r : *rows) {
    sim::EngineCounts& c = booked[r.consumer.pod];
    c.input_tokens += r.input_tokens;
    c.output_tokens += r.output_tokens;
    c.requests += r.requests;
    c.prefill_us += r.prefill_us;
    c.decode_us += r.decode_us;
  }
  for (const sim::WorkloadSpec& w : scenario->workloads) {
    const std::string& trace_pod = w.name == "images" ? busiest[0].second : busiest[1].second;
    const sim::PodPlan& pod = w.pods.at(0);
    const sim::Truth& truth =
        simulator.truth().at(ConsumerRef{w.namespace_name, pod.name, PodUid(pod.uid), w.container});
    const double expected = busy_us(trace_pod);
    EXPECT_NEAR(truth.compute_gpu_us, expected, 1e-6 * expected) << w.name;
    const sim::EngineCounts counted = sim::EngineCountsOf(*w.inference, truth);
    // The engine's prompt tokens: its rate over the trace's busy time (to the float's last bits).
    const double tokens = w.inference->input_per_gpu_second * expected / 1e6;
    EXPECT_NEAR(static_cast<double>(counted.input_tokens), tokens, 1 + 1e-6 * tokens) << w.name;
    EXPECT_EQ(booked[pod.name], counted) << w.name;
    std::printf("%s (trace pod %s): %.0f GPU-s busy of 21600, %lld tokens in, %lld out\n",
                w.name.c_str(), trace_pod.c_str(), expected / 1e6,
                static_cast<long long>(counted.input_tokens),
                static_cast<long long>(counted.output_tokens));
  }
}

}  // namespace
}  // namespace gpuledger
