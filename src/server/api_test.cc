#include "server/api.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <thread>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/json_text.h"
#include "common/time_util.h"
#include "io/file_util.h"
#include "temp_dir.h"
#include "cost/catalog.h"
#include "ledger/billing_reads.h"
#include "ledger/filter.h"
#include "ledger/statements.h"
#include "report/report_json.h"
#include "server/http_server.h"
#include "sim/cluster_run.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "store_test_env/forwarding_store.h"

namespace gpuledger::server {
namespace {

using nlohmann::json;

constexpr char kScenario[] = R"(
name: api
start: "2026-11-23T00:00:00Z"
duration: 48h
namespaces:
  ml: {labels: {team: research}}
  web: {labels: {team: product}}
nodes:
  - {name: a100, gpu_model: A100-80GB, gpus: 1, sharing: time-slicing, replicas: 4}
  - {name: l4, gpu_model: L4, gpus: 1}
workloads:
  - {namespace: ml, name: train, node: a100, compute: {profile: constant, duty: 0.3}, memory: {bytes: 10GiB}}
  - {namespace: web, name: api, node: a100, replicas: 2, labels: {team: search}, compute: {profile: constant, duty: 0.1}, memory: {bytes: 2GiB}}
  - {namespace: web, name: small, node: l4, compute: {profile: constant, duty: 0.5}, memory: {bytes: 1GiB},
     inference: {engine: sglang, model: qwen/qwen-0.5b, input_per_gpu_second: 1000, output_per_gpu_second: 250}}
)";

class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("gpuledger-api-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    auto scenario = sim::ParseScenario(kScenario, "api.yaml");
    ASSERT_TRUE(scenario.ok()) << scenario.error().message;
    auto store = store::OpenSqliteLedger((dir_ / "l.db").string());
    ASSERT_TRUE(store.ok());
    store_ = std::move(*store);
    sim::Simulator simulator(*scenario, 600 * kMicrosPerSecond);
    catalog_ = cost::DefaultCatalog();
    auto built = sim::BuildLedger(simulator, *store_, catalog_);
    ASSERT_TRUE(built.ok()) << built.error().message;
    api_ = std::make_unique<Api>(
        [path = (dir_ / "l.db").string()] { return store::OpenSqliteLedger(path); }, "s3cret");
  }
  void TearDown() override {
    api_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  json Get(const std::string& path, const Params& params, int want_status = 200) {
    ApiResponse r = api_->Handle(path, params, "Bearer s3cret");
    EXPECT_EQ(r.status, want_status) << r.body;
    json parsed = json::parse(r.body);
    // Answers written without a tree read as a tree writes them: keys in byte order, each once,
    // numbers in nlohmann's form (json_writer.h), on one line or indented by 2.
    EXPECT_TRUE(r.body == JsonText(parsed) + "\n" || r.body == JsonText(parsed, 2) + "\n")
        << path << ": " << r.body.substr(0, 2000);
    return parsed;
  }

  std::filesystem::path dir_;
  cost::Catalog catalog_;
  std::unique_ptr<store::LedgerStore> store_;
  std::unique_ptr<Api> api_;
};

TEST_F(ApiTest, AllocationSetsSumToTheDeviceCostPerStep) {
  json j =
      Get("/api/v1/allocation", {{"window", "all"}, {"aggregate", "namespace"}, {"step", "1d"}});
  ASSERT_EQ(j["data"].size(), 2u);
  // Each day: 24 h of an A100 plus 24 h of an L4 at catalog prices.
  const Nanos a100 = catalog_.Find("A100-80GB", "on-demand")->hourly_nanos;
  const Nanos l4 = catalog_.Find("L4", "on-demand")->hourly_nanos;
  for (const auto& set : j["data"]) {
    std::int64_t sum = 0;
    for (const auto& [key, entry] : set.items()) sum += entry["cost_nanos"].get<std::int64_t>();
    EXPECT_EQ(sum, 24 * (a100 + l4));
    EXPECT_EQ(set["ml"]["allocated_gpu_us"].get<std::int64_t>(), 24 * kMicrosPerHour / 4);
    // Memory-time is integer KiB-s: ml/train holds 10 GiB all day (within a KiB-s an hour).
    ASSERT_TRUE(set["ml"]["memory_kib_s"].is_number_integer()) << set["ml"].dump();
    EXPECT_NEAR(set["ml"]["memory_kib_s"].get<std::int64_t>(), 10LL * 1024 * 1024 * 24 * 3600, 24);
    EXPECT_FALSE(set["ml"].contains("memory_byte_us"));
    EXPECT_TRUE(set.contains("__idle__"));
  }
}

// OpenCost's other parameters, as kubectl cost and OpenCost's own clients send them (issue 60:
// each was a 400): answered with OpenCost's meaning, each compared with the request in
// gpuledger's own words, or refused saying why.
TEST_F(ApiTest, OpenCostsParametersKeepTheirMeaning) {
  auto data = [&](const Params& p) { return Get("/allocation", p)["data"]; };
  const Params all = {{"window", "all"}, {"accumulate", "true"}};
  auto with = [&](std::initializer_list<std::pair<const std::string, std::string>> more) {
    Params p = all;
    p.insert(more);
    return p;
  };
  // aggregate=deployment: the controllers of that kind, as a filter selects them.
  // (Named by the deployment's name, as OpenCost names them; by kind and name as controllers.)
  const json deployments = data(with({{"aggregate", "deployment"}}));
  json controllers =
      data(with({{"aggregate", "controller"}, {"filter", "controllerKind:\"Deployment\""}}));
  json renamed = json::object();
  for (auto& [name, entry] : controllers[0].items()) {
    ASSERT_TRUE(name.starts_with("deployment:")) << name;
    entry["name"] = name.substr(11);
    renamed[name.substr(11)] = entry;
  }
  EXPECT_EQ(deployments, json::array({renamed}));
  EXPECT_FALSE(deployments[0].empty());
  EXPECT_EQ(data(with({{"aggregate", "deployment"}, {"filter", "namespace:\"ml\""}}))[0].size(),
            1u);
  // The label aliases.
  EXPECT_EQ(data(with({{"aggregate", "team"}})), data(with({{"aggregate", "label:team"}})));
  // includeIdle=false leaves __idle__ out; true (the default) keeps it, used by nobody: its
  // compute is the time the devices were not busy, not a usage (its efficiency read 2.24).
  const json idle = data(with({{"includeIdle", "true"}}))[0]["__idle__"];
  EXPECT_GT(idle["compute_gpu_us"].get<std::int64_t>(), 0);
  EXPECT_EQ(idle["gpuEfficiency"], 0.0);
  EXPECT_EQ(idle["totalEfficiency"], 0.0);
  EXPECT_EQ(idle["gpuUsageHours"], 0.0);
  const json no_idle = data(with({{"includeIdle", "false"}}));
  EXPECT_FALSE(no_idle[0].contains("__idle__"));
  EXPECT_TRUE(no_idle[0].contains("__unattributed__"));
  // shareIdle=true is idle=share; resolution changes nothing in an exact ledger.
  EXPECT_EQ(data(with({{"shareIdle", "true"}})), data(with({{"idle", "share"}})));
  EXPECT_EQ(data(with({{"shareIdle", "false"}, {"resolution", "1m"}, {"idleByNode", "false"}})),
            data(all));
  // What has no meaning here says why.
  for (const auto& [name, value, says] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"idleByNode", "true", "parameter 'idleByNode': true is not kept"},
           {"aggregate", "service", "'service' is an OpenCost grouping gpuledger does not keep"},
           {"aggregate", "deployment,job", "one controller kind at a time"},
           {"includeIdle", "yes", "parameter 'includeIdle': 'yes': expected true or false"},
           {"resolution", "fast", "parameter 'resolution': 'fast': expected a duration"},
       }) {
    const json refused = Get("/allocation", {{name, value}}, 400);
    EXPECT_NE(refused["error"].get<std::string>().find(says), std::string::npos)
        << name << "=" << value << ": " << refused.dump();
  }
  EXPECT_NE(Get("/allocation", {{"shareIdle", "true"}, {"idle", "keep"}}, 400)["error"]
                .get<std::string>()
                .find("parameter 'shareIdle': true, but idle is 'keep'"),
            std::string::npos);
}

// A window past what the ledger holds (2026-11-23 and 24 here) reads as zeros there: every
// answer over a window says what the ledger holds; one inside it says nothing of the kind.
TEST_F(ApiTest, AnswersSayWhatTheLedgerHoldsWhenTheWindowReachesPastIt) {
  const json held = {{"end", "2026-11-25T00:00:00Z"},
                     {"start", "2026-11-23T00:00:00Z"},
                     {"window_reaches", "before"}};
  for (const char* path : {"/api/v1/report", "/api/v1/allocation", "/api/v1/devices",
                           "/api/v1/findings", "/api/v1/recommendations"}) {
    EXPECT_EQ(Get(path, {{"window", "7d"}})["ledger"], held) << path;
    EXPECT_FALSE(Get(path, {{"window", "all"}}).contains("ledger")) << path;
    EXPECT_FALSE(Get(path, {{"window", "yesterday"}}).contains("ledger")) << path;
  }
  EXPECT_EQ(Get("/api/v1/report", {{"window", "7d"}, {"step", "1d"}})["ledger"], held);
  json after = Get("/api/v1/report", {{"window", "2026-11-24T00:00:00Z,2026-11-26T00:00:00Z"}});
  EXPECT_EQ(after["ledger"]["window_reaches"], "after");
  // The CLI reading the API (`report --server`) says it as a local ledger's reader does.
  auto back = report::ReportFromJson(Get("/api/v1/report", {{"window", "7d"}}).dump());
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_TRUE(back->ledger.has_value());
  EXPECT_EQ(FormatRfc3339(back->ledger->from_us), "2026-11-23T00:00:00Z");
}

// A failing scrape is visible where people look: /api/v1/sources says which target is down and
// why (the web UI's banner reads it); a server that ingests nothing says so.
TEST_F(ApiTest, SourcesSayWhichTargetIsDownAndWhy) {
  EXPECT_EQ(Get("/api/v1/sources", {})["data"],
            json({{"ingesting", false}, {"targets", json::array()}}));
  api_->SetSources([] {
    ingest::SourcesHealth h;
    h.source = "scrape";
    h.targets.push_back({"10.0.0.5:9400", true, 0, "", 1795420800LL * kMicrosPerSecond});
    h.targets.push_back(
        {"10.0.0.6:9400", false, 12, "scrape 10.0.0.6:9400: connection refused", 0});
    return h;
  });
  const json data = Get("/api/v1/sources", {})["data"];
  EXPECT_EQ(data["ingesting"], true);
  EXPECT_EQ(data["source"], "scrape");
  EXPECT_EQ(data["down"], 1);
  EXPECT_EQ(data["targets"][0], json({{"failures", 0},
                                      {"last_success", "2026-11-23T08:00:00Z"},
                                      {"target", "10.0.0.5:9400"},
                                      {"up", true}}));
  EXPECT_EQ(data["targets"][1]["last_error"], "scrape 10.0.0.6:9400: connection refused");
  EXPECT_FALSE(data["targets"][1].contains("last_success"));
  EXPECT_EQ(api_->Handle("/api/v1/sources", {}, "").status, 401);  // targets are internal
  Get("/api/v1/sources", {{"x", "1"}}, 400);
}

// kubectl cost's own words (pkg/cmd/aggregatedcommandbuilder.go): idle=true|false beside
// includeIdle, and OpenCost's first filter language (filterNamespaces=...), each the same answer
// as gpuledger's words for it.
TEST_F(ApiTest, OpenCostsFirstFiltersAndIdleFlagMeanWhatTheySay) {
  auto data = [&](const Params& p) { return Get("/allocation", p)["data"]; };
  auto by_pod = [&](std::initializer_list<std::pair<const std::string, std::string>> more) {
    Params p = {{"window", "all"}, {"accumulate", "true"}, {"aggregate", "namespace,pod"}};
    p.insert(more);
    return p;
  };
  EXPECT_EQ(data(by_pod({{"idle", "false"}})), data(by_pod({{"includeIdle", "false"}})));
  EXPECT_EQ(data(by_pod({{"idle", "true"}})), data(by_pod({})));
  for (const auto& [first, second] : std::vector<std::pair<Params, std::string>>{
           {{{"filterNamespaces", "ml"}}, "namespace:\"ml\""},
           {{{"filterNamespaces", "ml, web"}}, "namespace:\"ml\",\"web\""},
           {{{"filterNamespaces", "w*"}}, "namespace<~:\"w\""},
           {{{"filterLabels", "team:search"}}, "label[team]:\"search\""},
           {{{"filterNamespaces", "web"}, {"filterPods", "api-0,small*"}},
            "namespace:\"web\"+(pod:\"api-0\"|pod<~:\"small\")"},
           {{{"filterNodes", "l4"}, {"filter", "namespace:\"web\""}},
            "node:\"l4\"+namespace:\"web\""}}) {
    Params p = by_pod({});
    p.insert(first.begin(), first.end());
    const json answer = data(p);
    EXPECT_EQ(answer, data(by_pod({{"filter", second}}))) << second;
    EXPECT_FALSE(answer[0].empty()) << second;
  }
  EXPECT_EQ(data(by_pod({{"filterNamespaces", ""}})), data(by_pod({})));  // as kubectl cost sends
  for (const auto& [name, value, says] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"filterServices", "web", "parameter 'filterServices': gpuledger does not keep"},
           {"filterLabels", "team", "parameter 'filterLabels': 'team': expected KEY:VALUE"},
           {"filterNamespaces", "a\"b", "parameter 'filterNamespaces': 'a\"b'"}}) {
    const json refused = Get("/allocation", {{name, value}}, 400);
    EXPECT_NE(refused["error"].get<std::string>().find(says), std::string::npos) << refused;
  }
  EXPECT_NE(Get("/allocation", {{"idle", "true"}, {"includeIdle", "false"}}, 400)["error"]
                .get<std::string>()
                .find("parameter 'idle': true, but includeIdle is false"),
            std::string::npos);
}

