// FindingEvents with the real curl transport against the fake API server on
// loopback, which creates Events as the real one does (201, 409 AlreadyExists,
// 401 without the token, 422 for what core/v1 Event validation refuses), with a
// simulated clock.
#include "server/finding_events.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fake_apiserver/fake_apiserver.h"

namespace gpuledger::server {
namespace {

using fake::FakeApiServer;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

constexpr Micros kT0 = 1'717'200'000LL * kMicrosPerSecond;  // 2024-06-01T00:00:00Z
constexpr const char* kToken = "t0ken";

// An unallocated-access finding of ml/<pod>/main on gpu-node-1's GPU-1 that
// used 2.5 GPU-hours it was never granted, costing $41.20.
guardrails::PricedFinding Unallocated(const std::string& pod) {
  Finding f;
  f.kind = FindingKind::kUnallocatedAccess;
  f.severity = Severity::kCritical;
  f.cluster = "prod";
  f.node = "gpu-node-1";
  f.subject = ConsumerRef{"ml", pod, PodUid("1b2c3d4e-0000-4a4a-8b8b-123456789abc"), "main"};
  f.gpu_uuid = "GPU-1";
  f.evidence = "pids=4242 granted=none NVIDIA_VISIBLE_DEVICES=all";
  f.first_seen_us = kT0 + 123'456;
  f.last_seen_us = kT0 + 2 * kMicrosPerHour + 30 * kMicrosPerSecond + 999'999;
  return {f, 5 * kMicrosPerHour / 2, 41'200'000'000, "compute used beyond the grant"};
}

k8s::ApiServerConfig ConfigFor(const FakeApiServer& server, const std::string& token) {
  k8s::ApiServerConfig config;
  config.server = server.url();
  config.bearer_token = token;
  return config;
}

class FindingEventsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start());
    transport_ = k8s::MakeCurlTransport(ConfigFor(server_, kToken));
  }

  FindingEvents Make(const guardrails::Policy& policy = guardrails::DefaultPolicy()) {
    return FindingEvents(*transport_, policy, [this] { return now_us_; });
  }

  // The value of one result of gpuledger_server_events_total in `metrics` (-1
  // when absent).
  static double Count(const std::string& metrics, const std::string& result) {
    const std::string prefix = "gpuledger_server_events_total{result=\"" + result + "\"} ";
    auto at = metrics.find(prefix);
    return at == std::string::npos ? -1 : std::stod(metrics.substr(at + prefix.size()));
  }

  FakeApiServer server_{FakeApiServer::Options{.bearer_token = kToken}};
  std::unique_ptr<k8s::ApiTransport> transport_;
  Micros now_us_ = kT0 + 10 * kMicrosPerSecond;  // the simulated wall clock
};

