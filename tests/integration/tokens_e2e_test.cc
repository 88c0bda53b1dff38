// Token counters end to end (issue 63): `gpuledger server --source scrape --api-server URL`
// watches a fake API server whose pod opts in with gpuledger.io/tokens-port; the server finds
// the pod's address in the watch, scrapes its engine (a fake vLLM on loopback) beside the
// agents, and the ledger's token_hours hold exactly what the engine's counters moved.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <regex>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "common/time_util.h"
#include "io/file_util.h"
#include "process_util.h"
#include "store/ledger_store.h"
#include "temp_dir.h"
#include "test_paths.h"
#include "fake_apiserver/fake_apiserver.h"

namespace gpuledger {
namespace {

namespace fs = std::filesystem;

TEST(TokensE2e, AnOptedInEnginesTokensReachTheLedgerExactly) {
  const testing::TempDir temp("gpuledger-tokens-e2e");
  const fs::path& dir = temp.path();
  const std::string bin = gpuledger::test_paths::kGpuledgerBin;

  // The engine: it starts when first asked (after the server: its whole life is observed, so
  // its counters count from zero at its start, whichever scrape lands first); every answer moves
  // its counters, until frozen, so the last answers repeat themselves and none in flight at the
  // end can differ. What it served last is what the ledger must hold.
  std::mutex mu;
  std::int64_t prompt = 1000, generated = 200, answers = 0;
  std::int64_t last_prompt = -1, last_generated = -1;
  double started_s = 0;
  std::atomic<bool> frozen{false};
  httplib::Server engine;
  engine.Get("/v1/metrics", [&](const httplib::Request&, httplib::Response& res) {
    std::lock_guard lock(mu);
    if (started_s == 0)
      started_s = static_cast<double>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count()) /
                  1000;
    if (!frozen.load()) {
      prompt += 137 + answers % 5;
      generated += 41;
    }
    ++answers;
    std::tie(last_prompt, last_generated) = std::tie(prompt, generated);
    res.set_content(fmt::format("# TYPE process_start_time_seconds gauge\n"
                                "process_start_time_seconds {:.3f}\n"
                                "# TYPE vllm:prompt_tokens_total counter\n"
                                "vllm:prompt_tokens_total{{engine=\"0\",model_name=\"m-7b\"}} {}.0\n"
                                "# TYPE vllm:generation_tokens_total counter\n"
                                "vllm:generation_tokens_total{{engine=\"0\",model_name=\"m-7b\"}} "
                                "{}.0\n"
                                "vllm:num_requests_running{{model_name=\"m-7b\" 3\n",  // garbled
                                started_s, prompt, generated),
                    "text/plain; version=0.0.4");
  });
  const int engine_port = engine.bind_to_any_port("127.0.0.1");
  ASSERT_GT(engine_port, 0);
  std::thread serving([&] { engine.listen_after_bind(); });

  fake::FakeApiServer api;
  ASSERT_TRUE(api.Start().ok());
  api.Upsert("pods", nlohmann::json{
                         {"kind", "Pod"},
                         {"apiVersion", "v1"},
                         {"metadata",
                          {{"namespace", "llm"},
                           {"name", "vllm-0"},
                           {"uid", "u-vllm-0"},
                           {"annotations",
                            {{"gpuledger.io/tokens-port", std::to_string(engine_port)},
                             {"gpuledger.io/tokens-path", "/v1/metrics"},
                             {"gpuledger.io/tokens-container", "server"}}}}},
                         {"spec", {{"nodeName", "gpu-1"}}},
                         {"status", {{"phase", "Running"}, {"podIP", "127.0.0.1"}}}});
  const std::string db = (dir / "l.db").string();
  {
    // No agent answers here (a closed port): the engine is scraped all the same.
    Child server({bin, "server", "--source", "scrape", "--targets", "127.0.0.1:1",
                  "--api-server", api.url(), "--scrape-interval", "300ms", "--ledger",
                  "sqlite:" + db, "--listen", "127.0.0.1:0"},
                 (dir / "server.out").string());
    ASSERT_TRUE(server.ok());
    const std::string port =
        WaitFor((dir / "server.out").string(), std::regex("http://[^:]+:(\\d+)/"), 20s);
    ASSERT_FALSE(port.empty()) << *ReadFile((dir / "server.out.err").string());
    std::this_thread::sleep_for(4s);
    frozen = true;
    std::this_thread::sleep_for(1500ms);
    // The API and the CLI answer the same document (one read, two edges).
    httplib::Client client("127.0.0.1", std::stoi(port));
    client.set_read_timeout(10, 0);
    // A window around now: the ledger holds no device-hour (no agent), so "all" has no extent.
    const Micros now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
    const std::string window = FormatRfc3339(HourStart(now_us) - kMicrosPerDay) + "," +
                               FormatRfc3339(HourStart(now_us) + kMicrosPerDay);
    auto api = client.Get("/api/v1/tokens?window=" + window + "&aggregate=model,pod");
    ASSERT_TRUE(api);
    EXPECT_EQ(api->status, 200) << api->body;
    int code = 0;
    const std::string cli =
        RunCapture(bin + " tokens --db " + db + " --window " + window +
                       " --by model,pod --format json",
                   &code);
    EXPECT_EQ(code, 0) << cli;
    EXPECT_EQ(api->body, cli);
    auto doc = nlohmann::json::parse(api->body);
    ASSERT_EQ(doc["groups"].size(), 1u) << api->body;
    EXPECT_EQ(doc["groups"][0]["key"], "m-7b/llm/vllm-0");
    EXPECT_EQ(doc["engines_without_gpu"], nlohmann::json::array({"llm/vllm-0/server"}));
    auto bad = client.Get("/api/v1/tokens?aggregate=node");
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 400);
    EXPECT_NE(bad->body.find("parameter 'aggregate'"), std::string::npos) << bad->body;
  }
  engine.stop();
  serving.join();
  api.Stop();
  const std::string log = *ReadFile((dir / "server.out.err").string());
  ASSERT_GT(answers, 5) << log;
  EXPECT_NE(log.find(fmt::format("ingest: scraping http://127.0.0.1:{}/v1/metrics (engine of "
                                 "llm/vllm-0)",
                                 engine_port)),
            std::string::npos)
      << log;

  auto store = store::OpenSqliteLedger(db);
  ASSERT_TRUE(store) << store.error().message;
  auto rows = (*store)->ReadTokenHours({INT64_MIN, INT64_MAX});
  ASSERT_TRUE(rows) << rows.error().message;
  ASSERT_FALSE(rows->empty()) << log;
  std::int64_t input = 0, output = 0;
  for (const TokenHour& r : *rows) {
    EXPECT_EQ(r.consumer, (ConsumerRef{"llm", "vllm-0", PodUid("u-vllm-0"), "server"}));
    EXPECT_EQ(r.model, "m-7b");
    EXPECT_EQ(r.engine, "vllm");
    input += r.input_tokens;
    output += r.output_tokens;
  }
  EXPECT_EQ(input, last_prompt);
  EXPECT_EQ(output, last_generated);
}

}  // namespace
}  // namespace gpuledger
