// The container runtime's CRI runtime.v1 answers (ListContainers, ListPodSandbox) as protobuf
// bytes, converted and matched against filters the way the agent and the fake runtime use them.

#include <cstdint>

#include "sources/cri/runtime_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int n = static_cast<int>(size);
  if (::runtime::v1::ListContainersResponse containers; containers.ParseFromArray(data, n)) {
    const ::runtime::v1::ContainerFilter filter;
    for (const auto& c : gpuledger::cri::ParseListContainersResponse(containers))
      (void)gpuledger::cri::Matches(filter, c);
  }
  if (::runtime::v1::ListPodSandboxResponse sandboxes; sandboxes.ParseFromArray(data, n)) {
    const ::runtime::v1::PodSandboxFilter filter;
    for (const auto& s : gpuledger::cri::ParseListPodSandboxResponse(sandboxes))
      (void)gpuledger::cri::Matches(filter, s);
  }
  return 0;
}
