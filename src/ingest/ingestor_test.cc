#include "ingest/ingestor.h"
#include "ingest/replay_files.h"
#include "ingest/scrape_loop.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "http/gzip.h"
#include "io/file_util.h"
#include "prometheus/exposition_writer.h"
#include "temp_dir.h"

namespace gpuledger::ingest {
namespace {

namespace fs = std::filesystem;

constexpr Micros kH0 = 1'800'000'000LL * kMicrosPerSecond;
constexpr Micros kS = kMicrosPerSecond;

using gpuledger::testing::TempDir;

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
             {{"gpu_uuid", "GPU-1"},
              {"gpu_model", "A100-80GB"},
              {"node", "n1"},
              {"parent_uuid", ""},
              {"mig_profile", ""},
              {"sharing_mode", "time-slicing"}},
             1);
    auto dev = [&](const char* name, double v) {
      w.Family(name, "h", prometheus::MetricType::kCounter);
      w.Sample(name, {{"gpu_uuid", "GPU-1"}}, v);
    };
    dev("gpuledger_device_metered_seconds_total", metered);
    dev("gpuledger_device_busy_seconds_total", busy);
    dev("gpuledger_device_idle_seconds_total", metered - busy);
    dev("gpuledger_device_unattributed_seconds_total", 0);
    w.Family("gpuledger_container_allocated_gpu_seconds_total", "h",
             prometheus::MetricType::kCounter);
    w.Sample("gpuledger_container_allocated_gpu_seconds_total",
             {{"namespace", "ml"},
              {"pod", "a"},
              {"pod_uid", "ua"},
              {"container", "c"},
              {"gpu_uuid", "GPU-1"}},
             a_alloc);
    w.Sample("gpuledger_container_allocated_gpu_seconds_total",
             {{"namespace", "ml"},
              {"pod", "b"},
              {"pod_uid", "ub"},
              {"container", "c"},
              {"gpu_uuid", "GPU-1"}},
             b_alloc);
    w.Family("gpuledger_container_compute_gpu_seconds_total", "h",
             prometheus::MetricType::kCounter);
    w.Sample("gpuledger_container_compute_gpu_seconds_total",
             {{"namespace", "ml"},
              {"pod", "a"},
              {"pod_uid", "ua"},
              {"container", "c"},
              {"gpu_uuid", "GPU-1"}},
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
  return [](const std::string& node) { return cost::NodeFacts{node, {}, "", "on-demand"}; };
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
  TempDir dir("gpuledger-ingest");
  const fs::path db = dir.path() / "ledger.db";
  const cost::Catalog catalog = cost::DefaultCatalog();
  FakeAgent agent;
  std::atomic<Micros> now = kH0 + 3000 * kS;  // read on fetch threads (scrape_loop.h)
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
    ScrapeLoop loop(
        ingestor, {{"n1:9400", "n2:9400"}, 15 * kS, {}}, fetch, [&] { return now.load(); }, log);
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
    EXPECT_NE(metrics.find("gpuledger_server_scrape_errors_total{target=\"n2:9400\"} 100"),
              std::string::npos)
        << metrics;
    EXPECT_NE(metrics.find("gpuledger_server_scrape_up{target=\"n1:9400\"} 1"), std::string::npos);
    // Logged once per state change, not once per round.
    EXPECT_EQ(log.str().find("n2:9400: connection refused"),
              log.str().rfind("n2:9400: connection refused"));
    // A malformed exposition fails that scrape, keeps the state and is counted.
    broken = true;
    metrics = run(2, *store);
    broken = false;
    EXPECT_NE(metrics.find("gpuledger_server_scrape_errors_total{target=\"n1:9400\"} 2"),
              std::string::npos)
        << metrics;
    EXPECT_NE(log.str().find("scrape n1:9400: line 23: expected a label name or '}'"),
              std::string::npos)
        << log.str();
  }
  // A restarted server (a new Ingestor over the same file) resumes from the saved state; an
  // outage of the agent meanwhile is unmetered time, and nothing is counted twice.
  down = true;
  {
    auto store = Open(db);
    run(4, *store);
  }
  down = false;
  auto store = Open(db);
  run(50, *store);
  Totals t = Read(*store);
  // The agent's counters moved 15 s per round between the first and the last good scrape.
  const GpuMicros expected = (100 + 2 + 4 + 50 - 1) * 15 * kS;
  EXPECT_EQ(t.metered, expected);
  EXPECT_EQ(t.allocated["a"], expected / 2);
  EXPECT_EQ(t.allocated["b"], expected / 4);
  EXPECT_EQ(t.rows, 2);   // two hours, one GPU
  EXPECT_GT(t.price, 0);  // priced from the built-in catalog
}

