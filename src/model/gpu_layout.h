#pragma once
// How a GPU is divided, in the words its device-hours keep (DeviceHour::layout): what the
// devices view shows beside the sharing mode, so "mig" says which instances and
// "time-slicing" how many replicas.

#include <span>
#include <string>

#include "model/snapshot.h"

namespace gpuledger {

// The profiles of `gpu`'s MIG instances (those of `instances` whose parent it is), the most
// compute slices first, then by name, joined by '+': "3g.71gb+2g.35gb+2g.35gb". With none, "N
// replicas" where the GPU is shared by N > 1 replicas (time-slicing, MPS); else "".
std::string DescribeLayout(const PhysicalGpu& gpu, std::span<const MigInstance> instances);

}  // namespace gpuledger
