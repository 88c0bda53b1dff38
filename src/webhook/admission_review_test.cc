#include "webhook/admission_review.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace gpuledger::webhook {
namespace {

using guardrails::ContainerRole;
using json = nlohmann::json;

// An AdmissionReview as the API server sends it for a pod CREATE (trimmed to what matters).
json Review(json pod, std::string operation = "CREATE") {
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", "705ab4f5-6393-11e8-b7cc-42010a800002"},
            {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
            {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
            {"operation", operation},
            {"namespace", "team-a"},
            {"name", "train-0"},
            {"object", std::move(pod)},
            {"dryRun", false}}}};
}

json GpuPod() {
  return json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "train-0", "namespace": "team-a", "labels": {"app": "train"}},
    "spec": {
      "initContainers": [{"name": "fetch", "image": "busybox",
                          "env": [{"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "all"}]}],
      "containers": [
        {"name": "cuda", "image": "nvcr.io/nvidia/pytorch:24.01-py3",
         "env": [{"name": "A", "value": "1"},
                 {"name": "NVIDIA_VISIBLE_DEVICES",
                  "valueFrom": {"configMapKeyRef": {"name": "gpu", "key": "devices"}}},
                 {"name": "EMPTY"}],
         "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": 4},
                       "requests": {"memory": "8Gi"}},
         "securityContext": {"privileged": false}},
        {"name": "debug", "image": "ubuntu", "securityContext": {"privileged": true}}
      ],
      "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}]
    }
  })");
}

TEST(ParseAdmissionReview, ReadsThePodTheWebhookJudges) {
  auto r = ParseAdmissionReview(Review(GpuPod()).dump());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
  EXPECT_TRUE(r->judge);
  ASSERT_TRUE(r->pod) << r->unreadable;
  const auto& pod = *r->pod;
  EXPECT_EQ(pod.namespace_name, "team-a");
  EXPECT_EQ(pod.name, "train-0");
  EXPECT_EQ(pod.labels, (std::map<std::string, std::string>{{"app", "train"}}));
  EXPECT_EQ(pod.resource_claims, 1);
  ASSERT_EQ(pod.containers.size(), 3u);
  EXPECT_EQ(pod.containers[0].name, "fetch");
  EXPECT_EQ(pod.containers[0].role, ContainerRole::kInit);
  ASSERT_EQ(pod.containers[0].env.size(), 1u);
  EXPECT_EQ(pod.containers[0].env[0].value, std::optional<std::string>("all"));
  const auto& cuda = pod.containers[1];
  EXPECT_EQ(cuda.role, ContainerRole::kContainer);
  ASSERT_EQ(cuda.env.size(), 3u);
  EXPECT_EQ(cuda.env[1].name, "NVIDIA_VISIBLE_DEVICES");
  EXPECT_EQ(cuda.env[1].value, std::nullopt);  // valueFrom
  EXPECT_EQ(cuda.env[2].value, std::optional<std::string>(""));
  EXPECT_FALSE(cuda.privileged);
  EXPECT_EQ(cuda.resources, (std::vector<std::pair<std::string, std::string>>{
                                {"memory", "8Gi"}, {"cpu", "4"}, {"nvidia.com/gpu", "1"}}));
  EXPECT_TRUE(pod.containers[2].privileged);
}

TEST(ParseAdmissionReview, OnlyPodCreateAndUpdateAreJudged) {
  auto update = ParseAdmissionReview(Review(GpuPod(), "UPDATE").dump());
  ASSERT_TRUE(update);
  EXPECT_TRUE(update->judge);
  auto del = ParseAdmissionReview(Review(nullptr, "DELETE").dump());
  ASSERT_TRUE(del) << del.error().message;
  EXPECT_FALSE(del->judge);
  json deployment = Review(json::object());
  deployment["request"]["kind"] = {{"group", "apps"}, {"version", "v1"}, {"kind", "Deployment"}};
  auto d = ParseAdmissionReview(deployment.dump());
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->judge);
  EXPECT_FALSE(d->pod);
  json status = Review(GpuPod(), "UPDATE");
  status["request"]["subResource"] = "status";
  EXPECT_FALSE(ParseAdmissionReview(status.dump())->judge);
  json ephemeral = Review(GpuPod(), "UPDATE");
  ephemeral["request"]["subResource"] = "ephemeralcontainers";
  EXPECT_TRUE(ParseAdmissionReview(ephemeral.dump())->judge);
}

