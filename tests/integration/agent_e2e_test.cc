// The agent as an operator runs it: `gpuledger-sim-node` and `gpuledger agent` as real
// processes, scraped over HTTP (plain and gzip), checked by promtool, with a hung NVML.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <httplib.h>

#include "http/gzip.h"
#include "io/file_util.h"
#include "process_util.h"
#include "prometheus/exposition_writer.h"
#include "test_paths.h"

extern char** environ;

namespace gpuledger {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(AgentE2e, RealProcessesScrapedOverHttpAndCheckedByPromtool) {
  const fs::path dir = fs::temp_directory_path() / ("gpuledger-e2e-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  ASSERT_TRUE(WriteFile((dir / "scenario.yaml").string(), R"(
name: e2e
start: "2026-11-23T00:00:00Z"
duration: 2h
nodes:
  - {name: n1, gpu_model: A100-80GB, gpus: 2, sharing: time-slicing, replicas: 4}
workloads:
  - {namespace: web, name: api, replicas: 3, compute: {profile: constant, duty: 0.2}, memory: {bytes: 3GiB}}
  - {namespace: web, name: rogue, request: none, uses_gpu: {node: n1, index: 1}, visible_devices: all, compute: {profile: constant, duty: 0.1}, memory: {bytes: 1GiB}}
)")
                  .ok());
  {
    Child node({gpuledger::test_paths::kSimNodeBin, "--scenario", (dir / "scenario.yaml").string(),
                "--node", "n1", "--dir", (dir / "node").string()},
               (dir / "node.out").string());
    ASSERT_TRUE(node.ok());
    // The printed command is the contract: run exactly what `gpuledger-sim-node` says.
    std::string command =
        WaitFor((dir / "node.out").string(), std::regex("^(GPULEDGER_NVML_SCENARIO=.*)$"), 20s);
    ASSERT_FALSE(command.empty()) << *ReadFile((dir / "node.out.err").string());
    command = std::regex_replace(command, std::regex("127\\.0\\.0\\.1:9400"), "127.0.0.1:0");
    command = std::regex_replace(command, std::regex("--interval 1s"),
                                 "--interval 200ms --nvml-timeout 500ms");
    const PrintedCommand printed = SplitPrintedCommand(command);
    ASSERT_FALSE(printed.argv.empty()) << command;
    std::vector<std::string> argv = printed.argv;
    Child agent(argv, (dir / "agent.out").string(), {printed.env});
    ASSERT_TRUE(agent.ok());
    const std::string port =
        WaitFor((dir / "agent.out").string(), std::regex("http://[^:]+:(\\d+)/metrics"), 20s);
    ASSERT_FALSE(port.empty()) << *ReadFile((dir / "agent.out.err").string());
    httplib::Client http("127.0.0.1", std::stoi(port));
    http.set_read_timeout(2, 0);
    std::this_thread::sleep_for(3s);

    auto health = http.Get("/healthz");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
    auto plain = http.Get("/metrics");
    ASSERT_TRUE(plain);
    ASSERT_EQ(plain->status, 200);
    const std::string text = plain->body;
    EXPECT_NE(
        text.find("gpuledger_container_compute_gpu_seconds_total{namespace=\"web\",pod=\"api-0\""),
        std::string::npos);
    EXPECT_NE(text.find("pod=\"rogue-0\""), std::string::npos)
        << "a pod with no GPU grant still shows";
    auto gz = http.Get("/metrics", {{"Accept-Encoding", "gzip"}});
    ASSERT_TRUE(gz);
    // The agent answered gzip; httplib's client (built with zlib) inflates it transparently.
    EXPECT_EQ(gz->get_header_value("Content-Encoding"), "gzip");
    const bool inflated = gz->body.rfind("# HELP", 0) == 0;
    std::string text_back = inflated ? gz->body : *http::Gunzip(gz->body);
    EXPECT_NE(text_back.find("gpuledger_device_info"), std::string::npos);
    // Exactly one layer of gzip: the raw bytes through a socket of our own.
    std::string raw;
    {
      int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(static_cast<std::uint16_t>(std::stoi(port)));
      ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
      const std::string req =
          "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n";
      ASSERT_EQ(::write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
      char buf[65536];
      for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
        raw.append(buf, static_cast<std::size_t>(n));
      ::close(fd);
    }
    auto body_at = raw.find("\r\n\r\n");
    ASSERT_NE(body_at, std::string::npos);
    std::string body = raw.substr(body_at + 4);
    if (raw.find("Transfer-Encoding: chunked") != std::string::npos) {
      std::string joined;
      for (std::size_t at = 0;;) {
        std::size_t eol = body.find("\r\n", at);
        std::size_t len = std::stoul(body.substr(at, eol - at), nullptr, 16);
        if (len == 0) break;
        joined += body.substr(eol + 2, len);
        at = eol + 2 + len + 2;
      }
      body = joined;
    }
    auto once = http::Gunzip(body);
    ASSERT_TRUE(once.ok()) << once.error().message;
    EXPECT_EQ(once->rfind("# HELP", 0), 0u) << "the body must be gzipped exactly once";

    // promtool, when installed (the install script brings it), must accept the exposition.
    ASSERT_TRUE(WriteFile((dir / "metrics.txt").string(), text).ok());
    if (std::system("command -v promtool >/dev/null 2>&1") == 0) {
      const std::string check = "promtool check metrics < " + (dir / "metrics.txt").string() +
                                " > " + (dir / "promtool.out").string() + " 2>&1";
      EXPECT_EQ(std::system(check.c_str()), 0) << *ReadFile((dir / "promtool.out").string());
    } else {
      std::printf("promtool not installed: skipped the lint (apt-get install prometheus)\n");
    }

    // A hung NVML: scrapes keep answering within 100 ms.
    ASSERT_TRUE(WriteFile((dir / "node" / "nvml-faults").string(), "hang all 2\n").ok());
    std::this_thread::sleep_for(600ms);
    for (int i = 0; i < 5; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      auto r = http.Get("/metrics");
      auto took = std::chrono::steady_clock::now() - t0;
      ASSERT_TRUE(r);
      EXPECT_EQ(r->status, 200);
      EXPECT_LT(took, 100ms);
      std::this_thread::sleep_for(200ms);
    }
    fs::remove(dir / "node" / "nvml-faults");
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuledger
