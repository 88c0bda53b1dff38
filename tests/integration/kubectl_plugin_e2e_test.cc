// Issue 33: `kubectl gpuledger report|audit|rightsize` reach the server as a user on a cluster
// does, through the API server of the kubeconfig's context: its service proxy to the
// gpuledger-server Service, authenticated with the kubeconfig's credentials, the gpuledger API
// token read from its Secret where the user may read it. The real binaries (the server, the
// plugin by its kubectl name, and kubectl itself where installed) against the fake API server,
// which proxies as the real one does (Authorization removed).
#include <filesystem>
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fake_apiserver/fake_apiserver.h"
#include "io/file_util.h"
#include "k8s/kube_config.h"
#include "process_util.h"
#include "temp_dir.h"
#include "test_paths.h"

namespace gpuledger {
namespace {

namespace fs = std::filesystem;

class KubectlPluginE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    int code = 0;
    RunCapture(bin_ + " demo --no-serve --hours 12 --out " + Path("d"), &code);
    ASSERT_EQ(code, 0);
    db_ = Path("d/gpuledger.db");
    ASSERT_TRUE(WriteFile(Path("api-token"), "s3cret-api\n").ok());
    // The shipped install's server flags (deploy/base/server.yaml): the token, and OpenCost's
    // read paths on a listener of their own.
    server_ = std::make_unique<Child>(
        std::vector<std::string>{bin_, "server", "--ledger", "sqlite:" + db_, "--listen",
                                 "127.0.0.1:0", "--token-file", Path("api-token"),
                                 "--opencost-listen", "127.0.0.1:0"},
        Path("server.out"));
    const std::string port = WaitFor(Path("server.out"), std::regex("http://[^:]+:(\\d+)/"), 20s);
    ASSERT_FALSE(port.empty()) << *ReadFile(Path("server.out.err"));
    server_url_ = "http://127.0.0.1:" + port;
    const std::string opencost_port =
        WaitFor(Path("server.out"), std::regex("without the token, at http://[^:]+:(\\d+)/"), 20s);
    ASSERT_FALSE(opencost_port.empty()) << *ReadFile(Path("server.out"));
    opencost_url_ = "http://127.0.0.1:" + opencost_port;
    // The plugin as kubectl finds it: an executable named kubectl-gpuledger on the PATH.
    fs::create_directories(Path("bin"));
    fs::create_symlink(bin_, Path("bin/kubectl-gpuledger"));
  }

  // A fake API server that wants `kube_token`, proxies gpuledger/gpuledger-server:http to the
  // server, and holds the API token's Secret; `forbidden` resources answer 403.
  void StartApiServer(std::set<std::string> forbidden = {}) {
    fake::FakeApiServer::Options options;
    options.bearer_token = "kube-user-token";
    options.service_proxies = {{"gpuledger/gpuledger-server:http", server_url_},
                               {"gpuledger/gpuledger-server:9003", opencost_url_}};
    options.forbidden = std::move(forbidden);
    api_ = std::make_unique<fake::FakeApiServer>(options);
    ASSERT_TRUE(api_->Start().ok());
    api_->Upsert("secrets",
                 {{"apiVersion", "v1"},
                  {"kind", "Secret"},
                  {"metadata", {{"namespace", "gpuledger"}, {"name", "gpuledger-api-token"}}},
                  {"data", {{"token", k8s::EncodeBase64("s3cret-api")}}}});
    ASSERT_TRUE(WriteFile(Path("kubeconfig"),
                          "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
                          "clusters: [{name: fake, cluster: {server: \"" +
                              api_->url() +
                              "\"}}]\n"
                              "users: [{name: alice, user: {token: kube-user-token}}]\n"
                              "contexts: [{name: test, context: {cluster: fake, user: alice}}]\n")
                    .ok());
  }

  // The plugin, run as kubectl runs it: by its name, with KUBECONFIG set.
  std::string Plugin(const std::string& args, int* code) const {
    return RunCapture("KUBECONFIG=" + Path("kubeconfig") + " " + Path("bin/kubectl-gpuledger") +
                          " " + args + " 2>&1",
                      code);
  }
  std::string Path(const std::string& name) const { return (dir_.path() / name).string(); }

