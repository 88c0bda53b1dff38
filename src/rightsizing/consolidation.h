#pragma once
// The consolidation plan (design section 5, issue 12): pack the low-use
// workloads of one GPU model and pool onto the fewest GPUs, memory and compute
// as two dimensions, and state the GPUs and money freed and the moves. Pure: no
// I/O.
//
// Packing is two-dimensional bin packing with integer sizes:
// first-fit-decreasing for any set, and for small sets (<=
// options.exact_max_items, 12 by default) an exact branch-and-bound search, so
// the answer is optimal there. Whole-GPU mode: an item is (memory peak x
// headroom, p95 compute) in parts per kWholeGpu of the card, each at most one
// card (time-slicing or MPS on the target GPU is assumed; memory is not
// isolated). MIG mode: an item is the smallest MIG profile that fits it
// (rightsizing/mig_profiles.h), sized in (compute slices, memory slices) of the
// card (7 and 8); only the slice counts are checked, not NVIDIA's placement
// rules, so a packed card may need its instances in a particular order or may
// not be realisable for a few mixes (docs/rightsizing.md).
//
// Thread-safety: functions only; no state.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/units.h"

namespace gpuledger::rightsizing {

// One thing to pack: its size in two dimensions, each in [0, capacity].
struct PackItem {
  std::int64_t a = 0;
  std::int64_t b = 0;
};

struct Packing {
  int bins = 0;             // bins used
  std::vector<int> bin_of;  // per item (input order), the bin index 0..bins-1
  bool optimal = false;     // proven optimal (exact search finished, or hit the bound)
};

// Packs `items` into bins of capacity (cap_a, cap_b). Every item must fit one
// bin (a <= cap_a, b <= cap_b; checked: aborts otherwise, it is the caller's
// invariant). First-fit-decreasing (by the larger of a/cap_a and b/cap_b),
// then, when items.size() <= exact_max_items, a branch-and-bound search seeded
// with that answer. Deterministic.
Packing PackTwoDimensional(std::span<const PackItem> items, std::int64_t cap_a, std::int64_t cap_b,
                           int exact_max_items = 12);

// A workload that could move.
struct ConsolidationWorkload {
  std::string workload;  // "ns/Deployment/name"
  Bytes memory_peak_bytes = 0;
  double compute_p95 = 0;      // share of one physical GPU, 0..1
  SharePpd gpus_held_ppd = 0;  // what it holds now (kWholeGpu for one whole GPU)
};

struct ConsolidationInput {
  std::string gpu_model;
  std::string pool;
  Bytes gpu_memory_bytes = 0;
  Nanos hourly_price_nanos = 0;  // one GPU of the model, in this pool, for one hour
  std::vector<ConsolidationWorkload> workloads;
};

struct ConsolidationOptions {
  double memory_headroom = 1.2;
  // Low use: a workload is packed only when its p95 compute is at most this
  // share of a GPU and it fits one card; the rest stay where they are (listed
  // in `left_alone`).
  double max_compute_share = 0.5;
  bool mig = false;  // pack into MIG profiles of gpu_model instead of shares
  int exact_max_items = 12;
};

struct Move {
  std::string workload;
  int target_gpu = 0;   // 0..gpus_after-1, GPUs of the plan
  std::string profile;  // the MIG profile in MIG mode, "" otherwise
  friend bool operator==(const Move&, const Move&) = default;
};

struct ConsolidationPlan {
  std::string gpu_model;
  std::string pool;
  SharePpd gpus_before_ppd = 0;    // held by the packed workloads now
  int gpus_after = 0;              // whole GPUs the plan needs for them
  SharePpd gpus_freed_ppd = 0;     // before - after (may be <= 0: then nothing is freed)
  Nanos monthly_saving_nanos = 0;  // freed x hourly price x 730, rounded half up
  bool optimal = false;
  std::vector<Move> moves;
  std::vector<std::string> left_alone;  // "workload: why"
  std::vector<std::string> reasons;
};

ConsolidationPlan PlanConsolidation(const ConsolidationInput& input,
                                    const ConsolidationOptions& options);

}  // namespace gpuledger::rightsizing
