#include "io/log_sink.h"

#include <sstream>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/time_util.h"

namespace gpuledger {
namespace {

TEST(LogSink, JsonLinesWithTheLevelEachLineStartsWith) {
  std::stringbuf out;
  ManualClock clock(*ParseRfc3339("2026-12-05T06:40:47Z") + 123'456);
  {
    LogSink sink(&out, LogFormat::kJson, LogLevel::kInfo, "server", clock);
    std::ostream log(&sink);
    log << "gpuledger server: serving on 0.0.0.0:8080\n"
        << "error: --ledger: no such ledger\nwarning: catalog has no price for L4\n";
    log << "a partial line";  // left for the destructor
  }
  std::istringstream lines(out.str());
  std::vector<nlohmann::json> records;
  for (std::string line; std::getline(lines, line);) records.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(records.size(), 4u) << out.str();
  EXPECT_EQ(records[0]["time"], "2026-12-05T06:40:47.123Z");
  EXPECT_EQ(records[0]["level"], "info");
  EXPECT_EQ(records[0]["component"], "server");
  EXPECT_EQ(records[0]["msg"], "gpuledger server: serving on 0.0.0.0:8080");
  EXPECT_EQ(records[1]["level"], "error");
  EXPECT_EQ(records[2]["level"], "warning");
  EXPECT_EQ(records[3]["msg"], "a partial line");
}

TEST(LogSink, TextKeepsTheLinesAndTheLevelFilters) {
  std::stringbuf out;
  ManualClock clock;
  LogSink sink(&out, LogFormat::kText, LogLevel::kWarning, "agent", clock);
  std::ostream log(&sink);
  log << "gpuledger agent: 8 GPUs\nwarning: slow NVML\nerror: lost GPU\n";
  EXPECT_EQ(out.str(), "warning: slow NVML\nerror: lost GPU\n");
  EXPECT_FALSE(ParseLogFormat("yaml"));
  EXPECT_EQ(ParseLogLevel("verbose").error().message,
            "--log-level 'verbose': expected info, warning or error");
}

TEST(LogSink, LinesOfConcurrentThreadsNeverInterleave) {
  std::stringbuf out;
  ManualClock clock;
  LogSink sink(&out, LogFormat::kText, LogLevel::kInfo, "server", clock);
  std::ostream log(&sink);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) log << "thread " << t << " says " << i << " once\n";
    });
  for (auto& th : threads) th.join();
  std::istringstream lines(out.str());
  int n = 0;
  for (std::string line; std::getline(lines, line); ++n)
    EXPECT_TRUE(line.starts_with("thread ") && line.ends_with(" once")) << line;
  EXPECT_EQ(n, 2000);
}

}  // namespace
}  // namespace gpuledger
