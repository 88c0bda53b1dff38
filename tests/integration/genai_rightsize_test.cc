// Issue 30, the real-data case through the shipping path: the Alibaba GenAI serving trace's
// per-pod GPU duty-cycle and memory series (../shared/data/alibaba-genai-v2026, read, never
// copied) replayed by the simulator, one pod per A100-80GB, collected by the agent's code,
// booked by the exact-delta engine into a SQLite ledger and read back by `gpuledger rightsize`.
// Each pod's MIG profile must be the smallest of NVIDIA's A100-80GB table
// (../shared/data/mig/) that holds its memory peak x 1.2, computed here from the raw CSV alone;
// a larger one only where its compute needs more slices than that (said per pod). Skips, saying
// so, without the shared data.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/units.h"
#include "http/gzip.h"
#include "io/file_util.h"
#include "process_util.h"
#include "rightsizing_data/rightsizing_data.h"
#include "temp_dir.h"
#include "test_paths.h"

namespace gpuledger {
namespace {

namespace testutil = rightsizing::testutil;

struct Pod {
  double first = 0, last = 0;  // seconds, the trace's clock
  double peak_bytes = 0;
  std::vector<double> duty;  // percent, every sample
};

struct Profile {
  std::string name;
  int compute_slices = 0;
  long long memory_gb = 0;
};

TEST(GenAiRightsize, EachPodsProfileIsTheSmallestHoldingItsPeakThroughTheLedger) {
  const std::string memory_csv =
      testutil::SharedData("alibaba-genai-v2026/pod_gpu_memory_used_bytes_anon.csv.gz");
  const std::string duty_csv =
      testutil::SharedData("alibaba-genai-v2026/pod_gpu_duty_cycle_anon.csv.gz");
  auto memory_gz = testutil::ReadFile(memory_csv);
  auto duty_gz = testutil::ReadFile(duty_csv);
  auto mig = testutil::ReadFile(testutil::SharedData("mig/mig_profiles_by_gpu.csv"));
  if (!memory_gz || !duty_gz || !mig)
    GTEST_SKIP() << "no shared data under " << test_paths::kSharedData;
  std::vector<Profile> profiles;  // A100-80GB, "+me" left out
  for (const auto& f : testutil::CsvRows(*mig))
    if (f.size() >= 7 && f[0].starts_with("A100-80GB") && !f[3].ends_with("+me"))
      profiles.push_back({f[3], std::stoi(f[4]), std::stoll(f[5])});
  ASSERT_EQ(profiles.size(), 6u);

  // Each pod's span, memory peak and duty samples, from the raw files.
  std::map<std::string, Pod> pods;
  auto read = [&](const std::string& gz, bool memory) {
    auto csv = http::Gunzip(gz);
    ASSERT_TRUE(csv) << csv.error().message;
    const auto rows = testutil::CsvRows(*csv);
    ASSERT_GT(rows.size(), 1000u);
    const auto& header = rows[0];
    auto col = [&](const char* name) {
      return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) -
                                      header.begin());
    };
    const std::size_t t = col("timestamp_anon"), v = col("value"), ip = col("container_ip");
    for (std::size_t i = 1; i < rows.size(); ++i) {
      if (rows[i].size() <= std::max({t, v, ip}) || rows[i][v].empty()) continue;
      Pod& pod = pods[rows[i][ip]];
      const double at = std::stod(rows[i][t]), value = std::stod(rows[i][v]);
      if (memory) {
        pod.first = pod.peak_bytes == 0 && pod.first == 0 ? at : std::min(pod.first, at);
        pod.last = std::max(pod.last, at);
        pod.peak_bytes = std::max(pod.peak_bytes, value);
      } else {
        pod.duty.push_back(value);
      }
    }
  };
  read(*memory_gz, true);
  read(*duty_gz, false);
  std::erase_if(pods, [](const auto& p) { return p.second.last == 0 || p.second.duty.empty(); });
  ASSERT_GT(pods.size(), 50u);