TEST(ReplayFiles, ReplaysSnapshotsInTimeOrder) {
  TempDir dir("gpuledger-ingest");
  const fs::path snaps = dir.path() / "snaps";
  fs::create_directories(snaps);
  FakeAgent agent;
  for (int i = 0; i <= 240; ++i) {  // 1 h at 15 s, from :30 to :30 of the next hour
    const std::int64_t ms = (kH0 + 1800 * kS + i * 15 * kS) / 1000;
    const std::string text = agent.Render();
    if (i % 2 == 0)
      ASSERT_TRUE(WriteFile((snaps / fmt::format("n1:9400@{}.prom", ms)).string(), text).ok());
    else
      ASSERT_TRUE(
          WriteFile((snaps / fmt::format("n1:9400@{}.prom.gz", ms)).string(), http::Gzip(text))
              .ok());
    agent.Advance(15);
  }
  ASSERT_TRUE(WriteFile((snaps / "README").string(), "not a snapshot").ok());
  auto store = Open(dir.path() / "l.db");
  const cost::Catalog catalog = cost::DefaultCatalog();
  Ingestor ingestor(*store, catalog, "c1", nullptr, Facts());
  ASSERT_TRUE(ingestor.Start().ok());
  std::ostringstream progress;
  auto stats = ReplayFiles(snaps.string(), ingestor, {.progress = &progress, .commit_every = 50});
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
  EXPECT_FALSE(ReplayFiles((dir.path() / "none").string(), second).ok());
}

// Engines' scrapes in DIR/engines, named <namespace>.<pod>@<unix-ms>.prom: booked to the engine
// the targets name for that pod (its consumer, with uid and container, and model); one of a pod
// no target names is counted, not booked.
TEST(ReplayFiles, BooksEngineSnapshotsToThePodsTargets) {
  TempDir dir("gpuledger-ingest");
  const fs::path snaps = dir.path() / "snaps";
  fs::create_directories(snaps / "engines");
  FakeAgent agent;
  ASSERT_TRUE(
      WriteFile((snaps / fmt::format("n1:9400@{}.prom", kH0 / 1000)).string(), agent.Render())
          .ok());
  // TGI names no model: the pod's annotation does.
  auto tgi = [](int prompt, int generated) {
    return fmt::format("tgi_request_input_length_sum {}\ntgi_request_generated_tokens_sum {}\n",
                       prompt, generated);
  };
  for (const char* pod : {"tgi-0", "stray-0"})
    for (int minute : {0, 30, 90}) {
      const std::int64_t ms = (kH0 + minute * 60 * kS) / 1000;
      ASSERT_TRUE(WriteFile((snaps / "engines" / fmt::format("llm.{}@{}.prom", pod, ms)).string(),
                            tgi(100 * minute, 10 * minute))
                      .ok());
    }
  auto store = Open(dir.path() / "l.db");
  const cost::Catalog catalog = cost::DefaultCatalog();
  Ingestor ingestor(*store, catalog, "c1", nullptr, Facts());
  ASSERT_TRUE(ingestor.Start().ok());
  const ConsumerRef served{"llm", "tgi-0", PodUid("u-tgi"), "server"};
  auto stats = ReplayFiles(snaps.string(), ingestor,
                           {.engines = {{"http://10.0.0.9:8000/metrics", served, "mistral-7b"}}});
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_EQ(stats->files, 7);
  EXPECT_EQ(stats->engine_files, 6);
  EXPECT_EQ(stats->unmatched_engine_files, 3);
  auto rows = store->ReadTokenHours({INT64_MIN, INT64_MAX});
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  std::int64_t input = 0, output = 0;
  for (const TokenHour& r : *rows) {
    EXPECT_EQ(r.consumer, served);
    EXPECT_EQ(r.model, "mistral-7b");
    input += r.input_tokens;
    output += r.output_tokens;
  }
  // The first scrape is a baseline (a replay observes no engine's start): 0 to 9,000 and 900.
  EXPECT_EQ(input, 9000);
  EXPECT_EQ(output, 900);
}

