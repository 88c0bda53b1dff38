// `gpuledger server` and `gpuledger report --server` as real processes over HTTP.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "io/file_util.h"
#include "process_util.h"
#include "temp_dir.h"
#include "test_paths.h"

namespace gpuledger {
namespace {

namespace fs = std::filesystem;

TEST(ServerE2e, ReportThroughTheServerEqualsTheLocalReport) {
  const fs::path dir = fs::temp_directory_path() / ("gpuledger-srv-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string bin = gpuledger::test_paths::kGpuledgerBin;
  int code = 0;
  RunCapture(bin + " demo --no-serve --hours 24 --out " + (dir / "d").string(), &code);
  ASSERT_EQ(code, 0);
  const std::string db = (dir / "d" / "gpuledger.db").string();
  ASSERT_TRUE(WriteFile((dir / "token").string(), "t0ken\n").ok());
  {
    Child server({bin, "server", "--ledger", "sqlite:" + db, "--listen", "127.0.0.1:0",
                  "--token-file", (dir / "token").string()},
                 (dir / "server.out").string());
    const std::string port =
        WaitFor((dir / "server.out").string(), std::regex("http://[^:]+:(\\d+)/"), 20s);
    ASSERT_FALSE(port.empty()) << *ReadFile((dir / "server.out.err").string());
    const std::string url = "http://127.0.0.1:" + port;
    for (const std::string& args : {std::string("--by namespace --format json"),
                                    std::string("--by label:team --policy compute --format csv"),
                                    std::string("--by controller --idle share --window 12h")}) {
      std::string local = RunCapture(bin + " report --db " + db + " " + args, &code);
      ASSERT_EQ(code, 0) << local;
      std::string remote = RunCapture(bin + " report --server " + url + " --token-file " +
                                          (dir / "token").string() + " " + args,
                                      &code);
      ASSERT_EQ(code, 0) << remote;
      EXPECT_EQ(local, remote) << args;
    }
    // Issue 30: `rightsize` reads /api/v1/recommendations, the same document and table.
    for (const std::string& args :
         {std::string("--window all --format json"), std::string("--window 12h --percentile p99"),
          std::string("--window all --namespace inference --headroom 1.5")}) {
      std::string local = RunCapture(bin + " rightsize --db " + db + " " + args, &code);
      ASSERT_EQ(code, 0) << local;
      std::string remote = RunCapture(bin + " rightsize --server " + url + " --token-file " +
                                          (dir / "token").string() + " " + args,
                                      &code);
      ASSERT_EQ(code, 0) << remote;
      EXPECT_EQ(local, remote) << args;
    }
    std::string bad_headroom = RunCapture(bin + " rightsize --server " + url + " --token-file " +
                                              (dir / "token").string() + " --headroom 0.5",
                                          &code);
    EXPECT_EQ(code, 2) << bad_headroom;
    EXPECT_NE(bad_headroom.find("parameter 'headroom'"), std::string::npos) << bad_headroom;
    // Without the token: refused, clearly.
    std::string refused = RunCapture(bin + " report --server " + url, &code);
    EXPECT_NE(code, 0);
    EXPECT_NE(refused.find("401"), std::string::npos) << refused;
    // Ingesting from something that is not a Prometheus HTTP API (our own API here): a clear
    // error, exit 2, and the ledger untouched.
    std::string not_prom =
        RunCapture(bin + " server --source prometheus=" + url +
                       " --backfill-only --since 2h --ledger sqlite:" + (dir / "p.db").string(),
                   &code);
    EXPECT_EQ(code, 2) << not_prom;
    EXPECT_NE(not_prom.find("is not a Prometheus HTTP API"), std::string::npos) << not_prom;
    // A bad parameter comes back as exit 2 naming it.
    std::string bad = RunCapture(bin + " report --server " + url + " --token-file " +
                                     (dir / "token").string() + " --policy cheapest",
                                 &code);
    EXPECT_EQ(code, 2) << bad;
    EXPECT_NE(bad.find("policy"), std::string::npos) << bad;
  }
  // Nothing listening: what was tried and why it failed, not "Connection".
  std::string unreachable = RunCapture(bin + " report --server http://127.0.0.1:1 2>&1", &code);
  EXPECT_NE(code, 0);
  EXPECT_NE(unreachable.find("--server http://127.0.0.1:1: GET http://127.0.0.1:1/api/v1/report: "),
            std::string::npos)
      << unreachable;
  EXPECT_NE(unreachable.find("onnect"), std::string::npos) << unreachable;  // curl's reason
  std::string no_source =
      RunCapture(bin + " server --ledger sqlite:" + db + " --source scrape", &code);
  EXPECT_EQ(code, 2);
  EXPECT_NE(no_source.find("--source"), std::string::npos);
  fs::remove_all(dir);
}

// Issue 29's critical finding: one unauthenticated GET whose window wrapped the window's length
// appended steps until the host ran out of memory. Instants are now range-checked where they
// are parsed: the request is a 400 naming the window, answered at once, and the server serves on.
// And its port is its own, and it says which methods it answers.
TEST(ServerE2e, RefusesHostileRequestsAndASecondListenerOnItsPort) {
  const fs::path dir =
      fs::temp_directory_path() / ("gpuledger-srv-window-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string bin = gpuledger::test_paths::kGpuledgerBin;
  int code = 0;
  RunCapture(bin + " demo --no-serve --hours 2 --out " + (dir / "d").string(), &code);
  ASSERT_EQ(code, 0);
  Child server({bin, "server", "--ledger", "sqlite:" + (dir / "d" / "gpuledger.db").string(),
                "--listen", "127.0.0.1:0"},
               (dir / "server.out").string());
  const std::string port =
      WaitFor((dir / "server.out").string(), std::regex("http://[^:]+:(\\d+)/"), 20s);
  ASSERT_FALSE(port.empty()) << *ReadFile((dir / "server.out.err").string());
  httplib::Client client("127.0.0.1", std::stoi(port));
  client.set_read_timeout(5, 0);
  for (const std::string& window :
       {std::string("-9223372036854,9223372036854"), std::string("0,9223372036854"),
        std::string("-1,100"), std::string("1970-01-01T00:00:00Z,99999-01-01T00:00:00Z")}) {
    auto res = client.Get("/api/v1/allocation?window=" + window + "&step=1h");
    ASSERT_TRUE(res) << window << ": no answer within 5 s";
    EXPECT_EQ(res->status, 400) << window;
    EXPECT_NE(res->body.find("window"), std::string::npos) << res->body;
  }
  auto health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  // Any other method is a 405 saying so (it was an empty 404).
  auto post = client.Post("/api/v1/allocation", "", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->get_header_value("Allow"), "GET, HEAD");
  EXPECT_NE(post->body.find("GET only"), std::string::npos) << post->body;
  // Issue 58: a body was read and held (up to 1 MiB, for 10 s) before the token was looked at.
  // The API takes none: a request declaring one is refused when its head arrives.
  auto with_body = client.Post("/api/v1/allocation", std::string(1000, 'x'), "application/json");
  ASSERT_TRUE(with_body);
  EXPECT_EQ(with_body->status, 413);

  // Issue 29: a second server or agent on a port in use bound it too (SO_REUSEPORT) and shared
  // its connections. Both now refuse, exit 2, naming the address.
  const std::string taken = "127.0.0.1:" + port;
  std::string second =
      RunCapture(bin + " server --ledger sqlite:" + (dir / "d" / "gpuledger.db").string() +
                     " --listen " + taken + " 2>&1",
                 &code);
  EXPECT_EQ(code, 2) << second;
  EXPECT_NE(second.find("--listen '" + taken + "': port " + port + " is in use"), std::string::npos)
      << second;
  std::string agent = RunCapture(bin + " agent --node-name n1 --listen " + taken +
                                     " --nvml-library /nonexistent/libnvidia-ml.so.1"
                                     " --pod-resources-socket /nonexistent/k.sock 2>&1",
                                 &code);
  EXPECT_EQ(code, 2) << agent;
  EXPECT_NE(agent.find("--listen '" + taken + "': port " + port + " is in use"), std::string::npos)
      << agent;
  fs::remove_all(dir);
}

// Issue 58's crash (2 of 4 runs, SIGSEGV in std::_Hash_bytes on `report?window=36500d`): a
// report whose open hours were the oldest of the 16 part answers the server keeps, and whose
// first part was new, let the open hours' answer go while reading it. The probe's sequence,
// through the real binary: readers that cut large answers midway, windows of 30 to 79 hours
// (each a new first part, the same open hours: more answers than are kept), the 100-year
// windows; the server answers each and is still there.
TEST(ServerE2e, SurvivesTheHostileProbesSequence) {
  const fs::path dir =
      fs::temp_directory_path() / ("gpuledger-srv-probe-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string bin = gpuledger::test_paths::kGpuledgerBin;
  int code = 0;
  RunCapture(bin + " demo --no-serve --hours 80 --out " + (dir / "d").string(), &code);
  ASSERT_EQ(code, 0);
  const std::string db = (dir / "d" / "gpuledger.db").string();
  RunCapture(bin + " report --db " + db + " > /dev/null", &code);  // its days kept summed
  ASSERT_EQ(code, 0);
  Child server({bin, "server", "--ledger", "sqlite:" + db, "--listen", "127.0.0.1:0"},
               (dir / "server.out").string());
  const std::string port =
      WaitFor((dir / "server.out").string(), std::regex("http://[^:]+:(\\d+)/"), 20s);
  ASSERT_FALSE(port.empty()) << *ReadFile((dir / "server.out.err").string());
  httplib::Client client("127.0.0.1", std::stoi(port));
  client.set_read_timeout(30, 0);

  // Readers that take a few KiB of a large answer and hang up.
  for (int i = 0; i < 4; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(std::stoi(port)));
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    const std::string get =
        "GET /api/v1/allocation?window=all&step=1h&aggregate=container HTTP/1.1\r\nHost: t\r\n\r\n";
    ::send(fd, get.data(), get.size(), MSG_NOSIGNAL);
    char buf[4096];
    (void)::recv(fd, buf, sizeof buf, 0);
    ::close(fd);
  }
  for (int hours = 30; hours < 80; ++hours) {
    auto r = client.Get(fmt::format("/api/v1/report?aggregate=namespace&window={}h", hours));
    ASSERT_TRUE(r) << "no answer for " << hours << "h: the server died?";
    EXPECT_EQ(r->status, 200) << r->body;
  }
  for (const char* hundred_years : {"36500d", "106751d", "876000h"}) {
    auto r = client.Get(std::string("/api/v1/report?window=") + hundred_years);
    ASSERT_TRUE(r) << hundred_years << ": the server died?";
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(nlohmann::json::parse(r->body)["window"]["start"], "1970-01-01T00:00:00Z");
  }
  auto health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  fs::remove_all(dir);
}

// Opens `n` connections to `port` that each send the start of a request and then one header
// line a second (the slow clients of issue 29, finding 3), for `seconds`, on their own thread.
class SlowClients {
 public:
  SlowClients(int port, int n, int seconds) {
    for (int i = 0; i < n; ++i) {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(static_cast<std::uint16_t>(port));
      if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) ++connected_;
      ::send(fd, "GET /metrics HTTP/1.1\r\n", 23, MSG_NOSIGNAL);
      fds_.push_back(fd);
    }
    drip_ = std::thread([this, seconds] {
      for (int s = 0; s < seconds && !stop_.load(); ++s) {
        std::this_thread::sleep_for(1s);
        for (int fd : fds_) ::send(fd, "X-Slow: 1\r\n", 11, MSG_NOSIGNAL);
      }
    });
  }
  ~SlowClients() {
    stop_ = true;
    drip_.join();
    for (int fd : fds_) ::close(fd);
  }
  int connected() const { return connected_; }

 private:
  std::vector<int> fds_;
  int connected_ = 0;
  std::atomic<bool> stop_{false};
  std::thread drip_;
};

// /healthz on `port` beside 64 slow clients: the fastest of three answers (the claim is "at
// once" against "never"; one answer can meet a scheduler hiccup on a loaded CI machine).
std::chrono::milliseconds HealthzBesideSlowClients(int port) {
  SlowClients slow(port, 64, 3);
  EXPECT_EQ(slow.connected(), 64);
  std::chrono::milliseconds best(60'000);
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(500ms);
    httplib::Client probe("127.0.0.1", port);
    probe.set_read_timeout(5, 0);
    const auto start = std::chrono::steady_clock::now();
    auto r = probe.Get("/healthz");
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    EXPECT_TRUE(r && r->status == 200) << "port " << port;
    best = std::min(best, took);
  }
  return best;
}

// Issue 29, finding 3: eight connections sending one header line a second held every worker of
// the server and the agent, /healthz included. Both binaries now answer it beside 64 of them.
TEST(ServerE2e, SixtyFourSlowClientsStarveNeitherTheServerNorTheAgent) {
  testing::TempDir dir("gpuledger-srv-slow");
  const std::string bin = gpuledger::test_paths::kGpuledgerBin;
  int code = 0;
  RunCapture(bin + " demo --no-serve --hours 2 --out " + (dir.path() / "d").string(), &code);
  ASSERT_EQ(code, 0);
  Child server({bin, "server", "--ledger", "sqlite:" + (dir.path() / "d" / "gpuledger.db").string(),
                "--listen", "127.0.0.1:0"},
               (dir.path() / "server.out").string());
  Child agent({bin, "agent", "--node-name", "n1", "--listen", "127.0.0.1:0", "--nvml-library",
               "/nonexistent/libnvidia-ml.so.1", "--pod-resources-socket", "/nonexistent/k.sock"},
              (dir.path() / "agent.out").string());
  for (const char* out : {"server.out", "agent.out"}) {
    const std::string port =
        WaitFor((dir.path() / out).string(), std::regex("http://[^:]+:(\\d+)/"), 20s);
    ASSERT_FALSE(port.empty()) << *ReadFile((dir.path() / (std::string(out) + ".err")).string());
    EXPECT_LT(HealthzBesideSlowClients(std::stoi(port)), 100ms) << out;
    // The listener counts what it saw: the 64 slow connections and the probes, at least.
    httplib::Client client("127.0.0.1", std::stoi(port));
    auto metrics = client.Get("/metrics");
    ASSERT_TRUE(metrics) << out;
    const std::string prefix =
        std::string(out) == "agent.out" ? "gpuledger_agent" : "gpuledger_server";
    const std::regex accepted(prefix + "_http_connections_total (\\d+)");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(metrics->body, m, accepted)) << metrics->body.substr(0, 2000);
    EXPECT_GE(std::stoi(m[1]), 67) << out;
  }
}

// `server --source files=DIR/snapshots --backfill-only` into DIR/l.db: its output and exit code.
std::string ReplaySnapshots(const fs::path& dir, int* code) {
  return RunCapture(std::string(gpuledger::test_paths::kGpuledgerBin) +
                        " server --source files=" + (dir / "snapshots").string() +
                        " --ledger sqlite:" + (dir / "l.db").string() + " --backfill-only 2>&1",
                    code);
}

// Issue 29: an exposition whose label was not UTF-8 was ingested, and the server aborted when it
// saved its state (nlohmann type_error 316). It is now refused where it is parsed, naming the
// file, line and label; the ledger is untouched and the process exits 2, not 134.
TEST(ServerE2e, AnInvalidUtf8LabelIsRefusedNamingFileAndLine) {
  const testing::TempDir tmp("gpuledger-srv-utf8");
  const fs::path& dir = tmp.path();
  fs::create_directories(dir / "snapshots");
  ASSERT_TRUE(WriteFile((dir / "snapshots" / "10.0.0.1:9400@1764633600000.prom").string(),
                        "# TYPE gpuledger_container_allocated_gpu_seconds_total counter\n"
                        "gpuledger_container_allocated_gpu_seconds_total{namespace=\"ml\","
                        "pod=\"a\xff\",pod_uid=\"\",container=\"c\",gpu_uuid=\"GPU-1\"} 1\n")
                  .ok());
  int code = 0;
  const std::string out = ReplaySnapshots(dir, &code);
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("10.0.0.1:9400@1764633600000.prom"), std::string::npos) << out;
  EXPECT_NE(out.find("line 2: invalid UTF-8 in the value of label 'pod'"), std::string::npos)
      << out;
}

// Issue 29: snapshot names stamped in 2100, before 1970 or past 64 bits of milliseconds wrote
// every hour up to the stamp (millions of device-hours) or aborted. Each is now refused before
// anything is read, naming the file and why, exit 2.
TEST(ServerE2e, ASnapshotStampedInTheFutureOrBefore1970IsRefused) {
  const testing::TempDir tmp("gpuledger-srv-stamps");
  const fs::path& dir = tmp.path();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"n1:9400@4102444800000.prom", "stamped 2100-01-01T00:00:00Z, after the replay started"},
      {"n1:9400@-5000.prom", "-5000 ms is outside 1970-01-01 .. 9999-12-31"},
      {"n1:9400@99999999999999999999.prom", "beyond 64 bits of milliseconds"},
      {"n1:9400@253402300800000.prom", "253402300800000 ms is outside 1970-01-01 .. 9999-12-31"}};
  for (const auto& [name, why] : cases) {
    fs::remove_all(dir / "snapshots");
    fs::remove(dir / "l.db");
    fs::create_directories(dir / "snapshots");
    const std::string metric =
        "# TYPE gpuledger_device_metered_seconds_total counter\n"
        "gpuledger_device_metered_seconds_total{gpu_uuid=\"GPU-1\",node=\"n1\"} 1\n";
    ASSERT_TRUE(
        WriteFile((dir / "snapshots" / "n1:9400@1764633600000.prom").string(), metric).ok());
    ASSERT_TRUE(WriteFile((dir / "snapshots" / name).string(), metric).ok());
    int code = 0;
    const std::string out = ReplaySnapshots(dir, &code);
    EXPECT_EQ(code, 2) << name << ": " << out;
    EXPECT_NE(out.find(name + ": "), std::string::npos) << out;
    EXPECT_NE(out.find(why), std::string::npos) << out;
  }
}