  // The scenario: one pod per A100-80GB, each starting at its first sample.
  double t0 = 1e300, t1 = 0;
  for (const auto& [ip, pod] : pods) t0 = std::min(t0, pod.first), t1 = std::max(t1, pod.last);
  const int hours = static_cast<int>(std::ceil((t1 + 60 - t0) / 3600));
  const int nodes = static_cast<int>((pods.size() + 7) / 8);
  std::string yaml =
      fmt::format("name: genai\nstart: \"2026-11-23T00:00:00Z\"\nduration: {}h\nnodes:\n", hours);
  for (int n = 0; n < nodes; ++n)
    yaml += fmt::format(
        "  - {{name: a100-{}, gpu_model: A100-80GB, gpus: 8, sharing: exclusive, "
        "pricing_class: on-demand}}\n",
        n);
  yaml += "workloads:\n";
  for (const auto& [ip, pod] : pods)
    yaml += fmt::format(
        "  - namespace: genai\n    name: pod-{}\n    gpus: 1\n    start: {}s\n    end: {}s\n"
        "    compute: {{profile: series, file: {}, where: {{container_ip: {}}}}}\n"
        "    memory: {{series: {{file: {}, where: {{container_ip: {}}}}}}}\n",
        ip.substr(0, 12), std::llround(pod.first - t0), std::llround(pod.last - t0) + 60, duty_csv,
        ip, memory_csv, ip);
  testing::TempDir dir("gpuledger-genai");
  ASSERT_TRUE(WriteFile((dir.path() / "genai.yaml").string(), yaml).ok());
  const std::string bin = test_paths::kGpuledgerBin;
  const std::string db = (dir.path() / "d" / "gpuledger.db").string();
  int code = 0;
  // 15 s collections: every memory sample (about a minute apart) is seen whole by some cycle.
  const std::string demo =
      RunCapture(bin + " demo --no-serve --step 15 --scenario " +
                     (dir.path() / "genai.yaml").string() + " --out " + (dir.path() / "d").string(),
                 &code);
  ASSERT_EQ(code, 0) << demo;
  const std::string json =
      RunCapture(bin + " rightsize --db " + db + " --window all --format json 2>/dev/null", &code);
  ASSERT_EQ(code, 0) << json;
  const auto doc = nlohmann::json::parse(json);

  int exact = 0, larger_for_compute = 0, none = 0, no_saving = 0;
  for (const auto& [ip, pod] : pods) {
    const std::string workload = "genai/Deployment/pod-" + ip.substr(0, 12);
    const nlohmann::json* rec = nullptr;
    for (const auto& r : doc["recommendations"])
      if (r["workload"] == workload) rec = &r;
    ASSERT_NE(rec, nullptr) << workload;
    // The memory series went through the agent and the ledger unchanged: the same peak.
    EXPECT_EQ((*rec)["memory_peak_bytes"].get<std::int64_t>(), std::llround(pod.peak_bytes))
        << workload;
    // Independently: room = ceil(peak x 1.2) bytes; the smallest profile holding it.
    const long double room = std::ceil(static_cast<long double>(pod.peak_bytes) * 1.2L);
    const Profile* want = nullptr;
    for (const Profile& p : profiles)
      if (static_cast<long double>(p.memory_gb) * 1e9L >= room &&
          (want == nullptr || p.compute_slices < want->compute_slices ||
           (p.compute_slices == want->compute_slices && p.memory_gb < want->memory_gb)))
        want = &p;
    // The MIG profile it was given: its best action, or one of the alternatives.
    std::string got;
    if ((*rec)["action"] == "mig-profile") got = (*rec)["to"];
    for (const auto& a : (*rec)["alternatives"])
      if (a["action"] == "mig-profile") got = a["to"];
    if (want == nullptr || want->compute_slices == 7) {
      ++none;
      EXPECT_TRUE(got.empty()) << workload << ": no profile but the whole card holds "
                               << pod.peak_bytes << " bytes x 1.2, got " << got;
      continue;
    }
    if (got == want->name) {
      ++exact;
      continue;
    }
    // No MIG move at all: right only when the profile is no smaller than what the pod held on
    // average (a pod present 12 minutes of its hour held 0.2 of a GPU: a 3g saves nothing).
    const double held = (*rec)["gpus_held_ppd"].get<double>() / kWholeGpu;
    if (got.empty() && want->compute_slices / 7.0 >= held) {
      ++no_saving;
      EXPECT_EQ((*rec)["action"], "keep") << workload;
      continue;
    }
    // Larger only where compute asks for it: the pod's busiest samples need more slices.
    std::vector<double> duty = pod.duty;
    std::sort(duty.begin(), duty.end());
    const double p95 = duty[std::min(duty.size() - 1, (duty.size() * 95 + 99) / 100 - 1)] / 100;
    const auto slices = [&](const std::string& name) {
      for (const Profile& p : profiles)
        if (p.name == name) return p.compute_slices;
      return 0;
    };
    EXPECT_GT(p95 * 7, want->compute_slices - 1e-9)
        << workload << ": want " << want->name << " for its memory, got '" << got << "'";
    EXPECT_GT(slices(got), want->compute_slices) << workload << " got '" << got << "'";
    ++larger_for_compute;
  }
  std::cout << "[ genai ] " << pods.size() << " pods: " << exact << " smallest by memory, "
            << larger_for_compute << " larger for compute, " << no_saving << " too short to save, "
            << none << " need the whole card\n";
  EXPECT_GT(exact, 0);
}

}  // namespace
}  // namespace gpuledger
