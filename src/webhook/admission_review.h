#pragma once
// The validating webhook's wire format (docs/webhook.md): AdmissionReview v1 JSON in, the
// AdmissionReview response out. Reading and writing only; the decision is
// guardrails::Judge. nlohmann_json's exceptions are caught in the .cc and never leave it.

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "guardrails/admission.h"
#include "guardrails/policy.h"

namespace gpuledger::webhook {

// What a review asks. `judge` is set for a Pod CREATE or UPDATE (the pod itself or its
// ephemeralcontainers subresource); anything else the webhook is sent is allowed as is.
struct ReviewRequest {
  std::string uid;
  bool judge = false;
  bool create = false;  // a CREATE (the only operation a pod's containers can be patched in)
  std::optional<guardrails::AdmissionPod> pod;  // when judge and the object could be read
  std::string unreadable;  // when judge and not: why, naming the field ("request.object...")
};

// kInvalidArgument, naming the field, when the body is not an AdmissionReview v1 whose answer
// can be addressed (malformed JSON, wrong apiVersion/kind, no request or request.uid). A pod
// object that cannot be read is not an error here: it is `unreadable`, and the policy decides.
Result<ReviewRequest> ParseAdmissionReview(std::string_view body);

// The response document for `uid`: allowed, warnings, and when denied a status with code 403
// and the message.
std::string SerializeAdmissionResponse(const std::string& uid,
                                       const guardrails::AdmissionVerdict& verdict);

// How a review was answered, for the request counter.
enum class Verdict { kAllowed, kWarned, kDenied, kInvalid };
std::string_view ToString(Verdict verdict);  // "allowed", "warned", "denied", "invalid"

struct ReviewAnswer {
  int http_status = 200;  // 400 for an invalid review (the body then says why, as text)
  std::string content_type = "application/json";
  std::string body;
  Verdict verdict = Verdict::kAllowed;
  guardrails::AdmissionVerdict decision;  // what was decided (fired kinds for the counters)
};

// The whole exchange: parse, judge under `policy` (or apply webhook_fail_open to an unreadable
// pod), serialize.
ReviewAnswer AnswerReview(std::string_view body, const guardrails::Policy& policy);

// The mutating exchange (/mutate, issue 31): a pod CREATE that opted in to the kernel-time
// tracer (policy.kernel_time) is admitted with the JSONPatch that injects it
// (webhook/kernel_time_patch.h); everything else is admitted unchanged. It never denies:
// judging is /validate's. An invalid review is a 400 as there.
ReviewAnswer AnswerMutation(std::string_view body, const guardrails::Policy& policy);

}  // namespace gpuledger::webhook
