#pragma once
// GPU shares declared by pod annotations, which only the server sees (design section 3,
// fractional): KAI Scheduler / Run:ai's "gpu-fraction" and "gpu-memory" (ConsumerInfo::
// annotated_gpu_*). Such a pod requests no GPU. KAI binds it to a GPU that a reservation pod in
// namespace "runai-reservation" holds whole, and points the pod's NVIDIA_VISIBLE_DEVICES at
// it: the agent sees the reservation pod's grant and the fractional pods' processes, with no
// grant of their own.
//
// ApplyAnnotatedShares re-splits a closed device-hour accordingly: every annotated row without
// allocation that used the GPU in the hour (compute or memory) gets its fraction (a memory
// declaration: its share of the device's memory) of the reservation pods' allocated time,
// taken from them; without a reservation pod (other schedulers that annotate), of the metered
// time, taken from the unallocated remainder. Declarations that add up to more than there is
// are scaled down to it exactly. The pod is assumed present for the whole reservation, which
// KAI's lifecycle makes true to within its start and end. Rows say so: share_source
// "annotation:gpu-fraction" or "annotation:gpu-memory". Σ allocated + unallocated == metered
// still holds. Pure.

#include <string_view>

#include "model/ledger.h"

namespace gpuledger::attribution {

inline constexpr std::string_view kKaiReservationNamespace = "runai-reservation";

void ApplyAnnotatedShares(LedgerHour& hour);

}  // namespace gpuledger::attribution