TEST_F(FindingEventsTest, PostsAWarningEventOnThePodWithEveryField) {
  FindingEvents events = Make();
  const guardrails::PricedFinding p = Unallocated("debug-0");
  Status s = events.Publish(std::span(&p, 1));
  ASSERT_TRUE(s) << s.error().message;

  auto stored = server_.Objects("events");
  ASSERT_EQ(stored.size(), 1u);
  const json& e = stored[0];
  // The hash is FNV-1a 64 of the key's fields (pinned: names must not change
  // across releases, or a restarted server would announce everything again).
  EXPECT_EQ(e["metadata"]["name"], "debug-0.gpuledger-1f0ee9989ba3e71e");
  EXPECT_EQ(e["metadata"]["namespace"], "ml");
  EXPECT_EQ(e["involvedObject"], (json{{"apiVersion", "v1"},
                                       {"kind", "Pod"},
                                       {"namespace", "ml"},
                                       {"name", "debug-0"},
                                       {"uid", "1b2c3d4e-0000-4a4a-8b8b-123456789abc"}}));
  EXPECT_EQ(e["type"], "Warning");
  EXPECT_EQ(e["reason"], "GpuledgerUnallocatedAccess");
  // The kind and node, the one line guardrails::Summary says everywhere (its
  // wording is that module's to test), and the evidence; the cost in it is the
  // project's money formatting.
  EXPECT_EQ(e["message"], "unallocated-access (node gpu-node-1): " + guardrails::Summary(p) +
                              " (pids=4242 granted=none NVIDIA_VISIBLE_DEVICES=all)");
  EXPECT_THAT(e["message"].get<std::string>(),
              MatchesRegex("unallocated-access \\(node gpu-node-1\\): ml/debug-0/main used "
                           "2\\.50? GPU-hours of GPU-1 .*\\$41\\.20 \\(pids=4242 .*\\)"));
  EXPECT_EQ(e["action"], "Detected");
  EXPECT_EQ(e["source"], (json{{"component", "gpuledger-server"}}));
  EXPECT_EQ(e["reportingComponent"], "gpuledger-server");
  EXPECT_EQ(e["reportingInstance"], "gpuledger-server");
  EXPECT_EQ(e["firstTimestamp"], "2024-06-01T00:00:00Z");
  EXPECT_EQ(e["lastTimestamp"], "2024-06-01T02:00:30Z");
  EXPECT_EQ(e["eventTime"], "2024-06-01T00:00:00.123456Z");
  EXPECT_EQ(e["count"], 1);
  EXPECT_EQ(server_.last_authorization(), std::string("Bearer ") + kToken);

  const std::string metrics = events.RenderMetrics();
  EXPECT_THAT(metrics, HasSubstr("# TYPE gpuledger_server_events_total counter\n"));
  EXPECT_EQ(Count(metrics, "created"), 1);
  EXPECT_EQ(Count(metrics, "exists"), 0);
  EXPECT_EQ(Count(metrics, "error"), 0);
  EXPECT_EQ(Count(metrics, "deferred"), 0);
}

TEST_F(FindingEventsTest, AnnouncedFindingIsNotPostedAgainUntilTheRepeatPeriod) {
  now_us_ = kT0 + kMicrosPerSecond;
  FindingEvents events = Make();  // event_repeat_us: 1 h
  const guardrails::PricedFinding p = Unallocated("debug-0");
  ASSERT_TRUE(events.Publish(std::span(&p, 1)));
  now_us_ = p.finding.first_seen_us + kMicrosPerHour - 1;
  ASSERT_TRUE(events.Publish(std::span(&p, 1)));
  EXPECT_EQ(server_.create_requests("events"), 1);

  // An hour after first seen: announced again, as a new Event.
  now_us_ = p.finding.first_seen_us + kMicrosPerHour;
  ASSERT_TRUE(events.Publish(std::span(&p, 1)));
  ASSERT_TRUE(events.Publish(std::span(&p, 1)));
  EXPECT_EQ(server_.create_requests("events"), 2);
  auto stored = server_.Objects("events");
  ASSERT_EQ(stored.size(), 2u);
  EXPECT_EQ(stored[0]["metadata"]["name"], "debug-0.gpuledger-1f0ee9989ba3e71e");
  EXPECT_EQ(stored[1]["metadata"]["name"], "debug-0.gpuledger-1f0ee9989ba3e71e-1");
  EXPECT_EQ(Count(events.RenderMetrics(), "created"), 2);
}

TEST_F(FindingEventsTest, RestartedServerFindsItsEventAndCountsItAsExisting) {
  const guardrails::PricedFinding p = Unallocated("debug-0");
  {
    FindingEvents before_restart = Make();
    ASSERT_TRUE(before_restart.Publish(std::span(&p, 1)));
  }
  FindingEvents after_restart = Make();
  Status s = after_restart.Publish(std::span(&p, 1));
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(server_.create_requests("events"), 2);
  EXPECT_EQ(server_.Objects("events").size(), 1u);
  const std::string metrics = after_restart.RenderMetrics();
  EXPECT_EQ(Count(metrics, "exists"), 1);
  EXPECT_EQ(Count(metrics, "created"), 0);
  EXPECT_EQ(Count(metrics, "error"), 0);
  // Known now: not posted again.
  ASSERT_TRUE(after_restart.Publish(std::span(&p, 1)));
  EXPECT_EQ(server_.create_requests("events"), 2);
}

