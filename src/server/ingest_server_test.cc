#include "server/ingest_server.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "common/counter_units.h"
#include "io/file_util.h"
#include "prometheus/exposition_parser.h"
#include "prometheus/exposition_writer.h"
#include "temp_dir.h"

namespace gpuledger::server {
namespace {

namespace fs = std::filesystem;

constexpr Micros kH0 = 1'800'000'000LL * kMicrosPerSecond;
constexpr Micros kS = kMicrosPerSecond;

using gpuledger::testing::TempDir;

// Runs the server's steps over `source` with a serve step that returns at once.
Result<int> RunWithoutServing(const IngestServerConfig& config, IngestSource& source,
                              std::ostream& out) {
  std::atomic<bool> stop{false};
  return RunIngestServer(
      config, source, stop, [](auto) { return 0; }, out);
}

// One GPU's exposition with `metered_us` on its metered counter.
std::string Exposition(GpuMicros metered_us) {
  prometheus::ExpositionWriter w;
  w.Family("gpuledger_device_info", "i", prometheus::MetricType::kGauge);
  w.Sample("gpuledger_device_info",
           {{"gpu_uuid", "GPU-1"},
            {"gpu_model", "A100-80GB"},
            {"node", "n1"},
            {"parent_uuid", ""},
            {"mig_profile", ""},
            {"sharing_mode", "exclusive"}},
           1);
  w.Family("gpuledger_device_metered_seconds_total", "h", prometheus::MetricType::kCounter);
  w.Sample("gpuledger_device_metered_seconds_total", {{"gpu_uuid", "GPU-1"}},
           ToBaseUnit(metered_us, CounterScale::kMicrosPerSecond));
  return w.Take();
}

ingest::TargetScrape Scrape(Micros at, GpuMicros metered_us) {
  auto parsed = prometheus::ParseExposition(Exposition(metered_us));
  EXPECT_TRUE(parsed.ok());
  return {"n1:9400", at, std::move(parsed->samples)};
}

// A source that records the order of the calls made to it. It feeds its scrapes when it is
// stopped and leaves the commit to the server: what reaches the ledger proves that the server
// commits after the source stopped and before the store closed.
class RecordingSource : public IngestSource {
 public:
  explicit RecordingSource(std::vector<std::string>& calls) : calls_(calls) {}
  Result<Micros> ObservingSince(store::LedgerStore&, const std::string&) override {
    calls_.push_back("since");
    return kH0;
  }
  Result<std::string> CatchUp(ingest::Ingestor& ingestor, store::LedgerStore&,
                              const std::atomic<bool>&) override {
    calls_.push_back("catch-up");
    ingestor.Feed(Scrape(kH0 + 60 * kS, 60 * kS));
    if (Status s = ingestor.Commit(); !s.ok()) return s.error();
    return std::string("caught up");
  }
  bool follows() const override { return follows_; }
  void Start(ingest::Ingestor& ingestor, store::LedgerStore&) override {
    calls_.push_back("start");
    ingestor_ = &ingestor;
  }
  void Stop() override {
    if (ingestor_ == nullptr) return;
    calls_.push_back("stop");
    ingestor_->Feed(Scrape(kH0 + 60 * kS, 60 * kS));
    ingestor_->Feed(Scrape(kH0 + 120 * kS, 120 * kS));
    ingestor_ = nullptr;
  }
  std::string RenderMetrics() const override { return "recording_metric 1\n"; }

  bool follows_ = true;

