#include "prometheus/exposition_parser.h"

#include <gtest/gtest.h>

#include <filesystem>

#include <cmath>
#include <random>

#include "common/counter_units.h"
#include "io/file_util.h"
#include "prometheus/exposition_writer.h"
#include "test_paths.h"

namespace gpuledger::prometheus {
namespace {

TEST(ParseExposition, FamiliesLabelsEscapesAndTimestamps) {
  auto e = ParseExposition(
      "# HELP gpuledger_device_busy_seconds_total Seconds \\\\ busy.\n"
      "# TYPE gpuledger_device_busy_seconds_total counter\n"
      "gpuledger_device_busy_seconds_total{gpu_uuid=\"GPU-1\"} 12.5\n"
      "# a plain comment\n"
      "\n"
      "x{b=\"q\\\"uote\",a=\"back\\\\slash\\nnl\",} +Inf 1700000000000\n"
      "y   -Inf  \n"
      "z{} NaN 5\n"
      "h_bucket{le=\"+Inf\"} 3e2\n"
      "odd:name 1.5E-3\n");
  ASSERT_TRUE(e.ok()) << e.error().message;
  ASSERT_EQ(e->samples.size(), 6u);
  EXPECT_EQ(e->types.at("gpuledger_device_busy_seconds_total"), "counter");
  EXPECT_EQ(e->samples[0].name, "gpuledger_device_busy_seconds_total");
  EXPECT_EQ(e->samples[0].labels, (Labels{{"gpu_uuid", "GPU-1"}}));
  EXPECT_EQ(e->samples[0].value, 12.5);
  EXPECT_EQ(e->timestamps_ms[0], kNoTimestamp);
  // Sorted by name, unescaped.
  EXPECT_EQ(e->samples[1].labels, (Labels{{"a", "back\\slash\nnl"}, {"b", "q\"uote"}}));
  EXPECT_TRUE(std::isinf(e->samples[1].value) && e->samples[1].value > 0);
  EXPECT_EQ(e->timestamps_ms[1], 1700000000000);
  EXPECT_TRUE(std::isinf(e->samples[2].value) && e->samples[2].value < 0);
  EXPECT_TRUE(std::isnan(e->samples[3].value));
  EXPECT_EQ(e->timestamps_ms[3], 5);
  EXPECT_EQ(e->samples[4].value, 300);
  EXPECT_EQ(e->samples[5].name, "odd:name");
  EXPECT_DOUBLE_EQ(e->samples[5].value, 0.0015);
}

struct BadCase {
  const char* text;
  const char* message;  // a part of the error
};

TEST(ParseExposition, ErrorsNameTheLineAndWhatWasExpected) {
  const BadCase cases[] = {
      {"ok 1\n{a=\"b\"} 1\n", "line 2: expected a metric name, got '{a=\"b\"} 1'"},
      {"m{a=\"b\" 1\n", "line 1: expected a label name or '}', got '1'"},
      {"m{a=b} 1\n", "line 1: expected '\"' to open the value of label a"},
      {"m{a=\"b} 1\n", "line 1: expected '\"' to close the value of label a"},
      {"m{1a=\"x\"} 1\n", "expected a label name or '}'"},
      {"m{a=\"x\",a=\"y\"} 1\n", "duplicate label 'a'"},
      {"m\n", "line 1: expected a value, got end of line"},
      {"m abc\n", "expected a number as value 'abc'"},
      {"m 1 2.5\n", "expected an integer timestamp (ms) '2.5'"},
      {"m 1 2 3\n", "expected end of line after the timestamp"},
      {"m 1e999\n", "expected a number as value"},
      {"# TYPE m countr\n",
       "expected a type (counter, gauge, histogram, summary, untyped) 'countr'"},
      {"# HELP \n", "expected a metric name after # HELP"},
      // Where Prometheus's own parser refuses too (the differential test, docs/reliability.md).
      {"# TYPE m counter \n", "expected a type"},
      {"m 1\r\n", "expected a number as value"},
      {"  m 1\n", "line 1: expected a metric name at the start of the line, got a blank"},
      {"m 1 -5\n", "expected an integer timestamp (ms) '-5'"},
      {"m{__name__=\"x\"} 1\n", "a label may not be named '__name__'"},
      {"# HELP m a\xff\n", "invalid UTF-8 in the # HELP text of 'm'"},
      // Issue 29: an invalid UTF-8 label aborted the ingesting server when it saved its state.
      {"m{pod=\"a\xff\"} 1\n", "line 1: invalid UTF-8 in the value of label 'pod'"},
  };
  for (const BadCase& c : cases) {
    auto e = ParseExposition(c.text);
    ASSERT_FALSE(e.ok()) << c.text;
    EXPECT_NE(e.error().message.find(c.message), std::string::npos)
        << "input: " << c.text << "\nerror: " << e.error().message;
  }
}

// What Prometheus's own parser reads and we once refused, found by the differential test
// against it (fuzz/differential/): comments that look like HELP or TYPE, a second # TYPE line,
// label pairs without a comma, escapes other than \\, \" and \n kept as written.
TEST(ParseExposition, ReadsWhatPrometheusReads) {
  auto e = ParseExposition(
      "#HELP\n# HELP\n# TYPE\n#TYPE m x\n# HELP m$text\n# TYPE m counter\n# TYPE m gauge\n"
      "m{a=\"1\" b=\"x\\ty\"} 1\n");
  ASSERT_TRUE(e.ok()) << e.error().message;
  ASSERT_EQ(e->samples.size(), 1u);
  EXPECT_EQ(e->samples[0].labels, (Labels{{"a", "1"}, {"b", "x\\ty"}}));
  EXPECT_EQ(e->types.at("m"), "gauge");
}

TEST(ParseExposition, SkipModeCountsBadLines) {
  ParseOptions lenient;
  lenient.skip_bad_lines = true;
  auto e = ParseExposition("a 1\nbad line here\nb{x=\"1\"} 2\n{oops} 3\n", lenient);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->samples.size(), 2u);
  EXPECT_EQ(e->bad_lines, 2);
  ASSERT_EQ(e->errors.size(), 2u);
  EXPECT_TRUE(e->errors[0].starts_with("line 2:"));
  EXPECT_TRUE(e->errors[1].starts_with("line 4:"));
}

TEST(ParseExposition, RoundTripsTheAgentsWriter) {
  ExpositionWriter w;
  w.Family("gpuledger_container_allocated_gpu_seconds_total", "help \"x\"\n", MetricType::kCounter);
  w.Sample("gpuledger_container_allocated_gpu_seconds_total",
           {{"namespace", "ns"}, {"pod", "p\"o\\d\n"}, {"gpu_uuid", "GPU-1"}}, 1234.000001);
  HistogramData h{{0.5, 1}, {1, 2, 3}, 4.5};
  w.Family("share", "h", MetricType::kHistogram);
  w.Histogram("share", {{"pod", "p"}}, h);
  auto e = ParseExposition(w.Take());
  ASSERT_TRUE(e.ok()) << e.error().message;
  ASSERT_EQ(e->samples.size(), 6u);  // 1 + 3 buckets + sum + count
  EXPECT_EQ(e->samples[0].labels,
            (Labels{{"gpu_uuid", "GPU-1"}, {"namespace", "ns"}, {"pod", "p\"o\\d\n"}}));
  EXPECT_EQ(e->samples[0].value, 1234.000001);
  EXPECT_EQ(e->samples[3].name, "share_bucket");
  EXPECT_EQ(e->samples[3].labels, (Labels{{"le", "+Inf"}, {"pod", "p"}}));
  EXPECT_EQ(e->samples[3].value, 6);
  EXPECT_EQ(e->types.at("share"), "histogram");
}

// dcgm-exporter's output as Datadog's integration tests keep it: HELP lines with no text and
// "# NOTE" comments are valid; every sample parses strictly.
TEST(ParseExposition, DcgmExporterFixture) {
  const std::string path = std::string(gpuledger::test_paths::kSharedData) +
                           "/dcgm-exporter/samples/datadog_dcgm_fixture_metrics.txt";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "shared test data missing: " << path;
  auto text = ReadFile(path);
  ASSERT_TRUE(text.ok()) << text.error().message;
  ParseOptions lenient;
  lenient.skip_bad_lines = true;
  auto e = ParseExposition(*text, lenient);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->bad_lines, 0) << (e->errors.empty() ? "" : e->errors[0]);
  EXPECT_EQ(e->samples.size(), 38u);
  EXPECT_EQ(e->types.size(), 38u);
  EXPECT_EQ(e->types.at("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"), "counter");
  EXPECT_EQ(e->samples[4].name, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION");
  EXPECT_EQ(e->samples[4].value, 128996013);
  bool found = false;
  for (const auto& [k, v] : e->samples[0].labels)
    if (k == "UUID") found = v == "GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e";
  EXPECT_TRUE(found);
  // Strict mode reads it the same.
  auto strict = ParseExposition(*text);
  ASSERT_TRUE(strict.ok()) << strict.error().message;
  EXPECT_EQ(strict->samples.size(), 38u);

  // A line damaged as a truncated scrape damages it: strict fails naming the line, lenient
  // skips it.
  std::string damaged = *text;
  damaged.insert(damaged.find("DCGM_FI_DEV_GPU_TEMP{"), "DCGM_FI_DEV_TRUNCATED{gpu=\"0\",UUI\n");
  auto bad = ParseExposition(damaged);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("line 9:"), std::string::npos) << bad.error().message;
  auto skipped = ParseExposition(damaged, lenient);
  ASSERT_TRUE(skipped.ok());
  EXPECT_EQ(skipped->bad_lines, 1);
  EXPECT_EQ(skipped->samples.size(), 38u);
}