// Issue 29: NaN and infinite counter samples were skipped without a count. They are still
// skipped (the last good value kept), and the replay says how many.
TEST(ServerE2e, NotFiniteCounterSamplesAreSkippedAndCounted) {
  const testing::TempDir tmp("gpuledger-srv-nan");
  const fs::path& dir = tmp.path();
  fs::create_directories(dir / "snapshots");
  const char* values[] = {"1", "NaN", "+Inf", "-3", "4"};
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(WriteFile((dir / "snapshots" /
                           ("n1:9400@" + std::to_string(1764633600000 + i * 1000) + ".prom"))
                              .string(),
                          std::string("# TYPE gpuledger_device_metered_seconds_total counter\n"
                                      "gpuledger_device_metered_seconds_total{gpu_uuid=\"GPU-1\","
                                      "node=\"n1\"} ") +
                              values[i] + "\n")
                    .ok());
  int code = 0;
  const std::string out = ReplaySnapshots(dir, &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("5 samples, 3 counter samples NaN, infinite or negative skipped"),
            std::string::npos)
      << out;
}

// A stored Prometheus cursor that is not a time is an error naming the key and its value, and
// the ledger is left as it was: never a silent backfill from 1970 (or from --since).
TEST(ServerE2e, ACorruptPrometheusCursorIsAnErrorNamingTheKey) {
  const fs::path dir =
      fs::temp_directory_path() / ("gpuledger-cursor-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string bin = gpuledger::test_paths::kGpuledgerBin;
  const std::string db = (dir / "c.db").string();
  int code = 0;
  // The server creates the ledger (and its meta table); nothing listens on port 1.
  const std::string first = RunCapture(bin + " server --source prometheus=http://127.0.0.1:1" +
                                           " --backfill-only --ledger sqlite:" + db,
                                       &code);
  ASSERT_TRUE(fs::exists(db)) << first;
  for (const char* corrupt : {"17x", "", "-5", "12"}) {
    RunCapture("sqlite3 " + db +
                   " \"INSERT OR REPLACE INTO meta(key, value) VALUES "
                   "('cluster/default/prometheus_cursor', '" +
                   corrupt + "')\"",
               &code);
    ASSERT_EQ(code, 0) << "sqlite3 CLI (apt-get install sqlite3)";
    const std::string out = RunCapture(bin + " server --source prometheus=http://127.0.0.1:1" +
                                           " --backfill-only --ledger sqlite:" + db,
                                       &code);
    EXPECT_EQ(code, 1) << out;
    EXPECT_NE(
        out.find("meta 'cluster/default/prometheus_cursor' is '" + std::string(corrupt) + "'"),
        std::string::npos)
        << out;
    EXPECT_EQ(RunCapture("sqlite3 " + db +
                             " \"SELECT value FROM meta WHERE key = "
                             "'cluster/default/prometheus_cursor'\"",
                         &code),
              std::string(corrupt) + "\n");
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuledger
