// Issue 34: reaching gpuledger's peers as they sit in real clusters, behind a TLS proxy that
// wants a client certificate and a bearer token (kube-rbac-proxy in front of an agent, an
// ingress in front of the server). The real binaries, a throwaway CA, and a proxy that speaks
// TLS through the server our daemons use (http::Server) and forwards over the one HTTP client.
#include <openssl/ssl.h>
#include <signal.h>

#include <filesystem>
#include <memory>
#include <regex>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "http/client.h"
#include "http/server.h"
#include "io/file_util.h"
#include "process_util.h"
#include "temp_dir.h"
#include "test_paths.h"
#include "test_tls/test_tls.h"

namespace gpuledger {
namespace {

namespace fs = std::filesystem;
using webhook::testing::TestCertificates;

// TLS in front of `upstream` (http://127.0.0.1:PORT): a client certificate from the test CA is
// required in the handshake, and "Authorization: Bearer <token>" on every request (401
// otherwise); GETs are forwarded with their path and query, the upstream's status and body
// returned.
class TlsProxy {
 public:
  TlsProxy(const TestCertificates& certs, std::string upstream, std::string token)
      : upstream_(std::move(upstream)), token_(std::move(token)) {
    std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
    SSL_CTX_use_certificate_file(ctx.get(), certs.cert_file.c_str(), SSL_FILETYPE_PEM);
    SSL_CTX_use_PrivateKey_file(ctx.get(), certs.key_file.c_str(), SSL_FILETYPE_PEM);
    SSL_CTX_load_verify_locations(ctx.get(), certs.ca_file.c_str(), nullptr);
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    http::ServerOptions options;
    options.tls = ctx;
    auto server = http::Server::Bind(
        "127.0.0.1:0", [this](const http::Request& r) { return Forward(r); }, options);
    if (!server) return;
    server_ = std::move(*server);
    thread_ = std::thread([this] { server_->Serve(); });
  }
  ~TlsProxy() {
    if (server_) server_->Stop();
    if (thread_.joinable()) thread_.join();
  }
  int port() const { return server_ ? server_->port() : 0; }

 private:
  http::Response Forward(const http::Request& r) const {
    if (r.Header("authorization") != "Bearer " + token_) return {401, "text/plain", "401\n", {}};
    http::ClientRequest request{upstream_ + r.path, {r.query.begin(), r.query.end()}};
    auto answer = http::Get(request);
    if (!answer) return {502, "text/plain", answer.error().message, {}};
    return {static_cast<int>(answer->status), "text/plain", answer->body, {}};
  }

  std::string upstream_;
  std::string token_;
  std::unique_ptr<http::Server> server_;
  std::thread thread_;
};

class TlsAccessE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    ::signal(SIGPIPE, SIG_IGN);
    auto certs = webhook::testing::MakeTestCertificates(dir_.path().string());
    ASSERT_TRUE(certs) << certs.error().message;
    certs_ = *certs;
    ASSERT_TRUE(WriteFile(Path("token"), "t0ken\n").ok());
  }
  std::string Path(const std::string& name) const { return (dir_.path() / name).string(); }
  // A daemon's port from the first "http://HOST:PORT/" line it prints.
  std::string PortOf(const std::string& out) const {
    std::string port = WaitFor(Path(out), std::regex("http://[^:]+:(\\d+)/"), 20s);
    EXPECT_FALSE(port.empty()) << *ReadFile(Path(out + ".err"));
    return port;
  }
  // The client flags of `prefix` ("--" or "--scrape-") for the proxy: CA, certificate, key,
  // token.
  std::string ClientFlags(const std::string& prefix) const {
    return prefix + "ca-file " + certs_.ca_file + " " + prefix + "cert-file " +
           certs_.client_cert_file + " " + prefix + "key-file " + certs_.client_key_file + " " +
           prefix + "token-file " + Path("token");
  }

  testing::TempDir dir_{"gpuledger-tls-e2e"};
  TestCertificates certs_;
  const std::string bin_ = test_paths::kGpuledgerBin;
};