std::string EnvelopeError(const std::string& body) {
  auto r = ParseAdmissionReview(body);
  if (r) return "parsed";
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  return r.error().message;
}

TEST(ParseAdmissionReview, EnvelopeErrorsNameTheField) {
  EXPECT_EQ(EnvelopeError("{\"apiVersion\": "),
            "invalid JSON: parse error at line 1, column 16: syntax error while parsing value - "
            "unexpected end of input; expected '[', '{', or a literal");
  EXPECT_EQ(EnvelopeError("[]"), "the body: expected a JSON object (an AdmissionReview)");
  json r = Review(GpuPod());
  r["apiVersion"] = "admission.k8s.io/v1beta1";
  EXPECT_EQ(EnvelopeError(r.dump()),
            "apiVersion: expected admission.k8s.io/v1 (admissionReviewVersions: [v1]), got "
            "'admission.k8s.io/v1beta1'");
  r.erase("apiVersion");
  EXPECT_EQ(EnvelopeError(r.dump()), "apiVersion: missing");
  EXPECT_EQ(EnvelopeError("{}"), "apiVersion: missing");
  r = Review(GpuPod());
  r["kind"] = "Pod";
  EXPECT_EQ(EnvelopeError(r.dump()), "kind: expected AdmissionReview, got 'Pod'");
  r = Review(GpuPod());
  r.erase("request");
  EXPECT_EQ(EnvelopeError(r.dump()), "request: missing");
  r = Review(GpuPod());
  r["request"].erase("uid");
  EXPECT_EQ(EnvelopeError(r.dump()), "request.uid: missing");
  r["request"]["uid"] = 7;
  EXPECT_EQ(EnvelopeError(r.dump()), "request.uid: expected a string");
  r["request"]["uid"] = "";
  EXPECT_EQ(EnvelopeError(r.dump()), "request.uid: expected a non-empty string");
  r = Review(GpuPod());
  r["request"]["kind"].erase("kind");
  EXPECT_EQ(EnvelopeError(r.dump()), "request.kind.kind: missing");
  r = Review(GpuPod());
  r["request"].erase("operation");
  EXPECT_EQ(EnvelopeError(r.dump()), "request.operation: missing");
}

std::string Unreadable(json pod) {
  auto r = ParseAdmissionReview(Review(std::move(pod)).dump());
  if (!r) return "envelope: " + r.error().message;
  EXPECT_TRUE(r->judge);
  EXPECT_FALSE(r->pod);
  return r->unreadable;
}

TEST(ParseAdmissionReview, AnUnreadablePodNamesTheField) {
  json pod = GpuPod();
  pod["spec"]["containers"][1]["env"] = {{{"name", 3}}};
  EXPECT_EQ(Unreadable(pod), "request.object.spec.containers[1].env[0].name: expected a string");
  pod = GpuPod();
  pod["spec"].erase("containers");
  EXPECT_EQ(Unreadable(pod), "request.object.spec.containers: missing");
  pod = GpuPod();
  pod["spec"]["containers"][0]["securityContext"]["privileged"] = "yes";
  EXPECT_EQ(Unreadable(pod),
            "request.object.spec.containers[0].securityContext.privileged: expected true or "
            "false");
  pod = GpuPod();
  pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = json::array();
  EXPECT_EQ(Unreadable(pod),
            "request.object.spec.containers[0].resources.limits.nvidia.com/gpu: expected a "
            "quantity like \"1\" or \"500m\"");
  pod = GpuPod();
  pod["metadata"]["labels"]["app"] = true;
  EXPECT_EQ(Unreadable(pod), "request.object.metadata.labels.app: expected a string");
  pod = GpuPod();
  pod["spec"]["initContainers"] = "fetch";
  EXPECT_EQ(Unreadable(pod), "request.object.spec.initContainers: expected a list");
  EXPECT_EQ(Unreadable(nullptr), "request.object: missing");
  EXPECT_EQ(Unreadable("pod"), "request.object: expected an object");
}

