#pragma once
// Pure conversions between CRI runtime.v1 list answers and gpuledger's values. No I/O: the gRPC
// client (grpc_runtime.h) fetches, these translate. The reverse direction serves the fake
// runtime (testing/fake_grpc) and `gpuledger-sim-node`.

#include <vector>

#include "cri/runtime/v1/api.pb.h"
#include "sources/cri/runtime.h"

namespace gpuledger::cri {

// running == (state == CONTAINER_RUNNING); name from metadata.name.
std::vector<Container> ParseListContainersResponse(
    const ::runtime::v1::ListContainersResponse& response);

// ready == (state == SANDBOX_READY); name, namespace and uid from metadata; labels copied.
std::vector<PodSandbox> ParseListPodSandboxResponse(
    const ::runtime::v1::ListPodSandboxResponse& response);

// Inverses: running -> CONTAINER_RUNNING else CONTAINER_EXITED; ready -> SANDBOX_READY else
// SANDBOX_NOTREADY.
::runtime::v1::Container ToProto(const Container& container);
::runtime::v1::PodSandbox ToProto(const PodSandbox& sandbox);

// Whether a container / sandbox passes a ListContainers / ListPodSandbox filter (fields ANDed,
// unset fields match everything). Our values keep only running/ready, so a state filter other
// than RUNNING (READY) matches every non-running (not-ready) one; containers carry no labels
// here, so a non-empty container label_selector matches none.
bool Matches(const ::runtime::v1::ContainerFilter& filter, const Container& container);
bool Matches(const ::runtime::v1::PodSandboxFilter& filter, const PodSandbox& sandbox);

}  // namespace gpuledger::cri