TEST_F(TlsAccessE2e, ReportAuditAndRightsizeThroughAnMtlsProxyEqualTheLocalOnes) {
  int code = 0;
  RunCapture(bin_ + " demo --no-serve --hours 24 --out " + Path("d"), &code);
  ASSERT_EQ(code, 0);
  const std::string db = Path("d/gpuledger.db");
  Child server({bin_, "server", "--ledger", "sqlite:" + db, "--listen", "127.0.0.1:0"},
               Path("server.out"));
  const std::string port = PortOf("server.out");
  ASSERT_FALSE(port.empty());
  TlsProxy proxy(certs_, "http://127.0.0.1:" + port, "t0ken");
  ASSERT_NE(proxy.port(), 0);
  const std::string url = "https://localhost:" + std::to_string(proxy.port());

  for (const std::string& args :
       {std::string("report --by namespace --format json"),
        std::string("report --by label:team --policy compute --format csv"),
        std::string("audit --since all --format json"), std::string("rightsize --window all")}) {
    const std::string local = RunCapture(bin_ + " " + args + " --db " + db, &code);
    ASSERT_EQ(code, 0) << local;
    const std::string remote =
        RunCapture(bin_ + " " + args + " --server " + url + " " + ClientFlags("--"), &code);
    ASSERT_EQ(code, 0) << remote;
    EXPECT_EQ(local, remote) << args;
  }

  // Without the certificate the proxy ends the handshake: a failure (1) naming the server.
  std::string out = RunCapture(bin_ + " report --server " + url + " --ca-file " + certs_.ca_file +
                                   " --token-file " + Path("token") + " 2>&1",
                               &code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("--server " + url), std::string::npos) << out;
  // A key that is not the certificate's is the caller's mistake (2), naming the certificate.
  out = RunCapture(bin_ + " report --server " + url + " --ca-file " + certs_.ca_file +
                       " --cert-file " + certs_.client_cert_file + " --key-file " +
                       certs_.other_key_file + " 2>&1",
                   &code);
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("client certificate " + certs_.client_cert_file), std::string::npos) << out;
  // An unknown CA is refused with curl's reason.
  out = RunCapture(bin_ + " report --server " + url + " 2>&1", &code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("SSL certificate problem"), std::string::npos) << out;
}

TEST_F(TlsAccessE2e, TheServerScrapesAnAgentBehindAnMtlsProxy) {
  Child agent({bin_, "agent", "--node-name", "n1", "--listen", "127.0.0.1:0", "--nvml-library",
               "/nonexistent/libnvidia-ml.so.1", "--pod-resources-socket", "/nonexistent/k.sock"},
              Path("agent.out"));
  const std::string agent_port = PortOf("agent.out");
  ASSERT_FALSE(agent_port.empty());
  // Two proxies in front of the agent: one takes our token, one wants another.
  TlsProxy good(certs_, "http://127.0.0.1:" + agent_port, "t0ken");
  TlsProxy other(certs_, "http://127.0.0.1:" + agent_port, "not-ours");
  ASSERT_NE(good.port(), 0);
  ASSERT_NE(other.port(), 0);
  const std::string good_target = "localhost:" + std::to_string(good.port());
  const std::string other_target = "localhost:" + std::to_string(other.port());

  std::vector<std::string> argv{bin_,
                                "server",
                                "--ledger",
                                "sqlite:" + Path("l.db"),
                                "--listen",
                                "127.0.0.1:0",
                                "--source",
                                "scrape",
                                "--targets",
                                good_target + "," + other_target,
                                "--scrape-interval",
                                "1s",
                                "--scrape-scheme",
                                "https"};
  std::istringstream words(ClientFlags("--scrape-"));
  for (std::string w; words >> w;) argv.push_back(w);
  Child server(argv, Path("server.out"));
  const std::string port = PortOf("server.out");
  ASSERT_FALSE(port.empty());

  // Within a few rounds: the first target up, the second down (HTTP 401) and logged as such.
  std::string metrics;
  for (int i = 0; i < 100; ++i) {
    auto r = http::Get({"http://127.0.0.1:" + port + "/metrics"});
    if (r && r->status == 200) metrics = r->body;
    if (metrics.find("gpuledger_server_scrape_rounds_total 2") != std::string::npos) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_NE(metrics.find("gpuledger_server_scrape_up{target=\"" + good_target + "\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("gpuledger_server_scrape_up{target=\"" + other_target + "\"} 0"),
            std::string::npos)
      << metrics;
  const std::string log = *ReadFile(Path("server.out.err"));
  EXPECT_NE(log.find("HTTP 401"), std::string::npos) << log;

  // A scheme that is neither is bad input.
  int code = 0;
  const std::string out = RunCapture(bin_ + " server --ledger sqlite:" + Path("m.db") +
                                         " --source scrape --targets a:1 --scrape-scheme ftp 2>&1",
                                     &code);
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--scrape-scheme 'ftp': expected http or https"), std::string::npos) << out;
}

}  // namespace
}  // namespace gpuledger
