// Probes never wait: /healthz, /readyz and /metrics answer over HTTP while reports hold every
// worker inside their ledger reads, through the real HttpServer, Api and SQLite ledger.

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "cost/catalog.h"
#include "server/api.h"
#include "server/http_server.h"
#include "sim/cluster_run.h"
#include "sim/scenario.h"
#include "sim/simulator.h"

namespace gpuledger::server {
namespace {

using namespace std::chrono_literals;

constexpr char kScenario[] = R"(
name: probes
start: "2026-11-23T00:00:00Z"
duration: 6h
nodes:
  - {name: a100, gpu_model: A100-80GB, gpus: 2}
workloads:
  - {namespace: ml, name: train, node: a100, compute: {profile: constant, duty: 0.5}, memory: {bytes: 4GiB}}
)";

// Holds ReadUsage (the long part of a report) until released, at most 10 s: the report the
// probes run beside.
class Gate {
 public:
  void Enter() {
    std::unique_lock lock(mu_);
    entered_ = true;
    cv_.notify_all();
    cv_.wait_for(lock, 10s, [&] { return released_; });
  }
  bool WaitEntered() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 10s, [&] { return entered_; });
  }
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool entered_ = false, released_ = false;
};

// The real SQLite ledger, with its report reads (ReadUsage, Scan) held at the gate.
class HeldStore : public store::LedgerStore {
 public:
  HeldStore(std::unique_ptr<store::LedgerStore> real, Gate& gate)
      : real_(std::move(real)), gate_(gate) {}
  Status WriteHours(std::span<const LedgerHour> hours) override { return real_->WriteHours(hours); }
  Result<std::vector<DeviceHour>> ReadDeviceHours(const TimeRange& r) override {
    return real_->ReadDeviceHours(r);
  }
  Result<std::vector<UsageRow>> ReadUsage(const TimeRange& r) override {
    gate_.Enter();
    return real_->ReadUsage(r);
  }
  Status Scan(const TimeRange& r, store::LedgerScan& scan) override {
    gate_.Enter();
    return real_->Scan(r, scan);
  }
  Result<TimeRange> Extent() override { return real_->Extent(); }
  Result<std::int64_t> Generation() override { return real_->Generation(); }
  Status PutMeta(const std::string& k, const std::string& v) override {
    return real_->PutMeta(k, v);
  }
  Result<std::map<std::string, std::string>> ReadMeta() override { return real_->ReadMeta(); }
  Status UpdateMeta(const std::map<std::string, std::optional<std::string>>& c) override {
    return real_->UpdateMeta(c);
  }

 private:
  std::unique_ptr<store::LedgerStore> real_;
  Gate& gate_;
};

TEST(Probes, AnswerWithinAHundredMillisecondsWhileEveryWorkerHoldsAReport) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("gpuledger-probes-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "l.db").string();
  auto writer = store::OpenSqliteLedger(path);
  ASSERT_TRUE(writer) << writer.error().message;
  auto scenario = sim::ParseScenario(kScenario, "probes.yaml");
  ASSERT_TRUE(scenario) << scenario.error().message;
  sim::Simulator simulator(*scenario, 600 * kMicrosPerSecond);
  cost::Catalog catalog = cost::DefaultCatalog();
  ASSERT_TRUE(sim::BuildLedger(simulator, **writer, catalog).ok());

  Gate gate;
  Api api(
      [&]() -> Result<std::unique_ptr<store::LedgerStore>> {
        auto real = store::OpenSqliteLedger(path, {.read_only = true});
        if (!real) return real.error();
        return std::unique_ptr<store::LedgerStore>(new HeldStore(std::move(*real), gate));
      },
      "");
  auto http = HttpServer::Bind("127.0.0.1:0", api);
  ASSERT_TRUE(http) << http.error().message;
  std::thread serve([&] { (*http)->Serve(); });
  const int port = (*http)->port();
  // Whatever fails below, the report is let go and the server stopped.
  struct Cleanup {
    Gate& gate;
    HttpServer& http;
    std::thread& serve;
    ~Cleanup() {
      gate.Release();
      http.Stop();
      serve.join();
    }
  } cleanup{gate, **http, serve};

  // More reports than the server has workers (8): every worker is held, at the gate or waiting
  // for the snapshot the first one loads, and the probes still answer (issue 58: /readyz waited
  // 8 s behind 16 recommendations).
  std::vector<std::future<int>> reports;
  for (int i = 0; i < 12; ++i)
    reports.push_back(std::async(std::launch::async, [port] {
      httplib::Client c("127.0.0.1", port);
      c.set_read_timeout(30s);
      auto r = c.Get("/api/v1/report?aggregate=namespace");
      return r ? r->status : -1;
    }));
  ASSERT_TRUE(gate.WaitEntered()) << "the report never reached the ledger";
  std::this_thread::sleep_for(300ms);  // the others reach their workers

  httplib::Client probe("127.0.0.1", port);
  probe.set_read_timeout(2s);
  for (const char* path : {"/healthz", "/readyz", "/metrics", "/healthz"}) {
    const auto start = std::chrono::steady_clock::now();
    auto r = probe.Get(path);
    const auto took = std::chrono::steady_clock::now() - start;
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path << ": " << r->body;
    EXPECT_LT(took, 100ms) << path << " waited for the report";
    if (std::string(path) == "/metrics") {
      EXPECT_NE(r->body.find("gpuledger_server_ledger_up 1"), std::string::npos) << r->body;
    }
  }
  for (auto& report : reports)
    EXPECT_EQ(report.wait_for(0s), std::future_status::timeout) << "a report was not held";
  gate.Release();
  for (auto& report : reports) EXPECT_EQ(report.get(), 200);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpuledger::server