// Fuzz-ish: mutations of valid text and random bytes never crash; whatever parses has valid
// names and sorted labels. Fixed seed (deterministic).
TEST(ParseExposition, RandomInputNeverCrashes) {
  const std::string seed_text =
      "# HELP m_total h\n# TYPE m_total counter\n"
      "m_total{a=\"1\",b=\"x\\\"y\\\\z\\n\"} 12.5 1700000000000\nn NaN\no{le=\"+Inf\"} +Inf\n";
  std::mt19937_64 rng(20261123);
  const std::string alphabet = "{}=\",\\ \n#\t+-.eE0123456789aZ_:\x01\xff";
  std::int64_t parsed = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string s = seed_text;
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int k = 0; k < edits; ++k) {
      const std::size_t pos = s.empty() ? 0 : rng() % s.size();
      switch (rng() % 4) {
        case 0:
          if (!s.empty()) s.erase(pos, 1 + rng() % 4);
          break;
        case 1:
          s.insert(pos, 1, alphabet[rng() % alphabet.size()]);
          break;
        case 2:
          if (!s.empty()) s[pos] = static_cast<char>(rng());
          break;
        default:
          s = s.substr(0, pos);
          break;
      }
    }
    if (i % 10 == 0) {  // pure noise too
      s.resize(rng() % 200);
      for (char& c : s) c = static_cast<char>(rng());
    }
    for (bool lenient : {false, true}) {
      ParseOptions o;
      o.skip_bad_lines = lenient;
      auto e = ParseExposition(s, o);
      if (!e.ok()) {
        EXPECT_TRUE(e.error().message.starts_with("line ")) << e.error().message;
        continue;
      }
      ++parsed;
      ASSERT_EQ(e->samples.size(), e->timestamps_ms.size());
      for (const Sample& smp : e->samples) {
        ASSERT_FALSE(smp.name.empty());
        ASSERT_TRUE(std::is_sorted(smp.labels.begin(), smp.labels.end()));
      }
    }
  }
  EXPECT_GT(parsed, 1000);
}

}  // namespace
}  // namespace gpuledger::prometheus

