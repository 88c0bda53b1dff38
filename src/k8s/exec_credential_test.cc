#include "k8s/exec_credential.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/time_util.h"
#include "fake_apiserver/fake_apiserver.h"
#include "http/client.h"
#include "k8s/api_transport.h"
#include "k8s/kube_config.h"
#include "temp_dir.h"

namespace gpuledger::k8s {
namespace {

using namespace std::chrono_literals;

std::string ReadAll(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

ExecPlugin Plugin(const std::string& api_version = "client.authentication.k8s.io/v1") {
  ExecPlugin p;
  p.api_version = api_version;
  p.argv = {"plugin"};
  p.source = "kubeconfig /k: users[eks].user.exec";
  return p;
}

TEST(ExecCredential, ParsesATokenWithItsExpiryAndACertificate) {
  auto token = ParseExecCredential(
      R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
          "status":{"token":"k8s-aws-v1.abc","expirationTimestamp":"2026-12-05T06:15:00Z"}})",
      Plugin());
  ASSERT_TRUE(token) << token.error().message;
  EXPECT_EQ(token->token, "k8s-aws-v1.abc");
  EXPECT_EQ(token->expires_unix_us, *ParseRfc3339("2026-12-05T06:15:00Z"));

  auto cert = ParseExecCredential(
      R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",
          "status":{"clientCertificateData":"-----BEGIN CERTIFICATE-----","clientKeyData":"K"}})",
      Plugin("client.authentication.k8s.io/v1beta1"));
  ASSERT_TRUE(cert) << cert.error().message;
  EXPECT_EQ(cert->client_cert_pem, "-----BEGIN CERTIFICATE-----");
  EXPECT_EQ(cert->client_key_pem, "K");
  EXPECT_FALSE(cert->expires_unix_us);
}

TEST(ExecCredential, SaysWhatIsWrongWithAnAnswer) {
  const struct {
    const char* answer;
    const char* says;
  } cases[] = {
      {"not json", "is not a JSON object"},
      {R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",
           "status":{"token":"t"}})",
       "has apiVersion 'client.authentication.k8s.io/v1beta1', the kubeconfig asked for "
       "'client.authentication.k8s.io/v1'"},
      {R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"Pod","status":{}})",
       "is not kind ExecCredential"},
      {R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential"})",
       "has no status"},
      {R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{}})",
       "has neither status.token nor status.clientCertificateData"},
      {R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
           "status":{"clientCertificateData":"C"}})",
       "has a client certificate without its key"},
      {R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
           "status":{"token":"t","expirationTimestamp":"tomorrow"}})",
       "has expirationTimestamp 'tomorrow'"},
  };
  for (const auto& c : cases) {
    auto parsed = ParseExecCredential(c.answer, Plugin());
    ASSERT_FALSE(parsed) << c.answer;
    EXPECT_NE(
        parsed.error().message.find(
            std::string("kubeconfig /k: users[eks].user.exec: the plugin's answer ") + c.says),
        std::string::npos)
        << parsed.error().message;
  }
}

// A kubeconfig in a folder with a plugin script beside it, as `aws eks update-kubeconfig`
// writes one (with the command path relative to the kubeconfig's folder here).
class ExecKubeconfig : public ::testing::Test {
 protected:
  // The plugin answers with ANSWER (a file) and appends a line to RUNS per run; it records
  // KUBERNETES_EXEC_INFO in INFO. `answer_tokens`: one token per run, the last repeated.
  void WritePlugin(const std::vector<std::string>& answer_tokens, const std::string& expiry = "") {
    std::string tokens;
    for (const auto& t : answer_tokens) tokens += t + " ";
    std::ofstream(dir_.path() / "plugin.sh")
        << "#!/bin/sh\n"
           "echo run >> \"$RUNS\"\n"
           "printf '%s' \"$KUBERNETES_EXEC_INFO\" > \"$INFO\"\n"
           "n=$(wc -l < \"$RUNS\")\n"
           "set -- "
        << tokens
        << "\n"
           "while [ $n -gt 1 ] && [ $# -gt 1 ]; do shift; n=$((n-1)); done\n"
           "printf "
           "'{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
           "\"status\":{\"token\":\"%s\""
        << (expiry.empty() ? "" : ",\"expirationTimestamp\":\"" + expiry + "\"") << "}}' \"$1\"\n";
    ::chmod((dir_.path() / "plugin.sh").c_str(), 0755);
  }

