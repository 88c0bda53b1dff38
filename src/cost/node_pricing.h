#pragma once
// Node price resolution (docs/pricing.md, "Pricing a node"): from a node's name and labels to
// its GPU model, pricing class and the hourly price of one of its GPUs (the GPU part of a bundled
// instance price), plus the node's CPU and RAM parts and, on-prem, the electricity rate. Every
// result carries `method`: which label, which table row, which split produced each number.
// Pure: no I/O, no clock.

#include <map>
#include <string>
#include <string_view>

#include "common/units.h"
#include "cost/catalog.h"

namespace gpuledger::cost {

// Well-known node labels read by ResolveNodePrice.
inline constexpr std::string_view kLabelInstanceType = "node.kubernetes.io/instance-type";
inline constexpr std::string_view kLabelInstanceTypeBeta = "beta.kubernetes.io/instance-type";
inline constexpr std::string_view kLabelRegion = "topology.kubernetes.io/region";
inline constexpr std::string_view kLabelRegionBeta = "failure-domain.beta.kubernetes.io/region";
inline constexpr std::string_view kLabelKarpenterCapacity = "karpenter.sh/capacity-type";
inline constexpr std::string_view kLabelEksCapacity = "eks.amazonaws.com/capacityType";
inline constexpr std::string_view kLabelGkeSpot = "cloud.google.com/gke-spot";
inline constexpr std::string_view kLabelGkePreemptible = "cloud.google.com/gke-preemptible";
inline constexpr std::string_view kLabelAksPriority = "kubernetes.azure.com/scalesetpriority";
inline constexpr std::string_view kLabelGpuProduct = "nvidia.com/gpu.product";
// Ours, for capacity no cloud label describes (on-prem, reserved, a committed-use contract).
inline constexpr std::string_view kLabelPricingClass = "gpuledger.io/pricing-class";

// What is known of a node. The hints are used only where the labels say nothing.
struct NodeInfo {
  std::string name;
  std::map<std::string, std::string> labels;
  std::string region_hint;         // e.g. from the scenario or the agent's config
  std::string pricing_class_hint;  // e.g. the scenario's pricing_class
  std::string gpu_model_hint;      // what NVML reports for the node's GPUs
  int gpu_count_hint = 0;          // GPUs seen on the node (for an override's instance price)
};

struct NodePrice {
  bool priced = false;        // false: `method` says why (gpu_hourly_nanos is then 0)
  std::string gpu_model;      // catalog model name
  std::string pricing_class;  // "on-demand", "spot", "reserved", "on-prem", ...
  std::string region;
  std::string instance_type;   // empty when not from the instance-type table
  int gpu_count = 0;           // GPUs the node price covers
  Nanos gpu_hourly_nanos = 0;  // GPU part of ONE GPU per hour (electricity excluded)
  Nanos cpu_hourly_nanos = 0;  // the node's CPU part per hour (0 when priced per GPU)
  Nanos ram_hourly_nanos = 0;  // the node's RAM part per hour (0 when priced per GPU)
  // On-prem with an on_prem section: electricity is charged by measured energy on top.
  Nanos electricity_per_kwh_nanos = 0;
  int pue_permille = 0;
  std::string method;
};

// Resolution order (each step named in `method`):
//   region:  topology.kubernetes.io/region, the beta label, region_hint.
//   class:   an override's class; karpenter.sh/capacity-type (spot|on-demand|reserved);
//            eks.amazonaws.com/capacityType (SPOT|ON_DEMAND|CAPACITY_BLOCK -> reserved);
//            cloud.google.com/gke-spot or gke-preemptible "true" -> spot;
//            kubernetes.azure.com/scalesetpriority (spot|regular -> on-demand);
//            gpuledger.io/pricing-class (any class, e.g. on-prem); pricing_class_hint; the
//            catalog's default_class.
//   model:   the instance type's row; nvidia.com/gpu.product; gpu_model_hint (normalised).
//   price:   override hourly_per_gpu; override instance_hourly (split by the instance row when
//            the type is known); on-prem with an on_prem purchase price (amortised) + metered
//            electricity; instance row (on-demand, spot where the row has it, reserved =
//            on-demand x 0.65), split by SplitInstancePrice; the catalog's per-GPU entry;
//            otherwise unpriced.
// Overrides: one naming the node wins; else the first selector (in catalog order) that matches.
NodePrice ResolveNodePrice(const Catalog& catalog, const NodeInfo& node);

// Electricity of `energy_mj` at `per_kwh_nanos` with the facility overhead `pue_permille`,
// rounded half up: mJ x PUE x price / 3.6e9 mJ per kWh. Negative energy counts as 0.
Nanos ElectricityPrice(MilliJoules energy_mj, Nanos per_kwh_nanos, int pue_permille);

// The built-in reserved price of an instance: on-demand x 65% (catalog.cc's assumption).
Nanos ReservedInstancePrice(Nanos on_demand_nanos);

}  // namespace gpuledger::cost
