#include "webhook/kernel_time_patch.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "webhook/admission_review.h"

namespace gpuledger::webhook {
namespace {

using json = nlohmann::json;

// A pod with a GPU trainer (env, no mounts), a sidecar without a GPU, and a GPU container that
// injects its own profiler.
json PodObject(bool with_volumes) {
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", "train-0"}, {"namespace", "ml"}}},
      {"spec",
       {{"initContainers", json::array({{{"name", "init"}}})},
        {"containers",
         json::array(
             {{{"name", "trainer"},
               {"env", json::array({{{"name", "EPOCHS"}, {"value", "3"}}})},
               {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}},
              {{"name", "sidecar"}},
              {{"name", "profiled"},
               {"env", json::array({{{"name", "CUDA_INJECTION64_PATH"}, {"value", "/nsys.so"}}})},
               {"volumeMounts", json::array({{{"name", "data"}, {"mountPath", "/data"}}})},
               {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}})}}}};
  if (with_volumes)
    pod["spec"]["volumes"] = json::array({{{"name", "data"}, {"emptyDir", json::object()}}});
  return pod;
}

guardrails::AdmissionPod Parsed(const json& pod) {
  const json review = {{"apiVersion", "admission.k8s.io/v1"},
                       {"kind", "AdmissionReview"},
                       {"request",
                        {{"uid", "u1"},
                         {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
                         {"operation", "CREATE"},
                         {"namespace", "ml"},
                         {"object", pod}}}};
  auto r = ParseAdmissionReview(review.dump());
  EXPECT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->pod) << r->unreadable;
  return *r->pod;
}

TEST(KernelTimePatch, InjectsTheTracerIntoOptedInGpuContainersOnly) {
  guardrails::KernelTimeInjection injection;
  injection.inject = true;
  injection.namespaces = {"ml"};
  for (bool with_volumes : {false, true}) {
    const json pod = PodObject(with_volumes);
    auto patch = KernelTimePatch(Parsed(pod), injection);
    ASSERT_TRUE(patch);
    // Applied as the API server would: the result is the pod we mean.
    const json patched = pod.patch(json::parse(*patch));
    const json& trainer = patched["spec"]["containers"][0];
    ASSERT_EQ(trainer["env"].size(), 4u);
    EXPECT_EQ(trainer["env"][0]["name"], "EPOCHS");  // the pod's own env kept, first
    EXPECT_EQ(trainer["env"][1]["value"], "/opt/gpuledger/lib/libgpuledger-kerneltime.so");
    EXPECT_EQ(trainer["env"][2]["valueFrom"]["fieldRef"]["fieldPath"], "metadata.uid");
    ASSERT_EQ(trainer["volumeMounts"].size(), 2u);
    EXPECT_EQ(trainer["volumeMounts"][0]["readOnly"], true);
    EXPECT_EQ(trainer["volumeMounts"][1]["subPathExpr"], "$(GPULEDGER_POD_UID)");
    EXPECT_FALSE(patched["spec"]["containers"][1].contains("env"));             // no GPU: untouched
    EXPECT_EQ(patched["spec"]["containers"][2], pod["spec"]["containers"][2]);  // its profiler
    EXPECT_EQ(patched["spec"]["initContainers"], pod["spec"]["initContainers"]);
    const json& volumes = patched["spec"]["volumes"];
    ASSERT_EQ(volumes.size(), with_volumes ? 3u : 2u);
    EXPECT_EQ(volumes.back()["hostPath"]["path"], "/run/gpuledger/kerneltime");
    EXPECT_EQ(volumes.back()["hostPath"]["type"], "DirectoryOrCreate");
  }
}

TEST(KernelTimePatch, OnlyOptedInPodsAreTouched) {
  guardrails::KernelTimeInjection injection;  // no namespace opted in
  injection.inject = true;
  const json pod = PodObject(false);
  EXPECT_FALSE(KernelTimePatch(Parsed(pod), injection));
  json labelled = pod;
  labelled["metadata"]["labels"] = {{"gpuledger.io/kernel-time", "enabled"}};
  EXPECT_TRUE(KernelTimePatch(Parsed(labelled), injection));
  labelled["metadata"]["labels"]["gpuledger.io/kernel-time"] = "no";
  EXPECT_FALSE(KernelTimePatch(Parsed(labelled), injection));
  injection.inject = false;  // the policy's switch: off by default
  injection.namespaces = {"ml"};
  EXPECT_FALSE(KernelTimePatch(Parsed(pod), injection));
}

}  // namespace
}  // namespace gpuledger::webhook
