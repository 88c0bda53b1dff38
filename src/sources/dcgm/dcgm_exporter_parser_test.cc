#include "sources/dcgm/dcgm_exporter_parser.h"
#include "test_paths.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace gpuledger::sources::dcgm {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string Fixture(const std::string& name) {
  const fs::path path =
      fs::path(gpuledger::test_paths::kSourceDir) / "src/sources/dcgm/testdata" / name;
  EXPECT_TRUE(fs::exists(path)) << path;
  return Slurp(path);
}

const GpuUuid kGpu0{"GPU-0a0a0a0a-1111-2222-3333-444455556666"};
const GpuUuid kGpu1{"GPU-1b1b1b1b-1111-2222-3333-444455556666"};
const GpuUuid kGpu2{"GPU-2c2c2c2c-1111-2222-3333-444455556666"};

// The two fixtures describe one node: 2 whole GPUs and one GPU with two 3g.40gb instances.
void ExpectTheFixtureNode(const DcgmScrape& s) {
  ASSERT_EQ(s.units.size(), 5u);
  EXPECT_EQ(s.bad_line_count, 0) << (s.bad_lines.empty() ? "" : s.bad_lines[0].reason);

  const DcgmUnit* g0 = s.Find(kGpu0);
  ASSERT_NE(g0, nullptr);
  EXPECT_EQ(g0->gpu_index, 0);
  EXPECT_FALSE(g0->is_mig());
  EXPECT_EQ(g0->driver_version, "570.124.06");
  EXPECT_EQ(g0->sm_active, 0.5);
  EXPECT_EQ(g0->sm_occupancy, 0.25);
  EXPECT_EQ(g0->tensor_active, 0.125);
  EXPECT_EQ(g0->dram_active, 0.375);
  EXPECT_EQ(g0->gr_engine_active, 0.75);
  EXPECT_EQ(g0->gpu_util, 0.8);
  EXPECT_EQ(g0->fb_used_bytes, 2 * kGiB);
  EXPECT_EQ(g0->power_watts, 350.5);

  const DcgmUnit* g1 = s.Find(kGpu1);
  ASSERT_NE(g1, nullptr);
  EXPECT_EQ(g1->sm_active, 0.0);
  EXPECT_EQ(g1->gpu_util, 0.0);
  EXPECT_EQ(g1->fb_used_bytes, 0);

  const DcgmUnit* whole = s.Find(kGpu2);
  ASSERT_NE(whole, nullptr);
  EXPECT_EQ(whole->power_watts, 200.0);
  EXPECT_FALSE(whole->sm_active) << "a MIG GPU's profiling is per instance";

  const DcgmUnit* i1 = s.Find(kGpu2, 1);
  ASSERT_NE(i1, nullptr);
  EXPECT_TRUE(i1->is_mig());
  EXPECT_EQ(i1->gpu_index, 2);
  EXPECT_EQ(i1->gpu_instance_profile, "3g.40gb");
  EXPECT_EQ(i1->sm_active, 0.6);
  EXPECT_EQ(i1->gr_engine_active, 0.625);
  EXPECT_EQ(i1->fb_used_bytes, kGiB);
  const DcgmUnit* i2 = s.Find(kGpu2, 2);
  ASSERT_NE(i2, nullptr);
  EXPECT_EQ(i2->sm_occupancy, 0.03125);
  EXPECT_EQ(i2->dram_active, 0.015625);
  EXPECT_EQ(i2->fb_used_bytes, kGiB / 2);
}

TEST(ParseDcgmExporter, ClassicFieldSet) {
  auto s = ParseDcgmExporter(Fixture("classic.prom"));
  ASSERT_TRUE(s) << s.error().message;
  ExpectTheFixtureNode(*s);
  EXPECT_EQ(s->field_sets, (DcgmFieldSets{.classic = true, .renamed = false}));
}

TEST(ParseDcgmExporter, RenamedFieldSetOf49) {
  auto s = ParseDcgmExporter(Fixture("renamed_4_9.prom"));
  ASSERT_TRUE(s) << s.error().message;
  ExpectTheFixtureNode(*s);
  EXPECT_EQ(s->field_sets, (DcgmFieldSets{.classic = false, .renamed = true}));
}

TEST(ParseDcgmExporter, BothFieldSetsGiveIdenticalFigures) {
  auto classic = ParseDcgmExporter(Fixture("classic.prom"));
  auto renamed = ParseDcgmExporter(Fixture("renamed_4_9.prom"));
  ASSERT_TRUE(classic && renamed);
  // Every unit, every field, every label-derived value: equal, not close.
  EXPECT_EQ(classic->units, renamed->units);
}