TEST_F(FindingEventsTest, ForgetsFindingsNoLongerOpen) {
  FindingEvents events = Make();
  const guardrails::PricedFinding p = Unallocated("debug-0");
  ASSERT_TRUE(events.Publish(std::span(&p, 1)));
  ASSERT_TRUE(events.Publish({}));  // resolved: forgotten
  // Back with the same key (an ingest that lost and regained it): asked again,
  // and the server still has it.
  ASSERT_TRUE(events.Publish(std::span(&p, 1)));
  EXPECT_EQ(server_.create_requests("events"), 2);
  EXPECT_EQ(Count(events.RenderMetrics(), "exists"), 1);
}

TEST_F(FindingEventsTest, RateLimitDefersTheRestToALaterCall) {
  guardrails::Policy policy = guardrails::DefaultPolicy();
  policy.events_per_minute = 30;
  FindingEvents events = Make(policy);
  std::vector<guardrails::PricedFinding> open;
  for (int i = 0; i < 35; ++i) open.push_back(Unallocated("job-" + std::to_string(i)));

  ASSERT_TRUE(events.Publish(open));
  EXPECT_EQ(server_.create_requests("events"), 30);
  EXPECT_EQ(server_.Objects("events").size(), 30u);
  EXPECT_EQ(Count(events.RenderMetrics(), "created"), 30);
  EXPECT_EQ(Count(events.RenderMetrics(), "deferred"), 5);

  // Half a minute later the minute's 30 are still spent: each of the 5 waits
  // again.
  const Micros first_call = now_us_;
  now_us_ = first_call + 30 * kMicrosPerSecond;
  ASSERT_TRUE(events.Publish(open));
  EXPECT_EQ(server_.create_requests("events"), 30);
  EXPECT_EQ(Count(events.RenderMetrics(), "deferred"), 10);

  now_us_ = first_call + 60 * kMicrosPerSecond;
  ASSERT_TRUE(events.Publish(open));
  EXPECT_EQ(server_.create_requests("events"), 35);
  std::vector<std::string> pods;
  for (const json& e : server_.Objects("events")) pods.push_back(e["involvedObject"]["name"]);
  std::vector<std::string> want;
  for (const auto& p : open) want.push_back(p.finding.subject.pod);
  std::sort(pods.begin(), pods.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(pods, want);
  EXPECT_EQ(Count(events.RenderMetrics(), "created"), 35);
  EXPECT_EQ(Count(events.RenderMetrics(), "deferred"), 10);
}

TEST_F(FindingEventsTest, OnlyWarnFindingsOnPodsGetEvents) {
  guardrails::Policy policy = guardrails::DefaultPolicy();
  policy.For(FindingKind::kMemoryOversubscribed).action = guardrails::Action::kWarn;
  policy.For(FindingKind::kStaleGrant).action = guardrails::Action::kOff;
  FindingEvents events = Make(policy);
  std::vector<guardrails::PricedFinding> open;
  open.push_back(Unallocated("report-only"));
  open.back().finding.kind = FindingKind::kUnmanagedProcess;  // report by default
  open.push_back(Unallocated("host"));
  open.back().finding.subject = ConsumerRef{std::string(kHostNamespace), "pid:42", PodUid(), ""};
  open.push_back(Unallocated("device"));
  open.back().finding.kind = FindingKind::kMemoryOversubscribed;
  open.back().finding.subject = ConsumerRef{};  // the device's sharers together
  open.push_back(Unallocated("resolved"));
  open.back().finding.resolved_us = kT0 + kMicrosPerHour;
  open.push_back(Unallocated("off"));
  open.back().finding.kind = FindingKind::kStaleGrant;
  ASSERT_TRUE(events.Publish(open));
  EXPECT_EQ(server_.create_requests("events"), 0);

  // A deny kind (admission) is announced like a warn one.
  guardrails::PricedFinding deny = Unallocated("privileged-0");
  deny.finding.kind = FindingKind::kPrivilegedWithoutRequest;
  policy.For(FindingKind::kPrivilegedWithoutRequest).action = guardrails::Action::kDeny;
  FindingEvents with_deny = Make(policy);
  ASSERT_TRUE(with_deny.Publish(std::span(&deny, 1)));
  auto stored = server_.Objects("events");
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0]["reason"], "GpuledgerPrivilegedWithoutGpuRequest");
}