  testing::TempDir dir_{"gpuledger-kubectl-plugin"};
  const std::string bin_ = test_paths::kGpuledgerBin;
  std::string db_;
  std::string server_url_;
  std::string opencost_url_;
  std::unique_ptr<Child> server_;
  std::unique_ptr<fake::FakeApiServer> api_;
};

TEST_F(KubectlPluginE2e, ReadsThroughTheApiServerAsTheLocalLedgerReads) {
  StartApiServer();
  int code = 0;
  for (const std::string& args :
       {std::string("report --by namespace --format json"),
        std::string("report --by label:team --policy compute --format csv"),
        std::string("audit --since all --format json"), std::string("rightsize --window all")}) {
    const std::string local = RunCapture(bin_ + " " + args + " --db " + db_, &code);
    ASSERT_EQ(code, 0) << local;
    const std::string remote = Plugin(args, &code);
    ASSERT_EQ(code, 0) << remote;
    EXPECT_EQ(local, remote) << args;
  }
  // The API server saw the kubeconfig's credential; the gpuledger server its own token.
  EXPECT_EQ(api_->last_authorization(), "Bearer kube-user-token");

  // kubectl itself, finding the plugin on the PATH and passing its arguments through.
  if (RunCapture("command -v kubectl", &code).empty() || code != 0) {
    GTEST_SKIP() << "kubectl is not installed: the plugin ran by its name only";
  }
  const std::string local = RunCapture(bin_ + " report --by namespace --db " + db_, &code);
  const std::string via_kubectl =
      RunCapture("PATH=" + Path("bin") + ":$PATH KUBECONFIG=" + Path("kubeconfig") +
                     " kubectl gpuledger report --by namespace 2>&1",
                 &code);
  ASSERT_EQ(code, 0) << via_kubectl;
  EXPECT_EQ(local, via_kubectl);
}

TEST_F(KubectlPluginE2e, SaysWhatIsMissingWhenTheSecretOrTheServiceIsOutOfReach) {
  StartApiServer({"secrets"});
  int code = 0;
  // The user may not read the Secret: the server's 401 says why and what to pass.
  std::string out = Plugin("report", &code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("HTTP 401"), std::string::npos) << out;
  EXPECT_NE(out.find("Secret gpuledger/gpuledger-api-token: HTTP 403"), std::string::npos) << out;
  EXPECT_NE(out.find("--token-file"), std::string::npos) << out;
  // ... and with --token-file it reads.
  out = Plugin("report --token-file " + Path("api-token"), &code);
  EXPECT_EQ(code, 0) << out;

  // Installed elsewhere: the API server has no such service.
  out = Plugin("report --kube-namespace elsewhere --token-file " + Path("api-token"), &code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("is gpuledger installed in namespace elsewhere?"), std::string::npos) << out;
  // A context the kubeconfig does not have.
  out = Plugin("report --kube-context nope", &code);
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("nope"), std::string::npos) << out;
  // No kubeconfig at all, and neither --db nor --server.
  out = RunCapture(
      "KUBECONFIG=" + Path("none") + " HOME=" + Path("home") + " " + bin_ + " report 2>&1", &code);
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("no --db, no --server, and no kubeconfig"), std::string::npos) << out;
}