// OpenCost's paths name entries as OpenCost does, one field per level (kubectl cost splits them
// so); gpuledger's own path keeps its keys. Pods of one name in two namespaces grouped by pod
// alone are one entry, as OpenCost groups them.
TEST_F(ApiTest, OpenCostsPathsNameEntriesAsOpenCostDoes) {
  auto names = [&](const std::string& path, const std::string& aggregate) {
    std::vector<std::string> out;
    const json set = Get(path, {{"window", "all"}, {"aggregate", aggregate}})["data"][0];
    for (const auto& [name, entry] : set.items()) out.push_back(name);
    return out;
  };
  EXPECT_EQ(names("/allocation", "namespace,pod"),
            (std::vector<std::string>{"__idle__", "__unattributed__/__unattributed__", "ml/train-0",
                                      "web/api-0", "web/api-1", "web/small-0"}));
  EXPECT_EQ(names("/allocation", "pod"),
            (std::vector<std::string>{"__idle__", "__unattributed__", "api-0", "api-1", "small-0",
                                      "train-0"}));
  EXPECT_EQ(names("/api/v1/allocation", "pod"),
            (std::vector<std::string>{"__idle__", "__unattributed__", "ml/train-0", "web/api-0",
                                      "web/api-1", "web/small-0"}));
  const std::vector<std::string> controllers = names("/allocation", "namespace,controller");
  for (const std::string& name : controllers) {
    if (name.starts_with("__")) continue;
    EXPECT_EQ(std::count(name.begin(), name.end(), '/'), 1) << name;
    EXPECT_NE(name.find(':'), std::string::npos) << name;  // kind:name
  }
  // The OpenCost listener: no token, OpenCost's paths alone.
  EXPECT_EQ(api_->HandleOpenCost("/allocation", {{"window", "all"}}).status, 200);
  EXPECT_EQ(api_->HandleOpenCost("/model/getConfigs", {}).body,
            "{\"code\":200,\"data\":{\"currencyCode\":\"USD\"},\"status\":\"success\"}\n");
  for (const char* path : {"/api/v1/allocation", "/api/v1/findings", "/metrics", "/", "/x"})
    EXPECT_EQ(api_->HandleOpenCost(path, {}).status, 404) << path;
  EXPECT_EQ(api_->Handle("/allocation", {}, "").status, 401);
}

// `kubectl cost namespace --window 5d` asks Kubecost's path with accumulate=true; OpenCost's
// clients use /allocation and /allocation/compute, calendar windows and aggregate=cluster
// (issue 34). The answers carry OpenCost's keys beside ours.
TEST_F(ApiTest, KubectlCostsRequestsAreAnsweredAsOpenCostWould) {
  const Nanos a100 = catalog_.Find("A100-80GB", "on-demand")->hourly_nanos;
  const Nanos l4 = catalog_.Find("L4", "on-demand")->hourly_nanos;
  for (const char* path : {"/model/allocation", "/allocation/compute", "/allocation"}) {
    json j = Get(path, {{"window", "5d"}, {"aggregate", "namespace"}, {"accumulate", "true"}});
    ASSERT_EQ(j["code"], 200);
    ASSERT_EQ(j["data"].size(), 1u) << path;
    double total = 0;
    std::int64_t nanos = 0;
    for (const auto& [name, a] : j["data"][0].items()) {
      EXPECT_EQ(a["name"], name);
      total += a["totalCost"].get<double>();
      nanos += a["cost_nanos"].get<std::int64_t>();
      EXPECT_TRUE(a["window"]["start"].is_string());
      EXPECT_TRUE(a["minutes"].is_number());
    }
    EXPECT_EQ(nanos, 48 * (a100 + l4)) << path;
    EXPECT_NEAR(total, static_cast<double>(48 * (a100 + l4)) / 1e9, 1e-6);
  }
  // accumulate=true sums the steps into one set; accumulate=day is a set a day.
  EXPECT_EQ(Get("/allocation", {{"window", "all"}, {"step", "1d"}, {"accumulate", "true"}})["data"]
                .size(),
            1u);
  EXPECT_EQ(Get("/allocation", {{"window", "all"}, {"accumulate", "day"}})["data"].size(), 2u);
  EXPECT_EQ(Get("/allocation", {{"accumulate", "month"}}, 400)["error"],
            "parameter 'accumulate': 'month': expected true, false, all, hour, day or week");
  // The ledger's last day is 2026-11-24: today and yesterday are its two days.
  json today = Get("/allocation", {{"window", "today"}, {"aggregate", "namespace"}});
  EXPECT_EQ(today["data"][0]["ml"]["window"]["start"], "2026-11-24T00:00:00Z");
  json yesterday = Get("/allocation", {{"window", "yesterday"}, {"aggregate", "namespace"}});
  EXPECT_EQ(yesterday["data"][0]["ml"]["window"]["start"], "2026-11-23T00:00:00Z");
  // One cluster: one row, holding every consumer's cost.
  json cluster = Get("/allocation", {{"window", "all"}, {"aggregate", "cluster"}});
  std::int64_t consumers = 0;
  for (const auto& [name, a] : cluster["data"][0].items())
    if (!name.starts_with("__")) consumers += a["cost_nanos"].get<std::int64_t>();
  json by_namespace = Get("/allocation", {{"window", "all"}, {"aggregate", "namespace"}});
  EXPECT_EQ(consumers, by_namespace["data"][0]["ml"]["cost_nanos"].get<std::int64_t>() +
                           by_namespace["data"][0]["web"]["cost_nanos"].get<std::int64_t>());
  EXPECT_EQ(cluster["data"][0].size(), 3u) << cluster.dump();  // the cluster, idle, unattributed
}

TEST_F(ApiTest, FilterSelectsConsumersByLabelWithNamespaceInheritance) {
  json j =
      Get("/api/v1/allocation", {{"aggregate", "pod"}, {"filter", "label[team]:\"research\""}});
  ASSERT_EQ(j["data"].size(), 1u);
  EXPECT_EQ(j["data"][0].size(), 1u);
  EXPECT_TRUE(j["data"][0].contains("ml/train-0"));
  json k = Get("/api/v1/allocation",
               {{"aggregate", "pod"}, {"filter", "namespace!:\"ml\"+node:\"a100\""}});
  EXPECT_EQ(k["data"][0].size(), 2u);  // web/api-0, web/api-1
}

// A quoted empty value selects what has no value: label[KEY]:"" is the "unlabelled" group of a
// grouping by that label (the web UI's team filter asks for it so).
TEST_F(ApiTest, AnEmptyQuotedValueSelectsConsumersWithoutTheLabel) {
  json all = Get("/api/v1/report", {{"aggregate", "pod"}});
  json unowned = Get("/api/v1/report", {{"aggregate", "pod"}, {"filter", "label[owner]:\"\""}});
  EXPECT_EQ(unowned["rows"], all["rows"]);  // nobody carries an owner label
  json untagged = Get("/api/v1/report", {{"aggregate", "pod"}, {"filter", "label[team]:\"\""}});
  EXPECT_TRUE(untagged["rows"].empty()) << untagged.dump();  // everyone has a team
  json tagged = Get("/api/v1/report", {{"aggregate", "pod"}, {"filter", "label[team]!:\"\""}});
  EXPECT_EQ(tagged["rows"], all["rows"]);
  json typo = Get("/api/v1/report", {{"filter", "label[team]:"}}, 400);
  EXPECT_NE(typo["error"].get<std::string>().find("expected a value (\"text\"; \"\" for none)"),
            std::string::npos)
      << typo.dump();
}

