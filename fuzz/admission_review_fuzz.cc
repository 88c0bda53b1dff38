// An AdmissionReview from the Kubernetes API server (the webhook's only input), judged and
// answered as /validate and /mutate answer it, under the default policy and one with the
// kernel-time tracer on. A 200 answer must be JSON the API server can read.

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "guardrails/policy.h"
#include "webhook/admission_review.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace webhook = gpuledger::webhook;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  static const gpuledger::guardrails::Policy kDefault = gpuledger::guardrails::DefaultPolicy();
  static const gpuledger::guardrails::Policy kTracing = [] {
    gpuledger::guardrails::Policy p = gpuledger::guardrails::DefaultPolicy();
    p.kernel_time.inject = true;
    p.kernel_time.namespaces = {"default", "ml"};
    return p;
  }();
  for (const auto* policy : {&kDefault, &kTracing}) {
    for (const webhook::ReviewAnswer& answer :
         {webhook::AnswerReview(body, *policy), webhook::AnswerMutation(body, *policy)}) {
      if (answer.http_status == 200 && !nlohmann::json::accept(answer.body)) std::abort();
    }
  }
  return 0;
}
