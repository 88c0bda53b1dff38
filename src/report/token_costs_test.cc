#include "report/token_costs.h"

#include <gtest/gtest.h>

namespace gpuledger::report {
namespace {

const std::string kCluster = "c1", kNode = "n1", kModel = "H100-80GB";
const GpuUuid kGpu("GPU-1");

ConsumerInfo Consumer(std::string ns, std::string pod, std::string container,
                      std::string team = "search", std::string owner = "vllm") {
  ConsumerInfo c;
  c.ref = ConsumerRef{std::move(ns), pod, PodUid("uid-" + pod), std::move(container)};
  c.owner_kind = "Deployment";
  c.owner_name = std::move(owner);
  c.labels = {{"team", std::move(team)}};
  return c;
}

// A report row by entry: the consumer on the node's GPU with these figures.
Row EntryRow(const ConsumerInfo& c, Nanos cost, GpuMicros allocated, GpuMicros compute,
             MilliJoules energy, Quality quality = Quality::kMeasured) {
  const Placed placed{kCluster, kNode, kModel, kGpu, SharingMode::kTimeSlicing};
  Row row;
  row.key = EncodeEntry(c, LabelsOf(c), placed);
  row.figures.cost_nanos = cost;
  row.figures.allocated_gpu_us = allocated;
  row.figures.compute_gpu_us = compute;
  row.figures.energy_mj = energy;
  row.figures.quality = quality;
  row.figures.compute_rule = quality == Quality::kEstimated ? "mps-kernel-time" : "";
  return row;
}

TokenHour Tokens(const ConsumerRef& ref, std::string model, std::int64_t in, std::int64_t out,
                 Micros prefill_us = 0, Micros decode_us = 0, Micros hour_us = 0) {
  TokenHour t;
  t.hour_us = hour_us;
  t.cluster = kCluster;
  t.consumer = ref;
  t.model = std::move(model);
  t.engine = "vllm";
  t.input_tokens = in;
  t.output_tokens = out;
  t.requests = in / 1000;
  t.prefill_us = prefill_us;
  t.decode_us = decode_us;
  return t;
}

std::vector<TokenLevel> By(std::string_view text) {
  auto levels = ParseTokenGroupBy(text);
  EXPECT_TRUE(levels) << levels.error().message;
  return levels ? *levels : std::vector<TokenLevel>{};
}

// One engine, one model: its pod's cost over its tokens, split between input and output by
// the prefill and decode time the engine reports, every figure worked out by hand.
TEST(CostTokens, ChargesAnEnginesPodOverItsTokensSplitByPrefillAndDecodeTime) {
  const ConsumerInfo pod = Consumer("llm", "vllm-0", "server");
  Report entries;
  entries.rows = {EntryRow(pod, 3'600'000'000, 3'600'000'000, 1'800'000'000, 1'440'000'000)};
  // Two hours of tokens, summed: 1M in, 250k out; 100 s prefill, 300 s decode.
  const std::vector<TokenHour> tokens = {
      Tokens(pod.ref, "llama-8b", 600'000, 100'000, 60'000'000, 100'000'000, 0),
      Tokens(pod.ref, "llama-8b", 400'000, 150'000, 40'000'000, 200'000'000, kMicrosPerHour)};
  const TokenReport r = CostTokens(entries, tokens, By("model"));
  ASSERT_EQ(r.groups.size(), 1u);
  const TokenGroup& g = r.groups[0];
  EXPECT_EQ(g.key, "llama-8b");
  EXPECT_EQ(g.input_tokens, 1'000'000);
  EXPECT_EQ(g.output_tokens, 250'000);
  EXPECT_EQ(g.requests, 1000);
  EXPECT_EQ(g.gpu.cost_nanos, 3'600'000'000);
  EXPECT_EQ(g.input_cost_nanos, 900'000'000);  // 100 of the 400 s
  EXPECT_EQ(g.output_cost_nanos, 2'700'000'000);
  EXPECT_EQ(g.split, kSplitByTime);
  EXPECT_EQ(NanosPerMillion(g.input_cost_nanos, g.input_tokens), 900'000'000);  // $0.90 / 1M
  EXPECT_EQ(NanosPerMillion(g.output_cost_nanos, g.output_tokens), 10'800'000'000);
  EXPECT_EQ(NanosPerMillion(g.gpu.cost_nanos, g.tokens()), 2'880'000'000);
  EXPECT_EQ(PerThousand(g.gpu.compute_gpu_us, g.tokens()), 1'440'000);  // 1.44 GPU-s / 1k
  EXPECT_EQ(PerThousand(g.gpu.energy_mj, g.tokens()), 1'152'000);       // 1,152 J / 1k
  EXPECT_EQ(TokensPerGpuHour(g.tokens(), g.gpu.allocated_gpu_us), 1'250'000);
  EXPECT_EQ(g.gpu.quality, Quality::kMeasured);
  EXPECT_EQ(r.total.gpu.cost_nanos, 3'600'000'000);
  EXPECT_TRUE(r.engines_without_gpu.empty());
}

// Without prefill/decode time, a token of either kind costs the same; a pod serving two models
// (an adapter under a name of its own) splits its figures by their tokens, exactly.
TEST(CostTokens, SplitsAPodAmongItsModelsByTokensAndByTokenCountWithoutTimes) {
  const ConsumerInfo pod = Consumer("llm", "sglang-0", "server");
  Report entries;
  entries.rows = {EntryRow(pod, 1'000'000'001, 3'000, 2'000, 10)};
  const std::vector<TokenHour> tokens = {Tokens(pod.ref, "base", 200, 100),
                                         Tokens(pod.ref, "base:sql-adapter", 100, 0)};
  const TokenReport r = CostTokens(entries, tokens, By("model"));
  ASSERT_EQ(r.groups.size(), 2u);
  EXPECT_EQ(r.groups[0].key, "base");  // cost descending
  EXPECT_EQ(r.groups[0].gpu.cost_nanos + r.groups[1].gpu.cost_nanos, 1'000'000'001);
  EXPECT_EQ(r.groups[0].gpu.cost_nanos, 750'000'001);  // 300 of the 400 tokens, the odd nano
  EXPECT_EQ(r.groups[0].input_cost_nanos, 500'000'001);  // 200 of its 300
  EXPECT_EQ(r.groups[0].output_cost_nanos, 250'000'000);
  EXPECT_EQ(r.groups[0].split, kSplitByTokens);
  EXPECT_EQ(r.groups[1].gpu.cost_nanos, 250'000'000);
  EXPECT_EQ(r.groups[1].output_cost_nanos, 0);
  EXPECT_EQ(r.groups[0].gpu.allocated_gpu_us + r.groups[1].gpu.allocated_gpu_us, 3'000);
  EXPECT_EQ(r.total.gpu.cost_nanos, 1'000'000'001);
  EXPECT_EQ(r.total.input_cost_nanos + r.total.output_cost_nanos, 1'000'000'001);
}

// Token rows that name no container stand for the whole pod (every container's GPU rows);
// rows that name one take that container alone. A pod no GPU row names is said, at no cost.
TEST(CostTokens, APodLevelEngineTakesEveryContainerAndOneWithoutGpuRowsIsNamed) {
  const ConsumerInfo server = Consumer("llm", "tgi-0", "tgi");
  const ConsumerInfo sidecar = Consumer("llm", "tgi-0", "draft-model");
  const ConsumerInfo other = Consumer("llm", "tgi-1", "tgi");
  Report entries;
  entries.rows = {EntryRow(server, 700, 7, 7, 7), EntryRow(sidecar, 300, 3, 3, 3),
                  EntryRow(other, 5'000, 50, 50, 50)};
  ConsumerRef whole_pod = server.ref;
  whole_pod.container = "";
  ConsumerRef cpu_pod{"llm", "embed-0", PodUid("uid-embed-0"), ""};
  const TokenReport r = CostTokens(
      entries, std::vector{Tokens(whole_pod, "m", 10, 10), Tokens(cpu_pod, "e", 500, 0)},
      By("pod"));
  ASSERT_EQ(r.groups.size(), 2u);
  EXPECT_EQ(r.groups[0].key, "llm/tgi-0");
  EXPECT_EQ(r.groups[0].gpu.cost_nanos, 1'000);
  EXPECT_EQ(r.groups[1].key, "llm/embed-0");
  EXPECT_EQ(r.groups[1].gpu.cost_nanos, 0);
  EXPECT_EQ(r.groups[1].input_tokens, 500);
  EXPECT_EQ(r.engines_without_gpu, std::vector<std::string>{"llm/embed-0"});
  EXPECT_EQ(r.total.gpu.cost_nanos, 1'000);  // tgi-1 served no tokens: none of its cost
}

// Teams and workloads from the serving pods' labels and owners; the figures' quality is the
// worst of what they rest on.
TEST(CostTokens, GroupsByTeamAndWorkloadWithTheWorstQuality) {
  const ConsumerInfo a = Consumer("llm", "a-0", "s", "search", "chat");
  const ConsumerInfo b = Consumer("llm", "b-0", "s", "search", "rerank");
  const ConsumerInfo c = Consumer("ads", "c-0", "s", "ads", "chat");
  Report entries;
  entries.rows = {EntryRow(a, 100, 1, 1, 1), EntryRow(b, 200, 1, 1, 1, Quality::kEstimated),
                  EntryRow(c, 400, 1, 1, 1)};
  const std::vector<TokenHour> tokens = {Tokens(a.ref, "m", 1, 1), Tokens(b.ref, "m", 1, 1),
                                         Tokens(c.ref, "m", 1, 1)};
  const TokenReport by_team = CostTokens(entries, tokens, By("label:team,model"));
  ASSERT_EQ(by_team.groups.size(), 2u);
  EXPECT_EQ(by_team.groups[0].key, "ads/m");
  EXPECT_EQ(by_team.groups[1].key, "search/m");
  EXPECT_EQ(by_team.groups[1].gpu.cost_nanos, 300);
  EXPECT_EQ(by_team.groups[1].gpu.quality, Quality::kEstimated);
  EXPECT_EQ(by_team.groups[1].gpu.compute_rule, "mps-kernel-time");
  const TokenReport by_workload = CostTokens(entries, tokens, By("controller"));
  ASSERT_EQ(by_workload.groups.size(), 3u);
  EXPECT_EQ(by_workload.groups[0].key, "ads/Deployment/chat");
}

TEST(ParseTokenGroupBy, NamesWhatItTakes) {
  EXPECT_EQ(ToString(By("model,namespace,label:team,controller,pod,container")),
            "model,namespace,label:team,controller,pod,container");
  auto node = ParseTokenGroupBy("model,node");
  ASSERT_FALSE(node);
  EXPECT_EQ(node.error().message,
            "group by 'model,node': 'node': expected model, namespace, label:KEY, controller, "
            "pod or container, joined by commas");
  auto twice = ParseTokenGroupBy("model,model");
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().message, "group by 'model,model': 'model' appears twice");
  EXPECT_FALSE(ParseTokenGroupBy(""));
}

TEST(TokenUnits, AreExactAndSayWhenThereIsNothingToDivideBy) {
  EXPECT_EQ(NanosPerMillion(1, 3), 333'333);  // 333,333.33 rounded
  EXPECT_EQ(NanosPerMillion(2, 3), 666'667);
  EXPECT_EQ(NanosPerMillion(INT64_MAX, 1), INT64_MAX);  // held, never wrapped
  EXPECT_EQ(NanosPerMillion(5, 0), std::nullopt);
  EXPECT_EQ(TokensPerGpuHour(10, 0), std::nullopt);
}

}  // namespace
}  // namespace gpuledger::report
