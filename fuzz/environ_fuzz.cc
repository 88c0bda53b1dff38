// /proc/<pid>/environ: written by the workload itself, so wholly a tenant's to shape. The
// sharing declarations read from it (MPS, HAMi, gpushare, fractions) must come out bounded.

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sources/procfs/proc_source.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const gpuledger::procfs::SharingEnv env = gpuledger::procfs::ParseSharingEnv(text);
  // Percentages are percentages; sizes are not negative.
  for (const auto& percent : {env.mps_thread_percentage, env.sm_limit_percentage})
    if (percent && (*percent < 0 || *percent > 100)) std::abort();
  for (const auto& bytes : {env.mps_memory_limit_bytes, env.memory_limit_bytes,
                            env.gpushare_memory_bytes, env.gpushare_device_bytes})
    if (bytes && *bytes < 0) std::abort();
  (void)gpuledger::procfs::EnvironValue(text, "NVIDIA_VISIBLE_DEVICES");
  (void)gpuledger::procfs::EnvironValue(text, "CUDA_MPS_PIPE_DIRECTORY");
  return 0;
}