// A filter selects consumers before they are summed: a team's row holds only its matching
// consumers, each at its whole-cluster cost (issue 32; a group was kept whole when any of its
// rows matched).
TEST_F(ApiTest, FilterSumsOnlyTheMatchingConsumersOfAGroup) {
  json all = Get("/api/v1/allocation", {{"aggregate", "label:team"}});
  json pods = Get("/api/v1/allocation", {{"aggregate", "pod"}});
  json some = Get("/api/v1/allocation", {{"aggregate", "label:team"}, {"filter", "pod:\"api-0\""}});
  ASSERT_EQ(some["data"][0].size(), 1u) << some.dump();
  // web/api-0 carries the pod label team=search, like api-1: the search row is api-0's part.
  EXPECT_EQ(some["data"][0]["search"]["cost_nanos"], pods["data"][0]["web/api-0"]["cost_nanos"]);
  EXPECT_LT(some["data"][0]["search"]["cost_nanos"].get<std::int64_t>(),
            all["data"][0]["search"]["cost_nanos"].get<std::int64_t>());
}

// The report takes the allocation's filter: rows only of the matching consumers, each at its
// whole-cluster cost, while idle and the total stay the whole window's (what the web UI asks
// for when it opens one node's GPUs).
TEST_F(ApiTest, ReportFilterKeepsTheMatchingRowsAndTheWholeTotals) {
  json all = Get("/api/v1/report", {{"aggregate", "device,pod"}});
  json one = Get("/api/v1/report", {{"aggregate", "device,pod"}, {"filter", "pod:\"api-0\""}});
  ASSERT_EQ(one["rows"].size(), 1u) << one.dump();
  bool found = false;
  for (const json& row : all["rows"]) {
    if (row["key"] != one["rows"][0]["key"]) continue;
    found = true;
    EXPECT_EQ(row["cost_nanos"], one["rows"][0]["cost_nanos"]);
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(one["total"], all["total"]);
  EXPECT_EQ(one["idle"], all["idle"]);
  json typo = Get("/api/v1/report", {{"steps", "1d"}}, 400);
  EXPECT_NE(typo["error"].get<std::string>().find("filter, step)"), std::string::npos);
}

// A filtered allocation sums only the devices its consumers are on, and its entries carry the
// report rows' figures and compute source with its error band (what the web UI shows when it
// opens one node's GPUs).
TEST_F(ApiTest, FilteredAllocationEntriesEqualTheReportRows) {
  json report = Get("/api/v1/report", {{"aggregate", "device,container"}});
  json alloc =
      Get("/api/v1/allocation",
          {{"aggregate", "device,container"}, {"filter", "node:\"a100\""}, {"accumulate", "true"}});
  ASSERT_EQ(alloc["data"].size(), 1u);
  const json& set = alloc["data"][0];
  EXPECT_EQ(set.size(), 3u);  // train-0, api-0, api-1 on the A100; no idle entry
  int matched = 0;
  for (const json& row : report["rows"]) {
    const std::string key = row["key"];
    if (!set.contains(key)) continue;
    ++matched;
    for (const char* field : {"cost_nanos", "allocated_gpu_us", "compute_gpu_us", "quality",
                              "compute_source", "compute_error_band"})
      EXPECT_EQ(set[key][field], row[field]) << key << " " << field;
  }
  EXPECT_EQ(matched, 3);
}

// With a step, the report carries each step's cost per group beside the window's figures
// (what the web UI's cost view draws, summed in one pass): the window's part equals the report
// without a step, each step's costs the allocation's for that step, and they sum to the rows.
TEST_F(ApiTest, ReportWithAStepCarriesEachStepsCost) {
  const std::vector<std::pair<std::string, std::string>> base = {
      {"aggregate", "namespace"}, {"policy", "compute"}, {"window", "all"}};
  json whole = Get("/api/v1/report", {base.begin(), base.end()});
  auto stepped_params = base;
  stepped_params.emplace_back("step", "1d");
  json stepped = Get("/api/v1/report", {stepped_params.begin(), stepped_params.end()});
  json alloc = Get("/api/v1/allocation", {stepped_params.begin(), stepped_params.end()});
  ASSERT_TRUE(stepped.contains("steps")) << stepped.dump();
  json steps = stepped["steps"];
  stepped.erase("steps");
  EXPECT_EQ(stepped, whole);
  ASSERT_EQ(steps.size(), 2u);  // two days
  ASSERT_EQ(alloc["data"].size(), steps.size());
  std::map<std::string, std::int64_t> summed;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i]["cost_nanos"].size(), alloc["data"][i].size());
    for (const auto& [key, cost] : steps[i]["cost_nanos"].items()) {
      EXPECT_EQ(cost, alloc["data"][i][key]["cost_nanos"]) << key;
      summed[key] += cost.get<std::int64_t>();
    }
    EXPECT_EQ(steps[i]["start"], alloc["data"][i].begin().value()["start"]);
  }
  for (const json& row : whole["rows"])
    EXPECT_EQ(summed[row["key"].get<std::string>()], row["cost_nanos"].get<std::int64_t>());
  EXPECT_EQ(summed["__idle__"], whole["idle"]["cost_nanos"].get<std::int64_t>());
}

// Reports come from the snapshot the API keeps while the ledger does not change.
TEST_F(ApiTest, ReportsShareOneSnapshotUntilTheLedgerChanges) {
  Get("/api/v1/report", {{"aggregate", "namespace"}});
  Get("/api/v1/allocation", {{"aggregate", "pod"}, {"step", "1d"}});
  Get("/api/v1/devices", {});
  ApiResponse m = api_->Handle("/metrics", {}, "");
  EXPECT_NE(m.body.find("gpuledger_server_report_snapshots_total{result=\"load\"} 1"),
            std::string::npos)
      << m.body;
  EXPECT_NE(m.body.find("gpuledger_server_report_snapshots_total{result=\"hit\"} 2"),
            std::string::npos);
}

TEST_F(ApiTest, ErrorsNameTheParameter) {
  json a = Get("/api/v1/allocation", {{"windw", "7d"}}, 400);
  EXPECT_NE(a["error"].get<std::string>().find("'windw'"), std::string::npos);
  json b = Get("/api/v1/allocation", {{"window", "fortnight"}}, 400);
  EXPECT_NE(b["error"].get<std::string>().find("parameter 'window'"), std::string::npos);
  json c = Get("/api/v1/allocation", {{"policy", "cheapest"}}, 400);
  EXPECT_NE(c["error"].get<std::string>().find("parameter 'policy'"), std::string::npos);
  json d = Get("/api/v1/allocation", {{"filter", "colour:\"red\""}}, 400);
  EXPECT_NE(d["error"].get<std::string>().find("parameter 'filter'"), std::string::npos);
  json e = Get("/api/v1/allocation", {{"step", "90m"}}, 400);
  EXPECT_NE(e["error"].get<std::string>().find("parameter 'step'"), std::string::npos);
  // Issue 29: an unterminated quote in a filter was a 200 (the clause matched nothing).
  json g = Get("/api/v1/allocation", {{"filter", "namespace:\"ml"}}, 400);
  EXPECT_NE(g["error"].get<std::string>().find("is not closed"), std::string::npos) << g;
  // Issue 29: /devices took any policy silently.
  json f = Get("/api/v1/devices", {{"policy", "cheapest"}}, 400);
  EXPECT_NE(f["error"].get<std::string>().find("parameter 'policy'"), std::string::npos);
  Get("/api/v1/nothing", {}, 404);
}

TEST_F(ApiTest, BearerTokenIsRequiredOnTheApiOnly) {
  EXPECT_EQ(api_->Handle("/api/v1/devices", {}, "").status, 401);
  EXPECT_EQ(api_->Handle("/api/v1/devices", {}, "Bearer wrong").status, 401);
  EXPECT_EQ(api_->Handle("/api/v1/devices", {}, "Bearer s3cret").status, 200);
  EXPECT_EQ(api_->Handle("/healthz", {}, "").status, 200);
  EXPECT_EQ(api_->Handle("/readyz", {}, "").status, 200);
}

TEST_F(ApiTest, DevicesAndReportRoundTrip) {
  json d = Get("/api/v1/devices", {});
  ASSERT_EQ(d["data"].size(), 2u);
  for (const auto& dev : d["data"])
    EXPECT_EQ(dev["metered_us"].get<std::int64_t>(), 48 * kMicrosPerHour);
  ApiResponse r = api_->Handle(
      "/api/v1/report", {{"aggregate", "label:team"}, {"policy", "compute"}}, "Bearer s3cret");
  ASSERT_EQ(r.status, 200);
  auto report = report::ReportFromJson(r.body);
  ASSERT_TRUE(report.ok()) << report.error().message;
  Nanos sum = report->idle.cost_nanos + report->unattributed.cost_nanos;
  for (const auto& row : report->rows) sum += row.figures.cost_nanos;
  EXPECT_EQ(sum, report->total.device_cost_nanos);
  EXPECT_EQ(report::ReportToJson(*report), r.body);
}

// Issue 38: once November is closed, a report over exactly November (its policy and idle
// handling) is the statement, saying which version, with the figures the ledger gave; the
// statements endpoint lists it with its total and what priced it.
TEST_F(ApiTest, AClosedMonthIsReportedFromItsStatement) {
  const Params november = {{"window", "2026-11"}, {"aggregate", "label:team"}};
  json live = Get("/api/v1/report", november);
  EXPECT_FALSE(live.contains("statements"));
  auto closed = ledger::ClosePeriod(
      *store_, {"2026-11", "allocation", "keep", "test", *ParseRfc3339("2026-12-05T00:00:00Z")});
  ASSERT_TRUE(closed.ok()) << closed.error().message;

  json frozen = Get("/api/v1/report", november);
  ASSERT_TRUE(frozen.contains("statements")) << frozen.dump();
  EXPECT_EQ(frozen["statements"][0]["period"], "2026-11");
  EXPECT_EQ(frozen["statements"][0]["version"], 1);
  EXPECT_EQ(frozen["rows"], live["rows"]);
  EXPECT_EQ(frozen["total"], live["total"]);
  // Another policy, a step or another window reads the ledger.
  EXPECT_FALSE(
      Get("/api/v1/report", {{"window", "2026-11"}, {"policy", "compute"}}).contains("statements"));
  EXPECT_FALSE(Get("/api/v1/report", {{"window", "all"}}).contains("statements"));
  // December, the next open month, carries November's late data: none here.
  json december = Get("/api/v1/report", {{"window", "2026-12"}});
  ASSERT_EQ(december["adjustments"].size(), 1u) << december.dump();
  EXPECT_EQ(december["adjustments"][0]["period"], "2026-11");
  EXPECT_EQ(december["adjustments"][0]["version"], 1);
  EXPECT_EQ(december["adjustments"][0]["device_cost_nanos"], 0);
  EXPECT_TRUE(december["adjustments"][0]["rows"].empty());

  json listed = Get("/api/v1/statements", {});
  ASSERT_EQ(listed["statements"].size(), 1u);
  const json& st = listed["statements"][0];
  EXPECT_EQ(st["period"], "2026-11");
  EXPECT_EQ(st["version"], 1);
  EXPECT_EQ(st["policy"], "allocation");
  EXPECT_EQ(st["idle_handling"], "keep");
  EXPECT_EQ(st["device_cost_nanos"], live["total"]["device_cost_nanos"]);
  EXPECT_EQ(st["provenance"]["prices"].size(), 2u);  // A100 and L4, on-demand
  EXPECT_TRUE(Get("/api/v1/statements", {{"period", "2026-10"}})["statements"].empty());
  EXPECT_EQ(Get("/api/v1/statements", {{"period", "november"}}, 400)["error"],
            "parameter 'period': 'november' is not a month YYYY-MM");
}

// The body of an answer: a streamed one's parts joined.
std::string BodyOf(const ApiResponse& r) {
  if (!r.stream) return r.body;
  std::string body;
  EXPECT_TRUE(r.stream([&](std::string_view part) {
    body += part;
    return true;
  }));
  return body;
}

TEST_F(ApiTest, ExportsFocusCsv) {
  ApiResponse r = api_->Handle("/api/v1/export/focus", {{"period", "day"}}, "Bearer s3cret");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type.rfind("text/csv", 0), 0u);
  ASSERT_TRUE(r.stream) << "streamed as it is built";
  const std::string body = BodyOf(r);
  ledger::ReadService reads;
  auto whole = ledger::ExportFromStore(*store_, reads, {.window = "all", .period = "day"});
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  EXPECT_EQ(body, *whole) << "byte for byte the export held whole";
  const std::string header = body.substr(0, body.find('\n'));
  for (const char* column :
       {"BilledCost", "EffectiveCost", "ListCost", "ChargePeriodStart", "Tags"})
    EXPECT_NE(header.find(column), std::string::npos) << column;
  EXPECT_EQ(api_->Handle("/api/v1/export/focus", {{"period", "month"}}, "Bearer s3cret").status,
            400);
}

// Through the HTTP server: chunked, byte for byte the export held whole, and the connection
// answers the next request after it.
TEST_F(ApiTest, TheExportStreamsOverHttp) {
  auto http = HttpServer::Bind("127.0.0.1:0", *api_);
  ASSERT_TRUE(http) << http.error().message;
  std::thread serve([&] { (*http)->Serve(); });
  httplib::Client c("127.0.0.1", (*http)->port());
  c.set_read_timeout(std::chrono::seconds(30));
  const httplib::Headers token{{"Authorization", "Bearer s3cret"}};
  auto r = c.Get("/api/v1/export/focus?window=all&period=hour", token);
  ledger::ReadService reads;
  auto whole = ledger::ExportFromStore(*store_, reads, {.window = "all", .period = "hour"});
  auto next = c.Get("/api/v1/devices", token);
  (*http)->Stop();
  serve.join();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Transfer-Encoding"), "chunked");
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  EXPECT_GT(whole->size(), 1000u);
  EXPECT_EQ(r->body, *whole);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 200);
}

TEST_F(ApiTest, MetricsCountRequests) {
  Get("/api/v1/devices", {});
  ApiResponse m = api_->Handle("/metrics", {}, "");
  EXPECT_NE(m.body.find("gpuledger_server_requests_total{path=\"/api/v1/devices\",code=\"200\"} 1"),
            std::string::npos)
      << m.body;
  EXPECT_NE(m.body.find("gpuledger_server_ledger_up 1"), std::string::npos);
}

