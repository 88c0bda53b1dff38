// What each estimated compute rule of attribute.h means, in the words the demo and the docs
// use (ExplainComputeRule).
#include "attribution/attribute.h"

namespace gpuledger::attribution {

std::string_view ExplainComputeRule(std::string_view rule) {
  if (rule == "mig-presence")
    return "MIG instance without its own counters (GPM needs Hopper or newer, no dcgm-exporter): "
           "its slice time while a process is present";
  if (rule == "mps-thread-share")
    return "MPS clients (NVML samples only the MPS server): the device's busy time by declared "
           "active-thread share";
  if (rule == "mps-memory-share")
    return "MPS clients that declared no active-thread share: the device's busy time by the "
           "memory each holds";
  if (rule == "mps-even-share")
    return "MPS clients with neither a declared share nor memory: the device's busy time evenly";
  if (rule == "mps-server")
    return "the MPS server: its samples are its clients' kernels, booked to them, none to it";
  if (rule == "process-samples")
    return "time-sliced consumers: the device's busy time by NVML's per-process samples, each "
           "giving a whole sample window to one process (up to 111% off on an H200 for loads "
           "in step with the windows; steady loads over hours average out; docs/attribution.md)";
  if (rule == "allocation-share")
    return "several consumers without per-process samples: the device's busy time by allocation";
  if (rule == "no-signal") return "no busy signal and no samples: the grant alone";
  if (rule == "kernel-time-remainder")
    return "processes that publish no kernel time beside some that do: what the device's busy "
           "time leaves after the publishers' kernels, by NVML's estimate";
  return "";
}

}  // namespace gpuledger::attribution
