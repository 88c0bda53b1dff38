#include "model/gpu_layout.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

namespace gpuledger {

std::string DescribeLayout(const PhysicalGpu& gpu, std::span<const MigInstance> instances) {
  std::vector<const MigInstance*> own;
  for (const MigInstance& m : instances)
    if (m.parent == gpu.uuid) own.push_back(&m);
  if (own.empty()) return gpu.replicas > 1 ? fmt::format("{} replicas", gpu.replicas) : "";
  std::sort(own.begin(), own.end(), [](const MigInstance* a, const MigInstance* b) {
    return a->compute_slices != b->compute_slices ? a->compute_slices > b->compute_slices
                                                  : a->profile < b->profile;
  });
  std::string out;
  for (const MigInstance* m : own) {
    if (!out.empty()) out += '+';
    out += m->profile;
  }
  return out;
}

}  // namespace gpuledger
