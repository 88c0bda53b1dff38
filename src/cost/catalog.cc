#include "cost/catalog.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

#include "common/strings.h"

namespace gpuledger::cost {
namespace {

// Uppercased tokens split at space, '-', '_' and '/'.
std::vector<std::string> Tokens(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ' ' || c == '-' || c == '_' || c == '/' || c == '\t') {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Built-in prices. Everything is per GPU-hour in nanos of USD, derived from the public price
// lists in ../shared/data/pricing (see docs/pricing.md). Instance prices include the CPU, RAM and
// network of the instance: per-GPU figures are instance price / GPU count, as the summary does.
//
// Representative instance per model: the 8-GPU (or largest) AWS us-east-1 instance where AWS has
// one, because (a) a Kubernetes GPU node is usually a whole multi-GPU instance, (b) the largest
// instance's per-GPU price is the one whose CPU/RAM share is proportionate to a full node, and
// (c) one provider and region keep the defaults comparable. A10 (not sold on AWS) comes from
// Azure eastus; spot prices come from GCP us-central1 (the only spot data we have); P100 is in
// none of the snapshots and is an estimate.

constexpr Nanos kUsd = kNanosPerUnit;

// Instance price (nanos) / GPU count, rounded half up.
constexpr Nanos PerGpu(Nanos instance_nanos, int gpus) {
  return (2 * instance_nanos + gpus) / (2 * gpus);
}

// Reserved: on-demand x kReservedPercent (catalog.h).
constexpr Nanos Reserved(Nanos on_demand) { return (on_demand * kReservedPercent + 50) / 100; }

// On-prem amortised: purchase price per GPU (the GPU's share of a typical server of its class,
// host included) straight-line over 4 years of 8760 h, plus power at the GPU's board power with
// PUE 1.5 and 0.10 USD/kWh. All inputs are estimates; override them in a catalog file.
constexpr Nanos kDepreciationHours = 4 * 8760;
constexpr Nanos OnPrem(Nanos capex_usd, Nanos board_watts) {
  // W x 1.5 x 0.10 USD/kWh = W x 0.00015 USD/h = W x 150,000 nanos/h.
  return (capex_usd * kUsd + kDepreciationHours / 2) / kDepreciationHours + board_watts * 150'000;
}

constexpr const char* kAwsList = "karpenter-provider-aws price list 2026-07-20";
constexpr const char* kAzureList = "karpenter-provider-azure price list 2026-06-18";
constexpr const char* kGcpList = "karpenter-provider-gcp initial prices 2026-08-03 (commit date)";

struct OnDemandRow {
  const char* model;
  const char* provider;  // aws, azure
  const char* instance;
  const char* region;
  const char* instance_price;  // as written in the price list, for the citation
  Nanos instance_nanos;
  int gpus;
  const char* list;
};

// clang-format off
constexpr std::array<OnDemandRow, 11> kOnDemand = {{
  {"H100-80GB",  "aws",   "p5.48xlarge",           "us-east-1", "55.04",     55'040'000'000, 8, kAwsList},
  {"H200-141GB", "aws",   "p5en.48xlarge",         "us-east-1", "63.296",    63'296'000'000, 8, kAwsList},
  {"A100-80GB",  "aws",   "p4de.24xlarge",         "us-east-1", "27.44705",  27'447'050'000, 8, kAwsList},
  {"A100-40GB",  "aws",   "p4d.24xlarge",          "us-east-1", "21.957642", 21'957'642'000, 8, kAwsList},
  {"L40S",       "aws",   "g6e.48xlarge",          "us-east-1", "30.13118",  30'131'180'000, 8, kAwsList},
  {"L4",         "aws",   "g6.48xlarge",           "us-east-1", "13.3504",   13'350'400'000, 8, kAwsList},
  {"A10G",       "aws",   "g5.48xlarge",           "us-east-1", "16.288",    16'288'000'000, 8, kAwsList},
  {"T4",         "aws",   "g4dn.metal",            "us-east-1", "7.824",      7'824'000'000, 8, kAwsList},
  {"V100-16GB",  "aws",   "p3.16xlarge",           "us-east-1", "24.48",     24'480'000'000, 8, kAwsList},
  {"V100-32GB",  "aws",   "p3dn.24xlarge",         "us-east-1", "31.212",    31'212'000'000, 8, kAwsList},
  {"A10",        "azure", "Standard_NV72ads_A10_v5", "eastus",  "6.52",       6'520'000'000, 2, kAzureList},
}};

// GCP spot: machine price (GPUs included) / GPU count, the 8-GPU machine of each family.
struct SpotRow {
  const char* model;
  const char* machine;
  const char* machine_price;
  Nanos per_gpu_nanos;  // machine_price / 8 rounded half up to the nano
};
constexpr std::array<SpotRow, 4> kGcpSpot = {{
  {"H100-80GB", "a3-highgpu-8g",  "50.6095408219178", 6'326'192'603},
  {"A100-80GB", "a2-ultragpu-8g", "22.0763704109589", 2'759'546'301},
  {"A100-40GB", "a2-highgpu-8g",  "15.42416",         1'928'020'000},
  {"L4",        "g2-standard-96", "4.499264",           562'408'000},
}};

struct OnPremRow {
  const char* model;
  Nanos capex_usd;
  Nanos board_watts;
};
// Capex per GPU: rough street prices of the GPU's share of a typical server (2026 estimate; the
// older models at their purchase price, as they are depreciated from it). A10G is an AWS-only
// part and has no on-prem entry.
constexpr std::array<OnPremRow, 11> kOnPrem = {{
  {"H100-80GB",  35'000, 700},
  {"H200-141GB", 40'000, 700},
  {"A100-80GB",  20'000, 400},
  {"A100-40GB",  15'000, 400},
  {"L40S",       12'000, 350},
  {"L4",          4'000,  72},
  {"T4",          2'500,  70},
  {"A10",         5'000, 150},
  {"V100-16GB",  10'000, 300},
  {"V100-32GB",  12'000, 300},
  {"P100",        6'000, 250},
}};
// clang-format on

// P100: no instance in any snapshot (AWS p2 is K80, Azure NCv2 and GCP P100 machines are not in
// the lists). Estimate: half the V100-16GB on-demand price (p3.16xlarge 24.48/8 = 3.06), in line
// with the two generations' relative list prices.
constexpr Nanos kP100OnDemand = PerGpu(24'480'000'000, 8) / 2;

static_assert(PerGpu(55'040'000'000, 8) == 6'880'000'000);
static_assert(PerGpu(27'447'050'000, 8) == 3'430'881'250);
static_assert(Reserved(6'880'000'000) == 4'472'000'000);
static_assert(OnPrem(35'000, 700) == 998'858'447 + 105'000'000);

void Add(Catalog& c, std::string model, std::string cls, Nanos nanos, std::string source) {
  c.entries.push_back(PriceEntry{std::move(model), std::move(cls), "", nanos, std::move(source)});
}

}  // namespace

Result<PriceEntry> Catalog::Find(std::string_view gpu_model, std::string_view pricing_class,
                                 std::string_view region) const {
  std::string model = NormalizeGpuModel(gpu_model);
  std::string_view cls = pricing_class.empty() ? std::string_view(default_class) : pricing_class;
  const PriceEntry* any_region = nullptr;
  for (const auto& e : entries) {
    if (e.gpu_model != model || e.pricing_class != cls) continue;
    if (!region.empty() && e.region == region) return e;
    if (e.region.empty() && any_region == nullptr) any_region = &e;
  }
  if (any_region != nullptr) return *any_region;
  return NotFound(fmt::format(
      "no price for gpu model '{}' (as '{}'), class '{}'{}", gpu_model, model, cls,
      region.empty() ? std::string() : fmt::format(", region '{}' or any region", region)));
}

std::string NormalizeGpuModel(std::string_view product_name) {
  std::string_view trimmed = Trim(product_name);
  std::vector<std::string> all = Tokens(trimmed);
  // Drop vendor words and what GPU feature discovery appends ("-MIG-1g.10gb", "-SHARED"), so
  // that "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb" is priced as its parent GPU.
  std::vector<std::string> t;
  for (auto& tok : all) {
    if (tok == "MIG" || tok == "SHARED") break;
    if (tok == "NVIDIA" || tok == "TESLA") continue;
    t.push_back(tok);
  }
  auto has = [&](std::string_view w) { return std::find(t.begin(), t.end(), w) != t.end(); };
  auto has_memory = [&](std::string_view gb) {  // "80GB", "80G"
    return std::any_of(t.begin(), t.end(), [&](const std::string& tok) {
      return tok.rfind(gb, 0) == 0 && (tok.size() == gb.size() || tok.substr(gb.size()) == "GB" ||
                                       tok.substr(gb.size()) == "G");
    });
  };
  if (has("H200")) return "H200-141GB";
  if (has("H100")) {
    if (has("NVL") || has_memory("94")) return "H100-NVL-94GB";  // a different product
    return "H100-80GB";
  }
  if (has("A100")) return has_memory("80") ? "A100-80GB" : "A100-40GB";
  if (has("A10G")) return "A10G";
  if (has("A10")) return "A10";
  if (has("L40S")) return "L40S";
  if (has("L4")) return "L4";
  if (has("T4")) return "T4";
  if (has("V100M32")) return "V100-32GB";
  if (has("V100M16")) return "V100-16GB";
  if (has("V100")) return has_memory("32") ? "V100-32GB" : "V100-16GB";
  if (has("P100")) return "P100";
  return std::string(trimmed);
}

const InstanceType* Catalog::FindInstanceType(std::string_view name,
                                              std::string_view region) const {
  const InstanceType* any = nullptr;
  const InstanceType* first = nullptr;
  for (const auto& t : instance_types) {
    if (t.name != name) continue;
    if (!region.empty() && t.region == region) return &t;
    if (t.region.empty() && any == nullptr) any = &t;
    if (first == nullptr) first = &t;
  }
  return any != nullptr ? any : first;
}

const HostRates* Catalog::FindHostRates(std::string_view name) const {
  for (const auto& r : host_rates) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

Catalog DefaultCatalog() {
  Catalog c;
  c.host_rates = DefaultHostRates();
  c.instance_types = DefaultInstanceTypes();
  for (const auto& r : kOnDemand) {
    Nanos hourly = PerGpu(r.instance_nanos, r.gpus);
    Add(c, r.model, "on-demand", hourly,
        fmt::format("{} {} {} on-demand {}/{}, {}", r.provider, r.instance, r.region,
                    r.instance_price, r.gpus, r.list));
    Add(c, r.model, "reserved", Reserved(hourly),
        fmt::format("{} {} {} on-demand {}/{} x 0.{} (assumed 1-year no-upfront discount of "
                    "{}%), {}",
                    r.provider, r.instance, r.region, r.instance_price, r.gpus, kReservedPercent,
                    100 - kReservedPercent, r.list));
  }
  Add(c, "P100", "on-demand", kP100OnDemand,
      fmt::format("estimate: 0.5 x V100-16GB (aws p3.16xlarge us-east-1 on-demand 24.48/8), no "
                  "P100 instance in the price lists; {}",
                  kAwsList));
  Add(c, "P100", "reserved", Reserved(kP100OnDemand),
      fmt::format("estimate: 0.5 x V100-16GB on-demand x 0.{} (assumed 1-year no-upfront "
                  "discount of {}%); {}",
                  kReservedPercent, 100 - kReservedPercent, kAwsList));
  for (const auto& r : kGcpSpot) {
    Add(c, r.model, "spot", r.per_gpu_nanos,
        fmt::format("gcp {} us-central1 spot {}/8, {}", r.machine, r.machine_price, kGcpList));
  }
  for (const auto& r : kOnPrem) {
    Add(c, r.model, "on-prem", OnPrem(r.capex_usd, r.board_watts),
        fmt::format("estimate: {} USD per GPU / {} h (4-year straight line) + {} W x PUE 1.5 x "
                    "0.10 USD/kWh; assumptions 2026",
                    r.capex_usd, kDepreciationHours, r.board_watts));
  }
  return c;
}

}  // namespace gpuledger::cost
