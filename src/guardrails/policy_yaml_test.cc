#include "guardrails/policy_yaml.h"

#include <gtest/gtest.h>

#include "io/file_util.h"
#include "temp_dir.h"
#include "test_paths.h"

namespace gpuledger::guardrails {
namespace {

// The example of docs/guardrails-policy.md, every section set away from its default.
constexpr const char* kFull = R"(# policy.yaml
kinds:
  unallocated-access: {action: warn, severity: critical}
  unmanaged-process: {action: off}
  pod-sets-visible-devices: {action: deny}
  privileged-without-gpu-request:
    action: report
    severity: info
thresholds:
  memory_together_fraction: 0.9
  memory_fair_margin: 0.1
  isolation_compute_margin: 0
  idle_compute_fraction: 0.02
  idle_allocation_hours: 12
tolerance:
  isolation_breach: 10m
  stale_grant: 30s
  resolve_after: 2m
exemptions:
  - namespace: kube-system
  - labels: {gpuledger.io/exempt: "true"}
    kinds: [unallocated-access, visible-devices-override]
webhook:
  failure: closed
events:
  repeat: 2h
  per_minute: 10
)";

TEST(ParsePolicyYaml, EverySectionOverridesItsDefault) {
  auto p = ParsePolicyYaml(kFull, "policy.yaml");
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->For(FindingKind::kUnallocatedAccess).action, Action::kWarn);
  EXPECT_EQ(p->For(FindingKind::kUnallocatedAccess).severity, Severity::kCritical);
  EXPECT_EQ(p->For(FindingKind::kUnmanagedProcess).action, Action::kOff);
  // Only the action was named: the severity keeps its default.
  EXPECT_EQ(p->For(FindingKind::kUnmanagedProcess).severity, Severity::kWarning);
  EXPECT_EQ(p->For(FindingKind::kPodSetsVisibleDevices).action, Action::kDeny);
  EXPECT_EQ(p->For(FindingKind::kPrivilegedWithoutRequest).action, Action::kReport);
  EXPECT_EQ(p->For(FindingKind::kPrivilegedWithoutRequest).severity, Severity::kInfo);
  // A kind the file does not name is the default's.
  EXPECT_EQ(p->For(FindingKind::kIdleAllocation).action, Action::kReport);
  EXPECT_EQ(p->For(FindingKind::kIdleAllocation).severity, Severity::kInfo);
  EXPECT_DOUBLE_EQ(p->memory_together_fraction, 0.9);
  EXPECT_DOUBLE_EQ(p->memory_fair_margin, 0.1);
  EXPECT_DOUBLE_EQ(p->isolation_compute_margin, 0.0);
  EXPECT_DOUBLE_EQ(p->idle_compute_fraction, 0.02);
  EXPECT_EQ(p->idle_allocation_hours, 12);
  EXPECT_EQ(p->isolation_tolerance_us, 600 * kMicrosPerSecond);
  EXPECT_EQ(p->stale_grant_tolerance_us, 30 * kMicrosPerSecond);
  EXPECT_EQ(p->resolve_after_us, 120 * kMicrosPerSecond);
  ASSERT_EQ(p->exemptions.size(), 2u);
  EXPECT_EQ(p->exemptions[0].namespace_name, "kube-system");
  EXPECT_TRUE(p->exemptions[0].labels.empty());
  EXPECT_TRUE(p->exemptions[0].kinds.empty());
  EXPECT_EQ(p->exemptions[0].line, 20);
  EXPECT_EQ(p->exemptions[1].namespace_name, "");
  EXPECT_EQ(p->exemptions[1].labels,
            (std::map<std::string, std::string>{{"gpuledger.io/exempt", "true"}}));
  EXPECT_EQ(p->exemptions[1].kinds,
            (std::vector<FindingKind>{FindingKind::kUnallocatedAccess,
                                      FindingKind::kVisibleDevicesOverride}));
  EXPECT_EQ(p->exemptions[1].line, 21);
  EXPECT_FALSE(p->webhook_fail_open);
  EXPECT_EQ(p->event_repeat_us, 2 * kMicrosPerHour);
  EXPECT_EQ(p->events_per_minute, 10);
  // The exemptions work through Policy::Exempt.
  ConsumerRef system{"kube-system", "dcgm", PodUid{"u1"}, "c"};
  ConsumerRef team{"team-a", "train", PodUid{"u2"}, "c"};
  EXPECT_TRUE(p->Exempt(FindingKind::kStaleGrant, system));
  EXPECT_TRUE(p->Exempt(FindingKind::kUnallocatedAccess, team, {{"gpuledger.io/exempt", "true"}}));
  EXPECT_FALSE(p->Exempt(FindingKind::kStaleGrant, team, {{"gpuledger.io/exempt", "true"}}));
  EXPECT_FALSE(
      p->Exempt(FindingKind::kUnallocatedAccess, team, {{"gpuledger.io/exempt", "false"}}));
}