TEST(ParseDcgmExporter, OneXCompatibilityNames) {
  auto s = ParseDcgmExporter(
      "dcgm_gpu_utilization{gpu=\"0\",uuid=\"GPU-a\"} 45\n"
      "dcgm_fb_used{gpu=\"0\",uuid=\"GPU-a\"} 100\n"
      "dcgm_power_usage{gpu=\"0\",uuid=\"GPU-a\"} 60.5\n"
      "dcgm_fi_prof_sm_active{gpu=\"0\",uuid=\"GPU-a\"} 0.25\n");
  ASSERT_TRUE(s) << s.error().message;
  const DcgmUnit* u = s->Find(GpuUuid{"GPU-a"});
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->gpu_util, 0.45);
  EXPECT_EQ(u->fb_used_bytes, 100 * kMiB);
  EXPECT_EQ(u->power_watts, 60.5);
  EXPECT_EQ(u->sm_active, 0.25);
}

// The shared real scrape (a T4 node, plus one A10G line with pod labels): its "deliberately
// malformed" lines are upstream series of used fields with no labels at all.
TEST(ParseDcgmExporter, SharedSampleFromDatadog) {
  const fs::path path = fs::path(gpuledger::test_paths::kSharedData) /
                        "dcgm-exporter/samples/datadog_dcgm_fixture_metrics.txt";
  if (!fs::exists(path))
    GTEST_SKIP() << "shared test data missing: " << path
                 << " (expected ../shared/data/dcgm-exporter/samples)";
  auto s = ParseDcgmExporter(Slurp(path));
  ASSERT_TRUE(s) << s.error().message;
  ASSERT_EQ(s->units.size(), 3u);
  const DcgmUnit* t4 = s->Find(GpuUuid{"GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e"});
  ASSERT_NE(t4, nullptr);
  EXPECT_EQ(t4->gpu_index, 0);
  EXPECT_EQ(t4->driver_version, "460.106.00");
  EXPECT_EQ(t4->power_watts, 8.969);
  EXPECT_EQ(t4->gpu_util, 0.0);
  EXPECT_EQ(t4->fb_used_bytes, 0);
  EXPECT_FALSE(t4->sm_active);
  const DcgmUnit* other = s->Find(GpuUuid{"GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5"});
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->driver_version, "470.182.03");
  const DcgmUnit* a10g = s->Find(GpuUuid{"GPU-abc"});
  ASSERT_NE(a10g, nullptr);
  EXPECT_EQ(a10g->driver_version, "550.144.03");
  EXPECT_EQ(a10g->dram_active, 0.000003);
  // GR_ENGINE_ACTIVE, SM_ACTIVE, SM_OCCUPANCY, PIPE_TENSOR_ACTIVE with no labels; the unlabeled
  // FP64/FP32/FP16 pipes and fan speed are fields nobody here uses.
  EXPECT_EQ(s->bad_line_count, 4);
  ASSERT_EQ(s->bad_lines.size(), 4u);
  EXPECT_EQ(s->bad_lines[0], (DcgmBadLine{95, "DCGM_FI_PROF_GR_ENGINE_ACTIVE: no UUID label"}));
  EXPECT_EQ(s->bad_lines[1].line, 98u);
  EXPECT_EQ(s->bad_lines[2].line, 101u);
  EXPECT_EQ(s->bad_lines[3].line, 104u);
  EXPECT_TRUE(s->field_sets.classic);
}

TEST(ParseDcgmExporter, MalformedLinesAreSkippedCountedAndNamed) {
  const std::string text =
      "# HELP DCGM_FI_PROF_SM_ACTIVE ok\n"                             // 1
      "DCGM_FI_PROF_SM_ACTIVE{UUID=\"GPU-a\",gpu=\"0\"} 0.5\n"         // 2 good
      "DCGM_FI_PROF_SM_OCCUPANCY{UUID=\"GPU-a\"} NaN\n"                // 3
      "DCGM_FI_PROF_DRAM_ACTIVE{gpu=\"0\"} 0.2\n"                      // 4 no UUID
      "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{UUID=\"GPU-a\"} -0.1\n"         // 5
      "DCGM_FI_DEV_FB_USED{UUID=\"GPU-a\"} 9223372036854775794\n"      // 6 INT64 blank
      "DCGM_FI_DEV_POWER_USAGE{UUID=\"GPU-a\"} 140737488355328\n"      // 7 FP64 blank
      "DCGM_FI_PROF_GR_ENGINE_ACTIVE{UUID=\"GPU-a\"} 1.7\n"            // 8 ratio > 1
      "DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-a\"} 130\n"                     // 9 percent > 100
      "DCGM_FI_PROF_SM_ACTIVE{UUID=\"GPU-a\",gpu=\"0\"} 0.75\n"        // 10 duplicate
      "DCGM_FI_PROF_SM_ACTIVE{UUID=\"GPU-a\",pod=\"p2\"} 0.5\n"        // 11 same value: ok
      "DCGM_FI_PROF_DRAM_ACTIVE{UUID=\"GPU-a\",GPU_I_ID=\"x\"} 0.1\n"  // 12
      "DCGM_FI_PROF_DRAM_ACTIVE{UUID=\"GPU-a\" 0.1\n"                  // 13 syntax
      "this is { not prometheus\n"                                     // 14 syntax
      "DCGM_FI_PROF_SM_OCCUPANCY{UUID=\"GPU-a\"} +Inf\n"               // 15
      "DCGM_FI_DEV_POWER_USAGE{UUID=\"GPU-a\"} 250000\n"               // 16 implausible
      "DCGM_FI_DEV_FB_USED_BYTES{UUID=\"GPU-a\"} 1e300\n"              // 17 huge
      "DCGM_FI_DEV_FAN_SPEED NaN\n"                                    // 18 unused: ignored
      "DCGM_FI_PROF_DRAM_ACTIVE{UUID=\"GPU-a\"} 1.0004\n";             // 19 rounding: 1
  auto s = ParseDcgmExporter(text);
  ASSERT_TRUE(s) << s.error().message;
  ASSERT_EQ(s->units.size(), 1u);
  const DcgmUnit& u = s->units[0];
  EXPECT_EQ(u.sm_active, 0.5);
  EXPECT_FALSE(u.sm_occupancy);
  EXPECT_FALSE(u.tensor_active);
  EXPECT_FALSE(u.fb_used_bytes);
  EXPECT_FALSE(u.power_watts);
  EXPECT_FALSE(u.gr_engine_active);
  EXPECT_FALSE(u.gpu_util);
  EXPECT_EQ(u.dram_active, 1.0);
  std::vector<std::size_t> lines;
  for (const DcgmBadLine& b : s->bad_lines) lines.push_back(b.line);
  EXPECT_EQ(lines, (std::vector<std::size_t>{3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 14, 15, 16, 17}));
  EXPECT_EQ(s->bad_line_count, 14);
  auto reason = [&](std::size_t line) {
    for (const DcgmBadLine& b : s->bad_lines)
      if (b.line == line) return b.reason;
    return std::string();
  };
  EXPECT_EQ(reason(3), "DCGM_FI_PROF_SM_OCCUPANCY: NaN");
  EXPECT_EQ(reason(4), "DCGM_FI_PROF_DRAM_ACTIVE: no UUID label");
  EXPECT_NE(reason(5).find("negative"), std::string::npos);
  EXPECT_NE(reason(6).find("DCGM blank value"), std::string::npos);
  EXPECT_NE(reason(7).find("DCGM blank value"), std::string::npos);
  EXPECT_NE(reason(8).find("above 1"), std::string::npos);
  EXPECT_NE(reason(9).find("above 100"), std::string::npos);
  EXPECT_NE(reason(10).find("duplicate series (first at line 2)"), std::string::npos);
  EXPECT_NE(reason(12).find("GPU_I_ID 'x'"), std::string::npos);
  EXPECT_NE(reason(13).find("expected"), std::string::npos) << reason(13);
  EXPECT_EQ(reason(13).find("line 1"), std::string::npos) << "the body's number, not the parser's";
  EXPECT_NE(reason(15).find("infinite"), std::string::npos);
  EXPECT_NE(reason(16).find("implausible"), std::string::npos);
  EXPECT_NE(reason(17).find("implausible"), std::string::npos);
}

TEST(ParseDcgmExporter, BadLinesKeptAreCappedButAllCounted) {
  std::string text = "DCGM_FI_PROF_SM_ACTIVE{UUID=\"GPU-a\"} 0.5\n";
  for (int i = 0; i < 100; ++i) text += "garbage {\n";
  auto s = ParseDcgmExporter(text);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->bad_line_count, 100);
  EXPECT_EQ(s->bad_lines.size(), kMaxBadLinesKept);
  EXPECT_EQ(s->bad_lines.back().line, kMaxBadLinesKept + 1);
}

TEST(ParseDcgmExporter, TheExactSpellingOfAFieldWins) {
  // A counters file with both FB spellings: bytes are exact, MiB rounded by DCGM.
  auto s = ParseDcgmExporter(
      "DCGM_FI_DEV_FB_USED{UUID=\"GPU-a\"} 2\n"
      "DCGM_FI_DEV_FB_USED_BYTES{UUID=\"GPU-a\"} 2100000\n"
      "DCGM_FI_PROF_SM_UTIL_RATIO{UUID=\"GPU-a\"} 0.5\n"
      "DCGM_FI_PROF_SM_ACTIVE{UUID=\"GPU-a\"} 0.5000001\n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->units[0].fb_used_bytes, 2100000);
  EXPECT_EQ(s->units[0].sm_active, 0.5) << "otherwise the first";
  EXPECT_EQ(s->bad_line_count, 0);
  EXPECT_EQ(s->field_sets, (DcgmFieldSets{.classic = true, .renamed = true}));
}

TEST(ParseDcgmExporter, MigInstancesAreUnitsOfTheirParent) {
  auto s = ParseDcgmExporter(
      "DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"0\",UUID=\"GPU-p\",GPU_I_PROFILE=\"7g.79gb\","
      "GPU_I_ID=\"0\"} 0.5\n"
      "DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"0\",UUID=\"GPU-p\",GPU_I_PROFILE=\"\",GPU_I_ID=\"\"} "
      "0.25\n");
  ASSERT_TRUE(s);
  ASSERT_EQ(s->units.size(), 2u);
  EXPECT_EQ(s->Find(GpuUuid{"GPU-p"}, 0)->gr_engine_active, 0.5) << "GPU instance 0 exists (7g)";
  EXPECT_EQ(s->Find(GpuUuid{"GPU-p"})->gr_engine_active, 0.25) << "empty GPU_I_ID: the GPU";
}

TEST(ParseDcgmExporter, NoUnitAtAllFailsTheScrape) {
  for (const char* body :
       {"", "\n\n", "<html><body>502 Bad Gateway</body></html>\n",
        "# HELP node_load1 1m load average.\nnode_load1 0.5\n", "DCGM_FI_PROF_SM_ACTIVE 0\n"}) {
    auto s = ParseDcgmExporter(body);
    ASSERT_FALSE(s) << body;
    EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(s.error().message.find("no dcgm-exporter series"), std::string::npos);
  }
  auto html = ParseDcgmExporter("<html>\n");
  EXPECT_NE(html.error().message.find("line 1:"), std::string::npos) << html.error().message;
}

TEST(ParseDcgmExporter, CarriageReturnsAndBlanksAreTolerated) {
  auto s = ParseDcgmExporter("  DCGM_FI_PROF_SM_ACTIVE{UUID=\"GPU-a\"} 0.5 \r\n\r\n");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->units[0].sm_active, 0.5);
  EXPECT_EQ(s->bad_line_count, 0);
}

// Never crashes, never fails on a body with a unit left in it: random byte flips, cuts and
// splices of a real body (fixed seed: deterministic).
TEST(ParseDcgmExporter, MutatedBodiesNeverCrash) {
  const std::string base = Fixture("classic.prom");
  std::mt19937 rng(20260501);
  for (int round = 0; round < 2000; ++round) {
    std::string text = base;
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const std::size_t at = rng() % text.size();
      switch (rng() % 4) {
        case 0:
          text[at] = static_cast<char>(rng() % 256);
          break;
        case 1:
          text.erase(at, rng() % 64);
          break;
        case 2:
          text.insert(at, base.substr(rng() % base.size(), rng() % 80));
          break;
        case 3:
          text.insert(at, 1, "{}\",= \n"[rng() % 8]);
          break;
      }
    }
    auto s = ParseDcgmExporter(text);
    if (s) {
      EXPECT_FALSE(s->units.empty());
      EXPECT_LE(s->bad_lines.size(), kMaxBadLinesKept);
      for (const DcgmUnit& u : s->units)
        for (const std::optional<double>& f : {u.sm_active, u.sm_occupancy, u.tensor_active,
                                               u.dram_active, u.gr_engine_active, u.gpu_util})
          if (f) {
            EXPECT_TRUE(*f >= 0 && *f <= 1) << *f;
          }
    }
  }
}

}  // namespace
}  // namespace gpuledger::sources::dcgm
