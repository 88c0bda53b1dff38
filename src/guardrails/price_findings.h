#pragma once
// What each finding cost, from the ledger's own rows (design section 5: "every finding
// priced"), fed a window's rows a part at a time (ledger/findings.h reads them a day at a
// time). The server-side detector of idle allocations is idle_runs.h.
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

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "common/units.h"
#include "guardrails/policy.h"
#include "model/consumer.h"
#include "model/finding.h"

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

// A device-hour's figures that price its GPU time.
struct HourPrice {
  Nanos price_nanos = 0;  // reconciled when a bill was imported
  GpuMicros metered_us = 0;
  Bytes memory_total_bytes = 0;
};

// The price of `gpu_us` of a device-hour: price x gpu_us / metered, rounded half up.
Nanos PriceOf(__int128 gpu_us, const HourPrice& device);

// What each kind of finding's cost is of (PricedFinding::cost_basis).
inline constexpr std::string_view kComputeBasis =
    "compute used beyond the grant, at the device's price";
inline constexpr std::string_view kMemoryBasis =
    "memory held beyond the declared cap, as a share of the card, at the device's price";
inline constexpr std::string_view kIdleBasis =
    "the allocation held while idle, at the device's price";
inline constexpr std::string_view kStaleBasis =
    "the share of the device the stale grant holds, while listed, at the device's price";
inline constexpr std::string_view kOverrideBasis =
    "none: a risk; GPU time it took on devices not granted is its unallocated-access finding's";
inline constexpr std::string_view kRiskBasis = "none: a risk, no GPU time taken";

// A usage row as findings read it; its strings are the caller's, valid during the call.
struct FindingRow {
  Micros hour_us = 0;
  std::string_view node;
  const ConsumerRef* subject = nullptr;
  std::string_view gpu;        // the physical GPU
  std::string_view device_id;  // what it held: a replica, a MIG instance or the GPU
  GpuMicros allocated_us = 0;
  GpuMicros compute_us = 0;
  KibSeconds memory_kib_s = 0;
  std::string_view workload;  // the subject's (Finding::workload); "" where not known
};

// What findings cost, by the rules above, from the rows and device-hours of the hours they span
// given in any order, each once: a reader of a window a day at a time holds the sums, not the
// rows.
class FindingCosts {
 public:
  explicit FindingCosts(std::vector<Finding> findings);

  // Whether rows of `subject` price any finding (a reader may give only those).
  bool Concerns(const ConsumerRef& subject) const { return by_subject_.contains(subject); }
  // Whether device-hours of `node` price any finding (stale grants; a reader may give only
  // those).
  bool ConcernsDevicesOf(std::string_view node) const;
  void AddRow(const FindingRow& row, const HourPrice& device);
  void AddDeviceHour(Micros hour_us, std::string_view node, std::string_view gpu,
                     const HourPrice& device);
  // `instance` (a MIG instance's id) is a slice of `gpu`: a stale grant of it holds that GPU.
  void NameInstance(std::string_view instance, std::string_view gpu);
  // The findings, in the order given, priced.
  std::vector<PricedFinding> Take();

 private:
  struct StaleHour {
    std::string gpu;
    GpuMicros gpu_us = 0;
    Nanos cost_nanos = 0;
  };
  struct Pricing {
    Micros from_us = 0, to_us = 0;  // first seen to resolved (or last seen)
    std::int64_t memory_cap = 0;    // isolation-breach: the declared cap, bytes
    std::int64_t share_ppd = 0;     // stale-grant: the share its grant holds
    std::vector<StaleHour> stale;   // stale-grant: the device-hours it held, priced
  };
  std::vector<PricedFinding> priced_;
  std::vector<Pricing> pricing_;
  std::map<ConsumerRef, std::vector<std::size_t>> by_subject_;
  std::map<std::string, std::vector<std::size_t>, std::less<>> stale_by_node_;
  std::map<std::string, std::string, std::less<>> instance_gpu_;
};

}  // namespace gpuledger::guardrails