TEST(ParsePolicyYaml, EmptyOrCommentOnlyIsTheDefault) {
  const Policy d = DefaultPolicy();
  for (const char* text : {"", "# nothing here\n", "kinds:\nexemptions:\n"}) {
    auto p = ParsePolicyYaml(text, "empty.yaml");
    ASSERT_TRUE(p) << p.error().message;
    for (int k = 0; k < kFindingKinds; ++k) {
      EXPECT_EQ(p->kinds[k].action, d.kinds[k].action) << text << " kind " << k;
      EXPECT_EQ(p->kinds[k].severity, d.kinds[k].severity) << text << " kind " << k;
    }
    EXPECT_EQ(p->idle_allocation_hours, 24);
    EXPECT_EQ(p->resolve_after_us, 60 * kMicrosPerSecond);
    EXPECT_TRUE(p->webhook_fail_open);
    EXPECT_EQ(p->events_per_minute, 30);
    EXPECT_TRUE(p->exemptions.empty());
  }
}

// The complete example of docs/guardrails-policy.md parses, and is the default policy apart
// from the one action its comment says it changes.
TEST(ParsePolicyYaml, TheDocumentedExample) {
  auto doc =
      ReadFile(std::string(gpuledger::test_paths::kSourceDir) + "/docs/guardrails-policy.md");
  ASSERT_TRUE(doc) << doc.error().message;
  const std::size_t start = doc->find("```yaml\n");
  ASSERT_NE(start, std::string::npos);
  const std::size_t end = doc->find("```\n", start + 8);
  ASSERT_NE(end, std::string::npos);
  auto p = ParsePolicyYaml(doc->substr(start + 8, end - start - 8), "guardrails-policy.md");
  ASSERT_TRUE(p) << p.error().message;
  const Policy d = DefaultPolicy();
  for (int k = 0; k < kFindingKinds; ++k) {
    const bool changed = static_cast<FindingKind>(k) == FindingKind::kPodSetsVisibleDevices;
    EXPECT_EQ(p->kinds[k].action, changed ? Action::kDeny : d.kinds[k].action) << k;
    EXPECT_EQ(p->kinds[k].severity, d.kinds[k].severity) << k;
  }
  EXPECT_DOUBLE_EQ(p->memory_together_fraction, d.memory_together_fraction);
  EXPECT_DOUBLE_EQ(p->memory_fair_margin, d.memory_fair_margin);
  EXPECT_DOUBLE_EQ(p->isolation_compute_margin, d.isolation_compute_margin);
  EXPECT_DOUBLE_EQ(p->idle_compute_fraction, d.idle_compute_fraction);
  EXPECT_EQ(p->idle_allocation_hours, d.idle_allocation_hours);
  EXPECT_EQ(p->isolation_tolerance_us, d.isolation_tolerance_us);
  EXPECT_EQ(p->stale_grant_tolerance_us, d.stale_grant_tolerance_us);
  EXPECT_EQ(p->resolve_after_us, d.resolve_after_us);
  EXPECT_EQ(p->webhook_fail_open, d.webhook_fail_open);
  EXPECT_EQ(p->event_repeat_us, d.event_repeat_us);
  EXPECT_EQ(p->events_per_minute, d.events_per_minute);
  ASSERT_EQ(p->exemptions.size(), 2u);
  EXPECT_EQ(p->exemptions[0].namespace_name, "kube-system");
  EXPECT_EQ(p->exemptions[1].kinds.size(), 2u);
}

