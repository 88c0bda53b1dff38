#include "ingest/ingestor.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "prometheus/exposition_writer.h"
#include "io/file_util.h"
#include "prometheus/gzip.h"

namespace gpuledger::ingest {
namespace {

namespace fs = std::filesystem;

constexpr Micros kH0 = 1'800'000'000LL * kMicrosPerSecond;
constexpr Micros kS = kMicrosPerSecond;

struct TempDir {
  TempDir() {
    path = fs::temp_directory_path() /
           fmt::format("gpuledger-ingest-{}-{}", ::getpid(), counter++);
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path path;
  static inline int counter = 0;
};

// A fake agent: one time-sliced GPU, two pods, counters advanced by hand.
struct FakeAgent {
  double metered = 0, busy = 0, a_alloc = 0, b_alloc = 0, a_compute = 0;
  void Advance(double dt) {
    metered += dt;
    busy += dt / 2;
    a_alloc += dt / 2;
    b_alloc += dt / 4;
    a_compute += dt / 2;
  }
  std::string Render() const {
    prometheus::ExpositionWriter w;
    w.Family("gpuledger_device_info", "i", prometheus::MetricType::kGauge);
    w.Sample("gpuledger_device_info",
             {{"gpu_uuid", "GPU-1"}, {"gpu_model", "A100-80GB"}, {"node", "n1"},
              {"parent_uuid", ""}, {"mig_profile", ""}, {"sharing_mode", "time-slicing"}},
             1);
    auto dev = [&](const char* name, double v) {
      w.Family(name, "h", prometheus::MetricType::kCounter);
      w.Sample(name, {{"gpu_uuid", "GPU-1"}}, v);
    };
    dev("gpuledger_device_metered_seconds_total", metered);
    dev("gpuledger_device_busy_seconds_total", busy);
    dev("gpuledger_device_idle_seconds_total", metered - busy);
    dev("gpuledger_device_unattributed_seconds_total", 0);
    w.Family("gpuledger_container_allocated_gpu_seconds_total", "h", prometheus::MetricType::kCounter);
    w.Sample("gpuledger_container_allocated_gpu_seconds_total",
             {{"namespace", "ml"}, {"pod", "a"}, {"pod_uid", "ua"}, {"container", "c"}, {"gpu_uuid", "GPU-1"}},
             a_alloc);
    w.Sample("gpuledger_container_allocated_gpu_seconds_total",
             {{"namespace", "ml"}, {"pod", "b"}, {"pod_uid", "ub"}, {"container", "c"}, {"gpu_uuid", "GPU-1"}},
             b_alloc);
    w.Family("gpuledger_container_compute_gpu_seconds_total", "h", prometheus::MetricType::kCounter);
    w.Sample("gpuledger_container_compute_gpu_seconds_total",
             {{"namespace", "ml"}, {"pod", "a"}, {"pod_uid", "ua"}, {"container", "c"}, {"gpu_uuid", "GPU-1"}},
             a_compute);
    return w.Take();
  }
};

std::unique_ptr<store::LedgerStore> Open(const fs::path& p) {
  auto s = store::OpenSqliteLedger(p.string());
  EXPECT_TRUE(s.ok()) << s.error().message;
  return std::move(*s);
}

std::function<cost::NodeFacts(const std::string&)> Facts() {
  return [](const std::string& node) {
    return cost::NodeFacts{node, {}, "", "on-demand"};
  };
}

// Totals of what the store holds: allocated per pod and the per-row conservation.
struct Totals {
  std::map<std::string, GpuMicros> allocated;
  GpuMicros metered = 0;
  Nanos price = 0;
  int rows = 0;
};
Totals Read(store::LedgerStore& s) {
  Totals t;
  auto devices = s.ReadDeviceHours({});
  auto usage = s.ReadUsage({});
  EXPECT_TRUE(devices.ok() && usage.ok());
  for (const DeviceHour& d : *devices) {
    t.metered += d.metered_us;
    t.price += d.price_nanos;
    ++t.rows;
    GpuMicros sum = d.unallocated_us;
    for (const UsageRow& u : *usage)
      if (u.hour_us == d.hour_us && u.gpu == d.gpu) sum += u.allocated_us;
    EXPECT_EQ(sum, d.metered_us) << "hour " << d.hour_us;
  }
  for (const UsageRow& u : *usage) t.allocated[u.consumer.ref.pod] += u.allocated_us;
  return t;
}

TEST(ScrapeLoop, ScrapesPricesWritesAndSurvivesARestart) {
  TempDir dir;
  const fs::path db = dir.path / "ledger.db";
  const cost::Catalog catalog = cost::DefaultCatalog();
  FakeAgent agent;
  Micros now = kH0 + 3000 * kS;
  bool broken = false, down = false;
  Fetcher fetch = [&](const std::string& target) -> Result<std::string> {
    if (target != "n1:9400") return Unavailable("scrape " + target + ": connection refused");
    if (down) return Unavailable("scrape n1:9400: connection refused");
    std::string text = agent.Render();
    if (broken) text += "gpuledger_device_metered_seconds_total{gpu_uuid=\"GPU-1\" 5\n";
    return text;
  };
  std::ostringstream log;
  auto run = [&](int rounds, store::LedgerStore& store) {
    Ingestor ingestor(store, catalog, "c1", nullptr, Facts());
    EXPECT_TRUE(ingestor.Start().ok());
    ScrapeLoop loop(ingestor, {{"n1:9400", "n2:9400"}, 15 * kS, {}}, fetch, [&] { return now; }, log);
    for (int i = 0; i < rounds; ++i) {
      loop.RunRound();
      agent.Advance(15);
      now += 15 * kS;
    }
    return loop.RenderMetrics();
  };
  {
    auto store = Open(db);
    std::string metrics = run(100, *store);  // 25 min: across an hour boundary
    EXPECT_NE(metrics.find("gpuledger_server_scrape_errors_total{target=\"n2:9400\"} 100"), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("gpuledger_server_scrape_up{target=\"n1:9400\"} 1"), std::string::npos);
    // Logged once per state change, not once per round.
    EXPECT_EQ(log.str().find("n2:9400: connection refused"), log.str().rfind("n2:9400: connection refused"));
    // A malformed exposition fails that scrape, keeps the state and is counted.
    broken = true;
    metrics = run(2, *store);
    broken = false;
    EXPECT_NE(metrics.find("gpuledger_server_scrape_errors_total{target=\"n1:9400\"} 2"), std::string::npos) << metrics;
    EXPECT_NE(log.str().find("scrape n1:9400: line 23: expected ',' or '}'"), std::string::npos) << log.str();
  }
  // A restarted server (a new Ingestor over the same file) resumes from the saved state; an
  // outage of the agent meanwhile is unmetered time, and nothing is counted twice.
  down = true;
  { auto store = Open(db); run(4, *store); }
  down = false;
  auto store = Open(db);
  run(50, *store);
  Totals t = Read(*store);
  // The agent's counters moved 15 s per round between the first and the last good scrape.
  const GpuMicros expected = (100 + 2 + 4 + 50 - 1) * 15 * kS;
  EXPECT_EQ(t.metered, expected);
  EXPECT_EQ(t.allocated["a"], expected / 2);
  EXPECT_EQ(t.allocated["b"], expected / 4);
  EXPECT_EQ(t.rows, 2);  // two hours, one GPU
  EXPECT_GT(t.price, 0);  // priced from the built-in catalog
}

TEST(ReplayFiles, ReplaysSnapshotsInTimeOrder) {
  TempDir dir;
  const fs::path snaps = dir.path / "snaps";
  fs::create_directories(snaps);
  FakeAgent agent;
  for (int i = 0; i <= 240; ++i) {  // 1 h at 15 s, from :30 to :30 of the next hour
    const std::int64_t ms = (kH0 + 1800 * kS + i * 15 * kS) / 1000;
    const std::string text = agent.Render();
    if (i % 2 == 0)
      ASSERT_TRUE(WriteFile((snaps / fmt::format("n1:9400@{}.prom", ms)).string(), text).ok());
    else
      ASSERT_TRUE(WriteFile((snaps / fmt::format("n1:9400@{}.prom.gz", ms)).string(), prometheus::Gzip(text)).ok());
    agent.Advance(15);
  }
  ASSERT_TRUE(WriteFile((snaps / "README").string(), "not a snapshot").ok());
  auto store = Open(dir.path / "l.db");
  const cost::Catalog catalog = cost::DefaultCatalog();
  Ingestor ingestor(*store, catalog, "c1", nullptr, Facts());
  ASSERT_TRUE(ingestor.Start().ok());
  std::ostringstream progress;
  auto stats = ReplayFiles(snaps.string(), ingestor, &progress, 50);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_EQ(stats->files, 241);
  EXPECT_NE(progress.str().find("replayed 241/241 files"), std::string::npos) << progress.str();
  EXPECT_NE(progress.str().find("1 other files ignored"), std::string::npos);
  Totals t = Read(*store);
  EXPECT_EQ(t.rows, 2);
  EXPECT_EQ(t.metered, 3600 * kS);
  EXPECT_EQ(t.allocated["a"], 1800 * kS);
  auto hours = store->ReadDeviceHours({});
  ASSERT_TRUE(hours.ok());
  EXPECT_EQ((*hours)[0].metered_us, 1800 * kS);
  EXPECT_EQ((*hours)[0].unmetered_us, 1800 * kS);
  EXPECT_EQ((*hours)[0].node, "n1");

  // A malformed snapshot fails the replay naming the file and the line.
  ASSERT_TRUE(WriteFile((snaps / "n1:9400@9999999999999.prom").string(), "ok 1\nbad{\n").ok());
  Ingestor second(*store, catalog, "c1", nullptr, Facts());
  ASSERT_TRUE(second.Start().ok());
  auto bad = ReplayFiles(snaps.string(), second);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("n1:9400@9999999999999.prom: line 2:"), std::string::npos)
      << bad.error().message;
  EXPECT_FALSE(ReplayFiles((dir.path / "none").string(), second).ok());
}

TEST(Ingestor, RefusesAStateItCannotRead) {
  TempDir dir;
  auto store = Open(dir.path / "l.db");
  ASSERT_TRUE(store->PutMeta("ingest_state", "{not json").ok());
  const cost::Catalog catalog = cost::DefaultCatalog();
  Ingestor ingestor(*store, catalog, "c1", nullptr, Facts());
  Status s = ingestor.Start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("ledger meta 'ingest_state'"), std::string::npos);
}

}  // namespace
}  // namespace gpuledger::ingest
