#include "http/request.h"

#include <gtest/gtest.h>

namespace gpuledger::http {
namespace {

using Kind = ParseOutcome::Kind;

ParseOutcome Parse(std::string_view bytes, RequestLimits limits = {}) {
  return ParseRequest(bytes, limits);
}

TEST(ParseRequest, DecodesPathQueryAndHeaders) {
  const std::string bytes =
      "GET /api/v1/report%7Ex?aggregate=namespace&filter=team%3D%22a+b%22&flag&x=1&x=2 HTTP/1.1\r\n"
      "Host: h\r\nAccept-Encoding: br, GZIP;q=0.5\r\nX-Odd:   spaced value  \r\n\r\n";
  auto p = Parse(bytes);
  ASSERT_EQ(p.kind, Kind::kComplete) << p.reason;
  EXPECT_EQ(p.consumed, bytes.size());
  EXPECT_EQ(p.request.method, "GET");
  EXPECT_EQ(p.request.path, "/api/v1/report~x");
  EXPECT_EQ(p.request.query.find("filter")->second, "team=\"a b\"");
  EXPECT_EQ(p.request.query.count("flag"), 1u);
  EXPECT_EQ(p.request.query.count("x"), 2u);
  EXPECT_EQ(p.request.query.find("x")->second, "1");
  EXPECT_EQ(p.request.Header("x-odd"), "spaced value");
  EXPECT_TRUE(p.request.keep_alive);
  EXPECT_TRUE(p.request.accepts_gzip);
}

TEST(ParseRequest, WaitsForTheWholeHeadAndBody) {
  EXPECT_EQ(Parse("GET / HTTP/1.1\r\nHost: h\r\n").kind, Kind::kIncomplete);
  EXPECT_EQ(Parse("").kind, Kind::kIncomplete);
  const std::string head = "POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\n";
  EXPECT_EQ(Parse(head + "abc").kind, Kind::kIncomplete);
  auto p = Parse(head + "abcdeGET");
  ASSERT_EQ(p.kind, Kind::kComplete);
  EXPECT_EQ(p.request.body, "abcde");
  EXPECT_EQ(p.consumed, head.size() + 5);  // the pipelined "GET" stays for the next request
}

TEST(ParseRequest, PipelinedRequestsComeOneAtATime) {
  const std::string one = "GET /a HTTP/1.1\r\nHost: t\r\n\r\n",
                    two = "GET /b HTTP/1.1\r\nHost: t\r\n\r\n";
  const std::string both = one + two;
  auto first = Parse(both);
  ASSERT_EQ(first.kind, Kind::kComplete);
  EXPECT_EQ(first.request.path, "/a");
  auto second = Parse(std::string_view(both).substr(first.consumed));
  ASSERT_EQ(second.kind, Kind::kComplete);
  EXPECT_EQ(second.request.path, "/b");
}

TEST(ParseRequest, KeepAliveFollowsTheVersionAndConnectionHeader) {
  EXPECT_FALSE(Parse("GET / HTTP/1.1\r\nHost: t\r\nConnection: Close\r\n\r\n").request.keep_alive);
  EXPECT_FALSE(Parse("GET / HTTP/1.0\r\n\r\n").request.keep_alive);
  EXPECT_TRUE(Parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").request.keep_alive);
  EXPECT_FALSE(Parse("GET / HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip;q=0, br\r\n\r\n")
                   .request.accepts_gzip);
  EXPECT_TRUE(
      Parse("GET / HTTP/1.1\r\nHost: t\r\nAccept-Encoding: *\r\n\r\n").request.accepts_gzip);
}

TEST(ParseRequest, RefusesWhatTwoParsersCouldReadDifferently) {
  struct Case {
    std::string bytes;
    int status;
  };
  const Case cases[] = {
      {"GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501},
      {"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400},
      {"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: +3\r\n\r\nabc", 400},
      {"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999999999999999999\r\n\r\n", 413},
      {"GET / HTTP/1.1\r\nHost: t\r\nX: a\r\n folded\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: t\r\nBad Name: a\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: t\r\nNoColon\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: t\r\nX: a\x01z\r\n\r\n", 400},
      {"GET  / HTTP/1.1\r\nHost: t\r\n\r\n", 400},
      {"GET / HTTP/2.0\r\n\r\n", 505},
      {"GET / FTP/1.1\r\n\r\n", 400},
      {"GET http:///x HTTP/1.1\r\nHost: t\r\n\r\n", 400},
      {"GET /%zz HTTP/1.1\r\nHost: t\r\n\r\n", 400},
      {"GET /a%00b HTTP/1.1\r\nHost: t\r\n\r\n", 400},
      {"GET /?q=%4 HTTP/1.1\r\nHost: t\r\n\r\n", 400},
      {"G(T / HTTP/1.1\r\nHost: t\r\n\r\n", 400},
  };
  for (const Case& c : cases) {
    auto p = Parse(c.bytes);
    EXPECT_EQ(p.kind, Kind::kRefused) << c.bytes;
    EXPECT_EQ(p.status, c.status) << c.bytes << ": " << p.reason;
    EXPECT_FALSE(p.reason.empty());
  }
}

TEST(ParseRequest, RefusesAHeadOrBodyPastItsLimitAsSoonAsTheBytesShowIt) {
  const RequestLimits limits{.max_head_bytes = 64, .max_body_bytes = 10};
  // No end of head yet, but already past the limit: refused without waiting for more.
  auto p = Parse("GET / HTTP/1.1\r\nHost: t\r\nX-Long: " + std::string(100, 'a'), limits);
  EXPECT_EQ(p.kind, Kind::kRefused);
  EXPECT_EQ(p.status, 431);
  p = Parse("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\n", limits);
  EXPECT_EQ(p.status, 413);
  std::string many = "GET / HTTP/1.1\r\nHost: t\r\n";
  for (std::size_t i = 0; i <= kMaxHeaders; ++i) many += "A: b\r\n";
  p = Parse(many + "\r\n");
  EXPECT_EQ(p.status, 431) << p.reason;
}

TEST(ParseRequest, SkipsEmptyLinesBeforeTheRequestLine) {
  auto p = Parse("\r\n\r\nGET /x HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_EQ(p.kind, Kind::kComplete) << p.reason;
  EXPECT_EQ(p.request.path, "/x");
}

// Issue 58, lower findings: RFC 9112 wants one Host from an HTTP/1.1 client (two or none was a
// 200), an absolute-form target accepted (it was a 400), and "%2F" in a path was decoded before
// routing, so "/api%2Fv1/report" reached "/api/v1/report".
TEST(ParseRequest, OneHostAbsoluteTargetsAndNoEncodedSlash) {
  EXPECT_EQ(Parse("GET / HTTP/1.1\r\n\r\n").status, 400);
  EXPECT_EQ(Parse("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n").status, 400);
  EXPECT_EQ(Parse("GET / HTTP/1.0\r\n\r\n").kind, Kind::kComplete);
  EXPECT_EQ(Parse("GET / HTTP/1.0\r\nHost: a\r\nhost: b\r\n\r\n").status, 400);
  auto absolute =
      Parse("GET HTTP://gpuledger:8080/api/v1/report?window=7d HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_EQ(absolute.kind, Kind::kComplete) << absolute.reason;
  EXPECT_EQ(absolute.request.path, "/api/v1/report");
  EXPECT_EQ(absolute.request.query.find("window")->second, "7d");
  auto bare = Parse("GET http://gpuledger HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_EQ(bare.kind, Kind::kComplete) << bare.reason;
  EXPECT_EQ(bare.request.path, "/");
  for (const char* slash : {"/api%2Fv1/report", "/api%2fv1/report", "http://h/a%2F"}) {
    auto p = Parse(std::string("GET ") + slash + " HTTP/1.1\r\nHost: t\r\n\r\n");
    EXPECT_EQ(p.status, 400) << slash;
    EXPECT_NE(p.reason.find("%2F"), std::string::npos) << p.reason;
  }
  EXPECT_EQ(Parse("GET /?path=a%2Fb HTTP/1.1\r\nHost: t\r\n\r\n").kind, Kind::kComplete);
}

// Issue 58: every listener held a body up to its limit before the route was known. Where only
// some paths take a body, any other is refused when its head arrives; a head whose body is
// still coming says how much is declared, so the server can budget it before holding it.
TEST(ParseRequest, ABodyOnlyWhereThePathTakesOne) {
  RequestLimits limits;
  limits.body_paths = {"/validate"};
  auto refused =
      Parse("POST /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: 900000\r\n\r\n", limits);
  EXPECT_EQ(refused.kind, Kind::kRefused);
  EXPECT_EQ(refused.status, 413);
  EXPECT_NE(refused.reason.find("/healthz takes no request body"), std::string::npos);
  auto waiting =
      Parse("POST /validate HTTP/1.1\r\nHost: t\r\nContent-Length: 900000\r\n\r\nab", limits);
  EXPECT_EQ(waiting.kind, Kind::kIncomplete);
  EXPECT_EQ(waiting.pending_body_bytes, 900000u);
  EXPECT_EQ(Parse("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n", limits).kind, Kind::kComplete);
  EXPECT_EQ(Parse("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\na",
                  RequestLimits{.max_body_bytes = 0})
                .status,
            413);
}

}  // namespace
}  // namespace gpuledger::http