// Issue 38: labels are those in force when an hour was last written. The pod watch relabels
// pod a halfway through the second hour; the first hour, closed before, keeps the old label, and
// the second, written again after, has the new one. No write rewrites an hour it did not touch.
TEST(Ingestor, AnHourKeepsTheLabelsInForceWhenItWasLastWritten) {
  TempDir dir("gpuledger-ingest");
  FakeAgent agent;
  // Minute by minute from the first hour's start to the second's last minute, in two parts:
  // to 1:30, then the rest.
  for (int i = 0; i < 120; ++i) {
    const fs::path part = dir.path() / (i <= 90 ? "before" : "after");
    fs::create_directories(part);
    const std::int64_t ms = (kH0 + i * 60 * kS) / 1000;
    ASSERT_TRUE(
        WriteFile((part / fmt::format("n1:9400@{}.prom", ms)).string(), agent.Render()).ok());
    agent.Advance(60);
  }
  std::string team = "vision";
  auto describe = [&team](const ConsumerRef& ref) {
    ConsumerInfo info{ref};
    if (ref.pod == "a") info.labels = {{"team", team}};
    info.namespace_labels = {{"cost-center", team == "vision" ? "cc-1" : "cc-2"}};
    return info;
  };
  auto store = Open(dir.path() / "l.db");
  const cost::Catalog catalog = cost::DefaultCatalog();
  Ingestor ingestor(*store, catalog, "c1", describe, Facts());
  ASSERT_TRUE(ingestor.Start().ok());
  ASSERT_TRUE(ReplayFiles((dir.path() / "before").string(), ingestor).ok());
  team = "speech";
  ASSERT_TRUE(ReplayFiles((dir.path() / "after").string(), ingestor).ok());

  auto usage = store->ReadUsage({});
  ASSERT_TRUE(usage.ok()) << usage.error().message;
  std::map<std::pair<Micros, std::string>, std::string> labels;  // (hour, pod) -> team/center
  for (const UsageRow& u : *usage) {
    auto team_label = u.consumer.labels.find("team");
    labels[{u.hour_us, u.consumer.ref.pod}] =
        (team_label == u.consumer.labels.end() ? "-" : team_label->second) + "/" +
        u.consumer.namespace_labels.at("cost-center");
  }
  const std::map<std::pair<Micros, std::string>, std::string> want = {
      {{kH0, "a"}, "vision/cc-1"},
      {{kH0, "b"}, "-/cc-1"},
      {{kH0 + kMicrosPerHour, "a"}, "speech/cc-2"},
      {{kH0 + kMicrosPerHour, "b"}, "-/cc-2"}};
  EXPECT_EQ(labels, want);
}

// Cluster c1's state keys (ClusterMetaKey): the single key of earlier builds and the parts'.
const std::string kC1Single = ClusterMetaKey("c1", kStateMetaKey);
const std::string kC1Parts = ClusterMetaKey("c1", kStatePartPrefix);

// The single "ingest_state" key of earlier builds (state version 2: entries without sighting
// times), made from the parts this build stores.
void MakeLegacyState(store::LedgerStore& store) {
  auto meta = store.ReadMeta();
  ASSERT_TRUE(meta.ok());
  std::map<std::string, std::string> parts;
  std::map<std::string, std::optional<std::string>> erase;
  for (const auto& [k, v] : *meta)
    if (k.starts_with(kC1Parts)) {
      parts.emplace(k.substr(kC1Parts.size()), v);
      erase[k] = std::nullopt;
    }
  CounterLedger ledger("c1", nullptr);
  ASSERT_TRUE(ledger.RestoreParts(parts).ok());
  auto j = nlohmann::json::parse(ledger.State());
  j["version"] = 2;
  for (auto& [name, inst] : j["instances"].items()) {
    for (auto& [gpu, f] : inst["devices"].items())  // version 2 had node..parent only
      while (f.size() > 4) f.erase(f.size() - 1);
    for (auto& a : inst["attribution"]) a.erase(3);
  }
  erase[kC1Single] = j.dump();
  ASSERT_TRUE(store.UpdateMeta(erase).ok());
}

