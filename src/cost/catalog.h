#pragma once
// The price catalog: hourly price of one GPU per GPU model and pricing class, optionally per
// region. Built-in defaults are derived from public price lists (each entry cites its source
// and date); a YAML file (docs/pricing.md) overrides or extends them.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/units.h"

namespace gpuledger::cost {

struct PriceEntry {
  std::string gpu_model;      // catalog model name, e.g. "H100-80GB" (see NormalizeGpuModel)
  std::string pricing_class;  // "on-demand", "spot", "reserved", "on-prem"
  std::string region;         // empty = any region
  Nanos hourly_nanos = 0;     // per GPU-hour
  std::string source;         // where the number comes from, with its date
};

struct Catalog {
  std::string currency = "USD";
  std::string default_class = "on-demand";
  std::vector<PriceEntry> entries;

  // Most specific match: (model, class, region), then (model, class, any region). A missing
  // class falls back to nothing: a spot node without a spot price is an error, not on-demand.
  // `gpu_model` is normalised (NormalizeGpuModel) before matching; an empty `pricing_class`
  // means `default_class`. kNotFound when nothing matches.
  Result<PriceEntry> Find(std::string_view gpu_model, std::string_view pricing_class,
                          std::string_view region = {}) const;
};

// "NVIDIA H100 80GB HBM3" / "Tesla T4" / "H100-SXM5-80GB" ... -> the catalog's model name.
std::string NormalizeGpuModel(std::string_view product_name);

// "6.88" -> 6'880'000'000: a decimal amount of currency units to nanos, exactly from the text
// (never through a double). Digits with an optional '-' and at most 9 decimals; no exponent.
Result<Nanos> ParseDecimalNanos(std::string_view text);

// The built-in catalog (sources cited per entry).
Catalog DefaultCatalog();

// Parses a catalog YAML document on top of `base` (entries replace same model/class/region).
// Errors name file:line and the field: "prices.yaml:7: field 'hourly': expected a number".
Result<Catalog> ParseCatalogYaml(std::string_view text, std::string_view file_name,
                                 const Catalog& base);
Result<Catalog> LoadCatalogFile(const std::string& path, const Catalog& base);

}  // namespace gpuledger::cost
