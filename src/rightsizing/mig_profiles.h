#pragma once
// MIG (Multi-Instance GPU) profiles per GPU model, as NVIDIA publishes them,
// and the smallest profile that fits a workload's need (design section 5, issue
// 12). Pure: no I/O.
//
// Memory is the profile's nominal size in decimal GB ("1g.10gb" = 10 * 10^9
// bytes), taken as the memory the instance gives a workload. The real usable
// memory of an instance is a little different (a 1g.10gb instance of an
// A100-80GB reports about 9.75 GiB, 10.47e9 bytes); the nominal figure is the
// one people and the simulator (src/sim) use, and it is the smaller of the
// two on the models we list, so a fit here is a fit there. The "+me" (media
// extension) variants are left out: they take the same slices with the GPU's
// video engines, and at most one fits a GPU, so they are never a smaller fit.
//
// Thread-safety: the table is immutable after first use (a function-local
// static); all functions are safe to call from any thread.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/units.h"

namespace gpuledger::rightsizing {

struct MigProfile {
  std::string name;             // "1g.10gb"
  int compute_slices = 0;       // "1g": compute slices the instance takes
  int total_slices = 0;         // compute slices of the whole GPU: 7 (A30: 4)
  int memory_slices = 0;        // memory slices the instance takes
  int total_memory_slices = 0;  // memory slices of the whole GPU: 8 (A30: 4)
  Bytes memory_bytes = 0;       // nominal: "<n>gb" as n * 10^9 bytes (see above)
  int max_instances = 0;        // how many of this profile one GPU holds at most

  friend bool operator==(const MigProfile&, const MigProfile&) = default;
};

// The profiles of `gpu_model` (the catalog's names: "A100-40GB", "A100-80GB",
// "A30-24GB", "H100-80GB", "H100-NVL-94GB", "H200-141GB", "H20", "GH200",
// "GH200-144GB", "B200", and a few aliases: "A30", "H100", "H100-96GB"),
// ordered by compute slices then memory; nullptr when the model has no MIG (L4,
// T4, A10, L40S, V100, ...) or is unknown.
const std::vector<MigProfile>* MigProfilesFor(std::string_view gpu_model);

// The smallest profile of `gpu_model` whose memory is >= `memory_needed` and
// whose compute share (compute_slices / total_slices of the physical GPU) is >=
// `compute_share_needed` (a fraction of the whole GPU, 0..1). Smallest = fewest
// compute slices, then least memory. nullopt when the model has no MIG or no
// profile fits (the need is above the whole GPU).
std::optional<MigProfile> SmallestFittingProfile(std::string_view gpu_model, Bytes memory_needed,
                                                 double compute_share_needed);

// `bytes` x `headroom` (>= 0), rounded up to a whole byte: the memory a
// workload is given room for. The one definition the recommender, the
// consolidation plan and the tests share.
Bytes WithHeadroom(Bytes bytes, double headroom);

}  // namespace gpuledger::rightsizing
