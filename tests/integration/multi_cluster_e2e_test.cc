// Issue 64, many clusters in one ledger, through the real binaries: three simulated clusters
// (time-slicing and exclusive; MIG and MPS; fractional), each written to a private SQLite ledger
// by `gpuledger demo`, which also writes its agents' collections; three `gpuledger server`
// processes then replay them into one throwaway PostgreSQL ledger at once, one of them stopped
// halfway and started again; a fourth server, read-only, answers for all three. Each cluster's
// figures in the shared ledger are its private ledger's, to the nano; the shared totals are
// their sum. Skips, saying so, without a PostgreSQL server (GPULEDGER_TEST_POSTGRES).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "io/file_util.h"
#include "process_util.h"
#include "store/sqlite_schema.h"
#include "store_test_env/store_test_env.h"
#include "temp_dir.h"
#include "test_paths.h"

namespace gpuledger {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The three clusters: the same day, different GPUs, sharing modes and namespaces (a namespace
// is one cluster's, so a report by namespace names each row's cluster).
constexpr std::string_view kHeader = R"(start: "2026-11-23T00:00:00Z"
duration: 8h
)";
const std::map<std::string, std::string> kClusters = {
    {"eu-train", R"(seed: 1
nodes:
  - {name: h100-0, gpu_model: H100-80GB, gpus: 2, sharing: exclusive}
  - {name: a100-ts-0, gpu_model: A100-80GB, gpus: 1, sharing: time-slicing, replicas: 4}
workloads:
  - {namespace: train, name: llm, node: h100-0, gpus: 2, compute: {profile: constant, duty: 0.8}, memory: {bytes: 60GiB}}
  - {namespace: notebooks, name: nb, node: a100-ts-0, replicas: 3, start: 1h, end: 6h30m, compute: {profile: bursty, mean_duty: 0.2, burst: 10m}, memory: {bytes: 6GiB}}
)"},
    {"us-infer", R"(seed: 2
nodes:
  - {name: h200-mig-0, gpu_model: H200-141GB, gpus: 1, sharing: mig, mig_layout: [3g.71gb, 2g.35gb, 1g.18gb]}
  - {name: l4-mps-0, gpu_model: L4, gpus: 1, sharing: mps, replicas: 4}
workloads:
  - {namespace: serving, name: chat, mig_profile: 3g.71gb, compute: {profile: periodic, period: 1h, on: 40m, duty: 0.6}, memory: {bytes: 40GiB}}
  - {namespace: serving, name: embed, mig_profile: 1g.18gb, start: 2h, compute: {profile: constant, duty: 0.3}, memory: {bytes: 8GiB}}
  - {namespace: speech, name: asr, node: l4-mps-0, replicas: 2, compute: {profile: constant, duty: 0.25}, memory: {bytes: 4GiB}}
)"},
    {"onprem", R"(seed: 3
nodes:
  - {name: a100-frac-0, gpu_model: A100-80GB, gpus: 1, sharing: fractional}
workloads:
  - {namespace: research, name: sweep, node: a100-frac-0, fraction: 0.5, replicas: 2, end: 7h, compute: {profile: constant, duty: 0.4}, memory: {bytes: 20GiB}}
)"},
};

json ReportJson(const std::string& args) {
  int code = 0;
  const std::string out =
      RunCapture(std::string(test_paths::kGpuledgerBin) + " report " + args, &code);
  EXPECT_EQ(code, 0) << args << "\n" << out;
  return code == 0 ? json::parse(out) : json::object();
}

// The rows of a report by namespace, keyed: what each costs and was granted and used.
std::map<std::string, std::string> Rows(const json& report) {
  std::map<std::string, std::string> out;
  for (const json& row : report.at("rows"))
    out[row.at("key").get<std::string>()] =
        fmt::format("cost {} granted {} used {} memory {}", row.at("cost_nanos").dump(),
                    row.at("allocated_gpu_us").dump(), row.at("compute_gpu_us").dump(),
                    row.at("memory_kib_s").dump());
  return out;
}

std::int64_t Int(const json& report, const char* part, const char* field) {
  return report.at(part).at(field).get<std::int64_t>();
}

TEST(MultiCluster, ThreeServersWriteOneLedgerAndEachClusterIsItsOwnPrivateLedger) {
  std::string skip;
  auto ledger = store::testing::MakeTestLedger(store::testing::StoreKind::kPostgres, skip);
  if (!ledger) GTEST_SKIP() << skip;
  const std::string url = static_cast<store::testing::PostgresTestLedger&>(*ledger).url();
  testing::TempDir dir("gpuledger-multi-cluster");
  const std::string bin = test_paths::kGpuledgerBin;

  // Each cluster's private ledger and collections, as its own demo writes them.
  for (const auto& [name, body] : kClusters) {
    const fs::path scenario = dir.path() / (name + ".yaml");
    ASSERT_TRUE(WriteFile(scenario.string(),
                          fmt::format("name: {0}\ncluster: {0}\n{1}{2}", name, kHeader, body))
                    .ok());
    int code = 0;
    const std::string out =
        RunCapture(fmt::format("{} demo --no-serve --scenario {} --out {} --expositions {}", bin,
                               scenario.string(), (dir.path() / name).string(),
                               (dir.path() / (name + "-x")).string()),
                   &code);
    ASSERT_EQ(code, 0) << out;
  }
  // us-infer's first server stops halfway: it replays the first half of its collections.
  const fs::path half = dir.path() / "us-infer-half";
  {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir.path() / "us-infer-x"))
      if (entry.path().extension() == ".prom") files.push_back(entry.path());
    std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
      auto at = [](const fs::path& p) {
        return p.stem().string().substr(p.stem().string().rfind('@'));
      };
      return at(a) < at(b);
    });
    fs::create_directories(half);
    ASSERT_GT(files.size(), 10u);
    for (std::size_t i = 0; i < files.size() / 2; ++i)
      fs::copy_file(files[i], half / files[i].filename());
    // The pods' owners and labels, as the whole replay has them.
    fs::copy_file(dir.path() / "us-infer-x" / "metadata.json", half / "metadata.json");
  }
  // Three writers at once into one ledger, each its own cluster.
  auto replay = [&](const std::string& cluster, const fs::path& from) {
    int code = 0;
    const std::string out = RunCapture(
        fmt::format("{} server --source files={} --cluster {} --ledger '{}' --backfill-only", bin,
                    from.string(), cluster, url),
        &code);
    EXPECT_EQ(code, 0) << cluster << ": " << out;
  };
  {
    std::vector<std::thread> writers;
    writers.emplace_back(replay, "eu-train", dir.path() / "eu-train-x");
    writers.emplace_back(replay, "us-infer", half);
    writers.emplace_back(replay, "onprem", dir.path() / "onprem-x");
    for (std::thread& t : writers) t.join();
  }
  // Started again over everything: its state says where it stopped, and the snapshots before
  // that are ignored: no hour twice, none lost.
  replay("us-infer", dir.path() / "us-infer-x");

  // Each cluster's rows in the shared ledger are its private ledger's, to the nano; the shared
  // ledger's device cost and idle are the three's sums.
  const json shared = ReportJson(fmt::format("--db '{}' --by namespace --format json", url));
  std::map<std::string, std::string> union_rows;
  std::int64_t device_cost = 0, idle_cost = 0, metered = 0;
  for (const auto& [name, body] : kClusters) {
    const json own = ReportJson(fmt::format("--db {} --by namespace --format json",
                                            (dir.path() / name / "gpuledger.db").string()));
    const json theirs = ReportJson(
        fmt::format("--db '{}' --by namespace --filter 'cluster:\"{}\"' --format json", url, name));
    EXPECT_EQ(Rows(theirs), Rows(own)) << name;
    EXPECT_FALSE(Rows(own).empty()) << name;
    for (const auto& [key, row] : Rows(own)) union_rows[key] = row;
    device_cost += Int(own, "total", "device_cost_nanos");
    idle_cost += Int(own, "idle", "cost_nanos");
    metered += Int(own, "total", "metered_us");
  }
  EXPECT_EQ(Rows(shared), union_rows);
  std::printf(
      "3 clusters in one ledger: %zu namespaces, %lld nanos of device cost, %lld GPU-us "
      "metered\n",
      union_rows.size(), static_cast<long long>(device_cost), static_cast<long long>(metered));
  EXPECT_EQ(Int(shared, "total", "device_cost_nanos"), device_cost);
  EXPECT_EQ(Int(shared, "idle", "cost_nanos"), idle_cost);
  EXPECT_EQ(Int(shared, "total", "metered_us"), metered);
  const json by_cluster = ReportJson(fmt::format("--db '{}' --by cluster --format json", url));
  std::vector<std::string> clusters;
  for (const json& row : by_cluster.at("rows")) clusters.push_back(row.at("key"));
  std::sort(clusters.begin(), clusters.end());
  EXPECT_EQ(clusters, (std::vector<std::string>{"eu-train", "onprem", "us-infer"}));

  // The FOCUS export: the shared ledger's rows are the three private ledgers' rows, line for
  // line (each names its cluster as BillingAccountId), so one cluster's part of the export is
  // the export of that cluster alone.
  auto export_lines = [&](const std::string& db) {
    int code = 0;
    const std::string out =
        RunCapture(fmt::format("{} export --db '{}' --format focus", bin, db), &code);
    EXPECT_EQ(code, 0) << out;
    std::vector<std::string> lines;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    if (!lines.empty()) lines.erase(lines.begin());  // the header
    std::sort(lines.begin(), lines.end());
    return lines;
  };
  std::vector<std::string> private_lines;
  for (const auto& [name, body] : kClusters)
    for (std::string& line : export_lines((dir.path() / name / "gpuledger.db").string()))
      private_lines.push_back(std::move(line));
  std::sort(private_lines.begin(), private_lines.end());
  EXPECT_GT(private_lines.size(), 10u);
  EXPECT_EQ(export_lines(url), private_lines);

  // A fourth server, read-only, answers for all: its reports are the ledger's.
  Child reader({bin, "server", "--ledger", url, "--read-only", "--listen", "127.0.0.1:0"},
               (dir.path() / "reader.out").string());
  const std::string port =
      WaitFor((dir.path() / "reader.out").string(), std::regex("http://[^:]+:(\\d+)/"), 20s);
  ASSERT_FALSE(port.empty()) << *ReadFile((dir.path() / "reader.out.err").string());
  for (const char* args : {"--by namespace --format json", "--by cluster --policy compute"}) {
    int code = 0;
    const std::string local =
        RunCapture(fmt::format("{} report --db '{}' {}", bin, url, args), &code);
    ASSERT_EQ(code, 0) << local;
    const std::string remote = RunCapture(
        fmt::format("{} report --server http://127.0.0.1:{} {}", bin, port, args), &code);
    ASSERT_EQ(code, 0) << remote;
    EXPECT_EQ(local, remote) << args;
  }
  // A build older than the ledger's schema (here: the ledger moved on to the next version)
  // refuses to write and says why; what the ledger holds stays.
  const std::string version = std::to_string(store::kSchemaVersion);
  const std::string next = std::to_string(store::kSchemaVersion + 1);
  ASSERT_TRUE(ledger->Query("UPDATE meta SET value = '" + next + "' WHERE key = 'schema_version'"));
  {
    int refused_code = 0;
    const std::string refused =
        RunCapture(fmt::format("{} server --source files={} --cluster eu-train --ledger '{}' "
                               "--backfill-only 2>&1",
                               bin, (dir.path() / "eu-train-x").string(), url),
                   &refused_code);
    EXPECT_NE(refused_code, 0) << refused;
    EXPECT_NE(refused.find("ledger schema version " + next +
                           " is newer than this build supports (" + version + ")"),
              std::string::npos)
        << refused;
  }
  ASSERT_TRUE(
      ledger->Query("UPDATE meta SET value = '" + version + "' WHERE key = 'schema_version'"));
  EXPECT_EQ(Rows(ReportJson(fmt::format("--db '{}' --by namespace --format json", url))),
            union_rows);

  // --read-only with a source is a contradiction, said before anything is opened.
  int code = 0;
  const std::string both = RunCapture(
      fmt::format("{} server --read-only --source scrape --ledger '{}' 2>&1", bin, url), &code);
  EXPECT_EQ(code, 2) << both;
  EXPECT_NE(both.find("--read-only serves a ledger other servers write"), std::string::npos)
      << both;
}

}  // namespace
}  // namespace gpuledger
