// Issue 33: `kubectl gpuledger report|audit|rightsize` reach the server as a user on a cluster
// does, through the API server of the kubeconfig's context: its service proxy to the
// gpuledger-server Service, authenticated with the kubeconfig's credentials, the gpuledger API
// token read from its Secret where the user may read it. The real binaries (the server, the
// plugin by its kubectl name, and kubectl itself where installed) against the fake API server,
// which proxies as the real one does (Authorization removed).
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

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
    server_ = std::make_unique<Child>(
        std::vector<std::string>{bin_, "server", "--ledger", "sqlite:" + db_, "--listen",
                                 "127.0.0.1:0", "--token-file", Path("api-token")},
        Path("server.out"));
    const std::string port = WaitFor(Path("server.out"), std::regex("http://[^:]+:(\\d+)/"), 20s);
    ASSERT_FALSE(port.empty()) << *ReadFile(Path("server.out.err"));
    server_url_ = "http://127.0.0.1:" + port;
    // The plugin as kubectl finds it: an executable named kubectl-gpuledger on the PATH.
    fs::create_directories(Path("bin"));
    fs::create_symlink(bin_, Path("bin/kubectl-gpuledger"));
  }

  // A fake API server that wants `kube_token`, proxies gpuledger/gpuledger-server:http to the
  // server, and holds the API token's Secret; `forbidden` resources answer 403.
  void StartApiServer(std::set<std::string> forbidden = {}) {
    fake::FakeApiServer::Options options;
    options.bearer_token = "kube-user-token";
    options.service_proxies = {{"gpuledger/gpuledger-server:http", server_url_}};
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

}  // namespace
}  // namespace gpuledger
