#include "ledger/tokens.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "common/csv.h"
#include "ledger/billing_reads.h"
#include "report/report.h"
#include "store_test_env/store_test_env.h"

namespace gpuledger::ledger {
namespace {

using store::testing::Hour;
using store::testing::MakeDevice;
using store::testing::MakeUsage;

// One hour of a time-sliced H100 at $4.10: an inference pod and a web app, half of it each;
// the engine served 1M prompt and 0.5M generated tokens in it.
class TokensTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = store::OpenSqliteLedger(dir_.File("ledger.db"));
    ASSERT_TRUE(opened) << opened.error().message;
    store_ = std::move(*opened);
    LedgerHour hour;
    hour.device = MakeDevice(Hour(0), "GPU-a");
    hour.device.busy_us = 1'800'000'000;
    hour.device.idle_us = 1'800'000'000;
    hour.usage = {MakeUsage(hour.device, "llm", "vllm-0", "server", 1'800'000'000),
                  MakeUsage(hour.device, "web", "app-0", "app", 1'800'000'000)};
    ASSERT_TRUE(store_->WriteHours(std::vector{hour}));
    TokenHour t;
    t.hour_us = Hour(0);
    t.cluster = "prod-eu";
    t.consumer = hour.usage[0].consumer.ref;
    t.model = "llama-8b";
    t.engine = "vllm";
    t.input_tokens = 1'000'000;
    t.output_tokens = 500'000;
    t.requests = 900;
    ASSERT_TRUE(store_->WriteTokenHours(std::vector{t}));
  }

  store::testing::TempDir dir_;
  std::unique_ptr<store::LedgerStore> store_;
};

TEST_F(TokensTest, ChargesTheEnginesTokensWithThePodsCost) {
  auto answer = ReadTokens(*store_, nullptr, TokenRequest{});
  ASSERT_TRUE(answer) << answer.error().message;
  const report::TokenReport& r = answer->report;
  ASSERT_EQ(r.groups.size(), 1u);
  const report::TokenGroup& g = r.groups[0];
  EXPECT_EQ(g.key, "llama-8b");
  // Allocation: half the hour's $4.10.
  EXPECT_EQ(g.gpu.cost_nanos, 2'050'000'000);
  EXPECT_EQ(report::NanosPerMillion(g.gpu.cost_nanos, g.tokens()), 1'366'666'667);
  EXPECT_EQ(g.input_cost_nanos, 1'366'666'667);  // 2 of the 3 tokens
  EXPECT_EQ(g.output_cost_nanos, 683'333'333);
  EXPECT_EQ(g.gpu.quality, Quality::kEstimated);
  EXPECT_EQ(answer->scope.currency, "USD");
}

// One figure everywhere: under every policy and idle rule, the tokens' cost is the serving
// container's cost in the report by container.
TEST_F(TokensTest, CostIsThePodsReportCostUnderEveryPolicy) {
  for (const char* policy : {"allocation", "compute", "memory", "hybrid:0.5"})
    for (const char* idle : {"keep", "share", "namespace:platform"}) {
      TokenRequest request;
      request.policy = policy;
      request.idle = idle;
      auto answer = ReadTokens(*store_, nullptr, request);
      ASSERT_TRUE(answer) << answer.error().message;
      ReportRequest by_container;
      by_container.group_by = "container";
      by_container.policy = policy;
      by_container.idle = idle;
      auto query = ParseReportRequest(by_container, *store_->Extent());
      ASSERT_TRUE(query) << query.error().message;
      ReadService reads(OneQueryOptions());
      auto report = reads.Report(*store_, *query);
      ASSERT_TRUE(report) << report.error().message;
      Nanos pod_cost = -1;
      for (const report::Row& row : report->rows)
        if (row.key == "llm/vllm-0/server") pod_cost = row.figures.cost_nanos;
      ASSERT_EQ(answer->report.groups.size(), 1u);
      EXPECT_EQ(answer->report.groups[0].gpu.cost_nanos, pod_cost) << policy << " " << idle;
      EXPECT_GT(pod_cost, 0) << policy << " " << idle;
    }
}

TEST_F(TokensTest, ErrorsNameTheFieldAsTheEdgeCallsIt) {
  TokenRequest request;
  request.group_by = "node";
  FieldNames names;
  names.group_by = "--by";
  auto bad = ReadTokens(*store_, nullptr, request, names);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().message.rfind("--by: group by 'node': 'node': expected model", 0), 0u)
      << bad.error().message;
  request = TokenRequest{};
  request.window = "nonsense";
  names.window = "--window";
  auto window = ReadTokens(*store_, nullptr, request, names);
  ASSERT_FALSE(window);
  EXPECT_EQ(window.error().message.rfind("--window", 0), 0u) << window.error().message;
}

TEST_F(TokensTest, AWindowWithoutTokensHasNoGroups) {
  TokenRequest request;
  request.window = "2020-01";
  auto answer = ReadTokens(*store_, nullptr, request);
  ASSERT_TRUE(answer) << answer.error().message;
  EXPECT_TRUE(answer->report.groups.empty());
  EXPECT_EQ(answer->report.total.gpu.cost_nanos, 0);
}

// In the FOCUS export the inference workload's charge carries its tokens as what it consumed;
// every other row its GPU-hours, as before.
TEST_F(TokensTest, FocusRowsOfAnInferenceWorkloadConsumeTokens) {
  ReadService reads(OneQueryOptions());
  auto text = ExportFromStore(*store_, reads, ExportOptions{});
  ASSERT_TRUE(text) << text.error().message;
  auto records = ParseCsv(*text, "export.csv");
  ASSERT_TRUE(records) << records.error().message;
  const std::vector<CsvField>& head = (*records)[0].fields;
  auto column = [&](std::string_view name) {
    return static_cast<std::size_t>(
        std::find_if(head.begin(), head.end(),
                     [&](const CsvField& f) { return f.value == name; }) -
        head.begin());
  };
  std::map<std::string, std::pair<std::string, std::string>> consumed;  // by ResourceId
  for (std::size_t i = 1; i < records->size(); ++i) {
    const std::vector<CsvField>& f = (*records)[i].fields;
    consumed[f[column("ResourceId")].value] = {f[column("ConsumedQuantity")].value,
                                               f[column("ConsumedUnit")].value};
  }
  EXPECT_EQ(consumed["llm/Deployment/vllm"],
            (std::pair<std::string, std::string>{"1500000", "Tokens"}));
  EXPECT_EQ(consumed["web/Deployment/app"].second, "GPU-Hours");
  ExportOptions plain;
  plain.format = "csv";
  auto csv = ExportFromStore(*store_, reads, plain);
  ASSERT_TRUE(csv) << csv.error().message;
  EXPECT_NE(csv->find(",tokens\n"), std::string::npos);
  EXPECT_NE(csv->find(",1500000\n"), std::string::npos) << *csv;
}

}  // namespace
}  // namespace gpuledger::ledger
