#include "sim/scenario.h"
#include "sim/sim_util.h"
#include "test_paths.h"

#include <unistd.h>

#include <filesystem>

#include "io/file_util.h"
#include "sim/profiles.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuledger::sim {
namespace {

using ::testing::HasSubstr;

constexpr std::string_view kHead = R"(name: t
start: "2026-11-23T00:00:00Z"
duration: 2h
nodes:
  - name: n0
    gpu_model: H100-80GB
    gpus: 2
)";

std::string ErrorOf(std::string_view yaml) {
  auto sc = ParseScenario(yaml, "demo.yaml");
  return sc.ok() ? std::string("<ok>") : sc.error().message;
}

TEST(ParseScenario, ExampleParses) {
  auto sc = ParseScenario(ExampleScenarioYaml(), "example.yaml");
  ASSERT_TRUE(sc.ok()) << sc.error().message;
  EXPECT_EQ(sc->nodes.size(), 7u);
  EXPECT_EQ(sc->duration_us, 168 * kMicrosPerHour);
  for (auto& w : sc->workloads) EXPECT_EQ(static_cast<int>(w.pods.size()), w.replicas) << w.name;
}

TEST(ParseScenario, UnknownTopLevelKeyNamesLine) {
  std::string y = std::string(kHead) + "workload:\n  - {}\n";
  EXPECT_THAT(ErrorOf(y), HasSubstr("demo.yaml:8: workload: unknown key"));
}

TEST(ParseScenario, UnknownWorkloadKey) {
  std::string y = std::string(kHead) + "workloads:\n  - namespace: a\n    name: w\n    gpuz: 1\n";
  EXPECT_THAT(ErrorOf(y), HasSubstr("demo.yaml:11: workloads[0].gpuz: unknown key"));
}

TEST(ParseScenario, BadDuty) {
  std::string y = std::string(kHead) +
                  "workloads:\n  - namespace: a\n    name: w\n"
                  "    compute: {profile: constant, duty: high}\n";
  EXPECT_EQ(ErrorOf(y),
            "demo.yaml:11: workloads[0].compute.duty: expected a number in [0, 1], got 'high'");
}

TEST(ParseScenario, DutyOutOfRange) {
  std::string y = std::string(kHead) +
                  "workloads:\n  - namespace: a\n    name: w\n"
                  "    compute:\n      profile: constant\n      duty: 1.5\n";
  EXPECT_THAT(ErrorOf(y), HasSubstr("demo.yaml:13: workloads[0].compute.duty: expected a number"));
}

TEST(ParseScenario, UnknownMigProfile) {
  std::string y = R"(name: t
start: "2026-11-23T00:00:00Z"
duration: 2h
nodes:
  - name: n0
    gpu_model: H200-141GB
    sharing: mig
    mig_layout: [3g.71gb, 3g.40gb]
)";
  EXPECT_THAT(ErrorOf(y), HasSubstr("demo.yaml:8: nodes[0].mig_layout[1]: unknown MIG profile "
                                    "'3g.40gb' for H200-141GB"));
}

TEST(ParseScenario, AMigProfileOfMoreMemoryThanAnIntegerHoldsIsUnknown) {
  // The fuzzer's input (CI, 2026-12-07): the profile's bytes were a double past INT64_MAX
  // converted to an integer, undefined behaviour.
  std::string y = R"(name: t
start: "2026-11-23T00:00:00Z"
duration: 2h
nodes:
  - name: n0
    gpu_model: Custom-GPU
    memory: 80GiB
    sharing: mig
    mig_layout: [1g.2222222222222222222222222222222222222222222225gb]
)";
  EXPECT_THAT(ErrorOf(y), HasSubstr("nodes[0].mig_layout[0]"));
  constexpr Bytes kCard = 288'000'000'000;
  EXPECT_EQ(MigInstanceMemory("1g.2222222222222222222222222222222222222222222225gb", kCard), 0);
  EXPECT_EQ(MigInstanceMemory("1g.-5gb", kCard), 0);
  EXPECT_EQ(MigInstanceMemory("1g.18gb", kCard), 18'000'000'000);
}

TEST(ParseScenario, OverfullMigLayout) {
  std::string y = R"(name: t
start: "2026-11-23T00:00:00Z"
duration: 2h
nodes:
  - name: n0
    gpu_model: A100-40GB
    sharing: mig
    mig_layout:
      - 4g.20gb
      - 3g.20gb
      - 1g.5gb
)";
  EXPECT_THAT(ErrorOf(y), HasSubstr("demo.yaml:11: nodes[0].mig_layout[2]: MIG layout needs 8"));
}

TEST(ParseScenario, UnknownModelNeedsMemory) {
  std::string y =
      "name: t\nstart: \"2026-11-23T00:00:00Z\"\nduration: 1h\nnodes:\n"
      "  - {name: n0, gpu_model: X9000}\n";
  EXPECT_THAT(ErrorOf(y), HasSubstr("demo.yaml:5: nodes[0].memory: required: 'X9000'"));
}

TEST(ParseScenario, BadStartTime) {
  EXPECT_THAT(ErrorOf("name: t\nstart: yesterday\nduration: 1h\nnodes: []\n"),
              HasSubstr("demo.yaml:2: start: expected an RFC 3339 time"));
}

// Issue 29: a 292-year scenario was accepted (and simulated for hours); one ending past 9999
// could not be written as a time.
TEST(ParseScenario, DurationIsBoundedAndEndsWithinTheCalendar) {
  EXPECT_THAT(
      ErrorOf("name: t\nstart: \"2026-11-23T00:00:00Z\"\nduration: 2555000h\nnodes: []\n"),
      HasSubstr("demo.yaml:3: duration: expected at most 87840h (ten years), got 2555000h"));
  EXPECT_THAT(ErrorOf("name: t\nstart: \"9999-12-31T00:00:00Z\"\nduration: 48h\nnodes: []\n"),
              HasSubstr("demo.yaml:3: duration: expected to end by 9999-12-31"));
}

TEST(ParseScenario, PlacementFailureNamesWorkload) {
  std::string y = std::string(kHead) + "workloads:\n  - namespace: a\n    name: big\n    gpus: 3\n";
  EXPECT_THAT(ErrorOf(y), HasSubstr("workload 'a/big' pod big-0: no room"));
}

TEST(ParseScenario, TimeAwarePlacementReusesFreedGpus) {
  std::string y = std::string(kHead) +
                  "workloads:\n"
                  "  - {namespace: a, name: w1, gpus: 2, end: 1h}\n"
                  "  - {namespace: a, name: w2, gpus: 2, start: 1h}\n";
  auto sc = ParseScenario(y, "demo.yaml");
  ASSERT_TRUE(sc.ok()) << sc.error().message;
}

TEST(ParseScenario, YamlSyntaxErrorHasLine) {
  EXPECT_THAT(ErrorOf("name: t\nnodes: [\n"), HasSubstr("demo.yaml:"));
}

TEST(ParseScenario, MemoryDefaultsFromModel) {
  std::string y =
      "name: t\nstart: \"2026-11-23T00:00:00Z\"\nduration: 1h\nnodes:\n"
      "  - {name: a, gpu_model: H200-141GB}\n  - {name: b, gpu_model: L4}\n"
      "  - {name: c, gpu_model: T4, memory: 1GiB}\n";
  auto sc = ParseScenario(y, "x.yaml");
  ASSERT_TRUE(sc.ok()) << sc.error().message;
  EXPECT_EQ(sc->nodes[0].memory_per_gpu_bytes, 143771000832);
  EXPECT_EQ(sc->nodes[1].memory_per_gpu_bytes, 23034 * kMiB);
  EXPECT_EQ(sc->nodes[2].memory_per_gpu_bytes, kGiB);
}

TEST(ParseScenario, SeriesFromGenAiTrace) {
  std::string dir = std::string(gpuledger::test_paths::kSharedData) + "/alibaba-genai-v2026";
  std::string y = std::string(kHead) +
                  "workloads:\n  - namespace: a\n    name: sd\n"
                  "    compute: {profile: series, file: " +
                  dir +
                  "/pod_gpu_duty_cycle_anon.csv.gz, where: {container_ip: "
                  "4d8eab038486f8a99df7bbb7fc0ffd53}}\n";
  auto sc = ParseScenario(y, "x.yaml");
  if (!sc.ok() && sc.error().message.find("cannot open") != std::string::npos)
    GTEST_SKIP() << "shared data missing: " << dir;
  if (!sc.ok() && sc.error().message.find("zlib") != std::string::npos)
    GTEST_SKIP() << "built without zlib";
  ASSERT_TRUE(sc.ok()) << sc.error().message;
  auto& s = *sc->workloads[0].compute.series;
  EXPECT_GT(s.offset_us.size(), 1000u);
  EXPECT_GT(s.period_us, 20 * kMicrosPerHour);
}

// Issue 30: a memory series (bytes per timestamp, held until the next) replays a real trace's
// memory; it replaces bytes/peak/period.
TEST(ParseScenario, MemorySeriesHoldsEachSampleInBytes) {
  const std::string file = std::filesystem::temp_directory_path() /
                           ("gpuledger-memseries-" + std::to_string(::getpid()) + ".csv");
  ASSERT_TRUE(
      WriteFile(file, "timestamp,value,pod\n100,1000,a\n160,5000,a\n100,7,b\n220,3000,a\n").ok());
  auto sc = ParseScenario(std::string(kHead) +
                              "workloads:\n  - namespace: a\n    name: w\n"
                              "    memory: {series: {file: " +
                              file + ", where: {pod: a}}}\n",
                          "x.yaml");
  ASSERT_TRUE(sc.ok()) << sc.error().message;
  const MemoryProfile& m = sc->workloads[0].memory;
  ASSERT_TRUE(m.series);
  EXPECT_EQ(MemoryAt(m, 0), 1000);
  EXPECT_EQ(MemoryAt(m, 59 * kMicrosPerSecond), 1000);
  EXPECT_EQ(MemoryAt(m, 60 * kMicrosPerSecond), 5000);
  EXPECT_EQ(MemoryAt(m, 150 * kMicrosPerSecond), 3000);
  // 60 s at 1000 then 60 s at 5000 bytes.
  EXPECT_EQ(MemoryIntegral(m, 0, 120 * kMicrosPerSecond), 360'000.0 * kMicrosPerSecond);
  auto both = ParseScenario(std::string(kHead) +
                                "workloads:\n  - namespace: a\n    name: w\n"
                                "    memory: {bytes: 1GiB, series: {file: " +
                                file + "}}\n",
                            "x.yaml");
  ASSERT_FALSE(both.ok());
  EXPECT_THAT(both.error().message, HasSubstr("series replaces bytes"));
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace gpuledger::sim
