#include "k8s/kube_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace gpuledger::k8s {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("gpuledger_kubeconfig_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string Write(const std::string& rel, const std::string& content) const {
    fs::path p = path_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << content;
    return p.string();
  }
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

// "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n" in base64.
constexpr const char* kCaPem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
constexpr const char* kCaB64 =
    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=";

TEST(DecodeBase64, PaddedUnpaddedAndInvalid) {
  EXPECT_EQ(*DecodeBase64(kCaB64), kCaPem);
  EXPECT_EQ(*DecodeBase64("aGVsbG8"), "hello");
  EXPECT_EQ(*DecodeBase64("aGVs\nbG8="), "hello");
  EXPECT_FALSE(DecodeBase64("aGVs*bG8="));
}

TEST(ParseKubeconfig, TokenAndCaData) {
  std::string yaml = std::string(R"(apiVersion: v1
kind: Config
current-context: prod
contexts:
- name: dev
  context: {cluster: dev-cluster, user: dev-user}
- name: prod
  context: {cluster: prod-cluster, user: ledger}
clusters:
- name: prod-cluster
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority-data: )") +
                     kCaB64 + R"(
users:
- name: ledger
  user:
    token: abc.def.ghi
)";
  auto config = ParseKubeconfig(yaml, "/etc/kube/config");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->server, "https://10.0.0.1:6443");
  EXPECT_EQ(config->ca_pem, kCaPem);
  EXPECT_EQ(config->bearer_token, "abc.def.ghi");
  EXPECT_TRUE(config->client_cert_pem.empty());
  EXPECT_FALSE(config->insecure_skip_tls_verify);

  auto dev = ParseKubeconfig(yaml, "/etc/kube/config", "dev");
  ASSERT_FALSE(dev);
  EXPECT_EQ(dev.error().message,
            "kubeconfig /etc/kube/config: clusters[dev-cluster]: no such cluster");
}

TEST(ParseKubeconfig, ClientCertificateFilesRelativeToTheKubeconfig) {
  TempDir dir;
  dir.Write("certs/client.crt", "CERT PEM");
  dir.Write("certs/client.key", "KEY PEM");
  dir.Write("certs/ca.crt", kCaPem);
  const std::string path = dir.Write("config", R"(
current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: "https://kube.example:443", certificate-authority: certs/ca.crt}}]
users: [{name: u, user: {client-certificate: certs/client.crt, client-key: certs/client.key}}]
)");
  auto config = LoadKubeconfig(path);
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->client_cert_pem, "CERT PEM");
  EXPECT_EQ(config->client_key_pem, "KEY PEM");
  EXPECT_EQ(config->ca_pem, kCaPem);
  EXPECT_EQ(config->source, path);
}

TEST(ParseKubeconfig, ClientCertificateData) {
  auto config = ParseKubeconfig(R"(
current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: "https://k:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {client-certificate-data: Q0VSVA==, client-key-data: S0VZ}}]
)",
                                "/k");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->client_cert_pem, "CERT");
  EXPECT_EQ(config->client_key_pem, "KEY");
  EXPECT_TRUE(config->insecure_skip_tls_verify);
}

TEST(ParseKubeconfig, ErrorsNameFileAndField) {
  const std::string head = R"(
current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: "https://k:6443"}}]
)";
  struct Case {
    std::string users;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"users: [{name: u, user: {client-key-data: '!!notbase64', client-certificate-data: "
       "Q0VSVA==}}]",
       "kubeconfig /home/a/.kube/config: users[u].user.client-key-data: not valid base64"},
      {"users: [{name: u, user: {client-certificate-data: Q0VSVA==}}]",
       "kubeconfig /home/a/.kube/config: users[u].user.client-key: missing (a client "
       "certificate needs both certificate and key)"},
      {"users: [{name: u, user: {client-certificate: /nonexistent/c.crt, client-key-data: S0VZ}}]",
       "kubeconfig /home/a/.kube/config: users[u].user.client-certificate: cannot read "
       "/nonexistent/c.crt"},
      {"users: [{name: u, user: {exec: {command: aws}}}]",
       "kubeconfig /home/a/.kube/config: users[u].user.exec.apiVersion: '': expected "
       "client.authentication.k8s.io/v1 or /v1beta1"},
      {"users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1}}}]",
       "kubeconfig /home/a/.kube/config: users[u].user.exec.command: missing"},
      {"users: [{name: other, user: {token: x}}]",
       "kubeconfig /home/a/.kube/config: users[u]: no such user"},
  };
  for (const auto& c : cases) {
    auto config = ParseKubeconfig(head + c.users + "\n", "/home/a/.kube/config");
    ASSERT_FALSE(config) << c.users;
    EXPECT_TRUE(config.error().message.starts_with(c.message)) << config.error().message;
  }
  auto no_server = ParseKubeconfig(R"(
current-context: c
contexts: [{name: c, context: {cluster: k}}]
clusters: [{name: k, cluster: {server: "k:6443"}}]
)",
                                   "/cfg");
  ASSERT_FALSE(no_server);
  EXPECT_EQ(no_server.error().message,
            "kubeconfig /cfg: clusters[k].cluster.server: \"k:6443\" is not an http(s) URL");
  auto missing = LoadKubeconfig("/nonexistent/kubeconfig");
  ASSERT_FALSE(missing);
  EXPECT_TRUE(missing.error().message.starts_with("kubeconfig /nonexistent/kubeconfig"));
}

TEST(LoadInClusterConfig, FromATempRoot) {
  TempDir dir;
  dir.Write("var/run/secrets/kubernetes.io/serviceaccount/token", "eyJhbGciOi.token\n");
  dir.Write("var/run/secrets/kubernetes.io/serviceaccount/ca.crt", kCaPem);
  auto config = LoadInClusterConfig(dir.path(), "10.96.0.1", "443");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->server, "https://10.96.0.1:443");
  EXPECT_EQ(config->ca_pem, kCaPem);
  EXPECT_EQ(config->bearer_token_file,
            dir.path() + "/var/run/secrets/kubernetes.io/serviceaccount/token");
  auto v6 = LoadInClusterConfig(dir.path(), "fd00::1", "443");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->server, "https://[fd00::1]:443");
  auto no_env = LoadInClusterConfig(dir.path(), "", "");
  ASSERT_FALSE(no_env);
  EXPECT_EQ(no_env.error().code, ErrorCode::kUnavailable);
  TempDir empty;
  auto no_files = LoadInClusterConfig(empty.path(), "10.96.0.1", "443");
  ASSERT_FALSE(no_files);
  EXPECT_NE(no_files.error().message.find("serviceaccount/ca.crt"), std::string::npos);
}

}  // namespace
}  // namespace gpuledger::k8s
