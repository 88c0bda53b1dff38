// The real-data case of issue 12 (a first version, without the simulator
// replay): the Alibaba GenAI serving trace's per-pod GPU memory series
// (../shared/data/alibaba-genai-v2026, read, never copied). For every pod
// (container_ip) the MIG profile the library picks is the smallest one that
// fits its memory peak x headroom, computed here independently from the raw CSV
// and from ../shared/data/mig/mig_profiles_by_gpu.csv (the A100-80GB family
// rows).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "http/gzip.h"
#include "rightsizing/mig_profiles.h"
#include "rightsizing_data/rightsizing_data.h"

namespace gpuledger::rightsizing {
namespace {

constexpr double kHeadroom = 1.2;

struct CsvProfile {
  std::string name;
  int compute_slices;
  long long memory_gb;
};

TEST(GenAiTrace, SmallestMigProfileFitsEveryPodPeak) {
  const std::string trace_path =
      testutil::SharedData("alibaba-genai-v2026/pod_gpu_memory_used_bytes_anon.csv.gz");
  const std::string mig_path = testutil::SharedData("mig/mig_profiles_by_gpu.csv");
  auto gz = testutil::ReadFile(trace_path);
  auto mig = testutil::ReadFile(mig_path);
  if (!gz || !mig) GTEST_SKIP() << "shared data missing: " << trace_path << " or " << mig_path;
  auto csv = http::Gunzip(*gz);
  ASSERT_TRUE(csv.ok()) << csv.error().message;

  // The A100-80GB family's profiles, "+me" left out.
  std::vector<CsvProfile> profiles;
  for (const auto& f : testutil::CsvRows(*mig)) {
    if (f.size() < 7 || !f[0].starts_with("A100-80GB") || f[3].ends_with("+me")) continue;
    profiles.push_back({f[3], std::stoi(f[4]), std::stoll(f[5])});
  }
  ASSERT_EQ(profiles.size(), 6u);

  // Each pod's memory peak. The file's columns:
  // timestamp_anon,value,container_ip (the header says which; the duty-cycle
  // file orders them differently).
  auto lines = testutil::CsvRows(*csv);
  ASSERT_GT(lines.size(), 1000u);
  auto header = lines[0];
  auto col = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  const std::size_t value_col = col("value"), ip_col = col("container_ip");
  ASSERT_LT(value_col, header.size());
  ASSERT_LT(ip_col, header.size());
  std::map<std::string, double> peak;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    auto f = lines[i];
    ASSERT_GT(f.size(), std::max(value_col, ip_col)) << "row " << i;
    if (f[value_col].empty()) continue;
    double v = std::stod(f[value_col]);
    auto [it, fresh] = peak.try_emplace(f[ip_col], v);
    if (!fresh) it->second = std::max(it->second, v);
  }
  ASSERT_GT(peak.size(), 10u);

  int fit_none = 0;
  std::map<std::string, int> count;
  for (const auto& [ip, bytes] : peak) {
    const auto peak_bytes = static_cast<Bytes>(std::llround(bytes));
    // Independently: room = ceil(peak x 1.2) bytes; the fitting profiles are
    // those with memory_gb x 10^9 >= room; the smallest has the fewest compute
    // slices, then least memory.
    const auto room = static_cast<long double>(peak_bytes) * kHeadroom;
    const CsvProfile* want = nullptr;
    for (const CsvProfile& p : profiles) {
      if (static_cast<long double>(p.memory_gb) * 1e9L < std::ceil(room)) continue;
      if (want == nullptr || p.compute_slices < want->compute_slices ||
          (p.compute_slices == want->compute_slices && p.memory_gb < want->memory_gb))
        want = &p;
    }
    auto got = SmallestFittingProfile("A100-80GB", WithHeadroom(peak_bytes, kHeadroom), 0.0);
    if (want == nullptr) {
      ++fit_none;
      EXPECT_FALSE(got.has_value()) << ip << " peak " << peak_bytes;
      continue;
    }
    ASSERT_TRUE(got.has_value()) << ip << " peak " << peak_bytes << " want " << want->name;
    EXPECT_EQ(got->name, want->name) << ip << " peak " << peak_bytes;
    ++count[got->name];
  }
  std::string summary;
  for (const auto& [name, n] : count) summary += name + "=" + std::to_string(n) + " ";
  RecordProperty("pods", static_cast<int>(peak.size()));
  RecordProperty("fit_none", fit_none);
  std::cout << "[ genai ] " << peak.size() << " pods: " << summary << "none=" << fit_none << "\n";
}

}  // namespace
}  // namespace gpuledger::rightsizing
