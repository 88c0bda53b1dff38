#pragma once
// What to do about GPUs held (issue 59): one vocabulary for rightsizing's recommendations and
// for the guardrail findings, so a finding and a recommendation that ask for the same thing say
// it with the same word ("release" is both the idle-allocation finding's remedy and the
// recommendation that gives the GPU back).

#include <optional>
#include <string_view>

#include "model/finding.h"

namespace gpuledger {

enum class Action {
  // Rightsizing's (rightsizing/recommend.h).
  kKeep,
  kFewerGpus,
  kFewerReplicas,
  kTimeSlice,
  kMigProfile,
  kCheaperModel,
  kRelease,
  // Guardrails' remedies beside them.
  kRequestGpu,          // grant the pod what it uses (or stop what runs without a grant)
  kDropDeviceOverride,  // remove the NVIDIA_/CUDA_VISIBLE_DEVICES setting that widens the grant
  kInvestigate,         // nothing to resize: a process to identify, a figure to check
};

// "keep", "fewer-gpus", "fewer-replicas", "time-slice", "mig-profile", "cheaper-model",
// "release", "request-gpu", "drop-device-override", "investigate".
std::string_view ToString(Action action);
std::optional<Action> ParseAction(std::string_view text);

// What answers a finding of `kind`: held and unused (idle-allocation, stale-grant) is
// "release"; used without a grant, "request-gpu"; a device override, "drop-device-override";
// sharers over their memory or past a declared limit, "mig-profile" (hardware isolation);
// the rest, "investigate".
Action RemedyFor(FindingKind kind);

}  // namespace gpuledger