  std::string Kubeconfig(const std::string& server, const std::string& exec_extra = "") const {
    return "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
           "contexts: [{name: c, context: {cluster: k, user: eks}}]\n"
           "clusters: [{name: k, cluster: {server: " +
           server + ", certificate-authority-data: " + EncodeBase64("CA PEM") +
           "}}]\n"
           "users:\n- name: eks\n  user:\n    exec:\n"
           "      apiVersion: client.authentication.k8s.io/v1\n"
           "      command: ./plugin.sh\n      args: [eks, get-token]\n"
           "      interactiveMode: Never\n      provideClusterInfo: true\n"
           "      installHint: install the plugin\n"
           "      env:\n      - {name: RUNS, value: " +
           (dir_.path() / "runs").string() +
           "}\n      - {name: INFO, value: " + (dir_.path() / "info").string() + "}\n" + exec_extra;
  }

  Result<ApiServerConfig> Parse(const std::string& yaml) const {
    return ParseKubeconfig(yaml, (dir_.path() / "config").string());
  }
  int Runs() const {
    const std::string runs = ReadAll(dir_.path() / "runs");
    return static_cast<int>(std::count(runs.begin(), runs.end(), '\n'));
  }

  testing::TempDir dir_{"gpuledger-exec-credential"};
};

TEST_F(ExecKubeconfig, RunsThePluginOnceAndKeepsItsTokenUntilItExpires) {
  ManualClock clock(*ParseRfc3339("2026-12-05T06:00:00Z"));
  WritePlugin({"tok-1", "tok-2"}, "2026-12-05T06:15:00Z");
  auto config = Parse(Kubeconfig("https://10.0.0.1:6443"));
  ASSERT_TRUE(config) << config.error().message;
  ASSERT_TRUE(config->exec_credentials);
  EXPECT_EQ(config->exec_credentials->plugin().argv,
            (std::vector<std::string>{(dir_.path() / "plugin.sh").string(), "eks", "get-token"}));
  // The same plugin and cluster, on a clock the test moves.
  ExecCredentialCache cache(config->exec_credentials->plugin(),
                            {"https://10.0.0.1:6443", "CA PEM", false}, &clock);
  auto first = cache.Get();
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->token, "tok-1");
  EXPECT_EQ(cache.Get()->token, "tok-1");
  EXPECT_EQ(Runs(), 1);
  // What the plugin was told: not interactive, and the cluster (provideClusterInfo).
  const auto info = nlohmann::json::parse(ReadAll(dir_.path() / "info"));
  EXPECT_EQ(info["kind"], "ExecCredential");
  EXPECT_EQ(info["apiVersion"], "client.authentication.k8s.io/v1");
  EXPECT_EQ(info["spec"]["interactive"], false);
  EXPECT_EQ(info["spec"]["cluster"]["server"], "https://10.0.0.1:6443");
  EXPECT_EQ(info["spec"]["cluster"]["certificate-authority-data"], EncodeBase64("CA PEM"));
  // Within 10 s of its expiry the token is fetched again.
  clock.Advance(14 * 60 * kMicrosPerSecond + 51 * kMicrosPerSecond);
  EXPECT_EQ(cache.Get()->token, "tok-2");
  EXPECT_EQ(Runs(), 2);
  // Refused by the server: fetched again at once.
  cache.Invalidate();
  EXPECT_EQ(cache.Get()->token, "tok-2");
  EXPECT_EQ(Runs(), 3);
}