// Consumer entries carry the activity (exact GPU-µs and GPU-hours, its source), the share
// source and the utilization class; __idle__ and __unattributed__ carry none of them.
TEST(AllocationActivity, EntriesShowActivityAndUtilizationClass) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("gpuledger-api-activity-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "l.db").string();
  {
    auto store = store::OpenSqliteLedger(path);
    ASSERT_TRUE(store.ok()) << store.error().message;
    LedgerHour h;
    DeviceHour& d = h.device;
    d.hour_us = 1'800'000'000LL * kMicrosPerSecond;
    d.cluster = "c1";
    d.node = "node-a";
    d.gpu = GpuUuid{"GPU-h100"};
    d.gpu_model = "H100-80GB";
    d.pricing_class = "on-demand";
    d.price_nanos = 4 * kNanosPerUnit;
    d.metered_us = kMicrosPerHour;
    d.busy_us = kMicrosPerHour;
    d.memory_total_bytes = 80 * kGiB;
    UsageRow u;
    u.hour_us = d.hour_us;
    u.gpu = d.gpu;
    u.consumer.ref = ConsumerRef{"ml", "train-0", PodUid{"uid-1"}, "main"};
    u.node = d.node;
    u.gpu_model = d.gpu_model;
    u.allocated_us = kMicrosPerHour;
    u.compute_us = kMicrosPerHour;
    u.compute_quality = Quality::kMeasured;
    u.compute_rule = "process-samples";
    u.activity = Activity{180'000'000, 72'000'000, 0, 108'000'000};  // 5% SM active
    u.activity_quality = Quality::kMeasured;
    u.activity_rule = "gpm";
    u.share_source = "annotation:gpu-fraction";
    h.usage = {u};
    ASSERT_TRUE((*store)->WriteHours(std::span(&h, 1)));
  }
  Api api([path] { return store::OpenSqliteLedger(path); }, "");
  ApiResponse r = api.Handle("/api/v1/allocation", {{"aggregate", "pod"}}, "");
  ASSERT_EQ(r.status, 200) << r.body;
  json set = json::parse(r.body)["data"][0];
  const json& e = set["ml/train-0"];
  EXPECT_EQ(e["activity"]["sm_active_gpu_us"], 180'000'000);
  EXPECT_DOUBLE_EQ(e["activity"]["sm_active_gpu_hours"].get<double>(), 0.05);
  EXPECT_DOUBLE_EQ(e["activity"]["sm_occupancy_gpu_hours"].get<double>(), 0.02);
  EXPECT_DOUBLE_EQ(e["activity"]["tensor_active_gpu_hours"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(e["activity"]["dram_active_gpu_hours"].get<double>(), 0.03);
  EXPECT_EQ(e["activity"]["source"], "measured:gpm");
  EXPECT_EQ(e["share_source"], "annotation:gpu-fraction");
  EXPECT_EQ(e["utilization"]["class"], "busy-but-starved");
  EXPECT_EQ(e["utilization"]["basis"], "gpm");
  EXPECT_DOUBLE_EQ(e["utilization"]["signals"]["gpu_util"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(e["utilization"]["signals"]["sm_active"].get<double>(), 0.05);
  EXPECT_EQ(e["gpuUsageHours"], 1.0);
  EXPECT_FALSE(set["__idle__"].contains("utilization"));
  EXPECT_FALSE(set["__unattributed__"].contains("activity"));
  std::filesystem::remove_all(dir);
}

// /api/v1/findings over a ledger whose agents found a pod using a GPU it was never granted,
// and whose rows show a notebook holding a GPU idle: filters, the policy, and clear errors.
class FindingsApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpuledger-api-findings-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    auto scenario = sim::ParseScenario(R"(
name: findings
start: "2026-11-23T00:00:00Z"
duration: 30h
nodes:
  - {name: a100, gpu_model: A100-80GB, gpus: 2}
workloads:
  - {namespace: ml, name: train, node: a100, compute: {profile: constant, duty: 0.5}, memory: {bytes: 10GiB}}
  - {namespace: nb, name: jupyter, node: a100, compute: {profile: idle}, memory: {bytes: 1GiB}}
  - {namespace: ml, name: debug, owner_kind: Pod, request: none, uses_gpu: {node: a100, index: 0},
     visible_devices: all, start: 2h, end: 4h, compute: {profile: constant, duty: 0.1}, memory: {bytes: 1GiB}}
)",
                                       "findings.yaml");
    ASSERT_TRUE(scenario.ok()) << scenario.error().message;
    const std::string path = (dir_ / "l.db").string();
    {
      auto store = store::OpenSqliteLedger(path);
      ASSERT_TRUE(store.ok());
      sim::Simulator simulator(*scenario, 60 * kMicrosPerSecond);
      ASSERT_TRUE(sim::BuildLedger(simulator, **store, cost::DefaultCatalog()).ok());
    }
    api_ = std::make_unique<Api>([path] { return store::OpenSqliteLedger(path); }, "");
  }
  void TearDown() override {
    api_.reset();
    std::filesystem::remove_all(dir_);
  }
  json Get(const Params& params, int want_status = 200) {
    ApiResponse r = api_->Handle("/api/v1/findings", params, "");
    EXPECT_EQ(r.status, want_status) << r.body;
    return json::parse(r.body);
  }
  std::filesystem::path dir_;
  std::unique_ptr<Api> api_;
};

TEST_F(FindingsApiTest, FindingsWithTheirCostAndFilters) {
  json all = Get({{"window", "all"}});
  EXPECT_EQ(all["status"], "success");
  std::vector<std::string> kinds;
  Nanos sum = 0;
  for (const auto& f : all["findings"]) {
    kinds.push_back(f["kind"].get<std::string>() + " " + f["pod"].get<std::string>());
    sum += f["cost_nanos"].get<Nanos>();
  }
  EXPECT_EQ(kinds,
            (std::vector<std::string>{"idle-allocation jupyter-0", "unallocated-access debug",
                                      "visible-devices-override debug"}));
  EXPECT_EQ(all["total_cost_nanos"].get<Nanos>(), sum);
  EXPECT_EQ(all["by_kind"]["unallocated-access"]["findings"], 1);
  EXPECT_EQ(all["by_kind"]["idle-allocation"]["open"], 1);
  Nanos by_kind = 0;
  for (const auto& [kind, k] : all["by_kind"].items()) by_kind += k["cost_nanos"].get<Nanos>();
  EXPECT_EQ(by_kind, sum);
  const json& debug = all["findings"][1];
  EXPECT_EQ(debug["state"], "resolved");
  EXPECT_EQ(debug["first_seen"], "2026-11-23T02:00:00Z");
  EXPECT_EQ(debug["resolved"], "2026-11-23T04:00:00Z");
  EXPECT_EQ(debug["evidence"]["NVIDIA_VISIBLE_DEVICES"], "all");
  EXPECT_GT(debug["cost_nanos"].get<Nanos>(), 0);
  EXPECT_NE(debug["summary"].get<std::string>().find("it was never granted: $"), std::string::npos);

  EXPECT_EQ(Get({{"window", "all"}, {"kind", "unallocated-access"}})["findings"].size(), 1u);
  EXPECT_EQ(Get({{"window", "all"}, {"severity", "critical"}})["findings"].size(), 1u);
  EXPECT_EQ(Get({{"window", "all"}, {"namespace", "nb"}})["findings"].size(), 1u);
  json open = Get({{"window", "all"}, {"state", "open"}});
  ASSERT_EQ(open["findings"].size(), 1u);
  EXPECT_EQ(open["findings"][0]["kind"], "idle-allocation");
  // A window that ends before the debug pod started holds none of its findings.
  EXPECT_EQ(Get({{"window", "2026-11-23T00:00:00Z,2026-11-23T02:00:00Z"}})["findings"].size(), 0u);
}

TEST_F(FindingsApiTest, BadParametersNameThemselves) {
  EXPECT_NE(Get({{"kind", "nope"}}, 400)["error"].get<std::string>().find(
                "parameter 'kind': kind 'nope': expected one of"),
            std::string::npos);
  EXPECT_NE(Get({{"severity", "high"}}, 400)["error"].get<std::string>().find(
                "parameter 'severity': severity 'high'"),
            std::string::npos);
  EXPECT_NE(Get({{"state", "closed"}}, 400)["error"].get<std::string>().find("'state'"),
            std::string::npos);
  EXPECT_NE(Get({{"frobnicate", "1"}}, 400)["error"].get<std::string>().find(
                "unknown parameter 'frobnicate'"),
            std::string::npos);
}

TEST_F(FindingsApiTest, ThePolicyTurnsKindsOffAndExemptsNamespaces) {
  guardrails::Policy p = guardrails::DefaultPolicy();
  p.For(FindingKind::kVisibleDevicesOverride).action = guardrails::Action::kOff;
  p.exemptions.push_back(guardrails::Exemption{"nb", {}, {}, 1});
  const std::string path = (dir_ / "l.db").string();
  api_ = std::make_unique<Api>([path] { return store::OpenSqliteLedger(path); }, "", p);
  json all = Get({{"window", "all"}});
  ASSERT_EQ(all["findings"].size(), 1u);
  EXPECT_EQ(all["findings"][0]["kind"], "unallocated-access");
}

}  // namespace
}  // namespace gpuledger::server

