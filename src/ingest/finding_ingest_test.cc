// The findings' history from agent expositions: written by hand as an agent renders them,
// parsed by the server's parser, fed through FindingIngest into SQLite and read back.
#include "ingest/finding_ingest.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "prometheus/exposition_parser.h"
#include "temp_dir.h"

namespace gpuledger::ingest {
namespace {

using gpuledger::testing::TempDir;

constexpr Micros kT0 = 1'764'000'000 * kMicrosPerSecond;  // a whole second, late 2025

struct Seen {
  std::string kind = "unallocated-access";
  std::string pod = "debug";
  Micros first_us = kT0;
  Micros last_us = kT0;
  std::optional<Micros> resolved_us;
  std::string evidence = "pids=42 granted=none";
};

// An agent's exposition with the given findings (agent/collector.cc's families).
std::string Exposition(const std::vector<Seen>& findings) {
  std::string text =
      "gpuledger_device_info{gpu_uuid=\"GPU-1\",gpu_model=\"A100-80GB\",node=\"n1\","
      "parent_uuid=\"\",mig_profile=\"\",sharing_mode=\"exclusive\"} 1\n"
      "gpuledger_findings_total{kind=\"unallocated-access\"} 1\n";
  for (const Seen& f : findings) {
    const std::string key =
        fmt::format("kind=\"{}\",namespace=\"ml\",pod=\"{}\",container=\"main\",gpu_uuid=\"GPU-1\"",
                    f.kind, f.pod);
    if (!f.resolved_us)
      text += fmt::format("gpuledger_finding{{{},severity=\"critical\"}} 1\n", key);
    text += fmt::format(
        "gpuledger_finding_evidence_info{{{},severity=\"critical\",pod_uid=\"u-{}\",evidence=\"{}"
        "\"}} 1\n",
        key, f.pod, f.evidence);
    text += fmt::format("gpuledger_finding_first_seen_timestamp_seconds{{{}}} {}\n", key,
                        f.first_us / 1e6);
    text += fmt::format("gpuledger_finding_last_seen_timestamp_seconds{{{}}} {}\n", key,
                        f.last_us / 1e6);
    if (f.resolved_us)
      text += fmt::format("gpuledger_finding_resolved_timestamp_seconds{{{}}} {}\n", key,
                          *f.resolved_us / 1e6);
  }
  return text;
}

TargetScrape Scrape(const std::vector<Seen>& findings, Micros at_us) {
  auto samples = prometheus::ParseExposition(Exposition(findings));
  EXPECT_TRUE(samples.ok()) << samples.error().message;
  return TargetScrape{"10.0.0.7:9400", at_us, samples->samples};
}

class FindingIngestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::OpenSqliteLedger((dir_.path() / "ledger.db").string());
    ASSERT_TRUE(s.ok()) << s.error().message;
    store_ = std::move(*s);
  }
  std::vector<Finding> All() {
    auto all = store_->ReadFindings({});
    EXPECT_TRUE(all.ok());
    return all.ok() ? *all : std::vector<Finding>{};
  }
  TempDir dir_{"gpuledger-findings"};
  std::unique_ptr<store::LedgerStore> store_;
};

TEST_F(FindingIngestTest, AFindingIsRecordedUpdatedAndResolvedWhenItIsGone) {
  FindingIngest in("prod");
  in.Feed(Scrape({{.last_us = kT0 + 15 * kMicrosPerSecond}}, kT0 + 15 * kMicrosPerSecond));
  ASSERT_TRUE(in.Commit(*store_).ok());
  auto rows = All();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].cluster, "prod");
  EXPECT_EQ(rows[0].node, "n1") << "the node the agent names, not its address";
  EXPECT_EQ(rows[0].kind, FindingKind::kUnallocatedAccess);
  EXPECT_EQ(rows[0].severity, Severity::kCritical);
  EXPECT_EQ(rows[0].subject, (ConsumerRef{"ml", "debug", PodUid{"u-debug"}, "main"}));
  EXPECT_EQ(rows[0].evidence, "pids=42 granted=none");
  EXPECT_EQ(rows[0].first_seen_us, kT0);
  EXPECT_EQ(rows[0].last_seen_us, kT0 + 15 * kMicrosPerSecond);
  EXPECT_FALSE(rows[0].resolved_us);
  EXPECT_EQ(in.open_findings(), 1u);

  // Seen again later: the same row, a later last sight.
  in.Feed(Scrape({{.last_us = kT0 + 30 * kMicrosPerSecond}}, kT0 + 30 * kMicrosPerSecond));
  ASSERT_TRUE(in.Commit(*store_).ok());
  rows = All();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].last_seen_us, kT0 + 30 * kMicrosPerSecond);

  // No longer listed (an agent restart lost it): resolved at its last sight.
  in.Feed(Scrape({}, kT0 + 45 * kMicrosPerSecond));
  ASSERT_TRUE(in.Commit(*store_).ok());
  rows = All();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].resolved_us, kT0 + 30 * kMicrosPerSecond);
  EXPECT_EQ(in.open_findings(), 0u);
}

TEST_F(FindingIngestTest, TheAgentsResolutionIsKeptAndARecurrenceIsANewFinding) {
  FindingIngest in("prod");
  in.Feed(Scrape({{.last_us = kT0 + 10 * kMicrosPerSecond}}, kT0 + 15 * kMicrosPerSecond));
  in.Feed(
      Scrape({{.last_us = kT0 + 20 * kMicrosPerSecond, .resolved_us = kT0 + 20 * kMicrosPerSecond}},
             kT0 + 90 * kMicrosPerSecond));
  const Micros again = kT0 + 600 * kMicrosPerSecond;
  in.Feed(Scrape({{.first_us = again, .last_us = again}}, again));
  ASSERT_TRUE(in.Commit(*store_).ok());
  auto rows = All();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].first_seen_us, kT0);
  EXPECT_EQ(rows[0].resolved_us, kT0 + 20 * kMicrosPerSecond);
  EXPECT_EQ(rows[1].first_seen_us, again);
  EXPECT_FALSE(rows[1].resolved_us);
}

TEST_F(FindingIngestTest, ARestartedServerResolvesWhatItsAgentsNoLongerShow) {
  {
    FindingIngest in("prod");
    in.Feed(Scrape({{}, {.pod = "other"}}, kT0));
    ASSERT_TRUE(in.Commit(*store_).ok());
  }
  FindingIngest restarted("prod");
  ASSERT_TRUE(restarted.Restore(*store_).ok());
  EXPECT_EQ(restarted.open_findings(), 2u);
  restarted.Feed(Scrape({{.last_us = kT0 + kMicrosPerSecond}}, kT0 + kMicrosPerSecond));
  ASSERT_TRUE(restarted.Commit(*store_).ok());
  auto rows = All();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_FALSE(rows[0].resolved_us);  // "debug" (ConsumerRef order) still listed
  EXPECT_EQ(rows[1].subject.pod, "other");
  EXPECT_EQ(rows[1].resolved_us, kT0);
}

TEST_F(FindingIngestTest, AnAgentGoneForTheRetentionHasItsFindingsResolved) {
  FindingIngest in("prod");
  in.Feed(Scrape({{}}, kT0));
  in.Prune(kT0 + kMicrosPerSecond);
  ASSERT_TRUE(in.Commit(*store_).ok());
  auto rows = All();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].resolved_us, kT0);
  EXPECT_EQ(in.open_findings(), 0u);
}

TEST_F(FindingIngestTest, AnAgentWithoutGuardrailsChangesNothing) {
  FindingIngest in("prod");
  in.Feed(Scrape({{}}, kT0));
  TargetScrape old{"10.0.0.7:9400", kT0 + kMicrosPerSecond, {}};
  in.Feed(old);  // no finding families at all: an older agent, or a failed render
  ASSERT_TRUE(in.Commit(*store_).ok());
  auto rows = All();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_FALSE(rows[0].resolved_us);
}

}  // namespace
}  // namespace gpuledger::ingest
