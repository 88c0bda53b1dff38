#include "cost/gpu_memory.h"


namespace gpuledger::cost {
namespace {

struct ModelMemory {
  std::string_view name;
  Bytes memory;
};

constexpr ModelMemory kModels[] = {
    {"H100-80GB", 80 * kGiB},
    {"H100", 80 * kGiB},
    {"H200-141GB", 143771000832},  // NVML on the H200 of ../shared/data/h200
    {"A100-80GB", 80 * kGiB},
    {"A100-40GB", 40 * kGiB},
    {"L4", 23034 * kMiB},
    {"T4", 15360 * kMiB},
    {"A10", 24 * kGiB},
    {"A10G", 24 * kGiB},
    {"L40S", 48 * kGiB},
    {"V100-16GB", 16 * kGiB},
    {"V100-32GB", 32 * kGiB},
    {"P100", 16 * kGiB},
    {"A30", 24 * kGiB},
    {"A30-24GB", 24 * kGiB},
    // Alibaba openb trace models (docs/scenarios.md: G1-G3 are undisclosed, 32 GiB assumed).
    {"V100M16", 16 * kGiB},
    {"V100M32", 32 * kGiB},
    {"G1", 32 * kGiB},
    {"G2", 32 * kGiB},
    {"G3", 32 * kGiB},
};

}  // namespace

Bytes GpuModelMemory(std::string_view gpu_model) {
  for (const ModelMemory& m : kModels)
    if (m.name == gpu_model) return m.memory;
  return 0;
}

}  // namespace gpuledger::cost