namespace gpuledger::server {
namespace {

// /metrics' hour series: the ledger's last complete hour before the clock's hour, each
// namespace's cost as the report over that hour gives it, and cost, idle and (no) unattributed
// making up the devices' cost. Read in the background: the first scrape has none yet.
TEST_F(ApiTest, MetricsPriceTheLastCompleteHourAsItsReportDoes) {
  auto extent = store_->Extent();
  ASSERT_TRUE(extent.ok());
  // Half an hour into the hour after the ledger's last: that last hour is the complete one.
  ManualClock clock(extent->to_us + kMicrosPerHour / 2);
  Api api([path = (dir_ / "l.db").string()] { return store::OpenSqliteLedger(path); }, "",
          guardrails::DefaultPolicy(), cost::DefaultCatalog(), &clock);
  std::string metrics;
  for (int i = 0; i < 200 && metrics.find("gpuledger_server_hour_cost{") == std::string::npos;
       ++i) {
    metrics = api.Handle("/metrics", {}, "").body;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const Micros hour = extent->to_us - kMicrosPerHour;
  EXPECT_NE(metrics.find(fmt::format("gpuledger_server_hour_start_timestamp_seconds {}",
                                     hour / kMicrosPerSecond)),
            std::string::npos)
      << metrics;
  ApiResponse r = api.Handle("/api/v1/report",
                             {{"window", FormatRfc3339(hour) + "," + FormatRfc3339(extent->to_us)},
                              {"aggregate", "namespace"}},
                             "");
  ASSERT_EQ(r.status, 200) << r.body;
  json report = json::parse(r.body);
  ASSERT_FALSE(report["rows"].empty());
  for (const json& row : report["rows"]) {
    const std::string line =
        fmt::format("gpuledger_server_hour_cost{{namespace=\"{}\",currency=\"USD\"}} {}",
                    row["key"].get<std::string>(),
                    static_cast<double>(row["cost_nanos"].get<std::int64_t>()) / 1e9);
    EXPECT_NE(metrics.find(line), std::string::npos) << line << "\n" << metrics;
  }
  EXPECT_NE(
      metrics.find(fmt::format(
          "gpuledger_server_hour_device_cost{{currency=\"USD\"}} {}",
          static_cast<double>(report["total"]["device_cost_nanos"].get<std::int64_t>()) / 1e9)),
      std::string::npos)
      << metrics;
  // The hour's tokens and what a million cost, as /api/v1/tokens answers for that hour.
  ApiResponse t = api.Handle("/api/v1/tokens",
                             {{"window", FormatRfc3339(hour) + "," + FormatRfc3339(extent->to_us)},
                              {"aggregate", "namespace,model"}},
                             "");
  ASSERT_EQ(t.status, 200) << t.body;
  json tokens = json::parse(t.body);
  ASSERT_EQ(tokens["groups"].size(), 1u) << t.body;
  const json& g = tokens["groups"][0];
  EXPECT_EQ(g["key"], "web/qwen/qwen-0.5b");
  EXPECT_NE(metrics.find(fmt::format("gpuledger_server_hour_tokens{{namespace=\"web\",model=\""
                                     "qwen/qwen-0.5b\",kind=\"input\"}} {}",
                                     static_cast<double>(g["input_tokens"].get<std::int64_t>()))),
            std::string::npos)
      << metrics;
  EXPECT_NE(
      metrics.find(fmt::format(
          "gpuledger_server_hour_token_cost_per_million{{namespace=\"web\",model=\"qwen/"
          "qwen-0.5b\",kind=\"blended\",currency=\"USD\"}} {}",
          static_cast<double>(g["per_million_tokens"]["blended_nanos"].get<std::int64_t>()) / 1e9)),
      std::string::npos)
      << metrics;
}

}  // namespace
}  // namespace gpuledger::server

namespace gpuledger::server {
namespace {

// Issue 58: with --token-file set, /metrics without the token published each namespace's cost
// every hour. The server's own series stay public (Prometheus and probes read them); the costs
// need the token, as the reports do.
TEST_F(ApiTest, MetricsKeepCostsBehindTheToken) {
  auto extent = store_->Extent();
  ASSERT_TRUE(extent.ok());
  ManualClock clock(extent->to_us + kMicrosPerHour / 2);
  Api api([path = (dir_ / "l.db").string()] { return store::OpenSqliteLedger(path); }, "s3cret",
          guardrails::DefaultPolicy(), cost::DefaultCatalog(), &clock);
  std::string with_token;
  for (int i = 0; i < 200 && with_token.find("gpuledger_server_hour_cost{") == std::string::npos;
       ++i) {
    with_token = api.Handle("/metrics", {}, "Bearer s3cret").body;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_NE(with_token.find("gpuledger_server_hour_cost{"), std::string::npos) << with_token;
  for (const char* auth : {"", "Bearer wrong", "s3cret"}) {
    ApiResponse r = api.Handle("/metrics", {}, auth);
    ASSERT_EQ(r.status, 200) << auth;
    EXPECT_EQ(r.body.find("gpuledger_server_hour_"), std::string::npos) << auth << "\n" << r.body;
    EXPECT_NE(r.body.find("gpuledger_server_ledger_up 1"), std::string::npos) << r.body;
  }
}

// Issue 62: installed without its token's Secret (a GitOps apply), the server runs and refuses
// every /api request with a 503 that says what to create, until the file appears: then the token
// it holds is required, without a restart. Never does /api answer without it.
TEST_F(ApiTest, ATokenFileThatAppearsLaterIsRequiredFromThen) {
  const std::string token_file = (dir_ / "api-token" / "token").string();
  ManualClock clock(0);
  auto token = ApiToken::FromFile(token_file, &clock);
  ASSERT_TRUE(token.ok()) << token.error().message;
  EXPECT_TRUE(token->required());
  Api api([path = (dir_ / "l.db").string()] { return store::OpenSqliteLedger(path); }, *token);
  for (const char* auth : {"", "Bearer s3cret"}) {
    ApiResponse r = api.Handle("/api/v1/report", {}, auth);
    EXPECT_EQ(r.status, 503) << auth;
    EXPECT_NE(r.body.find(token_file + " does not exist (create the Secret gpuledger-api-token"),
              std::string::npos)
        << r.body;
  }
  EXPECT_EQ(api.Handle("/healthz", {}, "").status, 200);

  std::filesystem::create_directories(dir_ / "api-token");
  ASSERT_TRUE(WriteFile(token_file, "s3cret\n").ok());
  EXPECT_EQ(api.Handle("/api/v1/report", {}, "Bearer s3cret").status, 503)
      << "looked for again only after ApiToken::kRetryUs";
  clock.Advance(ApiToken::kRetryUs);
  EXPECT_EQ(api.Handle("/api/v1/report", {}, "Bearer s3cret").status, 200);
  EXPECT_EQ(api.Handle("/api/v1/report", {}, "").status, 401);
  EXPECT_EQ(api.Handle("/api/v1/report", {}, "Bearer wrong").status, 401);
  EXPECT_TRUE(token->Pending().empty());
}

TEST(ApiToken, AFileThatHoldsNoTokenIsAnError) {
  gpuledger::testing::TempDir dir("gpuledger-api-token");
  const std::string empty = (dir.path() / "token").string();
  ASSERT_TRUE(WriteFile(empty, "\n").ok());
  auto token = ApiToken::FromFile(empty);
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.error().message, empty + ": the file is empty");
  EXPECT_FALSE(ApiToken("").required());
  EXPECT_EQ(ApiToken("").Check(""), ApiToken::Verdict::kAllowed);
  EXPECT_EQ(ApiToken("s3cret").Check("Bearer s3cret"), ApiToken::Verdict::kAllowed);
  EXPECT_EQ(ApiToken("s3cret").Check("Bearer s3cre"), ApiToken::Verdict::kRefused);
}

}  // namespace
}  // namespace gpuledger::server

namespace gpuledger::server {
namespace {

// The ledger, with a heavy request's first row read held until released.
class HeldRows : public store::testing::ForwardingStore {
 public:
  HeldRows(std::unique_ptr<store::LedgerStore> real, std::shared_future<void> released,
           std::promise<void>* entered)
      : ForwardingStore(*real), real_(std::move(real)), released_(released), entered_(entered) {}
  Result<std::vector<UsageRow>> ReadUsage(const TimeRange& r) override {
    Hold();
    return ForwardingStore::ReadUsage(r);
  }
  Status Scan(const TimeRange& r, store::LedgerScan& scan) override {
    Hold();
    return ForwardingStore::Scan(r, scan);
  }

