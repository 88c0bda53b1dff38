// Inference engines scraped beside the agents (issue 63): the scrape loop fetches each engine a
// pod names, feeds its token counters to the ingestor, and the ledger's token hours come out
// exact across an engine outage, a malformed line, and a restart of the server.

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>

#include "io/file_util.h"

#include "ingest/ingestor.h"
#include "ingest/prometheus_source.h"
#include "ingest/scrape_loop.h"
#include "temp_dir.h"

namespace gpuledger::ingest {
namespace {

namespace fs = std::filesystem;

constexpr Micros kH0 = 1'800'000'000LL * kMicrosPerSecond;
constexpr Micros kS = kMicrosPerSecond;
constexpr const char* kEngineUrl = "http://10.0.0.9:8000/metrics";

// A vLLM engine serving 100 prompt and 25 generated tokens a second.
struct FakeEngine {
  double seconds = 0;
  std::string Render() const {
    return fmt::format(
        "# TYPE vllm:prompt_tokens_total counter\n"
        "vllm:prompt_tokens_total{{engine=\"0\",model_name=\"m\"}} {}\n"
        "# TYPE vllm:generation_tokens_total counter\n"
        "vllm:generation_tokens_total{{engine=\"0\",model_name=\"m\"}} {}\n",
        100 * seconds, 25 * seconds);
  }
};

std::int64_t TotalInput(store::LedgerStore& store) {
  auto rows = store.ReadTokenHours({INT64_MIN, INT64_MAX});
  EXPECT_TRUE(rows) << rows.error().message;
  std::int64_t total = 0;
  for (const TokenHour& r : *rows) total += r.input_tokens;
  return total;
}

TEST(TokenScrape, EnginesScrapedBesideTheAgentsGiveExactTokenHours) {
  testing::TempDir dir("gpuledger-token-scrape");
  const fs::path db = dir.path() / "ledger.db";
  const cost::Catalog catalog = cost::DefaultCatalog();
  FakeEngine engine;
  std::atomic<Micros> now = kH0 + 3000 * kS;
  bool down = false, garbled = false;
  std::vector<std::string> fetched;
  Fetcher fetch = [&](const std::string& target) -> Result<std::string> {
    fetched.push_back(target);
    if (target != kEngineUrl) return Unavailable("scrape " + target + ": connection refused");
    if (down) return Unavailable("scrape " + target + ": connection refused");
    // A third party's exposition: a bad line is skipped, not the scrape.
    return engine.Render() + (garbled ? "vllm:num_requests_running{model_name=\"m\" 3\n" : "");
  };
  EngineTarget target{kEngineUrl, ConsumerRef{"llm", "vllm-0", PodUid("u-0"), "server"}, ""};
  std::ostringstream log;
  auto run = [&](int rounds) {
    auto store = store::OpenSqliteLedger(db.string());
    EXPECT_TRUE(store) << store.error().message;
    Ingestor ingestor(**store, catalog, "c1", nullptr, nullptr);
    EXPECT_TRUE(ingestor.Start().ok());
    ScrapeOptions options;
    options.engines = [&] { return std::vector<EngineTarget>{target}; };
    ScrapeLoop loop(ingestor, options, fetch, [&] { return now.load(); }, log);
    for (int i = 0; i < rounds; ++i) {
      loop.RunRound();
      engine.seconds += 15;
      now += 15 * kS;
    }
    return loop.RenderMetrics();
  };
  std::string metrics = run(100);  // 25 min: across an hour boundary
  EXPECT_NE(metrics.find(fmt::format("gpuledger_server_scrape_up{{target=\"{}\"}} 1", kEngineUrl)),
            std::string::npos)
      << metrics;
  garbled = true;
  run(3);
  garbled = false;
  down = true;
  run(4);  // an outage of the engine, over a restart of the server
  down = false;
  run(50);
  auto store = store::OpenSqliteLedger(db.string());
  ASSERT_TRUE(store);
  // The engine's counters moved 15 s a round between the first and the last good scrape.
  EXPECT_EQ(TotalInput(**store), (100 + 3 + 4 + 50 - 1) * 15 * 100);
  auto rows = (*store)->ReadTokenHours({INT64_MIN, INT64_MAX});
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 2u);  // two hours
  EXPECT_EQ((*rows)[0].consumer, target.consumer);
  EXPECT_EQ((*rows)[0].model, "m");
  EXPECT_EQ((*rows)[0].engine, "vllm");
  EXPECT_EQ((*rows)[0].cluster, "c1");
  EXPECT_EQ(log.str().find("line"), std::string::npos) << log.str();  // skipped, not failed
}

// An engine is a pod: the bearer token the server shows its agents (behind kube-rbac-proxy)
// must never reach it.
TEST(TokenScrape, AnEngineIsFetchedWithoutTheAgentsCredentials) {
  testing::TempDir dir("gpuledger-token-auth");
  const std::string token_file = (dir.path() / "token").string();
  ASSERT_TRUE(WriteFile(token_file, "s3cret-agent-token\n").ok());
  std::string seen_auth = "(not asked)";
  httplib::Server engine;
  engine.Get("/metrics", [&](const httplib::Request& req, httplib::Response& res) {
    seen_auth = req.get_header_value("Authorization");
    res.set_content("vllm:prompt_tokens_total{model_name=\"m\"} 1\n", "text/plain");
  });
  const int port = engine.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serving([&] { engine.listen_after_bind(); });
  ScrapeAccess access;
  access.auth.bearer_token_file = token_file;
  auto body = FetchMetrics(fmt::format("http://127.0.0.1:{}/metrics", port), 5 * kS, access);
  engine.stop();
  serving.join();
  ASSERT_TRUE(body) << body.error().message;
  EXPECT_EQ(seen_auth, "");
}

// The same engines through a TSDB (`--source prometheus=URL`): the matrix answers of the token
// series, with the pod labels a PodMonitor adds (and `uid`, relabelled from
// __meta_kubernetes_pod_uid), book the rows the server's own scrapes of the engines book.
TEST(TokenScrape, ThePrometheusPathBooksWhatTheScrapePathBooks) {
  const Micros t0 = kH0 + 3500 * kS;
  struct Point {
    Micros at;
    double prompt, generated;
  };
  const std::vector<Point> points = {{t0, 100, 10}, {t0 + 60 * kS, 5000, 900},
                                     {t0 + 120 * kS, 7000, 1300}, {t0 + 180 * kS, 300, 20}};
  // What the engine's own /metrics said at each scrape, and the same as Prometheus keeps it.
  std::string values_prompt, values_generated;
  TokenLedger scraped("c1");
  const ConsumerRef pod{"llm", "vllm-0", PodUid("u-0"), "server"};
  for (const Point& p : points) {
    const std::string at = fmt::format("{:.3f}", static_cast<double>(p.at) / 1e6);
    values_prompt += fmt::format("{}[{},\"{}\"]", values_prompt.empty() ? "" : ",", at, p.prompt);
    values_generated +=
        fmt::format("{}[{},\"{}\"]", values_generated.empty() ? "" : ",", at, p.generated);
    scraped.Feed({pod, "", p.at,
                  {Sample{"vllm:prompt_tokens_total", {{"engine", "0"}, {"model_name", "m"}},
                          p.prompt},
                   Sample{"vllm:generation_tokens_total", {{"engine", "0"}, {"model_name", "m"}},
                          p.generated}}});
  }
  const std::string labels =
      R"("container":"server","engine":"0","instance":"10.0.0.9:8000","job":"llm/vllm",)"
      R"("model_name":"m","namespace":"llm","pod":"vllm-0","uid":"u-0")";
  std::vector<TargetScrape> raw;
  ASSERT_TRUE(ParseMatrixResponse(
      fmt::format(R"({{"status":"success","data":{{"resultType":"matrix","result":[)"
                  R"({{"metric":{{"__name__":"vllm:prompt_tokens_total",{0}}},"values":[{1}]}},)"
                  R"({{"metric":{{"__name__":"vllm:generation_tokens_total",{0}}},"values":[{2}]}}]}}}})",
                  labels, values_prompt, values_generated),
      raw));
  // A series no pod label names (a static target) is skipped.
  raw.push_back({"10.0.0.1:9090", t0, {Sample{"vllm:prompt_tokens_total", {}, 5}}});
  TokenLedger through_tsdb("c1");
  const std::vector<EngineScrape> engines = EngineScrapesOf(raw);
  ASSERT_EQ(engines.size(), points.size());
  for (const EngineScrape& e : engines) {
    EXPECT_EQ(e.consumer, pod);
    through_tsdb.Feed(e);
  }
  EXPECT_EQ(through_tsdb.Hours(INT64_MAX), scraped.Hours(INT64_MAX));
  EXPECT_EQ(scraped.resets(), 2);
  std::int64_t input = 0;
  for (const TokenHour& r : scraped.Hours(INT64_MAX)) input += r.input_tokens;
  EXPECT_EQ(input, 4900 + 2000 + 300);
}

}  // namespace
}  // namespace gpuledger::ingest
