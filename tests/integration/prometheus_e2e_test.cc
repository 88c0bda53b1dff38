// The distributed path end to end: a simulated node with a real agent, scraped by a real
// Prometheus and a real VictoriaMetrics; the server ingests once by scraping the agent itself
// and once from each TSDB through its HTTP API (raw samples, exact deltas). The ledgers agree
// with each other and with the agent's own counters, and each container's compute with the
// simulator's truth (`gpuledger-sim-node --truth-log`) over the interval the agent measured.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <sstream>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "common/units.h"
#include "free_port.h"
#include "io/file_util.h"
#include "process_util.h"
#include "ingest/token_ledger.h"
#include "store/ledger_store.h"
#include "temp_dir.h"
#include "test_paths.h"

namespace gpuledger {
namespace {

namespace fs = std::filesystem;

using gpuledger::testing::FreePort;

bool Has(const std::string& program) {
  return std::system(("command -v " + program + " >/dev/null 2>&1").c_str()) == 0;
}

// Allocated GPU-µs per pod from `report --by pod --format json`; "__metered__" holds the
// device's metered time.
std::map<std::string, std::int64_t> AllocatedByPod(const std::string& db) {
  int code = 0;
  std::string out = RunCapture(std::string(gpuledger::test_paths::kGpuledgerBin) + " report --db " +
                                   db + " --by pod --format json",
                               &code);
  EXPECT_EQ(code, 0) << out;
  std::map<std::string, std::int64_t> m;
  auto j = nlohmann::json::parse(out.substr(out.find('{')));
  for (const auto& row : j["rows"]) m[row["key"]] = row["allocated_gpu_us"].get<std::int64_t>();
  m["__metered__"] = j["total"]["metered_us"].get<std::int64_t>();
  return m;
}

// Compute GPU-µs per container from `report --by container --format json`.
std::map<std::string, std::int64_t> ComputeByContainer(const std::string& db) {
  int code = 0;
  std::string out = RunCapture(std::string(gpuledger::test_paths::kGpuledgerBin) + " report --db " +
                                   db + " --by container --format json",
                               &code);
  EXPECT_EQ(code, 0) << out;
  std::map<std::string, std::int64_t> m;
  auto j = nlohmann::json::parse(out.substr(out.find('{')));
  for (const auto& row : j["rows"]) m[row["key"]] = row["compute_gpu_us"].get<std::int64_t>();
  return m;
}

// `gpuledger-sim-node --truth-log`: per container, (interval end, cumulative true compute GPU-µs).
using TruthLog = std::map<std::string, std::vector<std::pair<Micros, double>>>;
TruthLog ReadTruthLog(const std::string& path) {
  TruthLog log;
  auto text = ReadFile(path);
  EXPECT_TRUE(text.ok()) << path;
  std::istringstream in(text.ok() ? *text : "");
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "at_unix_us,key,allocated_gpu_us,compute_gpu_us,memory_byte_us");
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::istringstream row(line);
    for (std::string cell; std::getline(row, cell, ',');) f.push_back(cell);
    if (f.size() != 5) continue;
    log[f[1]].emplace_back(std::stoll(f[0]), std::stod(f[3]));
  }
  return log;
}

// The truth as of the last interval that ended at or before `t` (0 before any).
double TruthAt(const std::vector<std::pair<Micros, double>>& rows, Micros t) {
  double v = 0;
  for (const auto& [at, compute] : rows)
    if (at <= t) v = compute;
  return v;
}

// The window an agent measured, from its own exposition: its counters began at its start
// (its first NVML reading, the baseline) and metered monotonic time until its last reading.
struct Measured {
  Micros start_us = 0, end_us = 0;
};
Measured MeasuredWindow(const std::string& target) {
  httplib::Client client("http://" + target);
  auto res = client.Get("/metrics");
  EXPECT_TRUE(res && res->status == 200) << target;
  double start_s = 0, metered_s = 0;
  std::istringstream in(res ? res->body : "");
  for (std::string line; std::getline(in, line);) {
    const auto space = line.rfind(' ');
    if (line.empty() || line[0] == '#' || space == std::string::npos) continue;
    const double v = std::stod(line.substr(space + 1));
    if (line.starts_with("gpuledger_agent_start_time_seconds ")) start_s = v;
    if (line.starts_with("gpuledger_device_metered_seconds_total{")) metered_s += v;
  }
  const Micros start = std::llround(start_s * 1e6);
  return {start, start + std::llround(metered_s * 1e6)};
}

