// The distributed path end to end: a simulated node with a real agent, scraped by a real
// Prometheus and a real VictoriaMetrics; the server ingests once by scraping the agent itself
// and once from each TSDB through its HTTP API (raw samples, exact deltas). The ledgers agree
// with each other and with the agent's own counters.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <random>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "common/units.h"
#include "process_util.h"

namespace gpuledger {
namespace {

namespace fs = std::filesystem;

// A port nobody listens on: bind port 0, read what the kernel chose, close.
int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

bool Has(const std::string& program) {
  return std::system(("command -v " + program + " >/dev/null 2>&1").c_str()) == 0;
}

// Allocated GPU-µs per pod from `report --by pod --format json`; "__metered__" holds the
// device's metered time.
std::map<std::string, std::int64_t> AllocatedByPod(const std::string& db) {
  int code = 0;
  std::string out = RunCapture(std::string(GPULEDGER_BIN) + " report --db " + db +
                                   " --by pod --format json", &code);
  EXPECT_EQ(code, 0) << out;
  std::map<std::string, std::int64_t> m;
  auto j = nlohmann::json::parse(out.substr(out.find('{')));
  for (const auto& row : j["rows"]) m[row["key"]] = row["allocated_gpu_us"].get<std::int64_t>();
  m["__metered__"] = j["total"]["metered_us"].get<std::int64_t>();
  return m;
}

TEST(PrometheusE2e, ScrapePrometheusAndVictoriaMetricsLedgersAgree) {
  if (!Has("prometheus") || !Has("victoria-metrics"))
    GTEST_SKIP() << "needs the Debian packages prometheus and victoria-metrics (make deps installs them)";
  const fs::path dir = fs::temp_directory_path() / ("gpuledger-prom-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string bin = GPULEDGER_BIN;
  ASSERT_TRUE(WriteFile((dir / "scenario.yaml").string(), R"(
name: prom
start: "2026-11-23T00:00:00Z"
duration: 2h
nodes:
  - {name: n1, gpu_model: A100-80GB, gpus: 1, sharing: time-slicing, replicas: 4}
workloads:
  - {namespace: ml, name: p20, compute: {profile: constant, duty: 0.2}, memory: {bytes: 4GiB}}
  - {namespace: ml, name: p30, compute: {profile: constant, duty: 0.3}, memory: {bytes: 4GiB}}
  - {namespace: web, name: p10, compute: {profile: constant, duty: 0.1}, memory: {bytes: 2GiB}}
)").ok());
  // The collectors start first, so each sees the agent from its start (its counters count from
  // zero, gpuledger_agent_start_time_seconds); the agent is stopped before the TSDBs are read,
  // so every path sees the same final counters.
  const int agent_port = FreePort();
  const std::string target = "127.0.0.1:" + std::to_string(agent_port);
  ASSERT_TRUE(WriteFile((dir / "prom.yml").string(),
                        "global: {scrape_interval: 1s}\nscrape_configs:\n  - job_name: gpuledger\n"
                        "    static_configs: [{targets: ['" + target + "']}]\n").ok());
  const int prom_port = FreePort();
  auto prometheus = std::make_unique<Child>(std::vector<std::string>{
      "/usr/bin/prometheus", "--config.file=" + (dir / "prom.yml").string(),
      "--storage.tsdb.path=" + (dir / "prom-data").string(),
      "--web.listen-address=127.0.0.1:" + std::to_string(prom_port), "--log.level=warn"},
      (dir / "prometheus.out").string());
  const int vm_port = FreePort();
  auto vm = std::make_unique<Child>(std::vector<std::string>{
      "/usr/bin/victoria-metrics", "-promscrape.config=" + (dir / "prom.yml").string(),
      "-storageDataPath=" + (dir / "vm-data").string(),
      "-httpListenAddr=127.0.0.1:" + std::to_string(vm_port), "-loggerLevel=WARN",
      "-search.latencyOffset=0s"},
      (dir / "vm.out").string());
  const int server_port = FreePort();
  auto scraper = std::make_unique<Child>(std::vector<std::string>{
      bin, "server", "--source", "scrape", "--targets", target, "--scrape-interval", "1s",
      "--ledger", "sqlite:" + (dir / "scrape.db").string(), "--listen",
      "127.0.0.1:" + std::to_string(server_port)},
      (dir / "scraper.out").string());
  std::this_thread::sleep_for(3s);

  Child node({bin, "sim", "node", "--scenario", (dir / "scenario.yaml").string(), "--node", "n1",
              "--dir", (dir / "node").string()},
             (dir / "node.out").string());
  std::string command = WaitFor((dir / "node.out").string(), std::regex("^(GPULEDGER_NVML_SCENARIO=.*)$"), 20s);
  ASSERT_FALSE(command.empty());
  command = std::regex_replace(command, std::regex("127\\.0\\.0\\.1:9400"), target);
  std::smatch env;
  ASSERT_TRUE(std::regex_search(command, env, std::regex("^(\\S+) (.*)$")));
  std::vector<std::string> argv;
  std::istringstream words(env[2].str());
  for (std::string w; words >> w;) argv.push_back(w);
  {
    Child agent(argv, (dir / "agent.out").string(), {env[1].str()});
    ASSERT_FALSE(WaitFor((dir / "agent.out").string(), std::regex("(serving)"), 20s).empty());
    std::this_thread::sleep_for(20s);
    // Freeze the counters while the agent keeps serving (its only GPU is lost), so every
    // collector's last sample holds the same final values.
    ASSERT_TRUE(WriteFile((dir / "node" / "nvml-faults").string(), "lost 0\n").ok());
    std::this_thread::sleep_for(6s);
  }
  std::this_thread::sleep_for(2s);
  scraper.reset();

  int code = 0;
  for (const auto& [name, url] : {std::pair<std::string, std::string>{"prometheus", "http://127.0.0.1:" + std::to_string(prom_port)},
                                  {"victoria-metrics", "http://127.0.0.1:" + std::to_string(vm_port)}}) {
    std::string out = RunCapture(bin + " server --source prometheus=" + url + " --backfill-only --ledger sqlite:" +
                                     (dir / (name + ".db")).string(), &code);
    ASSERT_EQ(code, 0) << name << ": " << out;
  }
  auto scraped = AllocatedByPod((dir / "scrape.db").string());
  auto via_prom = AllocatedByPod((dir / "prometheus.db").string());
  auto via_vm = AllocatedByPod((dir / "victoria-metrics.db").string());
  ASSERT_EQ(scraped.size(), 4u);
  // The truth for allocation: each pod holds one of four replicas, a quarter of what was metered
  // (rounded once per hour row).
  for (const auto* ledger : {&scraped, &via_prom, &via_vm})
    for (const auto& [pod, us] : *ledger)
      if (pod != "__metered__") {
        EXPECT_NEAR(us, ledger->at("__metered__") / 4, 2) << pod;
      }
  for (const auto& [pod, us] : scraped) {
    // The same counters from the agent's start to its last sample, read three ways: the same
    // ledger. Prometheus stores the exposition's doubles bit for bit; VictoriaMetrics keeps
    // ~12 significant digits, a microsecond or two on these figures.
    EXPECT_EQ(via_prom[pod], us) << pod;
    EXPECT_NEAR(via_vm[pod], us, 4) << pod;
    if (pod != "__metered__") {
      EXPECT_GT(us, 15 * kMicrosPerSecond / 4) << pod;
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuledger
