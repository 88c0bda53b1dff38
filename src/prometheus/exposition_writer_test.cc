#include "prometheus/exposition_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <vector>

namespace gpuledger::prometheus {
namespace {

namespace fs = std::filesystem;

std::string Value(double v) {
  std::string out;
  ExpositionWriter::AppendValue(out, v);
  return out;
}

std::string LabelValue(std::string_view v) {
  std::string out;
  ExpositionWriter::AppendLabelValue(out, v);
  return out;
}

TEST(ExpositionValue, IntegersExactlyAndSpecialsAsPrometheusSpellsThem) {
  EXPECT_EQ(Value(0), "0");
  EXPECT_EQ(Value(-0.0), "0");
  EXPECT_EQ(Value(1), "1");
  EXPECT_EQ(Value(-42), "-42");
  EXPECT_EQ(Value(1e15), "1000000000000000");
  EXPECT_EQ(Value(9007199254740991.0), "9007199254740991");  // 2^53 - 1
  EXPECT_EQ(Value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(Value(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(Value(std::nan("")), "NaN");
  EXPECT_EQ(Value(0.1), "0.1");
  EXPECT_EQ(Value(2.5), "2.5");
  EXPECT_EQ(Value(-0.005), "-0.005");
}

TEST(ExpositionValue, NonIntegersRoundTrip) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 10000; ++i) {
    double v;
    const std::uint64_t bits = rng();
    std::memcpy(&v, &bits, sizeof v);
    if (!std::isfinite(v)) continue;
    const std::string text = Value(v);
    EXPECT_EQ(std::strtod(text.c_str(), nullptr), v) << text;
    EXPECT_EQ(text.find_first_of(" \n"), std::string::npos);
  }
  EXPECT_EQ(std::strtod(Value(1e300).c_str(), nullptr), 1e300);
  EXPECT_EQ(std::strtod(Value(9007199254740993.0 * 4).c_str(), nullptr), 9007199254740993.0 * 4);
}

TEST(ExpositionLabelValue, Escapes) {
  EXPECT_EQ(LabelValue("plain"), "plain");
  EXPECT_EQ(LabelValue("a\\b"), "a\\\\b");
  EXPECT_EQ(LabelValue("say \"hi\""), "say \\\"hi\\\"");
  EXPECT_EQ(LabelValue("two\nlines"), "two\\nlines");
  EXPECT_EQ(LabelValue("tab\tok"), "tab\tok");
  EXPECT_EQ(LabelValue("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(LabelValue("bad\xFF"), "bad\xEF\xBF\xBD");
  EXPECT_EQ(LabelValue("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong '/'
  EXPECT_EQ(LabelValue("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(LabelValue("cut\xE2\x82"), "cut\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(ExpositionWriter, CounterGaugeAndLabels) {
  ExpositionWriter w;
  w.Family("x_seconds_total", "Help with \\ and\nnewline and \"quotes\".", MetricType::kCounter);
  w.Sample("x_seconds_total", {{"a", "1"}, {"b", "q\"\\\n"}}, 12.5);
  w.Family("y_bytes", "", MetricType::kGauge);
  w.Sample("y_bytes", 3);
  w.Sample("y_bytes", {}, 4);
  EXPECT_EQ(w.Take(),
            "# HELP x_seconds_total Help with \\\\ and\\nnewline and \"quotes\".\n"
            "# TYPE x_seconds_total counter\n"
            "x_seconds_total{a=\"1\",b=\"q\\\"\\\\\\n\"} 12.5\n"
            "# HELP y_bytes \n"
            "# TYPE y_bytes gauge\n"
            "y_bytes 3\n"
            "y_bytes 4\n");
  // Take() resets: a family may be declared again in the next rendering.
  w.Family("y_bytes", "again", MetricType::kGauge);
  EXPECT_EQ(w.Take(), "# HELP y_bytes again\n# TYPE y_bytes gauge\n");
}

TEST(ExpositionWriter, LabelsFromASpan) {
  ExpositionWriter w;
  w.Family("info", "i", MetricType::kGauge);
  const std::vector<Label> labels = {{"k", "v"}, {"k2", ""}};
  w.Sample("info", labels, 1);
  EXPECT_EQ(w.Take(), "# HELP info i\n# TYPE info gauge\ninfo{k=\"v\",k2=\"\"} 1\n");
}

TEST(ExpositionWriter, HistogramIsCumulative) {
  ExpositionWriter w;
  w.Family("lat_seconds", "Latency.", MetricType::kHistogram);
  HistogramData h{{0.005, 0.5, 1}, {1, 2, 0, 3}, 7.25};
  w.Histogram("lat_seconds", {{"source", "nvml"}}, h);
  EXPECT_EQ(w.Take(),
            "# HELP lat_seconds Latency.\n"
            "# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{source=\"nvml\",le=\"0.005\"} 1\n"
            "lat_seconds_bucket{source=\"nvml\",le=\"0.5\"} 3\n"
            "lat_seconds_bucket{source=\"nvml\",le=\"1\"} 3\n"
            "lat_seconds_bucket{source=\"nvml\",le=\"+Inf\"} 6\n"
            "lat_seconds_sum{source=\"nvml\"} 7.25\n"
            "lat_seconds_count{source=\"nvml\"} 6\n");
}

TEST(ExpositionWriter, HistogramWithoutBoundsOrLabels) {
  ExpositionWriter w;
  w.Family("h", "h", MetricType::kHistogram);
  w.Histogram("h", {}, HistogramData{{}, {4}, 2});
  EXPECT_EQ(w.Take(),
            "# HELP h h\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 4\nh_sum 2\nh_count 4\n");
}

TEST(ExpositionWriterDeathTest, BrokenInvariantsAbort) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        ExpositionWriter w;
        w.Family("bad-name", "", MetricType::kGauge);
      },
      "invalid metric name");
  EXPECT_DEATH(
      {
        ExpositionWriter w;
        w.Family("a", "", MetricType::kGauge);
        w.Family("a", "", MetricType::kGauge);
      },
      "declared twice");
  EXPECT_DEATH(
      {
        ExpositionWriter w;
        w.Family("a", "", MetricType::kGauge);
        w.Sample("b", 1);
      },
      "outside its family");
  EXPECT_DEATH(
      {
        ExpositionWriter w;
        w.Family("a", "", MetricType::kGauge);
        w.Sample("a", {{"__name__", "x"}}, 1);
      },
      "invalid label name");
  EXPECT_DEATH(
      {
        ExpositionWriter w;
        w.Family("a", "", MetricType::kGauge);
        w.Sample("a", {{"x", "1"}, {"x", "2"}}, 1);
      },
      "duplicate label");
  EXPECT_DEATH(
      {
        ExpositionWriter w;
        w.Family("h", "", MetricType::kHistogram);
        w.Histogram("h", {}, HistogramData{{1, 2}, {1, 2}, 0});
      },
      "one count per bound");
  EXPECT_DEATH(
      {
        ExpositionWriter w;
        w.Family("h", "", MetricType::kHistogram);
        w.Histogram("h", {}, HistogramData{{2, 1}, {1, 2, 3}, 0});
      },
      "strictly increasing");
}

// A realistic page: the shapes design section 6 names, with hostile label values.
std::string SampleExposition() {
  ExpositionWriter w;
  const std::string uuid = "GPU-5f1c0e2a-8d3b-4c1e-9a7f-0123456789ab";
  w.Family("gpuledger_device_info", "Static facts about a GPU or MIG instance.",
           MetricType::kGauge);
  w.Sample("gpuledger_device_info",
           {{"gpu_uuid", uuid},
            {"gpu_model", "NVIDIA H200"},
            {"node", "node-a"},
            {"parent_uuid", ""},
            {"mig_profile", ""},
            {"sharing_mode", "exclusive"}},
           1);
  w.Family("gpuledger_device_busy_seconds_total", "Seconds the GPU had work.",
           MetricType::kCounter);
  w.Sample("gpuledger_device_busy_seconds_total", {{"gpu_uuid", uuid}}, 3601.25);
  w.Family("gpuledger_device_memory_used_bytes", "Device memory in use.", MetricType::kGauge);
  w.Sample("gpuledger_device_memory_used_bytes", {{"gpu_uuid", uuid}}, 81604378624);
  w.Family("gpuledger_device_energy_joules_total", "Energy drawn\nsince start (\\ NVML).",
           MetricType::kCounter);
  w.Sample("gpuledger_device_energy_joules_total", {{"gpu_uuid", uuid}}, 1.5e13);
  w.Family("gpuledger_container_compute_gpu_seconds_total",
           "GPU-seconds of compute attributed to a container.", MetricType::kCounter);
  w.Sample("gpuledger_container_compute_gpu_seconds_total",
           {{"namespace", "ml"},
            {"pod", "train-\"quoted\"-0"},
            {"pod_uid", "1b2c3d4e-0000-4a4a-8b8b-123456789abc"},
            {"container", "back\\slash\nnew line"},
            {"gpu_uuid", uuid}},
           0.1);
  w.Sample("gpuledger_container_compute_gpu_seconds_total",
           {{"namespace", "ml"},
            {"pod", "caf\xC3\xA9-\xFF-bad-utf8"},
            {"pod_uid", "x"},
            {"container", "{}=,"},
            {"gpu_uuid", uuid}},
           2);
  w.Family("gpuledger_container_memory_used_bytes", "Memory in use.", MetricType::kGauge);
  w.Sample("gpuledger_container_memory_used_bytes", {{"namespace", "ml"}, {"pod", "p"}},
           std::nan(""));
  w.Sample("gpuledger_container_memory_used_bytes", {{"namespace", "ml"}, {"pod", "q"}},
           std::numeric_limits<double>::infinity());
  w.Sample("gpuledger_container_memory_used_bytes", {{"namespace", "ml"}, {"pod", "r"}},
           -std::numeric_limits<double>::infinity());
  w.Family("gpuledger_container_compute_share", "Fraction of the physical GPU, per cycle.",
           MetricType::kHistogram);
  w.Histogram("gpuledger_container_compute_share", {{"namespace", "ml"}, {"pod", "p"}},
              HistogramData{{0.1, 0.25, 0.5, 0.75, 1}, {5, 0, 7, 1, 2, 0}, 7.3});
  w.Family("gpuledger_agent_cycle_duration_seconds", "Collection cycle duration.",
           MetricType::kHistogram);
  w.Histogram("gpuledger_agent_cycle_duration_seconds", {},
              HistogramData{{0.005, 0.01, 0.025, 0.05, 0.1}, {10, 20, 3, 0, 0, 1}, 0.75});
  w.Family("gpuledger_agent_source_up", "1 when the source answered in the last cycle.",
           MetricType::kGauge);
  w.Sample("gpuledger_agent_source_up", {{"source", "nvml"}}, 1);
  w.Sample("gpuledger_agent_source_up", {{"source", "kubelet"}}, 0);
  return w.Take();
}

// Prometheus's own linter, when installed (Debian package "prometheus").
TEST(Exposition, PromtoolCheckMetricsAccepts) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "promtool not on PATH (apt-get install prometheus): check not run";
  const std::string text = SampleExposition();
  const fs::path dir = fs::temp_directory_path();
  const fs::path in = dir / ("exposition_test." + std::to_string(::getpid()) + ".prom");
  const fs::path out = dir / ("exposition_test." + std::to_string(::getpid()) + ".out");
  std::ofstream(in, std::ios::binary) << text;
  const std::string cmd =
      "promtool check metrics < '" + in.string() + "' > '" + out.string() + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream result(out);
  std::stringstream report;
  report << result.rdbuf();
  fs::remove(in);
  fs::remove(out);
  EXPECT_EQ(rc, 0) << "promtool said:\n" << report.str() << "\non:\n" << text;
}

}  // namespace
}  // namespace gpuledger::prometheus