 private:
  void Hold() {
    if (entered_ == nullptr) return;
    std::exchange(entered_, nullptr)->set_value();
    released_.wait();
  }
  std::unique_ptr<store::LedgerStore> real_;
  std::shared_future<void> released_;
  std::promise<void>* entered_;
};

// Issue 58: four recommendations at once took the server to 1.9 GB (one, 559 MB), under a pod
// limit of 1 GiB. Heavy requests run one at a time; the others wait for it, then are a 503 with
// Retry-After; reports are not held up.
TEST_F(ApiTest, HeavyRequestsRunOneAtATime) {
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> first = true;
  const std::string path = (dir_ / "l.db").string();
  Api api(
      [&]() -> Result<std::unique_ptr<store::LedgerStore>> {
        auto real = store::OpenSqliteLedger(path);
        if (!real) return real.error();
        return std::unique_ptr<store::LedgerStore>(
            new HeldRows(std::move(*real), released, first.exchange(false) ? &entered : nullptr));
      },
      "", guardrails::DefaultPolicy(), cost::DefaultCatalog(), nullptr, {},
      /*heavy_wait_us=*/300 * 1000);
  auto running = std::async(std::launch::async, [&] {
    return api.Handle("/api/v1/recommendations", {{"window", "all"}}, "").status;
  });
  entered.get_future().wait();
  for (const char* heavy :
       {"/api/v1/findings", "/api/v1/recommendations", "/api/v1/export/focus"}) {
    ApiResponse busy = api.Handle(heavy, {{"window", "all"}}, "");
    EXPECT_EQ(busy.status, 503) << heavy << ": " << busy.body;
    ASSERT_EQ(busy.headers.size(), 1u);
    EXPECT_EQ(busy.headers[0], (std::pair<std::string, std::string>{"Retry-After", "1"}));
  }
  EXPECT_EQ(api.Handle("/api/v1/report", {{"aggregate", "namespace"}}, "").status, 200);
  release.set_value();
  EXPECT_EQ(running.get(), 200);
  EXPECT_EQ(api.Handle("/api/v1/findings", {{"window", "all"}}, "").status, 200);
}

}  // namespace
}  // namespace gpuledger::server

namespace gpuledger::server {
namespace {

// Issue 58: `aggregate=pod,pod,...` 4,000 times made one GET build 680 MB. A level is taken once.
TEST_F(ApiTest, ARepeatedGroupingLevelIsA400) {
  std::string many = "pod";
  for (int i = 1; i < 4000; ++i) many += ",pod";
  for (const std::string& aggregate : {std::string("pod,pod"), many}) {
    json e = Get("/api/v1/allocation", {{"aggregate", aggregate}, {"step", "1h"}}, 400);
    EXPECT_NE(
        e["error"].get<std::string>().find("parameter 'aggregate': grouping 'pod' given twice"),
        std::string::npos)
        << e["error"];
  }
  json ok = Get("/api/v1/allocation", {{"aggregate", "namespace,pod"}, {"step", "1h"}});
  EXPECT_FALSE(ok["data"].empty());
}

// Issue 60: a fresh install's empty ledger. No answer anywhere carries a date of 1969 or 1970
// (the epoch a window counted from no end fell to): a window counted from the ledger's end is a
// 400 that says the ledger is empty; one that names its dates answers empty, with them.
TEST(EmptyLedger, NoAnswerDatesBeforeTheLedgerWasMade) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("gpuledger-empty-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "l.db").string();
  ASSERT_TRUE(store::OpenSqliteLedger(path).ok());
  Api api([path] { return store::OpenSqliteLedger(path); }, "");
  int refused = 0, answered = 0;
  for (const char* endpoint : {"/api/v1/allocation", "/api/v1/report", "/api/v1/devices",
                               "/api/v1/findings", "/api/v1/recommendations",
                               "/api/v1/export/focus", "/api/v1/statements", "/allocation/compute"})
    for (const char* window : {"", "7d", "24h", "all", "today", "lastmonth", "2026-11",
                               "2026-11-01T00:00:00Z,2026-11-08T00:00:00Z"})
      for (const bool stepped : {false, true}) {
        const std::string name = std::string(endpoint);
        if (stepped && name != "/api/v1/allocation" && name != "/allocation/compute") continue;
        if (name == "/api/v1/statements" && *window != '\0') continue;
        Params params;
        if (*window != '\0') params.emplace("window", window);
        if (stepped) params.emplace("step", "1d");
        const ApiResponse r = api.Handle(endpoint, params, "");
        SCOPED_TRACE(name + "?window=" + window + (stepped ? "&step=1d" : ""));
        EXPECT_EQ(r.body.find("1969"), std::string::npos) << r.body.substr(0, 400);
        EXPECT_EQ(r.body.find("1970-"), std::string::npos) << r.body.substr(0, 400);
        if (r.status == 400) {
          EXPECT_NE(r.body.find("the ledger is empty"), std::string::npos) << r.body;
          ++refused;
        } else {
          EXPECT_EQ(r.status, 200) << r.body;
          ++answered;
        }
      }
  EXPECT_GT(refused, 20);
  EXPECT_GT(answered, 5);  // the named months and dates, and the statements
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpuledger::server
