#include "ingest/token_ledger.h"

#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "ingest/token_series.h"
#include "io/file_util.h"
#include "prometheus/exposition_parser.h"
#include "test_paths.h"

namespace gpuledger::ingest {
namespace {

constexpr Micros kHour = kMicrosPerHour;
constexpr Micros kT0 = 1'765'152'000'000'000;  // 2025-12-08T00:00:00Z, an hour's start
constexpr Micros kStart = 1'765'120'000'000'000;  // the fixtures' process_start_time_seconds

const ConsumerRef kPod{"inference", "llm-0", PodUid("u-llm-0"), "server"};

Sample S(std::string name, double value, prometheus::Labels labels = {}) {
  return Sample{std::move(name), std::move(labels), value};
}

EngineScrape Scrape(Micros at_us, std::vector<Sample> samples, std::string model = "") {
  return EngineScrape{kPod, std::move(model), at_us, std::move(samples)};
}

// A vLLM endpoint's token counters at one scrape (model "m"), started at `started_s`.
std::vector<Sample> Vllm(double prompt, double generated, double started_s = 0) {
  std::vector<Sample> out = {S("vllm:prompt_tokens_total", prompt, {{"model_name", "m"}}),
                             S("vllm:generation_tokens_total", generated, {{"model_name", "m"}})};
  if (started_s > 0) out.push_back(S("process_start_time_seconds", started_s));
  return out;
}

std::int64_t Sum(const std::vector<TokenHour>& rows, std::int64_t TokenHour::*field) {
  std::int64_t total = 0;
  for (const TokenHour& r : rows) total += r.*field;
  return total;
}

struct FixtureCase {
  const char* file;
  const char* annotated_model;  // the pod's gpuledger.io/model (TGI names none)
  TokenHour want;               // engine, model and figures
};

class EngineFixture : public testing::TestWithParam<FixtureCase> {};

// Each engine's recorded /metrics, fed as a second scrape after one where every series stood
// at zero: one row, in the engine's and model's name, with the fixture's totals.
TEST_P(EngineFixture, GivesTheTokensItsCountersSay) {
  const FixtureCase& c = GetParam();
  auto text = ReadFile(std::string(test_paths::kSourceDir) + "/testing/engine_metrics/" + c.file);
  ASSERT_TRUE(text.ok()) << text.error().message;
  auto parsed = prometheus::ParseExposition(*text);
  ASSERT_TRUE(parsed.ok()) << c.file << ": " << parsed.error().message;
  std::vector<Sample> zero = parsed->samples;
  for (Sample& s : zero)
    if (s.name != kProcessStart) s.value = 0;
  TokenLedger ledger("c1");
  ledger.Feed(Scrape(kT0 + 60'000'000, zero, c.annotated_model));
  ledger.Feed(Scrape(kT0 + 120'000'000, parsed->samples, c.annotated_model));
  const std::vector<TokenHour> rows = ledger.Hours(INT64_MAX);
  ASSERT_EQ(rows.size(), 1u) << c.file;
  TokenHour want = c.want;
  want.hour_us = kT0;
  want.cluster = "c1";
  want.consumer = kPod;
  EXPECT_EQ(rows[0], want) << c.file;
  EXPECT_EQ(ledger.skipped_values(), 0);
  EXPECT_EQ(ledger.resets(), 0);
}

TokenHour Want(const char* engine, const char* model, std::int64_t input, std::int64_t output,
               std::int64_t requests, Micros prefill_us = 0, Micros decode_us = 0) {
  TokenHour t;
  t.engine = engine;
  t.model = model;
  t.input_tokens = input;
  t.output_tokens = output;
  t.requests = requests;
  t.prefill_us = prefill_us;
  t.decode_us = decode_us;
  return t;
}

INSTANTIATE_TEST_SUITE_P(
    Engines, EngineFixture,
    testing::Values(
        // V0: finished requests by reason summed (1070 + 131); histogram sums in seconds.
        FixtureCase{"vllm-0.6.6.prom", "",
                    Want("vllm", "meta-llama/Llama-3.1-8B-Instruct", 812345, 275301, 1201,
                         187'250'000, 2'650'500'000)},
        // V1: two data-parallel engines summed; prompt_tokens_by_source and _created not read.
        FixtureCase{"vllm-0.11.prom", "",
                    Want("vllm", "Qwen/Qwen3-32B", 1'000'000, 250'000, 1500, 350'750'000,
                         5'400'125'000)},
        FixtureCase{"sglang-0.4.prom", "",
                    Want("sglang", "meta-llama/Llama-3.1-8B-Instruct", 8'128'902, 7'557'572,
                         28411)},
        // Streaming and not summed; cached and realtime tokens not read.
        FixtureCase{"sglang-0.5.prom", "",
                    Want("sglang", "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", 200'000, 75'000,
                         500)},
        // No model label: the pod's annotation names it; prefill/decode from batch time.
        FixtureCase{"tgi-3.prom", "mistralai/Mistral-7B-Instruct-v0.3",
                    Want("tgi", "mistralai/Mistral-7B-Instruct-v0.3", 520'000, 180'000, 1000,
                         95'500'000, 1'230'750'000)},
        // The ensemble's four request counters not read: requests are the generating model's.
        FixtureCase{"triton-trtllm.prom", "",
                    Want("triton", "tensorrt_llm", 1'600'000, 410'000, 2000)}));

TEST(TokenLedger, SplitsADeltaOverTheHoursItSpansExactly) {
  TokenLedger ledger("c1");
  ledger.Feed(Scrape(kT0 + kHour / 2, Vllm(0, 0)));
  ledger.Feed(Scrape(kT0 + kHour + kHour / 4, Vllm(1000, 1)));
  const auto rows = ledger.Hours(INT64_MAX);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].hour_us, kT0);
  EXPECT_EQ(rows[0].input_tokens, 667);  // 30 of the 45 minutes
  EXPECT_EQ(rows[1].input_tokens, 333);
  EXPECT_EQ(rows[0].output_tokens + rows[1].output_tokens, 1);
}

TEST(TokenLedger, CountsTheNewValueAfterAReset) {
  TokenLedger ledger("c1");
  ledger.Feed(Scrape(kT0 + 10, Vllm(100, 10)));
  ledger.Feed(Scrape(kT0 + 20, Vllm(150, 15)));
  ledger.Feed(Scrape(kT0 + 30, Vllm(30, 3)));  // reset: 30 since
  const auto rows = ledger.Hours(INT64_MAX);
  EXPECT_EQ(Sum(rows, &TokenHour::input_tokens), 80);
  EXPECT_EQ(Sum(rows, &TokenHour::output_tokens), 8);
  EXPECT_EQ(ledger.resets(), 2);  // one per series
}

// A restart between two scrapes after which the counters already passed their old values: only
// the new start time tells, and the new values count whole, from the restart.
TEST(TokenLedger, CountsFromARestartTheStartTimeShowsEvenWhenValuesGrew) {
  TokenLedger ledger("c1");
  const double first_start = static_cast<double>(kT0 - kHour) / 1e6;
  const double restart = static_cast<double>(kT0 + 40 * 60'000'000LL) / 1e6;
  ledger.Feed(Scrape(kT0 + 10 * 60'000'000LL, Vllm(100, 10, first_start)));
  ledger.Feed(Scrape(kT0 + kHour + 20 * 60'000'000LL, Vllm(500, 50, restart)));
  const auto rows = ledger.Hours(INT64_MAX);
  EXPECT_EQ(Sum(rows, &TokenHour::input_tokens), 500);
  EXPECT_EQ(ledger.restarts(), 1);
  EXPECT_EQ(ledger.resets(), 0);
  // From the restart (minute 40) to the scrape (minute 80): half in each hour.
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].input_tokens, 250);
  EXPECT_EQ(rows[1].input_tokens, 250);
}

TEST(TokenLedger, AMissedScrapeLosesNoToken) {
  TokenLedger every("c1"), missed("c1");
  for (int i = 0; i <= 6; ++i) {
    const auto samples = Vllm(1000.0 * i * i, 7.0 * i);
    every.Feed(Scrape(kT0 + i * kHour / 4, samples));
    if (i != 3 && i != 4) missed.Feed(Scrape(kT0 + i * kHour / 4, samples));
  }
  EXPECT_EQ(Sum(every.Hours(INT64_MAX), &TokenHour::input_tokens), 36'000);
  EXPECT_EQ(Sum(missed.Hours(INT64_MAX), &TokenHour::input_tokens), 36'000);
  EXPECT_EQ(Sum(missed.Hours(INT64_MAX), &TokenHour::output_tokens), 42);
}

TEST(TokenLedger, TakesAnEnginesFirstScrapeAsABaselineUnlessItsStartWasObserved) {
  TokenLedger baseline("c1"), observed("c1");
  observed.ObserveSince(kT0);
  const double start = static_cast<double>(kT0 + kHour / 2) / 1e6;
  for (TokenLedger* l : {&baseline, &observed}) {
    l->Feed(Scrape(kT0 + kHour, Vllm(600, 60, start)));
    l->Feed(Scrape(kT0 + kHour + 60'000'000, Vllm(700, 70, start)));
  }
  EXPECT_EQ(Sum(baseline.Hours(INT64_MAX), &TokenHour::input_tokens), 100);
  const auto rows = observed.Hours(INT64_MAX);
  EXPECT_EQ(Sum(rows, &TokenHour::input_tokens), 700);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].input_tokens, 600);  // its first half hour, from its start
}

TEST(TokenLedger, SkipsValuesThatAreNoCountersAndIgnoresOlderScrapes) {
  TokenLedger ledger("c1");
  ledger.Feed(Scrape(kT0 + 10, Vllm(100, 10)));
  ledger.Feed(Scrape(kT0 + 20, Vllm(std::nan(""), -1)));
  ledger.Feed(Scrape(kT0 + 15, Vllm(1e6, 1e6)));
  ledger.Feed(Scrape(kT0 + 30, Vllm(9.1e15, 20)));
  ledger.Feed(Scrape(kT0 + 40, Vllm(130, 30)));
  EXPECT_EQ(ledger.skipped_values(), 3);
  EXPECT_EQ(ledger.ignored_scrapes(), 1);
  const auto rows = ledger.Hours(INT64_MAX);
  EXPECT_EQ(Sum(rows, &TokenHour::input_tokens), 30);
  EXPECT_EQ(Sum(rows, &TokenHour::output_tokens), 20);
}

TEST(TokenLedger, ResumesFromItsStateAsIfNeverStopped) {
  TokenLedger whole("c1"), first("c1");
  std::vector<EngineScrape> scrapes;
  for (int i = 0; i < 8; ++i)
    scrapes.push_back(Scrape(kT0 + i * kHour / 3, Vllm(111.0 * i * i, 13.0 * i)));
  for (const auto& s : scrapes) whole.Feed(s);
  for (int i = 0; i < 4; ++i) first.Feed(scrapes[i]);
  (void)first.TakeTouched();
  TokenLedger resumed("c1");
  ASSERT_TRUE(resumed.Restore(first.State()).ok());
  EXPECT_EQ(resumed.State(), first.State());
  for (int i = 4; i < 8; ++i) resumed.Feed(scrapes[i]);
  EXPECT_EQ(resumed.Hours(INT64_MAX), whole.Hours(INT64_MAX));
  EXPECT_FALSE(resumed.Restore("{\"kind\":\"something else\"}").ok());
  EXPECT_FALSE(resumed.Restore("not json").ok());
}

TEST(TokenLedger, TakesEachTouchedRowOnceAndAgainWhenRetouched) {
  TokenLedger ledger("c1");
  ledger.Feed(Scrape(kT0 + 10, Vllm(0, 0)));
  ledger.Feed(Scrape(kT0 + 20, Vllm(5, 1)));
  auto taken = ledger.TakeTouched();
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_TRUE(ledger.TakeTouched().empty());
  ledger.Retouch(taken);
  EXPECT_EQ(ledger.TakeTouched(), taken);
}

TEST(TokenLedger, ForgetsHoursAndPrunesEnginesSoItStaysBounded) {
  TokenLedger ledger("c1");
  ledger.Feed(Scrape(kT0 + 10, Vllm(0, 0)));
  ledger.Feed(Scrape(kT0 + kHour + kHour / 2, Vllm(3600, 0)));
  EXPECT_EQ(ledger.footprint().rows, 2);
  ledger.Forget(kT0 + kHour);
  EXPECT_EQ(ledger.footprint().rows, 1);
  ledger.Feed(Scrape(kT0 + 2 * kHour + 10, Vllm(7200, 0)));
  EXPECT_EQ(ledger.late_dropped(), 0);
  ledger.Prune(kT0 + 3 * kHour);
  EXPECT_EQ(ledger.footprint().engines, 0);
  EXPECT_EQ(ledger.footprint().series, 0);
}

}  // namespace
}  // namespace gpuledger::ingest