TEST(Ingestor, MovesTheSingleStateKeyToPartsAndCommitsOnlyWhatChanged) {
  TempDir dir("gpuledger-ingest");
  const fs::path db = dir.path() / "ledger.db";
  const cost::Catalog catalog = cost::DefaultCatalog();
  FakeAgent agent;
  std::atomic<Micros> now = kH0 + 3000 * kS;  // read on fetch threads (scrape_loop.h)
  Fetcher fetch = [&](const std::string&) -> Result<std::string> { return agent.Render(); };
  std::ostringstream log;
  auto run = [&](int rounds, store::LedgerStore& store) {
    Ingestor ingestor(store, catalog, "c1", nullptr, Facts());
    Status s = ingestor.Start();
    EXPECT_TRUE(s.ok()) << s.error().message;
    ScrapeLoop loop(
        ingestor, {{"n1:9400"}, 15 * kS, {}}, fetch, [&] { return now.load(); }, log);
    for (int i = 0; i < rounds; ++i) {
      loop.RunRound();
      agent.Advance(15);
      now += 15 * kS;
    }
    return ingestor.state_parts_written();
  };
  auto keys = [](store::LedgerStore& store) {
    std::set<std::string> out;
    auto meta = store.ReadMeta();  // named: a range-for over *temporary would dangle
    EXPECT_TRUE(meta.ok());
    for (const auto& [k, v] : *meta)
      if (k.starts_with(kC1Single)) out.insert(k);
    return out;
  };
  {
    auto store = Open(db);
    // One instance, one GPU: each round writes the engine, the instance and the current hour
    // (both hours in the round that crosses the boundary), never more.
    EXPECT_LE(run(100, *store), 100 * 3 + 1);
    EXPECT_EQ(keys(*store),
              (std::set<std::string>{kC1Parts + "engine", kC1Parts + "hour/1800000000000000/GPU-1",
                                     kC1Parts + "hour/1800003600000000/GPU-1",
                                     kC1Parts + "instance/n1:9400"}));
    MakeLegacyState(*store);
    ASSERT_TRUE(store->PutMeta(kC1Parts + "instance/ghost", "{}").ok());  // stale, erased
  }
  {
    auto store = Open(db);
    EXPECT_EQ(keys(*store), (std::set<std::string>{kC1Single, kC1Parts + "instance/ghost"}));
    run(1, *store);  // the legacy key wins, and moves to parts in the first commit
    EXPECT_EQ(keys(*store),
              (std::set<std::string>{kC1Parts + "engine", kC1Parts + "hour/1800000000000000/GPU-1",
                                     kC1Parts + "hour/1800003600000000/GPU-1",
                                     kC1Parts + "instance/n1:9400"}));
  }
  auto store = Open(db);
  run(49, *store);
  // Exact across both restarts: the counters moved 15 s a round from the first scrape on.
  Totals t = Read(*store);
  const GpuMicros expected = (100 + 1 + 49 - 1) * 15 * kS;
  EXPECT_EQ(t.metered, expected);
  EXPECT_EQ(t.allocated["a"], expected / 2);
  EXPECT_EQ(t.allocated["b"], expected / 4);
}

TEST(Ingestor, RefusesAStatePartItCannotReadNamingTheKey) {
  TempDir dir("gpuledger-ingest");
  auto store = Open(dir.path() / "l.db");
  ASSERT_TRUE(store->PutMeta(kC1Parts + "engine", "{\"kind\":\"gpuledger-counter-ledger\"").ok());
  const cost::Catalog catalog = cost::DefaultCatalog();
  Ingestor ingestor(*store, catalog, "c1", nullptr, Facts());
  Status s = ingestor.Start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("ledger meta '" + kC1Parts + "engine': "), std::string::npos)
      << s.error().message;
}

// A tiny agent over real HTTP: /metrics answers what `body` says, with `headers`.
struct HttpTarget {
  explicit HttpTarget(const std::function<void(httplib::Response&)>& answer) {
    server.Get("/metrics",
               [answer](const httplib::Request&, httplib::Response& res) { answer(res); });
    port = server.bind_to_any_port("127.0.0.1");  // listening from here: no race with clients
    thread = std::thread([this] { server.listen_after_bind(); });
  }
  ~HttpTarget() {
    server.stop();
    thread.join();
  }
  std::string target() const { return fmt::format("127.0.0.1:{}", port); }
  httplib::Server server;
  int port = 0;
  std::thread thread;
};

