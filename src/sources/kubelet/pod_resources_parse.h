#pragma once
// Pure conversions between PodResources v1 messages and gpuledger's values. No I/O: the gRPC
// client (grpc_pod_resources.h) fetches, these translate. The reverse direction serves the fake
// kubelet (testing/fake_grpc) and `gpuledger-sim-node`.

#include <vector>

#include "kubelet/podresources/v1/api.pb.h"
#include "sources/kubelet/pod_resources.h"

namespace gpuledger::kubelet {

// One ContainerGrant per (container, ContainerDevices entry with at least one device id), in
// response order; device ids pass through unchanged ("GPU-<uuid>::3", ".../vgpu2",
// "MIG-<uuid>::1"). A container with DRA claims also gets one grant with an empty resource_name
// holding every claimed device as a DraDevice (claim "namespace/name"). Containers with neither
// devices nor claims are omitted. Kubelets without dynamic_resources (field 5) parse the same.
std::vector<ContainerGrant> ParseListResponse(const ::v1::ListPodResourcesResponse& response);

// The grants of one pod (the Get call's answer), same rules as ParseListResponse.
std::vector<ContainerGrant> ParsePodResources(const ::v1::PodResources& pod);

// One AllocatableDevice per device id, in response order.
std::vector<AllocatableDevice> ParseAllocatableResponse(
    const ::v1::AllocatableResourcesResponse& response);

// The inverse of ParseListResponse: grants are grouped by (namespace, pod) then container, in
// first-seen order; a grant's devices become one ContainerDevices entry (when non-empty) and its
// DraDevices become DynamicResource claims (one per distinct claim, devices in order). A claim
// without a '/' is taken as a name in the pod's namespace. Parse(ToList(g)) == g for grants in
// the canonical shape ParseListResponse produces.
::v1::ListPodResourcesResponse ToListResponse(const std::vector<ContainerGrant>& grants);

// Groups devices by resource_name (first-seen order) into ContainerDevices entries.
::v1::AllocatableResourcesResponse ToAllocatableResponse(
    const std::vector<AllocatableDevice>& devices);

}  // namespace gpuledger::kubelet