TEST(PrometheusE2e, ScrapePrometheusAndVictoriaMetricsLedgersAgree) {
  if (!Has("prometheus") || !Has("victoria-metrics"))
    GTEST_SKIP()
        << "needs the Debian packages prometheus and victoria-metrics (make deps installs them)";
  // Removed last, after Prometheus, VictoriaMetrics and the nodes writing into it have stopped.
  const testing::TempDir temp("gpuledger-prom");
  const fs::path& dir = temp.path();
  const std::string bin = gpuledger::test_paths::kGpuledgerBin;
  ASSERT_TRUE(WriteFile((dir / "scenario.yaml").string(), R"(
name: prom
start: "2026-11-23T00:00:00Z"
duration: 2h
nodes:
  - {name: n1, gpu_model: A100-80GB, gpus: 1, sharing: time-slicing, replicas: 4}
  - {name: n2, gpu_model: H100-80GB, gpus: 1, sharing: time-slicing, replicas: 4}
  - {name: n3, gpu_model: L4, gpus: 1, sharing: time-slicing, replicas: 4}
workloads:
  - {namespace: ml, name: p20, node: n1, compute: {profile: constant, duty: 0.2}, memory: {bytes: 4GiB}}
  - {namespace: web, name: p25, node: n1, compute: {profile: constant, duty: 0.25}, memory: {bytes: 2GiB}}
  - {namespace: ml, name: p30, node: n2, compute: {profile: constant, duty: 0.3}, memory: {bytes: 4GiB}}
  - {namespace: ml, name: p40, node: n2, compute: {profile: constant, duty: 0.4}, memory: {bytes: 4GiB}}
  - {namespace: web, name: p50, node: n3, compute: {profile: constant, duty: 0.5}, memory: {bytes: 2GiB}}
  - {namespace: web, name: p35, node: n3, compute: {profile: constant, duty: 0.35}, memory: {bytes: 1GiB}}
)")
                  .ok());
  // Duties of 0.2 and more: the simulator gives each device sample NVML's noise (about +-1.3
  // percentage points), so over a 20 s run a node's busy time (two pods, 0.45 and more) has a
  // standard deviation well under 1%: the 2% bound below holds by several deviations. Small
  // duties are the demo's, over hours.
  // Three simulated nodes with real agents. The collectors start first, so each sees every
  // agent from its start (its counters count from zero, gpuledger_agent_start_time_seconds);
  // the counters are frozen before the TSDBs are read, so every path sees the same final values.
  const std::vector<std::string> nodes = {"n1", "n2", "n3"};
  std::vector<std::string> targets;
  std::string target_list, yaml_targets;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    targets.push_back("127.0.0.1:" + std::to_string(FreePort()));
    target_list += (i ? "," : "") + targets.back();
    yaml_targets += (i ? ", '" : "'") + targets.back() + "'";
  }
  ASSERT_TRUE(WriteFile((dir / "prom.yml").string(),
                        "global: {scrape_interval: 1s}\nscrape_configs:\n  - job_name: gpuledger\n"
                        "    static_configs: [{targets: [" +
                            yaml_targets + "]}]\n")
                  .ok());
  const int prom_port = FreePort();
  auto prometheus = std::make_unique<Child>(
      std::vector<std::string>{
          "/usr/bin/prometheus", "--config.file=" + (dir / "prom.yml").string(),
          "--storage.tsdb.path=" + (dir / "prom-data").string(),
          "--web.listen-address=127.0.0.1:" + std::to_string(prom_port), "--log.level=warn"},
      (dir / "prometheus.out").string());
  const int vm_port = FreePort();
  auto vm = std::make_unique<Child>(
      std::vector<std::string>{"/usr/bin/victoria-metrics",
                               "-promscrape.config=" + (dir / "prom.yml").string(),
                               "-storageDataPath=" + (dir / "vm-data").string(),
                               "-httpListenAddr=127.0.0.1:" + std::to_string(vm_port),
                               "-loggerLevel=WARN", "-search.latencyOffset=0s"},
      (dir / "vm.out").string());
  const int server_port = FreePort();
  auto scraper = std::make_unique<Child>(
      std::vector<std::string>{bin, "server", "--source", "scrape", "--targets", target_list,
                               "--scrape-interval", "1s", "--ledger",
                               "sqlite:" + (dir / "scrape.db").string(), "--listen",
                               "127.0.0.1:" + std::to_string(server_port)},
      (dir / "scraper.out").string());
  std::this_thread::sleep_for(3s);

  std::vector<std::unique_ptr<Child>> sim_nodes, agents;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const std::string& n = nodes[i];
    // A 100 ms stand-in step: an agent's window is known to a step, 0.4% of this run.
    sim_nodes.push_back(std::make_unique<Child>(
        std::vector<std::string>{gpuledger::test_paths::kSimNodeBin, "--scenario",
                                 (dir / "scenario.yaml").string(), "--node", n, "--dir",
                                 (dir / n).string(), "--standin-step", "100ms", "--truth",
                                 (dir / (n + "-truth.csv")).string(), "--truth-log",
                                 (dir / (n + "-truth-log.csv")).string()},
        (dir / (n + ".out")).string()));
    std::string command =
        WaitFor((dir / (n + ".out")).string(), std::regex("^(GPULEDGER_NVML_SCENARIO=.*)$"), 20s);
    ASSERT_FALSE(command.empty());
    command = std::regex_replace(command, std::regex("127\\.0\\.0\\.1:9400"), targets[i]);
    const PrintedCommand printed = SplitPrintedCommand(command);
    ASSERT_FALSE(printed.argv.empty()) << command;
    std::vector<std::string> argv = printed.argv;
    agents.push_back(std::make_unique<Child>(argv, (dir / (n + "-agent.out")).string(),
                                             std::vector<std::string>{printed.env}));
    ASSERT_FALSE(
        WaitFor((dir / (n + "-agent.out")).string(), std::regex("(serving)"), 20s).empty());
  }
  std::this_thread::sleep_for(20s);
  // Freeze the counters while the agents keep serving (their only GPU is lost), so every
  // collector's last samples hold the same final values.
  for (const std::string& n : nodes)
    ASSERT_TRUE(WriteFile((dir / n / "nvml-faults").string(), "lost 0\n").ok());
  std::this_thread::sleep_for(6s);
  std::vector<Measured> measured;
  for (const std::string& target : targets) measured.push_back(MeasuredWindow(target));
  agents.clear();
  std::this_thread::sleep_for(2s);
  scraper.reset();

  int code = 0;
  for (const auto& [name, url] :
       {std::pair<std::string, std::string>{"prometheus",
                                            "http://127.0.0.1:" + std::to_string(prom_port)},
        {"victoria-metrics", "http://127.0.0.1:" + std::to_string(vm_port)}}) {
    std::string out =
        RunCapture(bin + " server --source prometheus=" + url +
                       " --backfill-only --ledger sqlite:" + (dir / (name + ".db")).string(),
                   &code);
    ASSERT_EQ(code, 0) << name << ": " << out;
  }
  auto scraped = AllocatedByPod((dir / "scrape.db").string());
  auto via_prom = AllocatedByPod((dir / "prometheus.db").string());
  auto via_vm = AllocatedByPod((dir / "victoria-metrics.db").string());
  ASSERT_EQ(scraped.size(), 7u);  // six pods and the metered total
  // The truth for allocation: each pod holds one of its GPU's four replicas and every GPU has
  // two pods, so the pods together hold half of what was metered (rounded once per hour row).
  for (const auto* ledger : {&scraped, &via_prom, &via_vm}) {
    std::int64_t allocated = 0;
    for (const auto& [pod, us] : *ledger)
      if (pod != "__metered__") allocated += us;
    EXPECT_NEAR(allocated, ledger->at("__metered__") / 2, 12);
  }
  for (const auto& [pod, us] : scraped) {
    // The same counters from the agent's start to its last sample, read three ways: the same
    // ledger. Prometheus stores the exposition's doubles bit for bit; VictoriaMetrics keeps
    // ~12 significant digits, a microsecond or two on these figures. (A run that straddles an
    // hour boundary splits the first interval at different sample instants per path: per-row
    // rounding then moves a microsecond, hence the tolerance of 2.)
    EXPECT_NEAR(via_prom[pod], us, 2) << pod;
    EXPECT_NEAR(via_vm[pod], us, 6) << pod;
    if (pod != "__metered__") {
      EXPECT_GT(us, 15 * kMicrosPerSecond / 4) << pod;
    }
  }

  // Compute against the simulator's truth over what each agent measured: the stand-in's
  // intervals that ended after the agent's first reading and by its last (their samples are the
  // ones it counted). Per node, the two pods together within 2% of it in each ledger, however it
  // got the counters (the device's busy time is right); each pod's own part is NVML's draw (each
  // sample window goes whole to one process, as on a real GPU), so the three ledgers are held
  // to agree on it with one another instead.
  sim_nodes.clear();  // each writes its --truth on exit
  const std::vector<std::map<std::string, std::int64_t>> compute = {
      ComputeByContainer((dir / "scrape.db").string()),
      ComputeByContainer((dir / "prometheus.db").string()),
      ComputeByContainer((dir / "victoria-metrics.db").string())};
  int compared = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const std::string& n = nodes[i];
    const Measured w = measured[i];
    ASSERT_GT(w.end_us - w.start_us, 15 * kMicrosPerSecond) << n;
    const TruthLog log = ReadTruthLog((dir / (n + "-truth-log.csv")).string());
    ASSERT_EQ(log.size(), 2u) << n;  // the node's two pods
    double node_truth = 0;
    std::vector<double> node_ledgers(compute.size(), 0);
    for (const auto& [key, rows] : log) {
      const double truth = TruthAt(rows, w.end_us) - TruthAt(rows, w.start_us);
      ASSERT_GT(truth, 0.19 * 15 * kMicrosPerSecond) << key;  // every pod has a duty >= 0.2
      node_truth += truth;
      for (std::size_t l = 0; l < compute.size(); ++l) {
        ASSERT_TRUE(compute[l].count(key)) << key;
        node_ledgers[l] += static_cast<double>(compute[l].at(key));
        EXPECT_NEAR(compute[l].at(key), compute[0].at(key), 6) << key;
      }
      ++compared;
    }
    // The window is read from the agent's exposition: its start stamp and its metered time,
    // both placed by its 1 s cycles. On a loaded machine (ctest -j2 beside another e2e test) its
    // ends can sit most of a cycle off the stand-in's interval ends (seen once: +0.377 s on 9 s),
    // so the truth is held to 2% plus one cycle of the node's mean busy rate. The three ledgers
    // are held to each other within 6 µs above, which is what this test is for.
    const double cycle_s = 1.0;
    const double rate = node_truth / static_cast<double>(w.end_us - w.start_us);
    const double tolerance = 0.02 * node_truth + rate * cycle_s * kMicrosPerSecond;
    for (double ledger : node_ledgers) EXPECT_NEAR(ledger, node_truth, tolerance) << n;
    // --truth is the same truth as a whole at the node's stop: demo --truth's CSV, every pod, at
    // least what ran in the measured window.
    auto csv = ReadFile((dir / (n + "-truth.csv")).string());
    ASSERT_TRUE(csv.ok()) << n;
    EXPECT_TRUE(csv->starts_with("key,allocated_gpu_us,compute_gpu_us,memory_byte_us\n")) << *csv;
    for (const auto& [key, rows] : log) {
      const auto at = csv->find("\n" + key + ",");
      ASSERT_NE(at, std::string::npos) << key;
      std::istringstream row(csv->substr(at + 1));
      std::string k, allocated, compute;
      std::getline(row, k, ',');
      std::getline(row, allocated, ',');
      std::getline(row, compute, ',');
      EXPECT_GE(std::stod(compute), rows.back().second) << key;
    }
  }
  EXPECT_EQ(compared, 6);
}

