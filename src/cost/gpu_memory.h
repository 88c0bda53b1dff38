#pragma once
// Memory of one GPU of a catalog model, for what is not measured: the simulator's default
// devices, and the models rightsizing could move a workload to (cheaper-model needs to know
// whether the workload's memory fits a card nobody here runs).

#include <string_view>

#include "common/units.h"

namespace gpuledger::cost {

// Bytes of memory of one GPU of `gpu_model` (a catalog name: "L4", "H100-80GB"), as NVML
// reports it where that was measured (L4, T4, H200), else the nominal size; 0 when unknown.
Bytes GpuModelMemory(std::string_view gpu_model);

}  // namespace gpuledger::cost
