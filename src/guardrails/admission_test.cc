#include "guardrails/admission.h"

#include <gtest/gtest.h>

namespace gpuledger::guardrails {
namespace {

AdmissionContainer Gpu(std::string name, std::string resource = "nvidia.com/gpu",
                       std::string quantity = "1") {
  AdmissionContainer c;
  c.name = std::move(name);
  c.resources.emplace_back(std::move(resource), std::move(quantity));
  return c;
}

AdmissionPod PodOf(std::vector<AdmissionContainer> containers, std::string ns = "team-a") {
  AdmissionPod p;
  p.namespace_name = std::move(ns);
  p.name = "train-0";
  p.labels = {{"app", "train"}};
  p.containers = std::move(containers);
  return p;
}

Policy WithAction(FindingKind kind, Action action) {
  Policy p = DefaultPolicy();
  p.For(kind).action = action;
  return p;
}

const std::string kAllSentence =
    "Container 'cuda' sets NVIDIA_VISIBLE_DEVICES=all; the NVIDIA runtime honours it over the "
    "pod's GPU grant (gpuledger: pod-sets-visible-devices).";
const std::string kPrivilegedSentence =
    "Container 'debug' is privileged in a pod that requests no GPU, so it sees every GPU of the "
    "node (gpuledger: privileged-without-gpu-request).";

// A privileged debug shell that asks the runtime for every GPU and requests none.
AdmissionContainer PrivilegedWithEveryGpu() {
  AdmissionContainer debug;
  debug.name = "debug";
  debug.privileged = true;
  debug.env = {{"NVIDIA_VISIBLE_DEVICES", "all"}};
  return debug;
}

TEST(Judge, ACleanGpuPodIsAllowedWithoutWarnings) {
  AdmissionContainer c = Gpu("cuda");
  c.env = {{"CUDA_VISIBLE_DEVICES", "0"}, {"PATH", "/usr/bin"}};  // CUDA_: the process's own view
  c.privileged = true;  // privileged, but it asked for a GPU
  auto v = Judge(PodOf({c}), DefaultPolicy());
  EXPECT_TRUE(v.allowed);
  EXPECT_TRUE(v.warnings.empty());
  EXPECT_EQ(v.denial, "");
  EXPECT_TRUE(v.fired.empty());
}

TEST(Judge, SettingVisibleDevicesWarnsByDefault) {
  AdmissionContainer c = Gpu("cuda");
  c.env = {{"NVIDIA_VISIBLE_DEVICES", "all"}};
  auto v = Judge(PodOf({c}), DefaultPolicy());
  EXPECT_TRUE(v.allowed);
  EXPECT_EQ(v.warnings, std::vector<std::string>{kAllSentence});
  EXPECT_EQ(v.fired, std::vector<FindingKind>{FindingKind::kPodSetsVisibleDevices});
}

TEST(Judge, ValueFromAndDriverCapabilitiesCountToo) {
  AdmissionContainer init;
  init.name = "setup";
  init.role = ContainerRole::kInit;
  init.env = {{"NVIDIA_DRIVER_CAPABILITIES", "compute,utility,video"}};
  AdmissionContainer c = Gpu("cuda");
  c.env = {{"NVIDIA_VISIBLE_DEVICES", std::nullopt}};
  auto v = Judge(PodOf({init, c}), DefaultPolicy());
  EXPECT_TRUE(v.allowed);
  EXPECT_EQ(v.warnings,
            (std::vector<std::string>{
                "Init container 'setup' sets NVIDIA_DRIVER_CAPABILITIES=compute,utility,video; the "
                "NVIDIA runtime honours it over the pod's GPU grant (gpuledger: "
                "pod-sets-visible-devices).",
                "Container 'cuda' sets NVIDIA_VISIBLE_DEVICES from a reference (valueFrom); the "
                "NVIDIA runtime honours it over the pod's GPU grant (gpuledger: "
                "pod-sets-visible-devices)."}));
  EXPECT_EQ(v.fired, std::vector<FindingKind>{FindingKind::kPodSetsVisibleDevices});
}

TEST(Judge, DenyRejectsWithTheSentence) {
  AdmissionContainer c = Gpu("cuda");
  c.env = {{"NVIDIA_VISIBLE_DEVICES", "all"}};
  auto v = Judge(PodOf({c}), WithAction(FindingKind::kPodSetsVisibleDevices, Action::kDeny));
  EXPECT_FALSE(v.allowed);
  EXPECT_EQ(v.denial, kAllSentence);
  EXPECT_TRUE(v.warnings.empty());
  EXPECT_EQ(v.fired, std::vector<FindingKind>{FindingKind::kPodSetsVisibleDevices});
}

TEST(Judge, ReportCountsWithoutTellingAndOffIgnores) {
  AdmissionContainer c = Gpu("cuda");
  c.env = {{"NVIDIA_VISIBLE_DEVICES", "all"}};
  auto reported =
      Judge(PodOf({c}), WithAction(FindingKind::kPodSetsVisibleDevices, Action::kReport));
  EXPECT_TRUE(reported.allowed);
  EXPECT_TRUE(reported.warnings.empty());
  EXPECT_EQ(reported.fired, std::vector<FindingKind>{FindingKind::kPodSetsVisibleDevices});
  auto off = Judge(PodOf({c}), WithAction(FindingKind::kPodSetsVisibleDevices, Action::kOff));
  EXPECT_TRUE(off.allowed);
  EXPECT_TRUE(off.warnings.empty());
  EXPECT_TRUE(off.fired.empty());
}

TEST(Judge, PrivilegedWithoutAGpuRequest) {
  AdmissionContainer debug;
  debug.name = "debug";
  debug.privileged = true;
  debug.resources = {{"cpu", "2"}, {"memory", "1Gi"}};
  AdmissionContainer sidecar;
  sidecar.name = "log";
  auto v = Judge(PodOf({debug, sidecar}), DefaultPolicy());
  EXPECT_TRUE(v.allowed);
  EXPECT_EQ(v.warnings, std::vector<std::string>{kPrivilegedSentence});
  EXPECT_EQ(v.fired, std::vector<FindingKind>{FindingKind::kPrivilegedWithoutRequest});
  // A zero GPU quantity is no request.
  debug.resources.emplace_back("nvidia.com/gpu", "0");
  EXPECT_EQ(Judge(PodOf({debug}), DefaultPolicy()).warnings,
            std::vector<std::string>{kPrivilegedSentence});
  auto denied =
      Judge(PodOf({debug}), WithAction(FindingKind::kPrivilegedWithoutRequest, Action::kDeny));
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(denied.denial, kPrivilegedSentence);
}

TEST(Judge, AnyGpuRequestInThePodCoversAPrivilegedContainer) {
  AdmissionContainer debug;
  debug.name = "debug";
  debug.privileged = true;
  // The GPU is another container's; the pod still asked for one, so the node's plugin gave it
  // a device and the privileged container's view is the operator's decision.
  EXPECT_TRUE(Judge(PodOf({debug, Gpu("cuda", "nvidia.com/mig-1g.10gb")}), DefaultPolicy())
                  .warnings.empty());
  AdmissionPod claimed = PodOf({debug});
  claimed.resource_claims = 1;  // DRA
  EXPECT_TRUE(Judge(claimed, DefaultPolicy()).warnings.empty());
}

TEST(Judge, BothKindsFireInOrder) {
  const AdmissionContainer debug = PrivilegedWithEveryGpu();
  Policy p = DefaultPolicy();
  p.For(FindingKind::kPrivilegedWithoutRequest).action = Action::kDeny;
  auto v = Judge(PodOf({debug}), p);
  EXPECT_FALSE(v.allowed);
  EXPECT_EQ(v.denial, kPrivilegedSentence);
  EXPECT_EQ(v.warnings, std::vector<std::string>{
                            "Container 'debug' sets NVIDIA_VISIBLE_DEVICES=all; the NVIDIA "
                            "runtime honours it over the pod's GPU grant (gpuledger: "
                            "pod-sets-visible-devices)."});
  EXPECT_EQ(v.fired, (std::vector<FindingKind>{FindingKind::kPodSetsVisibleDevices,
                                               FindingKind::kPrivilegedWithoutRequest}));
}

TEST(Judge, ExemptionsByNamespaceAndLabels) {
  const AdmissionContainer debug = PrivilegedWithEveryGpu();
  Policy p = DefaultPolicy();
  p.For(FindingKind::kPodSetsVisibleDevices).action = Action::kDeny;
  p.For(FindingKind::kPrivilegedWithoutRequest).action = Action::kDeny;
  p.exemptions.push_back(Exemption{"kube-system", {}, {}, 1});
  p.exemptions.push_back(Exemption{
      "", {{"gpuledger.io/exempt", "true"}}, {FindingKind::kPrivilegedWithoutRequest}, 2});
  auto system = Judge(PodOf({debug}, "kube-system"), p);
  EXPECT_TRUE(system.allowed);
  EXPECT_TRUE(system.fired.empty());
  AdmissionPod labelled = PodOf({debug});
  labelled.labels["gpuledger.io/exempt"] = "true";
  auto v = Judge(labelled, p);
  // Exempt from the privileged kind only: the visible-devices denial stands.
  EXPECT_FALSE(v.allowed);
  EXPECT_EQ(v.denial,
            "Container 'debug' sets NVIDIA_VISIBLE_DEVICES=all; the NVIDIA runtime "
            "honours it over the pod's GPU grant (gpuledger: pod-sets-visible-devices).");
  EXPECT_EQ(v.fired, std::vector<FindingKind>{FindingKind::kPodSetsVisibleDevices});
}

TEST(Judge, ValuesAreShortAndPrintableInSentences) {
  AdmissionContainer c = Gpu("cuda");
  c.env = {{"NVIDIA_VISIBLE_DEVICES", "GPU-1\n" + std::string(100, 'x')}};
  auto v = Judge(PodOf({c}), DefaultPolicy());
  ASSERT_EQ(v.warnings.size(), 1u);
  EXPECT_EQ(v.warnings[0], "Container 'cuda' sets NVIDIA_VISIBLE_DEVICES=GPU-1?" +
                               std::string(58, 'x') +
                               "...; the NVIDIA runtime honours it over the pod's GPU grant "
                               "(gpuledger: pod-sets-visible-devices).");
}

TEST(IsGpuResource, TheSharingLayersNames) {
  for (const char* name :
       {"nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-3g.40gb", "nvidia.com/gpucores",
        "nvidia.com/gpumem", "aliyun.com/gpu-mem", "alibabacloud.com/gpu-mem", "gpu_milli"})
    EXPECT_TRUE(IsGpuResource(name)) << name;
  for (const char* name : {"cpu", "memory", "nvidia.com/gpux", "amd.com/gpu", "nvidia.com/mig"})
    EXPECT_FALSE(IsGpuResource(name)) << name;
}

TEST(RequestsGpu, ZeroQuantitiesAreNoRequest) {
  for (const char* zero : {"0", "0.0", "0m", "+0", "0e3"})
    EXPECT_FALSE(RequestsGpu(PodOf({Gpu("c", "nvidia.com/gpu", zero)}))) << zero;
  for (const char* some : {"1", "500m", "0.5", "2Gi"})
    EXPECT_TRUE(RequestsGpu(PodOf({Gpu("c", "gpu_milli", some)}))) << some;
}

}  // namespace
}  // namespace gpuledger::guardrails
