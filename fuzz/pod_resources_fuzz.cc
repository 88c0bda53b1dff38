// The kubelet's PodResources answers (List, Get, GetAllocatableResources) as protobuf bytes:
// whatever the socket delivers that protobuf accepts, the conversions must take.

#include <cstdint>

#include "sources/kubelet/pod_resources_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int n = static_cast<int>(size);
  if (::v1::ListPodResourcesResponse list; list.ParseFromArray(data, n))
    (void)gpuledger::kubelet::ParseListResponse(list);
  if (::v1::PodResources pod; pod.ParseFromArray(data, n))
    (void)gpuledger::kubelet::ParsePodResources(pod);
  if (::v1::AllocatableResourcesResponse allocatable; allocatable.ParseFromArray(data, n))
    (void)gpuledger::kubelet::ParseAllocatableResponse(allocatable);
  return 0;
}
