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

}  // namespace
}  // namespace gpuledger::ingest
