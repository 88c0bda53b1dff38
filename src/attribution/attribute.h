#pragma once
// Interval attribution (design section 4): a NodeSnapshot in, per physical GPU each consumer's
// allocated share, compute, memory and energy out, with idle and unattributed remainders.
// Pure: no I/O, no clock. Every figure says how it was obtained (Quality + compute_rule).
//
// Rules, per sharing mode (design section 3):
//   allocation  exclusive 1; time-slicing/MPS replica 1/R; MIG slices/total (/R for MIG
//               replicas); a declared share (fractional, MPS active-thread %) when given;
//               DRA: the device split among the claims on it, a claim among its pods.
//               Over-subscribed declared shares are scaled to fit the GPU exactly.
//   compute     busy time of the physical GPU (NVML utilization): one consumer with a
//               process on the device takes all of it ("device-activity", measured); several
//               split it by their per-process SM samples ("process-samples", estimated) — this
//               scales away the per-process sums that exceed the device value — or, without
//               samples, by allocation share ("mps-thread-share" under MPS, "allocation-share"
//               otherwise; estimated). MIG: the instance's own activity from NVML GPM (Hopper
//               and newer: "gpm-instance-activity") or DCGM ("dcgm-instance-activity"),
//               measured; else the instance's slice time while a process is present
//               ("mig-presence", estimated: no instance counters exist on that GPU). Busy time with
//               no process is unattributed; a device with no busy signal and no samples gives
//               "allocated" quality.
//   memory      per-process bytes x interval (measured); used memory no process explains is
//               unattributed.
//   energy      the device's energy split by busy time (consumers, unattributed), the energy
//               of idle time stays idle.
//   activity    SM active/occupancy, tensor and DRAM activity of a unit (GPU or MIG instance,
//               scaled by its slice time) to the consumers with a process on it: all of it
//               when alone (measured, rule = the source: "gpm", "dcgm-exporter"), else split
//               by compute ("compute-share", estimated). Not conserved: a signal, not a cost.

#include <vector>

#include "common/result.h"
#include "model/device_id.h"
#include "model/snapshot.h"
#include "model/usage.h"

namespace gpuledger::attribution {

// One DeviceUsage per physical GPU of the snapshot, in snapshot order; consumers sorted by
// ConsumerRef. Grants and processes on devices not in the snapshot are ignored.
std::vector<DeviceUsage> Attribute(const NodeSnapshot& snapshot);

// The conservation invariants of DeviceUsage; the first violation, named.
Status CheckConservation(const DeviceUsage& usage);

// Why a compute rule had to be used, in a sentence for people ("" for a measured rule): the
// demo and reports print it beside estimated figures.
std::string_view ExplainComputeRule(std::string_view rule);

// Kept here for attribution's callers; the model owns it (model/device_id.h).
using gpuledger::BaseDeviceId;

}  // namespace gpuledger::attribution
