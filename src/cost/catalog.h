#pragma once
// The price catalog: hourly price of one GPU per GPU model and pricing class, optionally per
// region. Built-in defaults are derived from public price lists (each entry cites its source
// and date); a YAML file (docs/pricing.md) overrides or extends them.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/units.h"
#include "cost/instance_types.h"

namespace gpuledger::cost {

// The most a catalog may say anything costs per hour (a GPU-hour, an instance-hour, a vCPU- or
// GiB-hour, a kWh): $1,000,000, a thousand times the dearest instance any cloud lists. A price
// near the int64 range wrapped the report's sums (a row of -2 nanos); with this bound a sum
// over 9,000 device-hours at the bound, or 900 million at $10, still fits.
inline constexpr Nanos kMaxHourlyPriceNanos = 1'000'000 * kNanosPerUnit;
// The most a GPU may cost to buy (on_prem.purchase_price): $100,000,000.
inline constexpr Nanos kMaxPurchasePriceNanos = 100'000'000 * kNanosPerUnit;

// Reserved = on-demand x 65%. Assumption, not in the data: AWS 1-year no-upfront Savings Plans
// and Reserved Instances for GPU families typically save 30-40% against on-demand; we take 35%.
inline constexpr int kReservedPercent = 65;

struct PriceEntry {
  std::string gpu_model;      // catalog model name, e.g. "H100-80GB" (see NormalizeGpuModel)
  std::string pricing_class;  // "on-demand", "spot", "reserved", "on-prem"
  std::string region;         // empty = any region
  Nanos hourly_nanos = 0;     // per GPU-hour
  std::string source;         // where the number comes from, with its date
};

// A per-node price override (docs/pricing.md, "Per-node overrides"). Exactly one of `node` and
// `selector` is set; any of the rest may be.
struct NodeOverride {
  std::string node;                             // node name
  std::map<std::string, std::string> selector;  // every label must equal its value
  std::string pricing_class;                    // empty: keep the class the labels give
  std::optional<Nanos> hourly_per_gpu_nanos;    // GPU part of one GPU, per hour
  std::optional<Nanos> instance_hourly_nanos;   // whole node, split like an instance price
  std::string source;                           // why: a contract, a quote
  std::string where;                            // "prices.yaml:12", for explanations
};

// On-prem pricing: the GPU's purchase price straight-line over the depreciation period, plus
// the electricity its measured energy used, times PUE.
struct OnPremConfig {
  std::int64_t depreciation_hours = 4 * 8760;
  std::map<std::string, Nanos> purchase_price_nanos;  // per GPU, by catalog model name
  Nanos electricity_per_kwh_nanos = 0;
  int pue_permille = 1000;  // facility overhead: 1.4 -> 1400
  std::string where;
};

struct Catalog {
  std::string currency = "USD";
  std::string default_class = "on-demand";
  std::vector<PriceEntry> entries;
  std::vector<HostRates> host_rates;
  std::vector<InstanceType> instance_types;
  std::vector<NodeOverride> overrides;
  std::optional<OnPremConfig> on_prem;

  // The row for `name` in `region`, else a row for `name` in any region (rows with an empty
  // region first, then the first listed). nullptr when the name is unknown.
  const InstanceType* FindInstanceType(std::string_view name, std::string_view region) const;
  const HostRates* FindHostRates(std::string_view name) const;

  // Most specific match: (model, class, region), then (model, class, any region). A missing
  // class falls back to nothing: a spot node without a spot price is an error, not on-demand.
  // `gpu_model` is normalised (NormalizeGpuModel) before matching; an empty `pricing_class`
  // means `default_class`. kNotFound when nothing matches.
  Result<PriceEntry> Find(std::string_view gpu_model, std::string_view pricing_class,
                          std::string_view region = {}) const;
};

// "NVIDIA H100 80GB HBM3" / "Tesla T4" / "H100-SXM5-80GB" ... -> the catalog's model name.
std::string NormalizeGpuModel(std::string_view product_name);

// The built-in catalog (sources cited per entry): per-GPU prices, host rates and instance types.
// No overrides and no on-prem section (on-prem nodes use the per-GPU on-prem estimates).
Catalog DefaultCatalog();

// Parses a catalog YAML document on top of `base` (entries replace same model/class/region;
// instance types and host rates replace the same name and region; overrides are appended after
// the base's; an on_prem section replaces the base's).
// Errors name file:line and the field: "prices.yaml:7: field 'hourly': expected a number".
Result<Catalog> ParseCatalogYaml(std::string_view text, std::string_view file_name,
                                 const Catalog& base);
Result<Catalog> LoadCatalogFile(const std::string& path, const Catalog& base);

}  // namespace gpuledger::cost