// `kubectl cost` (kubecost/kubectl-cost: pkg/cmd/cost.go, aggregatedcommandbuilder.go, label.go,
// pkg/query/allocation.go, configapi.go) against the shipped install: each subcommand's request,
// parameters as it sends them, to the OpenCost listener, which needs no token (the API server
// removes Authorization, and kubectl cost sends nothing else). The fake API server's proxy
// reaches the listener's loopback address as a port-forward does in a cluster (kubectl cost's
// default); `--use-proxy` reaches a Pod's own address, which the shipped listener does not
// answer (docs/opencost.md says why, and how to open it). Every answer a 200 its table can print (a name of one field per level),
// the figures those of `gpuledger report`.
TEST_F(KubectlPluginE2e, KubectlCostsRequestsReadTheShippedInstall) {
  StartApiServer();
  using nlohmann::json;
  int code = 0;
  auto ask = [&](const std::string& path, const std::string& query) {
    const std::string body = RunCapture(
        "curl -s -w '\\n%{http_code}' -H 'Authorization: Bearer kube-user-token' '" + api_->url() +
            "/api/v1/namespaces/gpuledger/services/gpuledger-server:9003/proxy" + path + "?" +
            query + "'",
        &code);
    const std::size_t cut = body.rfind('\n');
    EXPECT_EQ(body.substr(cut + 1), "200") << path << "?" << query << ": " << body;
    return json::parse(body.substr(0, cut), nullptr, /*allow_exceptions=*/false);
  };
  EXPECT_EQ(ask("/model/getConfigs", "")["data"]["currencyCode"], "USD");

  // The namespaces' costs as the CLI reads them from the ledger.
  const json local = json::parse(
      RunCapture("{ " + bin_ + " report --by namespace --window 7d --format json --db " + db_ +
                     " 2>/dev/null; }",
                 &code));
  ASSERT_EQ(code, 0);
  std::map<std::string, std::int64_t> by_namespace;
  for (const json& row : local["rows"]) by_namespace[row["key"]] = row["cost_nanos"];
  ASSERT_GE(by_namespace.size(), 3u);

  struct Command {
    std::string aggregate;
    bool namespace_filter;  // --namespace/-n sends filterNamespaces
  };
  for (const Command& c : std::vector<Command>{{"cluster,namespace", false},
                                               {"cluster,namespace,deployment", true},
                                               {"cluster,namespace,controller", true},
                                               {"cluster,namespace,pod", true},
                                               {"cluster,label:team", false}}) {
    for (const bool include_idle : {false, true}) {
      const std::string b = include_idle ? "true" : "false";
      const std::string query = "window=7d&aggregate=" + c.aggregate +
                                "&accumulate=true&includeIdle=" + b + "&idle=" + b +
                                (c.namespace_filter ? "&filterNamespaces=" : "");
      const json answer = ask("/allocation/compute", query);
      ASSERT_EQ(answer["data"].size(), 1u) << query << ": " << answer.dump();
      const std::size_t levels = std::count(c.aggregate.begin(), c.aggregate.end(), ',') + 1;
      std::map<std::string, std::int64_t> summed;  // by namespace
      for (const auto& [name, entry] : answer["data"][0].items()) {
        EXPECT_EQ(entry["name"], name);
        if (name == "__idle__") continue;
        // kubectl cost's table splits the name on '/' into one column per level, and stops
        // (a panic) on any other count.
        EXPECT_EQ(std::count(name.begin(), name.end(), '/') + 1, levels) << query << ": " << name;
        const std::size_t first = name.find('/');
        const std::string ns = name.substr(first + 1, name.find('/', first + 1) - first - 1);
        summed[ns] += entry["cost_nanos"].get<std::int64_t>();
      }
      // aggregate=deployment selects the deployments' pods, as a filter does: no idle then.
      EXPECT_EQ(answer["data"][0].contains("__idle__"),
                include_idle && c.aggregate.find("deployment") == std::string::npos)
          << query;
      if (c.aggregate == "cluster,namespace" || c.aggregate == "cluster,namespace,pod") {
        for (const auto& [ns, nanos] : by_namespace)
          EXPECT_EQ(summed[ns], nanos) << query << " " << ns;
      }
    }
  }
  // -n ns: that namespace alone.
  const json research = ask("/allocation/compute",
                            "window=7d&aggregate=cluster,namespace,pod&accumulate=true&"
                            "includeIdle=false&idle=false&filterNamespaces=research");
  std::int64_t nanos = 0;
  for (const auto& [name, entry] : research["data"][0].items()) {
    EXPECT_NE(name.find("/research/"), std::string::npos) << name;
    nanos += entry["cost_nanos"].get<std::int64_t>();
  }
  EXPECT_EQ(nanos, by_namespace["research"]);

  // The OpenCost listener serves nothing else; the API keeps its token.
  const std::string other = RunCapture("curl -s " + opencost_url_ + "/api/v1/findings", &code);
  EXPECT_NE(other.find("no endpoint /api/v1/findings on the OpenCost listener"), std::string::npos)
      << other;
  const std::string denied = RunCapture("curl -s " + server_url_ + "/allocation/compute", &code);
  EXPECT_NE(denied.find("missing or wrong bearer token"), std::string::npos) << denied;
}

}  // namespace
}  // namespace gpuledger