TEST_F(FindingEventsTest, MissingTokenIsCountedAsAnErrorAndRetried) {
  auto anonymous = k8s::MakeCurlTransport(ConfigFor(server_, ""));
  FindingEvents events(*anonymous, guardrails::DefaultPolicy(), [this] { return now_us_; });
  const guardrails::PricedFinding p = Unallocated("debug-0");
  Status s = events.Publish(std::span(&p, 1));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(s.error().message, HasSubstr("POST /api/v1/namespaces/ml/events: HTTP 401"));
  EXPECT_TRUE(server_.Objects("events").empty());
  EXPECT_EQ(Count(events.RenderMetrics(), "error"), 1);
  // Not announced, so the next call tries again.
  EXPECT_FALSE(events.Publish(std::span(&p, 1)));
  EXPECT_EQ(server_.create_requests("events"), 2);
  EXPECT_EQ(Count(events.RenderMetrics(), "error"), 2);
  EXPECT_EQ(Count(events.RenderMetrics(), "created"), 0);
}

TEST_F(FindingEventsTest, ForbiddenThenAllowedCreatesOnTheNextCall) {
  server_.FailNext("events", 1, 403);  // no RBAC to create events, then granted
  FindingEvents events = Make();
  std::vector<guardrails::PricedFinding> open = {Unallocated("a-0"), Unallocated("b-0")};
  Status s = events.Publish(open);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message, HasSubstr("HTTP 403: injected failure 403"));
  EXPECT_EQ(server_.Objects("events").size(),
            1u);  // b-0: one failure stops nothing else
  ASSERT_TRUE(events.Publish(open));
  EXPECT_EQ(server_.Objects("events").size(), 2u);
  const std::string metrics = events.RenderMetrics();
  EXPECT_EQ(Count(metrics, "error"), 1);
  EXPECT_EQ(Count(metrics, "created"), 2);
}

TEST_F(FindingEventsTest, UnreachableServerIsAnErrorNotACrash) {
  FindingEvents events = Make();
  const guardrails::PricedFinding p = Unallocated("debug-0");
  server_.Stop();
  Status s = events.Publish(std::span(&p, 1));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(Count(events.RenderMetrics(), "error"), 1);
}

// The API server's limits: a name is at most 253 bytes, a message at most 1024;
// a long pod name and long evidence still make an Event it accepts (the fake
// refuses what the real one would).
TEST_F(FindingEventsTest, LongNamesAndMessagesStayWithinTheApiLimits) {
  FindingEvents events = Make();
  guardrails::PricedFinding p = Unallocated(std::string(250, 'p'));
  p.finding.evidence = "pids=" + std::string(2000, '1') + " env=\xc3\xa4\xc3\xa4\xc3\xa4";
  Status s = events.Publish(std::span(&p, 1));
  ASSERT_TRUE(s) << s.error().message;
  auto stored = server_.Objects("events");
  ASSERT_EQ(stored.size(), 1u);
  const std::string name = stored[0]["metadata"]["name"];
  EXPECT_EQ(name.size(), 253u);
  EXPECT_THAT(name, MatchesRegex("p+\\.gpuledger-[0-9a-f]{16}"));
  const std::string message = stored[0]["message"];
  EXPECT_LE(message.size(), 1024u);
  EXPECT_THAT(message, ::testing::EndsWith("111\xe2\x80\xa6"));
}

}  // namespace
}  // namespace gpuledger::server
