// /proc/<pid>/cgroup and /proc/<pid>/status as the agent reads them for every GPU process: a
// container can shape neither file, but a kernel or runtime the parsers do not know can.

#include <cstdint>
#include <string_view>

#include "sources/procfs/proc_source.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)gpuledger::procfs::ParseProcCgroup(text);
  (void)gpuledger::procfs::ParseStatusRealUid(text);
  (void)gpuledger::procfs::ParseStatusNamespacePid(text, 42);
  return 0;
}