// A real Prometheus over data written with promtool from OpenMetrics text (in DIR/data),
// serving on *port after a start-up wait; null when promtool refuses the text (its output is in
// DIR/promtool.out).
std::unique_ptr<Child> PrometheusOver(const fs::path& dir, const std::string& openmetrics,
                                      int* port) {
  if (!WriteFile((dir / "in.om").string(), openmetrics).ok()) return nullptr;
  int code = 0;
  std::string made = RunCapture("promtool tsdb create-blocks-from openmetrics " +
                                    (dir / "in.om").string() + " " + (dir / "data").string(),
                                &code);
  (void)WriteFile((dir / "promtool.out").string(), made);
  if (code != 0) return nullptr;
  *port = FreePort();
  auto prometheus = std::make_unique<Child>(
      std::vector<std::string>{"/usr/bin/prometheus", "--config.file=/dev/null",
                               "--storage.tsdb.path=" + (dir / "data").string(),
                               "--web.listen-address=127.0.0.1:" + std::to_string(*port),
                               "--log.level=warn"},
      (dir / "prometheus.out").string());
  std::this_thread::sleep_for(4s);
  return prometheus;
}

// `gpuledger server --source prometheus=http://127.0.0.1:PORT --backfill-only --since 10h
// FLAGS` into DIR/l.db, and the ledger it wrote; null, with the server's output as the test's
// failure, when it fails.
std::unique_ptr<store::LedgerStore> BackfillFromPrometheus(const fs::path& dir, int port,
                                                           const std::string& flags = "") {
  int code = 0;
  const std::string db = (dir / "l.db").string();
  const std::string out =
      RunCapture(std::string(gpuledger::test_paths::kGpuledgerBin) +
                     " server --source prometheus=http://127.0.0.1:" + std::to_string(port) +
                     " --backfill-only --since 10h " + flags + " --ledger sqlite:" + db,
                 &code);
  if (code != 0) {
    ADD_FAILURE() << out;
    return nullptr;
  }
  auto ledger = store::OpenSqliteLedger(db);
  if (!ledger) {
    ADD_FAILURE() << ledger.error().message;
    return nullptr;
  }
  return std::move(*ledger);
}