json ResponseOf(const ReviewAnswer& a) {
  EXPECT_EQ(a.http_status, 200);
  json doc = json::parse(a.body);
  EXPECT_EQ(doc["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(doc["kind"], "AdmissionReview");
  EXPECT_EQ(doc["response"]["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
  return doc["response"];
}

json CleanPod() {
  json pod = GpuPod();
  pod["spec"].erase("initContainers");
  pod["spec"]["containers"][1]["securityContext"]["privileged"] = false;
  pod["spec"]["containers"][0].erase("env");
  return pod;
}

TEST(AnswerReview, AllowedWarnedDenied) {
  const guardrails::Policy policy = guardrails::DefaultPolicy();
  ReviewAnswer clean = AnswerReview(Review(CleanPod()).dump(), policy);
  EXPECT_EQ(clean.verdict, Verdict::kAllowed);
  EXPECT_EQ(ResponseOf(clean), json::parse(R"({"uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                                               "allowed": true})"));
  json pod = CleanPod();
  pod["spec"]["containers"][0]["env"] = {{{"name", "NVIDIA_VISIBLE_DEVICES"}, {"value", "all"}}};
  ReviewAnswer warned = AnswerReview(Review(pod).dump(), policy);
  EXPECT_EQ(warned.verdict, Verdict::kWarned);
  const std::string sentence =
      "Container 'cuda' sets NVIDIA_VISIBLE_DEVICES=all; the NVIDIA runtime honours it over the "
      "pod's GPU grant (gpuledger: pod-sets-visible-devices).";
  EXPECT_EQ(ResponseOf(warned)["warnings"], json::array({sentence}));
  EXPECT_EQ(ResponseOf(warned)["allowed"], true);
  guardrails::Policy deny = policy;
  deny.For(FindingKind::kPodSetsVisibleDevices).action = guardrails::Action::kDeny;
  ReviewAnswer denied = AnswerReview(Review(pod).dump(), deny);
  EXPECT_EQ(denied.verdict, Verdict::kDenied);
  json response = ResponseOf(denied);
  EXPECT_EQ(response["allowed"], false);
  EXPECT_EQ(response["status"], (json{{"code", 403}, {"message", sentence}}));
  EXPECT_FALSE(response.contains("warnings"));
  EXPECT_EQ(denied.decision.fired, std::vector<FindingKind>{FindingKind::kPodSetsVisibleDevices});
}

TEST(AnswerReview, NotAPodIsAllowedAsIs) {
  json deployment = Review(json::object());
  deployment["request"]["kind"]["kind"] = "Deployment";
  ReviewAnswer a = AnswerReview(deployment.dump(), guardrails::DefaultPolicy());
  EXPECT_EQ(a.verdict, Verdict::kAllowed);
  EXPECT_EQ(ResponseOf(a)["allowed"], true);
}

TEST(AnswerReview, AnUnreadablePodFollowsTheFailurePolicy) {
  json pod = GpuPod();
  pod["spec"]["containers"][1]["env"] = {{{"name", 3}}};
  guardrails::Policy policy = guardrails::DefaultPolicy();
  ReviewAnswer open = AnswerReview(Review(pod).dump(), policy);
  EXPECT_EQ(open.verdict, Verdict::kWarned);
  EXPECT_EQ(ResponseOf(open)["warnings"],
            json::array({"gpuledger could not read this pod (request.object.spec.containers[1]."
                         "env[0].name: expected a string); admitted unjudged (webhook.failure: "
                         "open)."}));
  policy.webhook_fail_open = false;
  ReviewAnswer closed = AnswerReview(Review(pod).dump(), policy);
  EXPECT_EQ(closed.verdict, Verdict::kDenied);
  EXPECT_EQ(ResponseOf(closed)["status"]["message"],
            "gpuledger could not read this pod (request.object.spec.containers[1].env[0].name: "
            "expected a string); denied unjudged (webhook.failure: closed).");
}

TEST(AnswerReview, AMalformedReviewIsAnHttpError) {
  ReviewAnswer a = AnswerReview("{\"kind\": \"AdmissionReview\"", guardrails::DefaultPolicy());
  EXPECT_EQ(a.http_status, 400);
  EXPECT_EQ(a.verdict, Verdict::kInvalid);
  EXPECT_EQ(a.content_type, "text/plain");
  EXPECT_EQ(a.body.rfind("invalid AdmissionReview: invalid JSON: parse error at line 1", 0), 0u)
      << a.body;
  json r = Review(CleanPod());
  r["request"].erase("uid");
  ReviewAnswer no_uid = AnswerReview(r.dump(), guardrails::DefaultPolicy());
  EXPECT_EQ(no_uid.http_status, 400);
  EXPECT_EQ(no_uid.body, "invalid AdmissionReview: request.uid: missing\n");
}

}  // namespace
}  // namespace gpuledger::webhook
