#include "rightsizing/mig_profiles.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "rightsizing_data/rightsizing_data.h"

namespace gpuledger::rightsizing {
namespace {

constexpr Bytes kGB = 1'000'000'000;

std::string Fit(std::string_view model, Bytes memory, double compute) {
  auto p = SmallestFittingProfile(model, memory, compute);
  return p ? p->name : "none";
}

TEST(MigProfiles, ModelsWithAndWithoutMig) {
  for (std::string_view m :
       {"A100-40GB", "A100-80GB", "A30-24GB", "A30", "H100-80GB", "H100", "H100-NVL-94GB",
        "H100-96GB", "H20", "GH200", "GH200-144GB", "H200-141GB", "B200"})
    EXPECT_NE(MigProfilesFor(m), nullptr) << m;
  for (std::string_view m : {"L4", "T4", "A10", "A10G", "L40S", "V100-16GB", "P100", "", "X"})
    EXPECT_EQ(MigProfilesFor(m), nullptr) << m;
  EXPECT_EQ(SmallestFittingProfile("L4", 1, 0.01), std::nullopt);
}

TEST(MigProfiles, A100_40GbRows) {
  const auto& p = *MigProfilesFor("A100-40GB");
  ASSERT_EQ(p.size(), 6u);
  EXPECT_EQ(p[0], (MigProfile{"1g.5gb", 1, 7, 1, 8, 5 * kGB, 7}));
  EXPECT_EQ(p[1], (MigProfile{"1g.10gb", 1, 7, 2, 8, 10 * kGB, 4}));
  EXPECT_EQ(p[5], (MigProfile{"7g.40gb", 7, 7, 8, 8, 40 * kGB, 1}));
  const auto& a30 = *MigProfilesFor("A30-24GB");
  ASSERT_EQ(a30.size(), 3u);
  EXPECT_EQ(a30[1], (MigProfile{"2g.12gb", 2, 4, 2, 4, 12 * kGB, 2}));
}

// Fits worked out by hand. GiB = 1,073,741,824 bytes; profiles are nominal
// decimal GB.
TEST(MigProfiles, SmallestFitByHand) {
  // 9 GiB x 1.2 = 10.8 GiB = 11,596,411,699.2 -> 11,596,411,700 bytes > 10 GB,
  // so the 10 GB profiles (1g.10gb, 2g.10gb) are out; the 20 GB ones are
  // 3g.20gb and 4g.20gb: 3g.20gb.
  EXPECT_EQ(WithHeadroom(9 * kGiB, 1.2), 11'596'411'700);
  EXPECT_EQ(Fit("A100-40GB", WithHeadroom(9 * kGiB, 1.2), 0.10), "3g.20gb");
  // 7 GiB x 1.2 = 9,019,431,321.6 -> 9,019,431,322 <= 10 GB: 1g.10gb (1g.5gb
  // too small).
  EXPECT_EQ(Fit("A100-40GB", WithHeadroom(7 * kGiB, 1.2), 0.10), "1g.10gb");
  EXPECT_EQ(Fit("A100-80GB", WithHeadroom(7 * kGiB, 1.2), 0.10), "1g.10gb");
  // On an H100-80GB 10.8 GiB needs 20 GB: 1g.20gb has one compute slice, fewer
  // than 2g.20gb.
  EXPECT_EQ(Fit("H100-80GB", WithHeadroom(9 * kGiB, 1.2), 0.10), "1g.20gb");
  // Compute decides: 0.3 of the GPU needs 3 of 7 slices (2/7 = 0.2857 < 0.3 <=
  // 3/7 = 0.4286).
  EXPECT_EQ(Fit("H100-80GB", 5 * kGB, 0.30), "3g.40gb");
  EXPECT_EQ(Fit("H100-80GB", 5 * kGB, 2.0 / 7),
            "2g.20gb");  // exactly 2/7 fits 2g
  // H200: 13 GiB x 1.2 = 16,750,372,454.4 -> 16.75 GB <= 18 GB: 1g.18gb; 14 GiB
  // x 1.2 = 18,038,862,643.2 > 18 GB: 1g.35gb.
  EXPECT_EQ(Fit("H200-141GB", WithHeadroom(13 * kGiB, 1.2), 0.05), "1g.18gb");
  EXPECT_EQ(Fit("H200-141GB", WithHeadroom(14 * kGiB, 1.2), 0.05), "1g.35gb");
  // A30 (4 slices): 0.3 needs 2 of 4.
  EXPECT_EQ(Fit("A30-24GB", 3 * kGB, 0.30), "2g.12gb");
  EXPECT_EQ(Fit("B200", 50 * kGB, 0.0), "3g.90gb");  // 45 GB < 50 GB <= 90 GB
  // Exactly the profile's memory fits; one byte more does not.
  EXPECT_EQ(Fit("A100-80GB", 80 * kGB, 0.0), "7g.80gb");
  EXPECT_EQ(Fit("A100-80GB", 80 * kGB + 1, 0.0), "none");
  EXPECT_EQ(Fit("A100-80GB", 1, 1.01), "none");
}

// Our table against the derived CSV in ../shared/data/mig (read, not copied):
// per family the same profiles, slices, memory and max instances, "+me" left
// out.
TEST(MigProfiles, MatchesSharedCsv) {
  auto text = testutil::ReadFile(testutil::SharedData("mig/mig_profiles_by_gpu.csv"));
  if (!text) GTEST_SKIP() << "shared data missing: " << testutil::SharedData("mig");
  const std::map<std::string, std::vector<std::string>> models_of = {
      {"A100-SXM4/PCIe-40GB; A800-40GB", {"A100-40GB"}},
      {"A100-80GB; A800-80GB; H100-80GB (SXM/PCIe); H800-80GB", {"A100-80GB", "H100-80GB", "H100"}},
      {"A30-24GB", {"A30-24GB", "A30"}},
      {"H100 NVL (94GB); H800 NVL", {"H100-NVL-94GB"}},
      {"H100-96GB; PG506-96GB; GH200 (96GB); H20", {"H100-96GB", "GH200", "H20"}},
      {"H200-141GB (SXM); H200 NVL", {"H200-141GB"}},
      {"GH200 144GB HBM3e", {"GH200-144GB"}},
      {"B200", {"B200"}},
  };
  // family -> (profile, compute slices, total slices, memory bytes, max
  // instances)
  using Row = std::tuple<std::string, int, int, Bytes, int>;
  std::map<std::string, std::vector<Row>> want;
  auto lines = testutil::CsvRows(*text);
  ASSERT_GT(lines.size(), 1u);
  for (std::size_t i = 1; i < lines.size(); ++i) {
    auto f = lines[i];
    ASSERT_GE(f.size(), 7u) << "row " << i;
    if (f[3].ends_with("+me")) continue;
    want[f[0]].emplace_back(f[3], std::stoi(f[4]), std::stoi(f[2]),
                            static_cast<Bytes>(std::stoll(f[5])) * kGB, std::stoi(f[6]));
  }
  ASSERT_EQ(want.size(), models_of.size());
  for (const auto& [family, rows] : want) {
    auto it = models_of.find(family);
    ASSERT_NE(it, models_of.end()) << "family not in our table: " << family;
    for (const std::string& model : it->second) {
      const auto* got = MigProfilesFor(model);
      ASSERT_NE(got, nullptr) << model;
      std::vector<Row> have;
      for (const MigProfile& p : *got)
        have.emplace_back(p.name, p.compute_slices, p.total_slices, p.memory_bytes,
                          p.max_instances);
      EXPECT_EQ(have, rows) << model;
    }
  }
}

}  // namespace
}  // namespace gpuledger::rightsizing
