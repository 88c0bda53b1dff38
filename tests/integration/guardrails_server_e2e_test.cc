// Guardrails through the binaries, as an operator runs them: `gpuledger demo` writes its agents'
// expositions; `gpuledger server --source files=DIR` replays them into a ledger of its own (the
// server's ingest, findings and all); a serving `gpuledger server --api-server URL` posts the
// Kubernetes Events of the findings that warn to a fake API server and answers
// /api/v1/findings; `gpuledger audit` reads the same findings from the server and from the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "fake_apiserver/fake_apiserver.h"
#include "process_util.h"
#include "test_paths.h"

namespace gpuledger {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<std::string> Kinds(const json& doc) {
  std::vector<std::string> out;
  for (const auto& f : doc["findings"])
    out.push_back(f["kind"].get<std::string>() + " " + f["pod"].get<std::string>());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(GuardrailsServerE2e, ReplayedFindingsArePricedServedAndAnnounced) {
  const std::string bin = gpuledger::test_paths::kGpuledgerBin;
  const fs::path dir =
      fs::temp_directory_path() / ("gpuledger-guard-e2e-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  int code = 0;
  std::string out = RunCapture(bin + " demo --no-serve --out " + (dir / "demo").string() +
                                   " --expositions " + (dir / "x").string(),
                               &code);
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("Guardrails: 8 findings"), std::string::npos) << out;
  const std::string replay = (dir / "replay.db").string();
  out = RunCapture(bin + " server --source files=" + (dir / "x").string() +
                       " --ledger sqlite:" + replay + " --backfill-only",
                   &code);
  ASSERT_EQ(code, 0) << out;

  // The replayed ledger holds the demo's findings, priced the same to the nano.
  std::string from_demo =
      RunCapture(bin + " audit --db " + (dir / "demo" / "gpuledger.db").string() +
                     " --since all --format json",
                 &code);
  ASSERT_EQ(code, 0) << from_demo;
  std::string from_replay =
      RunCapture(bin + " audit --db " + replay + " --since all --format json", &code);
  ASSERT_EQ(code, 0) << from_replay;
  json demo = json::parse(from_demo), replayed = json::parse(from_replay);
  EXPECT_EQ(Kinds(replayed), Kinds(demo));
  EXPECT_EQ(replayed["total_cost_nanos"], demo["total_cost_nanos"]);
  EXPECT_GT(replayed["total_cost_nanos"].get<std::int64_t>(), 0);

  // Serving it with the API server at hand: the open finding that warns (the MPS client over
  // its memory cap) becomes one Warning Event on its pod; the idle notebooks only report.
  fake::FakeApiServer api;
  ASSERT_TRUE(api.Start().ok());
  const std::string log = (dir / "server.out").string();
  Child server({bin, "server", "--ledger", "sqlite:" + replay, "--listen", "127.0.0.1:0",
                "--api-server", api.url()},
               log);
  ASSERT_TRUE(server.ok());
  const std::string url = WaitFor(log, std::regex("at (http://127\\.0\\.0\\.1:[0-9]+)/"), 30s);
  ASSERT_FALSE(url.empty()) << "no serving line in " << log;
  std::vector<json> events;
  for (int i = 0; i < 100 && events.empty(); ++i) {
    events = api.Objects("events");
    if (events.empty()) std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(events.size(), 1u);
  const json& e = events[0];
  EXPECT_EQ(e["type"], "Warning");
  EXPECT_EQ(e["reason"], "GpuledgerIsolationBreach");
  EXPECT_EQ(e["involvedObject"]["kind"], "Pod");
  EXPECT_EQ(e["involvedObject"]["name"], "tts-0");
  EXPECT_EQ(e["involvedObject"]["namespace"], "inference");
  EXPECT_NE(e["message"].get<std::string>().find("over its declared cap"), std::string::npos)
      << e.dump();
  EXPECT_NE(e["message"].get<std::string>().find("$"), std::string::npos) << e.dump();

  // audit --server reads the API's document: the same findings as the file.
  std::string via_api =
      RunCapture(bin + " audit --server " + url + " --since all --format json", &code);
  ASSERT_EQ(code, 0) << via_api;
  EXPECT_EQ(json::parse(via_api), replayed);
  std::string table =
      RunCapture(bin + " audit --server " + url + " --since all --kind unallocated-access", &code);
  ASSERT_EQ(code, 0) << table;
  EXPECT_NE(table.find("inference/debug-shell/main used"), std::string::npos) << table;
  // The summary is wrapped to 100 columns: read it with its line breaks as spaces.
  std::string joined;
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (table[i] != '\n') {
      joined += table[i];
      continue;
    }
    joined += ' ';
    while (i + 1 < table.size() && table[i + 1] == ' ') ++i;
  }
  EXPECT_NE(joined.find("it was never granted: $"), std::string::npos) << table;
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 100u) << line;
  std::string bad = RunCapture(bin + " audit --server " + url + " --kind nope 2>&1", &code);
  EXPECT_EQ(code, 2) << bad;
  EXPECT_NE(bad.find("parameter 'kind': kind 'nope': expected one of"), std::string::npos) << bad;
  server.Stop(SIGTERM);
  api.Stop();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuledger
