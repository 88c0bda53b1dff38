#include "model/action.h"
#include "common/enum_names.h"

#include <array>
#include <utility>

namespace gpuledger {
namespace {

constexpr NameTable<Action, 10> kActions = {{
    {Action::kKeep, "keep"},
    {Action::kFewerGpus, "fewer-gpus"},
    {Action::kFewerReplicas, "fewer-replicas"},
    {Action::kTimeSlice, "time-slice"},
    {Action::kMigProfile, "mig-profile"},
    {Action::kCheaperModel, "cheaper-model"},
    {Action::kRelease, "release"},
    {Action::kRequestGpu, "request-gpu"},
    {Action::kDropDeviceOverride, "drop-device-override"},
    {Action::kInvestigate, "investigate"},
}};

}  // namespace

std::string_view ToString(Action action) { return NameIn(kActions, action, "keep"); }

std::optional<Action> ParseAction(std::string_view text) { return ValueIn(kActions, text); }

Action RemedyFor(FindingKind kind) {
  switch (kind) {
    case FindingKind::kIdleAllocation:
    case FindingKind::kStaleGrant:
      return Action::kRelease;
    case FindingKind::kUnallocatedAccess:
    case FindingKind::kPrivilegedWithoutRequest:
      return Action::kRequestGpu;
    case FindingKind::kVisibleDevicesOverride:
    case FindingKind::kPodSetsVisibleDevices:
      return Action::kDropDeviceOverride;
    case FindingKind::kMemoryOversubscribed:
    case FindingKind::kIsolationBreach:
      return Action::kMigProfile;
    case FindingKind::kUnmanagedProcess:
    case FindingKind::kKernelTimeMismatch:
      break;
  }
  return Action::kInvestigate;
}

}  // namespace gpuledger