namespace gpuledger::prometheus {
namespace {

// Integer counters through float64 text (common/counter_units.h): exact below the bound.
TEST(CounterRoundTrip, RandomIntegerCountersSurviveTheExpositionTextExactly) {
  std::mt19937_64 rng(53);
  struct Case {
    CounterScale scale;
    std::int64_t limit;
  };
  const Case cases[] = {{CounterScale::kMicrosPerSecond, kExactCounterLimitMicros},
                        {CounterScale::kMilliPerUnit, 8'796'093'022'208'000LL},  // 2^43 J
                        {CounterScale::kKibPerByte, 9'007'199'254'740'992LL}};   // 2^53 KiB-s
  for (const Case& c : cases) {
    std::vector<std::int64_t> values = {0, 1, 999'999, c.limit - 1, c.limit / 2 + 1};
    for (int i = 0; i < 20'000; ++i) {
      // Uniform over magnitudes: as many small counters as large ones.
      const int bits = static_cast<int>(rng() % 54);
      values.push_back(static_cast<std::int64_t>(rng() % (std::uint64_t{1} << bits)) % c.limit);
    }
    ExpositionWriter w;
    w.Family("x_total", "x", MetricType::kCounter);
    for (std::int64_t v : values) w.Sample("x_total", ToBaseUnit(v, c.scale));
    auto parsed = ParseExposition(w.Take());
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    ASSERT_EQ(parsed->samples.size(), values.size());
    for (std::size_t i = 0; i < values.size(); ++i)
      ASSERT_EQ(ToCount(parsed->samples[i].value, c.scale), values[i])
          << "scale " << static_cast<std::int64_t>(c.scale);
  }
}

}  // namespace
}  // namespace gpuledger::prometheus
