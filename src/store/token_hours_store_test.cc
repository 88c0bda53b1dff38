// Token hours (model/tokens.h) in both stores: every field round trips, rows replace by key,
// reads filter and order, bad rows are refused before anything is written, and writing them
// leaves the reports' generation alone.

#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <string>
#include <vector>

#include "store/ledger_store_test_fixture.h"

namespace gpuledger::store::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class TokenHoursStoreTest : public LedgerStoreTest {};

INSTANTIATE_TEST_SUITE_P(Stores, TokenHoursStoreTest,
                         ::testing::Values(StoreKind::kSqlite, StoreKind::kPostgres),
                         [](const auto& info) { return StoreKindName(info.param); });

TokenHour Row(int hour, std::string pod, std::string model, std::int64_t input) {
  TokenHour t;
  t.hour_us = Hour(hour);
  t.cluster = "prod-eu";
  t.consumer = ConsumerRef{"inference", pod, PodUid("uid-" + pod), "server"};
  t.model = std::move(model);
  t.engine = "vllm";
  t.input_tokens = input;
  t.output_tokens = input / 4;
  t.requests = input / 1000;
  t.prefill_us = 9'007'199'254'740'993;  // 2^53 + 1: a double would round it
  t.decode_us = input * 7;
  return t;
}

std::vector<TokenHour> MustRead(LedgerStore& store, const TimeRange& range) {
  auto rows = store.ReadTokenHours(range);
  EXPECT_TRUE(rows) << rows.error().message;
  return rows ? *rows : std::vector<TokenHour>{};
}

constexpr TimeRange kAll{INT64_MIN, INT64_MAX};

}  // namespace
}  // namespace gpuledger::store::testing

namespace gpuledger {
// Failures name the row, not its bytes.
void PrintTo(const TokenHour& t, std::ostream* os) {
  *os << t.hour_us << " " << t.cluster << " " << t.consumer.Key() << " " << t.model << " "
      << t.engine << " in=" << t.input_tokens << " out=" << t.output_tokens
      << " req=" << t.requests << " prefill=" << t.prefill_us << " decode=" << t.decode_us;
}
}  // namespace gpuledger

namespace gpuledger::store::testing {
namespace {

TEST_P(TokenHoursStoreTest, RoundTripEveryFieldAndReplaceByKey) {
  TokenHour a = Row(1, "llm-0", "meta-llama/Llama-3.1-8B-Instruct", 812345);
  TokenHour b = Row(1, "llm-0", "lora:sql-ünï\tcødé", 1000);
  TokenHour c = Row(0, "llm-1", "Qwen/Qwen3-32B", 5);
  {
    auto store = Open();
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->WriteTokenHours(std::vector{a, b, c}));
  }
  auto store = Open();  // what is read comes from the ledger, not from anything cached
  ASSERT_TRUE(store);
  EXPECT_THAT(MustRead(*store, kAll), ElementsAre(c, b, a));  // models by their bytes
  TokenHour later = a;
  later.input_tokens = 900000;
  later.requests = 0;
  ASSERT_TRUE(store->WriteTokenHours(std::vector{later, later}));
  EXPECT_THAT(MustRead(*store, kAll), ElementsAre(c, b, later));
  EXPECT_THAT(MustRead(*store, TimeRange{Hour(1), Hour(2)}), ElementsAre(b, later));
  EXPECT_TRUE(MustRead(*store, TimeRange{Hour(2), Hour(9)}).empty());
  EXPECT_TRUE(store->WriteTokenHours({}));
}

TEST_P(TokenHoursStoreTest, RefusesANegativeFigureBeforeWritingAnything) {
  auto store = Open();
  ASSERT_TRUE(store);
  TokenHour good = Row(0, "llm-0", "m", 10);
  TokenHour bad = Row(1, "llm-0", "m", 10);
  bad.output_tokens = -3;
  Status s = store->WriteTokenHours(std::vector{good, bad});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(s.error().message, HasSubstr("output_tokens is negative (-3)"));
  EXPECT_TRUE(MustRead(*store, kAll).empty());
}

TEST_P(TokenHoursStoreTest, LeaveTheReportsGenerationAsItWas) {
  auto store = Open();
  ASSERT_TRUE(store);
  auto before = store->Generation();
  ASSERT_TRUE(before);
  ASSERT_TRUE(store->WriteTokenHours(std::vector{Row(0, "llm-0", "m", 10)}));
  auto after = store->Generation();
  ASSERT_TRUE(after);
  EXPECT_EQ(*after, *before);
}

}  // namespace
}  // namespace gpuledger::store::testing