// A 3-hour hole in Prometheus's data, made with promtool from OpenMetrics, then read back hour
// by hour: totals are exact, and a hole is unmetered exactly where the agent did not count.
//   - agent "a" kept counting through the outage (its counters jumped): the counters prove the
//     time was metered, so the hole's hours are metered and only the placement of usage inside
//     the hole is by time;
//   - agent "b" restarted at the end of the outage (its counters fell back): the hole is
//     unmetered, but for the time since its restart.
TEST(PrometheusE2e, ThreeHourOutageKeepsExactTotals) {
  if (!Has("prometheus") || !Has("promtool"))
    GTEST_SKIP() << "needs the Debian package prometheus (make deps installs it)";
  const fs::path dir =
      fs::temp_directory_path() / ("gpuledger-outage-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::int64_t now_s = std::chrono::duration_cast<std::chrono::seconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
  const std::int64_t t0 = (now_s - 8 * 3600) / 3600 * 3600;  // an hour boundary, 8 h ago
  std::vector<std::int64_t> times;
  for (int i = 0; i <= 6 * 60; ++i)
    if (i < 60 || i >= 240) times.push_back(t0 + i * 60);  // nothing from +1 h to +4 h
  // Per agent: counter value at time t (b restarts at +4 h: its counters start again at 0).
  auto metered = [&](const std::string& agent, std::int64_t t) -> double {
    if (agent == "b" && t >= t0 + 4 * 3600) return static_cast<double>(t - (t0 + 4 * 3600) + 30);
    return 100.0 + static_cast<double>(t - t0);
  };
  std::string om = "# TYPE gpuledger_device_info gauge\n";
  for (const std::string agent : {"a", "b"})
    for (auto t : times)
      om += fmt::format(
          "gpuledger_device_info{{gpu_model=\"A100-80GB\",gpu_uuid=\"GPU-{0}\",instance=\"{0}:"
          "9400\",job=\"gpuledger\",node=\"n-{0}\",sharing_mode=\"time-slicing\"}} 1 {1}\n",
          agent, t);
  for (const auto& [family, share] :
       {std::pair<std::string, double>{"gpuledger_device_metered_seconds", 1.0},
        {"gpuledger_container_allocated_gpu_seconds", 0.25}}) {
    om += "# TYPE " + family + " counter\n";
    for (const std::string agent : {"a", "b"})
      for (auto t : times) {
        std::string labels = family.find("container") != std::string::npos
                                 ? fmt::format(
                                       "container=\"main\",gpu_uuid=\"GPU-{0}\",namespace=\"ml\","
                                       "pod=\"p-{0}\",pod_uid=\"u-{0}\",",
                                       agent)
                                 : fmt::format("gpu_uuid=\"GPU-{0}\",", agent);
        om += fmt::format("{}_total{{{}instance=\"{}:9400\",job=\"gpuledger\"}} {} {}\n", family,
                          labels, agent, share * metered(agent, t), t);
      }
  }
  om += "# EOF\n";
  int port = 0;
  auto prometheus = PrometheusOver(dir, om, &port);
  ASSERT_TRUE(prometheus) << "promtool could not make blocks: "
                          << *ReadFile((dir / "promtool.out").string());
  auto ledger = BackfillFromPrometheus(dir, port);
  ASSERT_TRUE(ledger);
  auto devices = ledger->ReadDeviceHours({});
  ASSERT_TRUE(devices) << devices.error().message;
  std::map<std::string, std::map<int, std::pair<std::int64_t, std::int64_t>>>
      hours;  // gpu -> h -> (metered, unmetered)
  for (const gpuledger::DeviceHour& d : *devices) {
    const auto h = static_cast<int>(d.hour_us / gpuledger::kMicrosPerHour - t0 / 3600);
    hours[d.gpu.str()][h] = {d.metered_us, d.unmetered_us};
  }
  // Agent a: 6 hours, all metered (the first minute is the baseline's, spread like the rest).
  std::int64_t a_total = 0;
  for (const auto& [h, mu] : hours["GPU-a"]) a_total += mu.first;
  EXPECT_EQ(a_total, (metered("a", times.back()) - metered("a", times.front())) * kMicrosPerSecond);
  for (int h = 1; h <= 3; ++h) EXPECT_EQ(hours["GPU-a"][h].first, kMicrosPerHour) << h;
  // Agent b: the outage hours are unmetered, except the 30 s it had been up (restarted at
  // +4 h - 30 s, its counters say) when its first sample after the hole came.
  for (int h = 1; h <= 2; ++h) {
    EXPECT_EQ(hours["GPU-b"][h].first, 0) << h;
    EXPECT_EQ(hours["GPU-b"][h].second, kMicrosPerHour) << h;
  }
  EXPECT_EQ(hours["GPU-b"][3].first, 30 * kMicrosPerSecond);
  EXPECT_EQ(hours["GPU-b"][3].second, kMicrosPerHour - 30 * kMicrosPerSecond);
  EXPECT_EQ(hours["GPU-b"][4].first, kMicrosPerHour);
  // Allocation: exactly a quarter of whatever was metered, per pod.
  int code = 0;
  std::string pods = RunCapture(std::string(gpuledger::test_paths::kGpuledgerBin) +
                                    " report --db " + (dir / "l.db").string() +
                                    " --by pod --format json",
                                &code);
  auto j = nlohmann::json::parse(pods);
  std::int64_t b_total = 0;
  for (const auto& [h, mu] : hours["GPU-b"]) b_total += mu.first;
  for (const auto& row : j["rows"]) {
    const std::int64_t want = (row["key"] == "ml/p-a" ? a_total : b_total) / 4;
    EXPECT_NEAR(row["allocated_gpu_us"].get<std::int64_t>(), want, 8) << row["key"];
  }
  fs::remove_all(dir);
}

// dcgm-exporter scraped by the same Prometheus: `--dcgm-from-prometheus` fills the activity of
// rows that came without (an agent run without GPM or --dcgm-exporter) from the hour's average
// of its profiling gauges, estimated. Written with promtool, read back by a real Prometheus.
TEST(PrometheusE2e, DcgmExporterSeriesFillActivityThroughPrometheus) {
  if (!Has("prometheus") || !Has("promtool"))
    GTEST_SKIP() << "needs the Debian package prometheus (make deps installs it)";
  const fs::path dir =
      fs::temp_directory_path() / ("gpuledger-dcgm-prom-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::int64_t now_s = std::chrono::duration_cast<std::chrono::seconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
  const std::int64_t t0 = (now_s - 4 * 3600) / 3600 * 3600;  // an hour boundary, 4 h ago
  std::vector<std::int64_t> times;
  for (int i = 0; i <= 2 * 60; ++i) times.push_back(t0 + i * 60);
  const std::string agent = "instance=\"a:9400\",job=\"gpuledger\"";
  const std::string pod =
      "container=\"main\",gpu_uuid=\"GPU-a\",namespace=\"ml\",pod=\"p\",pod_uid=\"u\",";
  std::string om = "# TYPE gpuledger_device_info gauge\n";
  for (auto t : times)
    om += fmt::format(
        "gpuledger_device_info{{gpu_model=\"A100-80GB\",gpu_uuid=\"GPU-a\",{},node=\"n\",sharing_"
        "mode=\"exclusive\"}} 1 {}\n",
        agent, t);
  for (const auto& [family, labels, rate] :
       {std::tuple<std::string, std::string, double>{"gpuledger_device_metered_seconds",
                                                     "gpu_uuid=\"GPU-a\",", 1.0},
        {"gpuledger_device_busy_seconds", "gpu_uuid=\"GPU-a\",", 0.5},
        {"gpuledger_container_allocated_gpu_seconds", pod, 1.0},
        {"gpuledger_container_compute_gpu_seconds", pod, 0.5}}) {
    om += "# TYPE " + family + " counter\n";
    for (auto t : times)
      om += fmt::format("{}_total{{{}{}}} {} {}\n", family, labels, agent,
                        rate * static_cast<double>(t - t0), t);
  }
  // dcgm-exporter's gauges for the same GPU: SM active 30%, occupancy 10%, tensor 20%, DRAM 40%.
  for (const auto& [field, value] : {std::pair<std::string, double>{"DCGM_FI_PROF_SM_ACTIVE", 0.3},
                                     {"DCGM_FI_PROF_SM_OCCUPANCY", 0.1},
                                     {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 0.2},
                                     {"DCGM_FI_PROF_DRAM_ACTIVE", 0.4}}) {
    om += "# TYPE " + field + " gauge\n";
    for (auto t : times)
      om += fmt::format("{}{{UUID=\"GPU-a\",gpu=\"0\",instance=\"n:9400\",job=\"dcgm\"}} {} {}\n",
                        field, value, t);
  }
  om += "# EOF\n";
  int port = 0;
  auto prometheus = PrometheusOver(dir, om, &port);
  ASSERT_TRUE(prometheus) << "promtool could not make blocks: "
                          << *ReadFile((dir / "promtool.out").string());
  int code = 0;
  auto activity_of = [&](const std::string& flags) {
    const std::string db = (dir / ("l" + std::to_string(flags.size()) + ".db")).string();
    std::string out =
        RunCapture(std::string(gpuledger::test_paths::kGpuledgerBin) +
                       " server --source prometheus=http://127.0.0.1:" + std::to_string(port) +
                       " --backfill-only --since 6h " + flags + " --ledger sqlite:" + db,
                   &code);
    EXPECT_EQ(code, 0) << out;
    std::string report = RunCapture(std::string(gpuledger::test_paths::kGpuledgerBin) +
                                        " report --db " + db + " --by pod --format json",
                                    &code);
    auto j = nlohmann::json::parse(report.substr(report.find('{')));
    for (const auto& row : j["rows"])
      if (row["key"] == "ml/p") return row["activity"];
    ADD_FAILURE() << report;
    return nlohmann::json{};
  };
  EXPECT_EQ(activity_of("")["source"], "none");
  auto a = activity_of("--dcgm-from-prometheus");
  // The pod is alone on the GPU: each fraction x the 2 metered hours.
  const double metered_us = 7200.0 * kMicrosPerSecond;
  EXPECT_NEAR(a["sm_active_gpu_us"].get<double>(), 0.3 * metered_us, 2);
  EXPECT_NEAR(a["sm_occupancy_gpu_us"].get<double>(), 0.1 * metered_us, 2);
  EXPECT_NEAR(a["tensor_active_gpu_us"].get<double>(), 0.2 * metered_us, 2);
  EXPECT_NEAR(a["dram_active_gpu_us"].get<double>(), 0.4 * metered_us, 2);
  EXPECT_EQ(a["source"], "estimated:dcgm-exporter+prometheus-hourly");
  fs::remove_all(dir);
}

// An inference engine scraped by Prometheus (its series labelled as a PodMonitor labels them,
// and the pod's uid relabelled in), written with promtool, read back by a real Prometheus: the
// server's `--source prometheus=URL` books the token hours the server's own scrapes of the same
// counters book (a TokenLedger fed them here), through a restart of the engine.
TEST(PrometheusE2e, EngineTokensThroughPrometheusAreTheScrapePathsRows) {
  if (!Has("prometheus") || !Has("promtool"))
    GTEST_SKIP() << "needs the Debian package prometheus (make deps installs it)";
  const testing::TempDir temp("gpuledger-prom-tokens");
  const fs::path& dir = temp.path();
  const std::int64_t now_s = std::chrono::duration_cast<std::chrono::seconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
  const std::int64_t t0 = (now_s - 8 * 3600) / 3600 * 3600 + 1800;  // 8 h ago, mid-hour
  // A scrape a minute for 5 hours; the engine restarts 3 hours in (its counters start again).
  auto prompt = [&](int i) { return i < 180 ? 1000 + 100 * i : 50 + 100 * (i - 180); };
  auto generated = [&](int i) { return i < 180 ? 10 * i : 5 + 10 * (i - 180); };
  const char* labels =
      "container=\"server\",engine=\"0\",instance=\"10.0.0.9:8000\",job=\"llm/vllm\","
      "model_name=\"m-7b\",namespace=\"llm\",pod=\"vllm-0\",uid=\"u-0\"";
  std::string om = "# TYPE vllm:prompt_tokens counter\n";
  for (int i = 0; i <= 300; ++i)
    om += fmt::format("vllm:prompt_tokens_total{{{}}} {} {}\n", labels, prompt(i), t0 + 60 * i);
  om += "# TYPE vllm:generation_tokens counter\n";
  for (int i = 0; i <= 300; ++i)
    om += fmt::format("vllm:generation_tokens_total{{{}}} {} {}\n", labels, generated(i),
                      t0 + 60 * i);
  om += "# EOF\n";
  int port = 0;
  auto prometheus = PrometheusOver(dir, om, &port);
  ASSERT_TRUE(prometheus) << "promtool could not make blocks: "
                          << *ReadFile((dir / "promtool.out").string());
  auto ledger = BackfillFromPrometheus(dir, port, "--cluster c1");
  ASSERT_TRUE(ledger);
  auto rows = ledger->ReadTokenHours({INT64_MIN, INT64_MAX});
  ASSERT_TRUE(rows) << rows.error().message;
  // The scrape path: the engine's own /metrics at each minute, fed to the token engine.
  ingest::TokenLedger scraped("c1");
  const ConsumerRef pod{"llm", "vllm-0", PodUid("u-0"), "server"};
  for (int i = 0; i <= 300; ++i)
    scraped.Feed({pod, "", (t0 + 60 * i) * kMicrosPerSecond,
                  {{"vllm:prompt_tokens_total", {{"engine", "0"}, {"model_name", "m-7b"}},
                    static_cast<double>(prompt(i))},
                   {"vllm:generation_tokens_total", {{"engine", "0"}, {"model_name", "m-7b"}},
                    static_cast<double>(generated(i))}}});
  EXPECT_EQ(*rows, scraped.Hours(INT64_MAX));
  std::int64_t input = 0;
  for (const TokenHour& r : *rows) input += r.input_tokens;
  EXPECT_EQ(input, (prompt(179) - prompt(0)) + prompt(180) + (prompt(300) - prompt(180)));
}

}  // namespace
}  // namespace gpuledger