 private:
  std::vector<std::string>& calls_;
  ingest::Ingestor* ingestor_ = nullptr;
};

IngestServerConfig Config(const fs::path& db, const cost::Catalog& catalog) {
  IngestServerConfig c;
  c.ledger = "sqlite:" + db.string();
  c.catalog = &catalog;
  c.node_facts = [](const std::string& node) { return cost::NodeFacts{node, {}, "", "on-demand"}; };
  return c;
}

GpuMicros Metered(const fs::path& db) {
  auto store = store::OpenLedger("sqlite:" + db.string());
  EXPECT_TRUE(store.ok());
  auto hours = (*store)->ReadDeviceHours({});
  EXPECT_TRUE(hours.ok());
  GpuMicros total = 0;
  for (const DeviceHour& d : *hours) total += d.metered_us;
  return total;
}

TEST(IngestServer, StartsInOrderServesAndStopsTheSourceBeforeTheStoreCloses) {
  TempDir dir("gpuledger-ingest-server");
  const cost::Catalog catalog = cost::DefaultCatalog();
  std::vector<std::string> calls;
  RecordingSource source(calls);
  std::atomic<bool> stop{false};
  std::ostringstream out;
  std::string metrics;
  auto rc = RunIngestServer(
      Config(dir.path() / "l.db", catalog), source, stop,
      [&](const IngestSource* following) {
        calls.push_back("serve");
        metrics = following != nullptr ? following->RenderMetrics() : "";
        return 7;
      },
      out);
  ASSERT_TRUE(rc.ok()) << rc.error().message;
  EXPECT_EQ(*rc, 7);  // serve's exit code
  EXPECT_EQ(calls, (std::vector<std::string>{"since", "start", "serve", "stop"}));
  EXPECT_EQ(metrics, "recording_metric 1\n");
  // Fed by Stop, committed by the server: in the ledger, and the state with it.
  EXPECT_EQ(Metered(dir.path() / "l.db"), 60 * kS);
  auto store = store::OpenLedger("sqlite:" + (dir.path() / "l.db").string());
  auto meta = (*store)->ReadMeta();
  EXPECT_TRUE(meta->contains("cluster/default/ingest_state/engine"));
  EXPECT_FALSE(meta->contains("cluster"));  // "default" is not recorded: a later --cluster may be
}

TEST(IngestServer, BackfillOnlyCatchesUpAndServesNothing) {
  TempDir dir("gpuledger-ingest-server");
  const cost::Catalog catalog = cost::DefaultCatalog();
  std::vector<std::string> calls;
  RecordingSource source(calls);
  IngestServerConfig config = Config(dir.path() / "l.db", catalog);
  config.backfill_only = true;
  config.cluster = "prod";
  std::atomic<bool> stop{false};
  std::ostringstream out;
  auto rc = RunIngestServer(
      config, source, stop,
      [&](auto) {
        calls.push_back("serve");
        return 0;
      },
      out);
  ASSERT_TRUE(rc.ok()) << rc.error().message;
  EXPECT_EQ(calls, (std::vector<std::string>{"since", "catch-up"}));
  EXPECT_EQ(out.str(), "caught up\n");
  // A source that does not follow catches up, then serves (unless told not to).
  calls.clear();
  source.follows_ = false;
  config.backfill_only = false;
  rc = RunIngestServer(
      config, source, stop,
      [&](auto extra) {
        calls.push_back(extra ? "serve+metrics" : "serve");
        return 0;
      },
      out);
  ASSERT_TRUE(rc.ok());
  EXPECT_EQ(calls, (std::vector<std::string>{"since", "catch-up", "serve"}));
  auto store = store::OpenLedger(config.ledger);
  EXPECT_EQ((*store)->ReadMeta()->at("cluster"), "prod");
}

// Issue 64: the clusters that write one ledger price in one currency. A server whose catalog
// prices in another stops before its source starts, saying both; the first writer records its.
TEST(IngestServer, ACatalogInAnotherCurrencyThanTheLedgersStopsBeforeTheSourceStarts) {
  TempDir dir("gpuledger-ingest-server");
  const cost::Catalog catalog = cost::DefaultCatalog();  // USD
  {
    auto store = store::OpenLedger("sqlite:" + (dir.path() / "l.db").string());
    ASSERT_TRUE((*store)->PutMeta("currency", "EUR").ok());
  }
  std::vector<std::string> calls;
  RecordingSource source(calls);
  std::atomic<bool> stop{false};
  std::ostringstream out;
  IngestServerConfig config = Config(dir.path() / "l.db", catalog);
  config.cluster = "us-infer";
  auto rc = RunIngestServer(
      config, source, stop, [&](auto) { return 0; }, out);
  ASSERT_FALSE(rc.ok());
  EXPECT_EQ(rc.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(rc.error().message.find("the ledger prices in EUR, and this server's catalog "
                                    "(cluster us-infer) in USD"),
            std::string::npos)
      << rc.error().message;
  EXPECT_TRUE(calls.empty());
  TempDir fresh("gpuledger-ingest-server");
  auto ok = RunIngestServer(
      Config(fresh.path() / "l.db", catalog), source, stop, [&](auto) { return 0; }, out);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  auto store = store::OpenLedger("sqlite:" + (fresh.path() / "l.db").string());
  EXPECT_EQ((*store)->ReadMeta()->at("currency"), "USD");
}

TEST(IngestServer, AStateItCannotReadStopsBeforeTheSourceStarts) {
  TempDir dir("gpuledger-ingest-server");
  const cost::Catalog catalog = cost::DefaultCatalog();
  {
    auto store = store::OpenLedger("sqlite:" + (dir.path() / "l.db").string());
    ASSERT_TRUE((*store)->PutMeta("cluster/default/ingest_state/instance/n1:9400", "{}").ok());
    ASSERT_TRUE((*store)->PutMeta("cluster/default/ingest_state/engine", "[1]").ok());
  }
  std::vector<std::string> calls;
  RecordingSource source(calls);
  std::atomic<bool> stop{false};
  std::ostringstream out;
  auto rc = RunIngestServer(
      Config(dir.path() / "l.db", catalog), source, stop,
      [&](auto) {
        calls.push_back("serve");
        return 0;
      },
      out);
  ASSERT_FALSE(rc.ok());
  EXPECT_EQ(rc.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(rc.error().message.find("ledger meta 'cluster/default/ingest_state/engine': "),
            std::string::npos)
      << rc.error().message;
  EXPECT_EQ(calls, (std::vector<std::string>{"since"}));
}

TEST(FilesSource, ReplaysThroughTheServer) {
  TempDir dir("gpuledger-ingest-server");
  const fs::path snaps = dir.path() / "snaps";
  fs::create_directories(snaps);
  for (int i = 0; i <= 4; ++i)
    ASSERT_TRUE(
        WriteFile((snaps / fmt::format("n1:9400@{}.prom", (kH0 + i * 15 * kS) / 1000)).string(),
                  Exposition(i * 15 * kS))
            .ok());
  const cost::Catalog catalog = cost::DefaultCatalog();
  IngestServerConfig config = Config(dir.path() / "l.db", catalog);
  config.serve = false;
  auto source = MakeFilesSource(snaps.string(), "L", nullptr);
  std::atomic<bool> stop{false};
  std::ostringstream out;
  auto rc = RunIngestServer(
      config, *source, stop, [](auto) { return 1; }, out);
  ASSERT_TRUE(rc.ok()) << rc.error().message;
  EXPECT_EQ(*rc, 0);
  EXPECT_EQ(out.str(), "replayed 5 snapshot files (10 samples) into L: 1 device-hours written\n");
  EXPECT_EQ(Metered(dir.path() / "l.db"), 60 * kS);  // the first snapshot is the baseline
}

// A Prometheus client that must not be asked: the cursor check comes first.
class NoClient : public ingest::PrometheusClient {
 public:
  Result<std::vector<ingest::TargetScrape>> Fetch(Micros, Micros) override {
    ADD_FAILURE() << "fetched despite a corrupt cursor";
    return std::vector<ingest::TargetScrape>{};
  }
};

TEST(PrometheusSource, ACorruptCursorIsAnErrorNamingTheKey) {
  TempDir dir("gpuledger-ingest-server");
  const cost::Catalog catalog = cost::DefaultCatalog();
  IngestServerConfig config = Config(dir.path() / "l.db", catalog);
  config.backfill_only = true;
  {
    auto store = store::OpenLedger(config.ledger);
    ASSERT_TRUE(
        (*store)->PutMeta(ingest::ClusterMetaKey("default", kPrometheusCursorKey), "17x").ok());
  }
  PrometheusSourceConfig pc;
  pc.url = "http://tsdb:9090";
  pc.client = std::make_unique<NoClient>();
  pc.now = [] { return kH0; };
  std::ostringstream log;
  pc.log = &log;
  auto source = MakePrometheusSource(std::move(pc));
  std::ostringstream out;
  auto rc = RunWithoutServing(config, *source, out);
  ASSERT_FALSE(rc.ok());
  EXPECT_EQ(rc.error().code, ErrorCode::kInternal);  // exit 1: the ledger, not the flags
  EXPECT_NE(rc.error().message.find(
                "meta 'cluster/default/prometheus_cursor' is '17x': expected µs since the epoch"),
            std::string::npos)
      << rc.error().message;
}

// A TSDB holding three scrapes an hour apart, the middle one's counter NaN, and two dcgm-exporter
// averages that were not finite.
class NanClient : public ingest::PrometheusClient {
 public:
  Result<std::vector<ingest::TargetScrape>> Fetch(Micros from_us, Micros to_us) override {
    std::vector<ingest::TargetScrape> out;
    for (int i = 0; i < 3; ++i) {
      ingest::TargetScrape s = Scrape(kH0 + (i * 30 + 1) * 60 * kS, (i * 30 + 1) * 60 * kS);
      if (i == 1)
        for (auto& sample : s.samples)
          if (sample.name == "gpuledger_device_metered_seconds_total") sample.value = std::nan("");
      if (s.at_us > from_us && s.at_us <= to_us) out.push_back(std::move(s));
    }
    return out;
  }
  std::int64_t skipped_not_finite() const override { return 2; }
};

// Issue 29: samples skipped as NaN were counted for scraped agents only; read from a TSDB they
// were dropped without a word.
TEST(PrometheusSource, SamplesSkippedAsNotFiniteAreCountedAndSaid) {
  TempDir dir("gpuledger-ingest-server");
  const cost::Catalog catalog = cost::DefaultCatalog();
  IngestServerConfig config = Config(dir.path() / "l.db", catalog);
  config.backfill_only = true;
  PrometheusSourceConfig pc;
  pc.url = "http://tsdb:9090";
  pc.client = std::make_unique<NanClient>();
  pc.since_us = 2 * kMicrosPerHour;
  pc.now = [] { return kH0 + 2 * kMicrosPerHour; };
  std::ostringstream log;
  pc.log = &log;
  auto source = MakePrometheusSource(std::move(pc));
  std::ostringstream out;
  auto rc = RunWithoutServing(config, *source, out);
  ASSERT_TRUE(rc.ok()) << rc.error().message;
  EXPECT_NE(out.str().find("(3 samples skipped as NaN, infinite or negative"), std::string::npos)
      << out.str();
  EXPECT_NE(source->RenderMetrics().find("gpuledger_server_ingest_skipped_samples_total 3"),
            std::string::npos)
      << source->RenderMetrics();
  EXPECT_EQ(Metered(dir.path() / "l.db"), 60 * 60 * kS);  // 1 min to 61 min, NaN skipped
}

}  // namespace
}  // namespace gpuledger::server