std::string ErrorOf(const std::string& text) {
  auto p = ParsePolicyYaml(text, "policy.yaml");
  if (p) return "parsed";
  EXPECT_EQ(p.error().code, ErrorCode::kInvalidArgument);
  return p.error().message;
}

TEST(ParsePolicyYaml, UnknownKeysAtEveryLevel) {
  EXPECT_EQ(ErrorOf("kinds: {}\nkind: {}\n"),
            "policy.yaml:2: (top level): expected kinds, thresholds, tolerance, exemptions, "
            "webhook or events, got 'kind'");
  EXPECT_EQ(ErrorOf("kinds:\n  stale-grant: {action: off, level: info}\n"),
            "policy.yaml:2: kinds.stale-grant: expected action or severity, got 'level'");
  EXPECT_EQ(ErrorOf("thresholds:\n  idle_allocation_hours: 2\n  memory_fraction: 0.9\n"),
            "policy.yaml:3: thresholds: expected memory_together_fraction, memory_fair_margin, "
            "isolation_compute_margin, idle_compute_fraction or idle_allocation_hours, got "
            "'memory_fraction'");
  EXPECT_EQ(ErrorOf("tolerance:\n  stale: 5m\n"),
            "policy.yaml:2: tolerance: expected isolation_breach, stale_grant or resolve_after, "
            "got 'stale'");
  EXPECT_EQ(ErrorOf("exemptions:\n  - namespace: a\n    pod: b\n"),
            "policy.yaml:3: exemptions[0]: expected namespace, labels or kinds, got 'pod'");
  EXPECT_EQ(ErrorOf("webhook:\n  failurePolicy: Ignore\n"),
            "policy.yaml:2: webhook: expected failure or kernel_time, got 'failurePolicy'");
  EXPECT_EQ(ErrorOf("events:\n  burst: 3\n"),
            "policy.yaml:2: events: expected repeat or per_minute, got 'burst'");
  EXPECT_EQ(ErrorOf("events:\n  repeat: 1h\n  repeat: 2h\n"),
            "policy.yaml:3: key 'repeat' given twice in one mapping (first on line 2)");
}

TEST(ParsePolicyYaml, KindsActionsAndSeverities) {
  EXPECT_EQ(ErrorOf("kinds:\n  unallocated-acess: {action: warn}\n"),
            "policy.yaml:2: kinds: expected a finding kind (unallocated-access, unmanaged-process, "
            "visible-devices-override, memory-oversubscribed, isolation-breach, stale-grant, "
            "idle-allocation, pod-sets-visible-devices, privileged-without-gpu-request or "
            "kernel-time-mismatch), got "
            "'unallocated-acess'");
  EXPECT_EQ(ErrorOf("kinds:\n  unallocated-access:\n    action: deny\n"),
            "policy.yaml:3: kinds.unallocated-access.action: expected off, report or warn (deny "
            "applies only to admission kinds; a running process cannot be denied), got 'deny'");
  EXPECT_EQ(ErrorOf("kinds:\n  idle-allocation: {action: block}\n"),
            "policy.yaml:2: kinds.idle-allocation.action: expected off, report or warn, got "
            "'block'");
  EXPECT_EQ(ErrorOf("kinds:\n  pod-sets-visible-devices: {action: reject}\n"),
            "policy.yaml:2: kinds.pod-sets-visible-devices.action: expected off, report, warn or "
            "deny, got 'reject'");
  EXPECT_EQ(ErrorOf("kinds:\n  stale-grant: {severity: high}\n"),
            "policy.yaml:2: kinds.stale-grant.severity: expected info, warning or critical, got "
            "'high'");
  EXPECT_EQ(ErrorOf("kinds:\n  stale-grant: warn\n"),
            "policy.yaml:2: kinds.stale-grant: expected a mapping with action and/or severity, "
            "got 'warn'");
  EXPECT_EQ(ErrorOf("kinds: [stale-grant]\n"),
            "policy.yaml:1: kinds: expected a mapping, got a list");
}

