#include "prometheus/http_get.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <thread>

#include "http/gzip.h"

namespace gpuledger::prometheus {
namespace {

using namespace std::chrono_literals;

TEST(ParseHttpUrl, Forms) {
  auto u = ParseHttpUrl("http://localhost:9400/metrics");
  ASSERT_TRUE(u) << u.error().message;
  EXPECT_EQ(u->host, "localhost");
  EXPECT_EQ(u->port, 9400);
  EXPECT_EQ(u->path, "/metrics");
  u = ParseHttpUrl("http://10.0.0.7");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->port, 80);
  EXPECT_EQ(u->path, "/metrics") << "dcgm-exporter's path when none is given";
  u = ParseHttpUrl("http://[::1]:9400/x?y=1");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, 9400);
  EXPECT_EQ(u->path, "/x?y=1");
  for (const char* bad : {"localhost:9400", "ftp://h:9400/metrics", "http://", "http://:9400",
                          "http://h:99999/", "http://h:x/", "http://[::1/"}) {
    auto r = ParseHttpUrl(bad);
    EXPECT_FALSE(r) << bad;
    if (!r) {
      EXPECT_NE(r.error().message.find(bad), std::string::npos) << r.error().message;
    }
  }
}

class FakeExporter : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("DCGM_FI_PROF_SM_ACTIVE{UUID=\"GPU-a\"} 0.5\n", "text/plain");
    });
    // cpp-httplib's server gzips text/* itself for a client that accepts it: /metrics tests
    // that; these two are served as octet streams so that their bytes arrive as written.
    server_.Get("/gzip", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(http::Gzip("DCGM_FI_PROF_SM_ACTIVE{UUID=\"GPU-a\"} 0.25\n"),
                      "application/octet-stream");
      res.set_header("Content-Encoding", "gzip");
    });
    server_.Get("/slow", [](const httplib::Request&, httplib::Response& res) {
      std::this_thread::sleep_for(1500ms);
      res.set_content("late\n", "text/plain");
    });
    server_.Get("/big", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(4096, 'x'), "application/octet-stream");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 200 && !server_.is_running(); ++i) std::this_thread::sleep_for(5ms);
  }
  void TearDown() override {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }
  HttpUrl Url(const std::string& path) const {
    auto u = ParseHttpUrl("http://127.0.0.1:" + std::to_string(port_) + path);
    EXPECT_TRUE(u);
    return *u;
  }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

TEST_F(FakeExporter, PlainAndGzip) {
  auto plain = HttpGet(Url("/metrics"), kMicrosPerSecond);
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_EQ(*plain, "DCGM_FI_PROF_SM_ACTIVE{UUID=\"GPU-a\"} 0.5\n");
  auto gz = HttpGet(Url("/gzip"), kMicrosPerSecond);
  ASSERT_TRUE(gz) << gz.error().message;
  EXPECT_EQ(*gz, "DCGM_FI_PROF_SM_ACTIVE{UUID=\"GPU-a\"} 0.25\n");
}

TEST_F(FakeExporter, ErrorsNameTheUrl) {
  auto missing = HttpGet(Url("/nope"), kMicrosPerSecond);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(missing.error().message.find("HTTP 404"), std::string::npos);
  EXPECT_NE(missing.error().message.find("/nope"), std::string::npos);
  auto big = HttpGet(Url("/big"), kMicrosPerSecond, 1024);
  // (A gzip body that inflates past the cap fails too: http::Gunzip's bomb check.)
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().message.find("larger than 1024 bytes"), std::string::npos)
      << big.error().message;
}

TEST_F(FakeExporter, ATimeoutSaysSo) {
  const auto start = std::chrono::steady_clock::now();
  auto slow = HttpGet(Url("/slow"), 300'000);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(slow);
  EXPECT_NE(slow.error().message.find("timed out"), std::string::npos) << slow.error().message;
  EXPECT_LT(took, 1200ms);
}

TEST(HttpGet, ConnectionRefused) {
  // Port 1 on loopback: nothing listens there.
  auto r = HttpGet(*ParseHttpUrl("http://127.0.0.1:1/metrics"), kMicrosPerSecond);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.find("timed out"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("127.0.0.1:1"), std::string::npos);
}

}  // namespace
}  // namespace gpuledger::prometheus