TEST(ScrapeLoop, AGzipBombOrAnEndlessBodyFailsItsTargetAndTheRoundGoesOn) {
  TempDir dir("gpuledger-ingest");
  auto store = Open(dir.path() / "l.db");
  const cost::Catalog catalog = cost::DefaultCatalog();
  FakeAgent agent;
  HttpTarget good([&](httplib::Response& res) { res.set_content(agent.Render(), "text/plain"); });
  // 64 MiB and one byte of zeros: ~65 KB on the wire.
  const std::string bomb = http::Gzip(std::string(kMaxScrapeBodyBytes + 1, '\0'));
  ASSERT_LT(bomb.size(), 100'000u);
  // Not text/*: cpp-httplib's server would compress those itself.
  HttpTarget bomber([&](httplib::Response& res) {
    res.set_header("Content-Encoding", "gzip");
    res.set_content(bomb, "application/octet-stream");
  });
  const std::string huge(kMaxScrapeBodyBytes + 1, '#');
  HttpTarget endless(
      [&](httplib::Response& res) { res.set_content(huge, "application/octet-stream"); });
  Ingestor ingestor(*store, catalog, "c1", nullptr, Facts());
  ASSERT_TRUE(ingestor.Start().ok());
  std::ostringstream log;
  std::atomic<Micros> now = kH0 + 60 * kS;  // read on fetch threads (scrape_loop.h)
  ScrapeLoop loop(
      ingestor, {{bomber.target(), endless.target(), good.target()}, 15 * kS, {}},
      [](const std::string& t) { return FetchMetrics(t, 5 * kS); }, [&] { return now.load(); },
      log);
  for (int i = 0; i < 3; ++i) {
    loop.RunRound();
    agent.Advance(15);
    now += 15 * kS;
  }
  const std::string metrics = loop.RenderMetrics();
  EXPECT_NE(metrics.find(fmt::format("gpuledger_server_scrape_errors_total{{target=\"{}\"}} 3",
                                     bomber.target())),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find(fmt::format("gpuledger_server_scrape_errors_total{{target=\"{}\"}} 3",
                                     endless.target())),
            std::string::npos)
      << metrics;
  EXPECT_NE(
      metrics.find(fmt::format("gpuledger_server_scrape_up{{target=\"{}\"}} 1", good.target())),
      std::string::npos)
      << metrics;
  // The client inflates a gzip Content-Encoding as it arrives, under the same cap.
  EXPECT_NE(log.str().find(fmt::format("GET http://{}/metrics: the body is larger than {} bytes",
                                       bomber.target(), kMaxScrapeBodyBytes)),
            std::string::npos)
      << log.str();
  EXPECT_NE(log.str().find(fmt::format("GET http://{}/metrics: the body is larger than {} bytes",
                                       endless.target(), kMaxScrapeBodyBytes)),
            std::string::npos)
      << log.str();
  EXPECT_EQ(Read(*store).metered, 2 * 15 * kS);  // the good agent: three scrapes, two deltas
}

TEST(ReplayFiles, AGzipBombFileFailsNamingTheFile) {
  TempDir dir("gpuledger-ingest");
  const fs::path snaps = dir.path() / "snaps";
  fs::create_directories(snaps);
  const fs::path bomb = snaps / "n1:9400@1800000000000.prom.gz";
  ASSERT_TRUE(WriteFile(bomb.string(), http::Gzip(std::string(2 << 20, '\0'))).ok());
  auto store = Open(dir.path() / "l.db");
  const cost::Catalog catalog = cost::DefaultCatalog();
  Ingestor ingestor(*store, catalog, "c1", nullptr, Facts());
  ASSERT_TRUE(ingestor.Start().ok());
  auto r = ReplayFiles(snaps.string(), ingestor, {.max_bytes = 1 << 20});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(bomb.string() +
                                   ": gunzip: the stream expands past the limit of 1048576 bytes"),
            std::string::npos)
      << r.error().message;
}

