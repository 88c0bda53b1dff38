#pragma once
// What each finding cost, from the ledger's own rows (design section 5: "every finding
// priced"), and the server-side detector of idle allocations.
//
// A device-hour's price per metered µs prices every GPU-µs of that hour (the device's own
// price, reconciled when a bill was imported). Per kind, the GPU time priced is:
//   unallocated-access, unmanaged-process, visible-devices-override, isolation-breach:
//       the compute the subject used on the device beyond its allocation, Σ max(0, compute -
//       allocated) over the subject's rows of the device in the hours the finding was open
//       (a pod with no grant has allocation 0: all it used). A visible-devices-override costs
//       what the container used on devices it was not granted (every device of the node);
//   idle-allocation: the allocation held in the idle hours (Σ allocated);
//   stale-grant: the share of the device the grant holds (evidence share_ppd) over the time
//       the finding was open: capacity the scheduler could not hand out;
//   memory-oversubscribed and the admission kinds: nothing taken, so 0 (a risk, said so in
//       the basis).
// Each hour is priced on its own and rounded half up to whole nanos; the sum of the hours is
// the finding's cost. Exact integers throughout.

#include <span>
#include <string>
#include <vector>

#include "common/units.h"
#include "guardrails/policy.h"
#include "model/finding.h"
#include "model/ledger.h"

namespace gpuledger::guardrails {

struct PricedFinding {
  Finding finding;
  GpuMicros gpu_us = 0;    // the GPU time priced (see above)
  Nanos cost_nanos = 0;    // what it cost at the devices' prices
  std::string cost_basis;  // the rule, in words: "compute used beyond the grant", ...
};

// One line for people: who did what, how much of the GPU and what it cost ("inference/
// debug-shell-0/main used 0.12 GPU-hours of GPU-2933… it was never granted: $0.41"). The demo,
// `audit`, the API's "summary" and the Kubernetes Events all say this.
std::string Summary(const PricedFinding& priced);

// Prices `findings` with the rows of the hours they span. `devices` and `usage` must cover
// [min first_seen, max last_seen] of the findings (more is fine).
std::vector<PricedFinding> PriceFindings(std::span<const Finding> findings,
                                         std::span<const DeviceHour> devices,
                                         std::span<const UsageRow> usage);

// idle-allocation findings from the ledger's rows (policy.idle_allocation_hours consecutive
// hours of a consumer on a device with allocation and compute at most
// policy.idle_compute_fraction of it). First seen at the start of the first idle hour, last
// seen at the end of the last; resolved at that end when the run ended before `now_us`'s
// hour (the consumer got busy or left), open otherwise. Exempt subjects are left out.
std::vector<Finding> DetectIdleAllocations(std::span<const UsageRow> usage, const Policy& policy,
                                           const std::string& cluster, Micros now_us);

}  // namespace gpuledger::guardrails
