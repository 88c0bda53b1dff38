#pragma once
// Cloud GPU instance types and the GPU-model-weighted split of a bundled instance price into its
// GPU, CPU and RAM parts (docs/pricing.md, "Splitting an instance price").
//
// The method: the CPU and RAM of a GPU instance are priced at the provider's own rates for the
// same host generation, derived from two general-purpose instances that differ only in memory
// per vCPU (e.g. c6a.xlarge and r6a.xlarge); what remains of the instance price is the GPU part.
// So the GPU share of a node follows what its GPUs are worth: ~77% for an 8 x H100 p5.48xlarge,
// ~39% for a 4 x T4 g4dn.12xlarge. Every part is integer nanos and the parts sum exactly to the
// price. Pure: no I/O.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/units.h"

namespace gpuledger::cost {

// Host (CPU and RAM) unit prices of one provider and CPU generation, as exact rationals:
// q vCPUs cost q x per_vcpu_num / denominator nanos per hour (rounded once, half up).
struct HostRates {
  std::string name;        // "aws-amd-gen3", "gcp-n2", ...
  Nanos per_vcpu_num = 0;  // nanos per vCPU-hour x denominator
  Nanos per_gib_num = 0;   // nanos per GiB-hour x denominator
  std::int64_t denominator = 1;
  std::string source;  // how the rates were derived, with the price list and its date
};

// One GPU instance type (a row of the instance-type table).
struct InstanceType {
  std::string name;       // "p5.48xlarge", "Standard_NC64as_T4_v3", "a3-highgpu-8g"
  std::string provider;   // "aws", "gcp", "azure", or anything for your own
  std::string gpu_model;  // catalog model name (NormalizeGpuModel)
  int gpu_count = 0;      // > 0
  Nanos hourly_nanos = 0;                  // on-demand price of the whole instance
  std::optional<Nanos> spot_hourly_nanos;  // spot price of the whole instance, where known
  int vcpu = 0;
  int memory_gib = 0;
  std::string region;      // region of the price; a row matches any region as a fallback
  std::string host_rates;  // name of the HostRates its CPU and RAM are priced at
  std::string source;      // price list and date, and where vCPU/memory come from
};

// The split of one instance price. gpu_part == per_gpu x gpu_count, and
// gpu_part + cpu_part + ram_part == the price split, exactly.
struct InstanceSplit {
  Nanos per_gpu = 0;
  Nanos gpu_part = 0;
  Nanos cpu_part = 0;
  Nanos ram_part = 0;
  int gpu_share_permille = 0;  // gpu_part / price, rounded down (for explanations)
  bool floored = false;        // the GPU part was raised to the minimum share
  std::string method;          // the numbers and rates used, for NodePrice::method
};

// The GPU part never falls below this share of an instance's on-demand price: an instance whose
// host estimate leaves less has host rates that do not fit it (a fractional-GPU VM, a host
// generation priced unlike its general-purpose cousins); the GPU then keeps a quarter.
inline constexpr int kMinGpuSharePermille = 250;

// The host part of `units` at a rational rate, rounded half up.
Nanos HostCost(std::int64_t units, Nanos rate_num, std::int64_t denominator);

// Splits `price` (the instance's on-demand, spot, reserved or overridden price) with the weights
// of its on-demand split: cpu = vCPU x cpu rate, ram = GiB x ram rate, gpu = on-demand - both
// (floored at kMinGpuSharePermille). A spot or reserved discount thus applies to every part
// alike. The remainder of gpu_part modulo gpu_count (< gpu_count nanos) moves to the CPU part
// so that every GPU of the node costs the same. A type without GPUs or a negative price (the
// catalog's parser refuses both) has no split: everything zero and `method` says why.
InstanceSplit SplitInstancePrice(const InstanceType& type, const HostRates& rates, Nanos price);

// Built-in tables (cited; docs/pricing.md lists them).
std::vector<HostRates> DefaultHostRates();
std::vector<InstanceType> DefaultInstanceTypes();

}  // namespace gpuledger::cost