TEST(ScrapeLoop, AHungTargetCannotStretchARound) {
  TempDir dir("gpuledger-ingest");
  auto store = Open(dir.path() / "l.db");
  const cost::Catalog catalog = cost::DefaultCatalog();
  FakeAgent agent;
  // "hung" never answers until released (it ignores any timeout of its own); a real socket
  // that accepts and never answers stands for a hung agent over HTTP.
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> hung_calls{0};
  const int silent = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(silent, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(silent, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(silent, 16), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(silent, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string silent_target = fmt::format("127.0.0.1:{}", ntohs(addr.sin_port));
  const Micros timeout = 300'000;  // µs
  Fetcher fetch = [&](const std::string& target) -> Result<std::string> {
    if (target == "hung:9400") {
      ++hung_calls;
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return release; });
      return Unavailable("scrape hung:9400: released");
    }
    if (target == silent_target) return FetchMetrics(target, timeout);
    return agent.Render();
  };
  Ingestor ingestor(*store, catalog, "c1", nullptr, Facts());
  ASSERT_TRUE(ingestor.Start().ok());
  std::ostringstream log;
  std::atomic<Micros> now = kH0 + 60 * kS;  // read on fetch threads (scrape_loop.h)
  std::vector<std::string> targets = {"hung:9400", silent_target, "n1:9400", "n2:9400"};
  ScrapeOptions options{{}, 15 * kS, [&]() -> Result<std::vector<std::string>> { return targets; }};
  options.timeout_us = timeout;
  options.max_concurrent = 2;  // the hung fetch, once abandoned, no longer holds a slot
  ScrapeLoop loop(
      ingestor, options, fetch, [&] { return now.load(); }, log);
  for (int i = 0; i < 3; ++i) {
    const auto started = std::chrono::steady_clock::now();
    loop.RunRound();
    const auto took = std::chrono::steady_clock::now() - started;
    // Two waves of two fetches: at most two timeouts, and a margin for a loaded machine.
    EXPECT_LT(took, std::chrono::microseconds(2 * timeout) + std::chrono::milliseconds(700))
        << "round " << i;
    agent.Advance(15);
    now += 15 * kS;
  }
  EXPECT_EQ(hung_calls.load(), 1);  // still running: not fetched again, no thread per round
  const std::string metrics = loop.RenderMetrics();
  for (const std::string& t : {std::string("hung:9400"), silent_target})
    EXPECT_NE(
        metrics.find(fmt::format("gpuledger_server_scrape_errors_total{{target=\"{}\"}} 3", t)),
        std::string::npos)
        << metrics;
  EXPECT_NE(log.str().find("scrape hung:9400: no answer within 300 ms"), std::string::npos)
      << log.str();
  // The agents that answer are ingested: n1 and n2 report the same GPU, three scrapes each.
  EXPECT_EQ(Read(*store).metered, 2 * 2 * 15 * kS);
  // Health (/api/v1/sources): each target as the last round left it, with why it is down.
  const SourcesHealth health = loop.Health();
  EXPECT_EQ(health.source, "scrape");
  ASSERT_EQ(health.targets.size(), 4u);
  EXPECT_EQ(health.targets[0].target, "hung:9400");
  EXPECT_FALSE(health.targets[0].up);
  EXPECT_EQ(health.targets[0].failures, 3);
  EXPECT_EQ(health.targets[0].last_error,
            "scrape hung:9400: the previous scrape is still running (no answer)");
  EXPECT_EQ(health.targets[0].last_success_us, 0);
  EXPECT_TRUE(health.targets[2].up);
  EXPECT_EQ(health.targets[2].failures, 0);
  EXPECT_EQ(health.targets[2].last_error, "");
  EXPECT_EQ(health.targets[2].last_success_us, now.load() - 15 * kS);
  // A target that leaves the list leaves the scrape counts.
  targets = {"n1:9400"};
  loop.RunRound();
  EXPECT_EQ(loop.tracked_targets(), 1u);
  EXPECT_EQ(loop.Health().targets.size(), 1u);
  EXPECT_EQ(loop.RenderMetrics().find("hung:9400"), std::string::npos);
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  loop.Stop();  // waits for the hung fetch, now released
  ::close(silent);
}

TEST(Ingestor, RefusesAStateItCannotRead) {
  TempDir dir("gpuledger-ingest");
  auto store = Open(dir.path() / "l.db");
  ASSERT_TRUE(store->PutMeta(kC1Single, "{not json").ok());
  const cost::Catalog catalog = cost::DefaultCatalog();
  Ingestor ingestor(*store, catalog, "c1", nullptr, Facts());
  Status s = ingestor.Start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("ledger meta 'cluster/c1/ingest_state'"), std::string::npos);
}

}  // namespace
}  // namespace gpuledger::ingest
