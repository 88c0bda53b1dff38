// A kubeconfig, as `gpuledger` reads ~/.kube/config or --kubeconfig. Files it names are read
// relative to a folder that does not exist, so only what the input names absolutely is read.

#include <cstdint>
#include <string_view>

#include "k8s/kube_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view yaml(reinterpret_cast<const char*>(data), size);
  (void)gpuledger::k8s::ParseKubeconfig(yaml, "/nonexistent-gpuledger-fuzz/config");
  (void)gpuledger::k8s::ParseKubeconfig(yaml, "/nonexistent-gpuledger-fuzz/config", "other");
  return 0;
}