TEST_F(ExecKubeconfig, ATokenTheServerRefusesIsFetchedAgainOnce) {
  WritePlugin({"stale", "fresh"});
  fake::FakeApiServer::Options options;
  options.bearer_token = "fresh";
  fake::FakeApiServer server(options);
  ASSERT_TRUE(server.Start().ok());
  auto config = Parse(Kubeconfig(server.url()));
  ASSERT_TRUE(config) << config.error().message;
  http::InitClientOnce();
  auto transport = MakeCurlTransport(*config);
  auto listed = transport->Get("/api/v1/namespaces");
  ASSERT_TRUE(listed) << listed.error().message;
  EXPECT_EQ(listed->status, 200) << listed->body;
  EXPECT_EQ(server.last_authorization(), "Bearer fresh");
  EXPECT_EQ(Runs(), 2);
  // Another connection made from the same config shares the credential: no third run.
  auto again = MakeCurlTransport(*config)->Get("/api/v1/namespaces");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
  EXPECT_EQ(Runs(), 2);
}

TEST_F(ExecKubeconfig, APluginThatFailsIsNamedWithWhatItSaid) {
  std::ofstream(dir_.path() / "plugin.sh") << "#!/bin/sh\necho 'Error loading SSO Token: Token for "
                                              "my-sso does not exist' >&2\nexit 255\n";
  ::chmod((dir_.path() / "plugin.sh").c_str(), 0755);
  auto config = Parse(Kubeconfig("https://10.0.0.1:6443"));
  ASSERT_TRUE(config);
  auto got = config->exec_credentials->Get();
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, ErrorCode::kUnavailable);
  const std::string path = (dir_.path() / "config").string();
  EXPECT_EQ(
      got.error().message,
      "kubeconfig " + path + ": users[eks].user.exec: " + (dir_.path() / "plugin.sh").string() +
          " exited with status 255: Error loading SSO Token: Token for my-sso does not exist");
}

TEST_F(ExecKubeconfig, APluginThatIsNotInstalledSaysHowToInstallIt) {
  auto config = Parse(Kubeconfig("https://10.0.0.1:6443"));  // no plugin.sh written
  ASSERT_TRUE(config);
  auto got = config->exec_credentials->Get();
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, ErrorCode::kNotFound);
  EXPECT_NE(got.error().message.find("cannot be run"), std::string::npos);
  EXPECT_NE(got.error().message.find("\ninstall the plugin"), std::string::npos)
      << got.error().message;
}

TEST_F(ExecKubeconfig, RefusesWhatCannotWorkWhenTheKubeconfigIsRead) {
  std::string yaml = Kubeconfig("https://k:6443");
  yaml.replace(yaml.find("interactiveMode: Never"), 22, "interactiveMode: Always");
  auto always = Parse(yaml);
  ASSERT_FALSE(always);
  EXPECT_NE(always.error().message.find(
                "users[eks].user.exec.interactiveMode: Always: the plugin needs a terminal"),
            std::string::npos)
      << always.error().message;

  yaml = Kubeconfig("https://k:6443");
  yaml.replace(yaml.find("client.authentication.k8s.io/v1"), 31,
               "client.authentication.k8s.io/v1alpha1");
  auto alpha = Parse(yaml);
  ASSERT_FALSE(alpha);
  EXPECT_NE(alpha.error().message.find("exec.apiVersion: 'client.authentication.k8s.io/v1alpha1': "
                                       "expected client.authentication.k8s.io/v1 or /v1beta1"),
            std::string::npos)
      << alpha.error().message;

  auto both = Parse(Kubeconfig("https://k:6443") + "    token: abc\n");
  ASSERT_FALSE(both);
  EXPECT_NE(both.error().message.find("users[eks].user.exec: given beside token"),
            std::string::npos)
      << both.error().message;
}

TEST(Base64, EncodesWhatDecodeReadsBack) {
  for (const std::string s : {"", "f", "fo", "foo", "foob", "fooba", "foobar"}) {
    auto back = DecodeBase64(EncodeBase64(s));
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, s);
  }
  EXPECT_EQ(EncodeBase64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(EncodeBase64("fo"), "Zm8=");
}

}  // namespace
}  // namespace gpuledger::k8s