TEST(ParsePolicyYaml, NumbersOutOfRange) {
  EXPECT_EQ(ErrorOf("thresholds:\n  memory_together_fraction: 0\n"),
            "policy.yaml:2: thresholds.memory_together_fraction: expected a number in (0, 1], "
            "got '0'");
  EXPECT_EQ(ErrorOf("thresholds:\n  memory_together_fraction: 1.2\n"),
            "policy.yaml:2: thresholds.memory_together_fraction: expected a number in (0, 1], "
            "got '1.2'");
  EXPECT_EQ(ErrorOf("thresholds:\n  memory_fair_margin: -0.1\n"),
            "policy.yaml:2: thresholds.memory_fair_margin: expected a number in [0, 1], got "
            "'-0.1'");
  EXPECT_EQ(ErrorOf("thresholds:\n  idle_compute_fraction: 1%\n"),
            "policy.yaml:2: thresholds.idle_compute_fraction: expected a number in [0, 1], got "
            "'1%'");
  EXPECT_EQ(ErrorOf("thresholds:\n  isolation_compute_margin: nan\n"),
            "policy.yaml:2: thresholds.isolation_compute_margin: expected a number in [0, 1], got "
            "'nan'");
  EXPECT_EQ(ErrorOf("thresholds:\n  idle_allocation_hours: 0\n"),
            "policy.yaml:2: thresholds.idle_allocation_hours: expected a whole number from 1 to "
            "8760, got '0'");
  EXPECT_EQ(ErrorOf("thresholds:\n  idle_allocation_hours: 1.5\n"),
            "policy.yaml:2: thresholds.idle_allocation_hours: expected a whole number from 1 to "
            "8760, got '1.5'");
  EXPECT_EQ(ErrorOf("events:\n  per_minute: 0\n"),
            "policy.yaml:2: events.per_minute: expected a whole number from 1 to 300, got '0'");
}

TEST(ParsePolicyYaml, DurationsAndTheWebhook) {
  EXPECT_EQ(ErrorOf("tolerance:\n  isolation_breach: soon\n"),
            "policy.yaml:2: tolerance.isolation_breach: expected a duration like 30s, 5m or 2h, "
            "got 'soon'");
  EXPECT_EQ(ErrorOf("tolerance:\n  resolve_after: -1m\n"),
            "policy.yaml:2: tolerance.resolve_after: expected a duration like 30s, 5m or 2h, got "
            "'-1m'");
  EXPECT_EQ(ErrorOf("events:\n  repeat: [1h]\n"),
            "policy.yaml:2: events.repeat: expected a duration like 30s, 5m or 2h, got a list");
  EXPECT_EQ(ErrorOf("webhook:\n  failure: ignore\n"),
            "policy.yaml:2: webhook.failure: expected open or closed, got 'ignore'");
  auto open = ParsePolicyYaml("webhook: {failure: open}\ntolerance: {stale_grant: 1h30m}\n", "p");
  ASSERT_TRUE(open) << open.error().message;
  EXPECT_TRUE(open->webhook_fail_open);
  EXPECT_EQ(open->stale_grant_tolerance_us, 90 * 60 * kMicrosPerSecond);
}

// Issue 31: the mutating webhook injects the kernel-time tracer only when the policy says so.
TEST(ParsePolicyYaml, KernelTimeInjection) {
  EXPECT_FALSE(DefaultPolicy().kernel_time.inject);
  auto p = ParsePolicyYaml(
      "webhook:\n  kernel_time:\n    inject: true\n    namespaces: [ml, research]\n"
      "    library_dir: /var/lib/gpuledger\n",
      "p");
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_TRUE(p->kernel_time.inject);
  EXPECT_EQ(p->kernel_time.namespaces, (std::set<std::string>{"ml", "research"}));
  EXPECT_EQ(p->kernel_time.library_dir, "/var/lib/gpuledger");
  EXPECT_EQ(p->kernel_time.publish_dir, "/run/gpuledger/kerneltime");
  EXPECT_EQ(ErrorOf("webhook:\n  kernel_time:\n    inject: yes please\n"),
            "policy.yaml:3: webhook.kernel_time.inject: expected true or false, got 'yes please'");
  EXPECT_EQ(ErrorOf("webhook:\n  kernel_time:\n    publish_dir: ../tmp\n"),
            "policy.yaml:3: webhook.kernel_time.publish_dir: expected an absolute path on the "
            "node, got '../tmp'");
}

TEST(ParsePolicyYaml, Exemptions) {
  EXPECT_EQ(ErrorOf("exemptions:\n  - namespace: a\n  - kinds: [stale-grant]\n"),
            "policy.yaml:3: exemptions[1]: expected namespace, labels or both (an exemption with "
            "neither would match nothing), got neither");
  EXPECT_EQ(ErrorOf("exemptions:\n  - labels: {}\n"),
            "policy.yaml:2: exemptions[0]: expected namespace, labels or both (an exemption with "
            "neither would match nothing), got neither");
  EXPECT_EQ(ErrorOf("exemptions:\n  - namespace: a\n    kinds: [stale-grant, idle]\n"),
            "policy.yaml:3: exemptions[0].kinds[1]: expected a finding kind (unallocated-access, "
            "unmanaged-process, visible-devices-override, memory-oversubscribed, isolation-breach, "
            "stale-grant, idle-allocation, pod-sets-visible-devices, "
            "privileged-without-gpu-request or kernel-time-mismatch), got 'idle'");
  EXPECT_EQ(ErrorOf("exemptions:\n  - namespace: a\n    kinds: stale-grant\n"),
            "policy.yaml:3: exemptions[0].kinds: expected a list of finding kinds, got "
            "'stale-grant'");
  EXPECT_EQ(ErrorOf("exemptions:\n  - labels:\n      team: [a, b]\n"),
            "policy.yaml:3: exemptions[0].labels.team: expected a label value, got a list");
  EXPECT_EQ(ErrorOf("exemptions:\n  namespace: a\n"),
            "policy.yaml:2: exemptions: expected a list, got a mapping");
  EXPECT_EQ(ErrorOf("exemptions:\n  - kube-system\n"),
            "policy.yaml:2: exemptions[0]: expected a mapping with namespace, labels and/or "
            "kinds, got 'kube-system'");
  EXPECT_EQ(ErrorOf("exemptions:\n  - namespace: \"\"\n"),
            "policy.yaml:2: exemptions[0].namespace: expected a namespace name, got ''");
}

TEST(ParsePolicyYaml, InvalidYamlNamesTheLine) {
  EXPECT_EQ(ErrorOf("kinds:\n  stale-grant: {action: off\n"),
            "policy.yaml:3: invalid YAML: end of map flow not found");
}

TEST(LoadPolicyFile, ReadsTheFileAndNamesItInErrors) {
  gpuledger::testing::TempDir dir;
  const std::string good = (dir.path() / "good.yaml").string();
  const std::string bad = (dir.path() / "bad.yaml").string();
  ASSERT_TRUE(WriteFile(good, "kinds:\n  stale-grant: {action: warn}\n").ok());
  ASSERT_TRUE(WriteFile(bad, "\n\nwebhook: {failure: maybe}\n").ok());
  auto p = LoadPolicyFile(good);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->For(FindingKind::kStaleGrant).action, Action::kWarn);
  auto b = LoadPolicyFile(bad);
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().message, bad + ":3: webhook.failure: expected open or closed, got 'maybe'");
  auto missing = LoadPolicyFile((dir.path() / "none.yaml").string());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kIo);
  EXPECT_NE(missing.error().message.find("none.yaml"), std::string::npos);
}

}  // namespace
}  // namespace gpuledger::guardrails
