#include "http/client.h"

#include <openssl/ssl.h>
#include <signal.h>

#include <fstream>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "http/server.h"
#include "io/file_util.h"
#include "temp_dir.h"
#include "test_tls/test_tls.h"

namespace gpuledger::http {
namespace {

TEST(ParseUrl, TakesWhatLibcurlTakesAndShowsNoPassword) {
  auto u = ParseUrl("https://prometheus.example:9443/select/0/prometheus?x=1");
  ASSERT_TRUE(u) << u.error().message;
  EXPECT_EQ(u->scheme, "https");
  EXPECT_EQ(u->host, "prometheus.example");
  EXPECT_EQ(u->port, 9443);
  EXPECT_EQ(u->path, "/select/0/prometheus?x=1");
  u = ParseUrl("http://localhost");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->port, 80);
  EXPECT_EQ(u->path, "/");
  EXPECT_EQ(ParseUrl("https://[::1]/")->port, 443);
  EXPECT_EQ(ParseUrl("https://[::1]/")->host, "::1");
  u = ParseUrl("https://alice:s3cret@thanos.example/api");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->shown.find("s3cret"), std::string::npos) << u->shown;
  EXPECT_NE(u->shown.find("thanos.example/api"), std::string::npos) << u->shown;
  for (const char* bad : {"localhost:9090", "ftp://h/x", "http://", "http://h:99999/",
                          "http://h:x/", "http://[::1/"}) {
    auto r = ParseUrl(bad);
    EXPECT_FALSE(r) << bad;
    if (!r) {
      EXPECT_NE(r.error().message.find(std::string("URL '") + bad + "'"), std::string::npos)
          << r.error().message;
    }
  }
}

// An HTTPS server with a throwaway CA's certificate that wants a bearer token or basic auth.
class TlsServer : public ::testing::Test {
 protected:
  void SetUp() override {
    ::signal(SIGPIPE, SIG_IGN);
    auto certs = webhook::testing::MakeTestCertificates(dir_.path().string());
    ASSERT_TRUE(certs) << certs.error().message;
    certs_ = *certs;
    Start(ServerContext());
    std::ofstream(dir_.path() / "token") << "tok-1\n";
    std::ofstream(dir_.path() / "password") << "s3cret\n";
  }
  std::shared_ptr<SSL_CTX> ServerContext() const {
    std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
    SSL_CTX_use_certificate_file(ctx.get(), certs_.cert_file.c_str(), SSL_FILETYPE_PEM);
    SSL_CTX_use_PrivateKey_file(ctx.get(), certs_.key_file.c_str(), SSL_FILETYPE_PEM);
    return ctx;
  }
  void Start(std::shared_ptr<SSL_CTX> ctx) {
    TearDown();
    ServerOptions options;
    options.tls = std::move(ctx);
    auto server = Server::Bind(
        "127.0.0.1:0",
        [](const Request& r) {
          const std::string& auth = r.Header("authorization");
          // "alice:s3cret" in base64.
          if (auth != "Bearer tok-1" && auth != "Basic YWxpY2U6czNjcmV0")
            return Response{401, "text/plain", "who are you?\n", {}};
          std::string q;
          for (const auto& [k, v] : r.query) q += k + "=" + v + ";";
          return Response{200, "text/plain", "path=" + r.path + " query=" + q, {}};
        },
        options);
    ASSERT_TRUE(server) << server.error().message;
    server_ = std::move(*server);
    thread_ = std::thread([this] { server_->Serve(); });
    base_ = "https://localhost:" + std::to_string(server_->port());
  }
  void TearDown() override {
    if (server_) server_->Stop();
    if (thread_.joinable()) thread_.join();
  }
  std::string File(const char* name) const { return (dir_.path() / name).string(); }

  testing::TempDir dir_{"gpuledger-http-client"};
  webhook::testing::TestCertificates certs_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
  std::string base_;
};

TEST_F(TlsServer, VerifiesTheServerAndSendsTheTokenFromItsFile) {
  ClientRequest request{base_ + "/api/v1/query", {{"query", "sum(rate(x[5m])) by (ns)"}}};
  ClientAuth auth;
  auth.ca_file = certs_.ca_file;
  auth.bearer_token_file = File("token");
  auto r = Get(request, auth);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "path=/api/v1/query query=query=sum(rate(x[5m])) by (ns);");

  // Basic auth, the password from its file.
  ClientAuth basic;
  basic.ca_file = certs_.ca_file;
  basic.basic_user = "alice";
  basic.basic_password_file = File("password");
  r = Get({base_ + "/x"}, basic);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 200);

  // No credentials: the server's answer, whatever it is, is the caller's to judge.
  ClientAuth none;
  none.ca_file = certs_.ca_file;
  r = Get({base_ + "/x"}, none);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
}

TEST_F(TlsServer, AServerItCannotVerifyIsRefusedWithTheReason) {
  auto r = Get({base_ + "/x"});  // the system store does not know the throwaway CA
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(r.error().message.find("GET " + base_ + "/x: SSL certificate problem"),
            std::string::npos)
      << r.error().message;
  ClientAuth insecure;
  insecure.insecure_skip_verify = true;
  insecure.bearer_token_file = File("token");
  r = Get({base_ + "/x"}, insecure);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 200);
}

TEST_F(TlsServer, PresentsAClientCertificateWhereTheServerAsksForOne) {
  std::shared_ptr<SSL_CTX> ctx = ServerContext();
  ASSERT_EQ(SSL_CTX_load_verify_locations(ctx.get(), certs_.ca_file.c_str(), nullptr), 1);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  Start(ctx);
  ClientAuth auth;
  auth.ca_file = certs_.ca_file;
  auth.bearer_token_file = File("token");
  // Without a certificate the handshake fails: the peer's refusal, kUnavailable.
  auto r = Get({base_ + "/x"}, auth);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable) << r.error().message;

  auth.cert_file = certs_.client_cert_file;
  auth.key_file = certs_.client_key_file;
  r = Get({base_ + "/x"}, auth);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 200);

  // The key and certificate in one file, as kubeconfigs and Secrets often carry them.
  std::ofstream(File("both.pem")) << ReadFile(certs_.client_cert_file).value()
                                  << ReadFile(certs_.client_key_file).value();
  ClientAuth both = auth;
  both.cert_file = File("both.pem");
  both.key_file.clear();
  r = Get({base_ + "/x"}, both);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 200);

  // The caller's own mistakes are the caller's errors, naming the file.
  ClientAuth wrong_key = auth;
  wrong_key.key_file = certs_.other_key_file;
  r = Get({base_ + "/x"}, wrong_key);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument) << r.error().message;
  EXPECT_NE(r.error().message.find("client certificate " + certs_.client_cert_file),
            std::string::npos)
      << r.error().message;
  ClientAuth missing = auth;
  missing.cert_file = File("nope.pem");
  r = Get({"https://localhost:1/x"}, missing);  // named before any connection is tried
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument) << r.error().message;
  EXPECT_NE(r.error().message.find("client certificate " + File("nope.pem") + ": No such file"),
            std::string::npos)
      << r.error().message;
  ClientAuth key_alone = auth;
  key_alone.cert_file.clear();
  r = Get({base_ + "/x"}, key_alone);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message.find("without its certificate"), std::string::npos);
}

TEST_F(TlsServer, AMissingTokenFileIsTheCallersError) {
  ClientAuth auth;
  auth.ca_file = certs_.ca_file;
  auth.bearer_token_file = File("nope");
  auto r = Get({base_ + "/x"}, auth);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message.find("token file " + File("nope")), std::string::npos);
}

}  // namespace
}  // namespace gpuledger::http
