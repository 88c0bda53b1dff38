#include "cost/instance_types.h"

#include <fmt/format.h>

#include <array>

#include "common/apportion.h"
#include "common/money.h"

namespace gpuledger::cost {
namespace {

constexpr const char* kAwsList = "karpenter-provider-aws price list 2026-07-20";
constexpr const char* kAzureList = "karpenter-provider-azure price list 2026-06-18";
constexpr const char* kGcpList = "karpenter-provider-gcp initial prices 2026-08-03 (commit date)";

// Host rates from two general-purpose instances of one generation with the same vCPUs and
// different memory (compute- vs memory-optimised): price = v x cpu + g x ram for both gives
//   ram = (Pr - Pc) / (Gr - Gc),   cpu = (Pc x (Gr - Gc) - Gc x (Pr - Pc)) / (v x (Gr - Gc)),
// kept as exact rationals over v x (Gr - Gc).
struct RateSource {
  const char* name;
  const char* low_instance;  // the compute-optimised one
  Nanos low_nanos;
  int low_gib;
  const char* high_instance;  // the memory-optimised one
  Nanos high_nanos;
  int high_gib;
  int vcpu;  // of both
  const char* list;
  const char* note;
};

// clang-format off
constexpr std::array<RateSource, 5> kRateSources = {{
  {"aws-intel-gen5", "c5.xlarge",     170'000'000,  8, "r5.xlarge",    252'000'000, 32, 4, kAwsList,
   "Intel Skylake/Cascade Lake hosts (p3, p3dn, p4d, p4de, g4dn); c6i/r6i cost the same"},
  {"aws-amd-gen3",   "c6a.xlarge",    153'000'000,  8, "r6a.xlarge",   226'800'000, 32, 4, kAwsList,
   "AMD EPYC hosts (p5, g5, g6, g6e; Azure AMD GPU sizes by proxy)"},
  {"aws-intel-gen7", "c7i.xlarge",    178'500'000,  8, "r7i.xlarge",   264'600'000, 32, 4, kAwsList,
   "Intel Sapphire/Emerald Rapids hosts (p5en, p6-b200; Azure ND H100 v5 by proxy)"},
  {"gcp-n2",         "n2-highcpu-8",  286'784'000,  8, "n2-highmem-8", 524'056'000, 64, 8, kGcpList,
   "us-central1; Cascade Lake hosts (a2, g2); equals GCP's published a2 vCPU/memory rates"},
  {"gcp-c3",         "c3-highcpu-8",  340'208'000, 16, "c3-highmem-8", 529'232'000, 64, 8, kGcpList,
   "us-central1; Sapphire Rapids hosts (a3)"},
}};
// clang-format on

HostRates FromSource(const RateSource& s) {
  const std::int64_t dg = s.high_gib - s.low_gib;
  const Nanos dp = s.high_nanos - s.low_nanos;
  HostRates r;
  r.name = s.name;
  r.denominator = static_cast<std::int64_t>(s.vcpu) * dg;
  r.per_gib_num = s.vcpu * dp;
  r.per_vcpu_num = s.low_nanos * dg - s.low_gib * dp;
  r.source = fmt::format(
      "{} ({} GiB) and {} ({} GiB), {} vCPU each: ram = ({} - {}) / {} GiB, cpu = the rest of {} "
      "/ {} vCPU; {}; {}",
      s.low_instance, s.low_gib, s.high_instance, s.high_gib, s.vcpu, s.high_nanos, s.low_nanos, dg,
      s.low_instance, s.vcpu, s.note, s.list);
  return r;
}

struct TypeRow {
  const char* name;
  const char* provider;
  const char* gpu_model;
  int gpus;
  int vcpu;
  int gib;
  Nanos hourly;
  Nanos spot;  // 0: unknown
  const char* region;
  const char* rates;
  const char* list;
};

// Prices: ../shared/data/pricing (gpu_instance_price_summary.csv and the provider files it was
// derived from). vCPU and memory are not in those files: they are the providers' published
// instance specifications (AWS EC2 instance types, GCP accelerator-optimized machine types,
// Azure N-series sizes). GCP "GB" of machine memory are GiB. Azure's 1/6-GPU
// Standard_NV6ads_A10_v5 is left out: a fraction of a GPU is not a GPU count.
// clang-format off
constexpr std::array<TypeRow, 47> kTypes = {{
  // name                         prov     model             gpus vcpu  GiB   on-demand         spot            region         rates
  {"p3.2xlarge",                  "aws",   "V100-16GB",        1,   8,   61,   3'060'000'000,              0, "us-east-1", "aws-intel-gen5", kAwsList},
  {"p3.8xlarge",                  "aws",   "V100-16GB",        4,  32,  244,  12'240'000'000,              0, "us-east-1", "aws-intel-gen5", kAwsList},
  {"p3.16xlarge",                 "aws",   "V100-16GB",        8,  64,  488,  24'480'000'000,              0, "us-east-1", "aws-intel-gen5", kAwsList},
  {"p3dn.24xlarge",               "aws",   "V100-32GB",        8,  96,  768,  31'212'000'000,              0, "us-east-1", "aws-intel-gen5", kAwsList},
  {"p4d.24xlarge",                "aws",   "A100-40GB",        8,  96, 1152,  21'957'642'000,              0, "us-east-1", "aws-intel-gen5", kAwsList},
  {"p4de.24xlarge",               "aws",   "A100-80GB",        8,  96, 1152,  27'447'050'000,              0, "us-east-1", "aws-intel-gen5", kAwsList},
  {"p5.4xlarge",                  "aws",   "H100-80GB",        1,  16,  256,   6'880'000'000,              0, "us-east-1", "aws-amd-gen3",   kAwsList},
  {"p5.48xlarge",                 "aws",   "H100-80GB",        8, 192, 2048,  55'040'000'000,              0, "us-east-1", "aws-amd-gen3",   kAwsList},
  {"p5en.48xlarge",               "aws",   "H200-141GB",       8, 192, 2048,  63'296'000'000,              0, "us-east-1", "aws-intel-gen7", kAwsList},
  {"p6-b200.48xlarge",            "aws",   "B200",             8, 192, 2048, 113'932'800'000,              0, "us-east-1", "aws-intel-gen7", kAwsList},
  {"g4dn.xlarge",                 "aws",   "T4",               1,   4,   16,     526'000'000,              0, "us-east-1", "aws-intel-gen5", kAwsList},
  {"g4dn.12xlarge",               "aws",   "T4",               4,  48,  192,   3'912'000'000,              0, "us-east-1", "aws-intel-gen5", kAwsList},
  {"g4dn.metal",                  "aws",   "T4",               8,  96,  384,   7'824'000'000,              0, "us-east-1", "aws-intel-gen5", kAwsList},
  {"g5.xlarge",                   "aws",   "A10G",             1,   4,   16,   1'006'000'000,              0, "us-east-1", "aws-amd-gen3",   kAwsList},
  {"g5.2xlarge",                  "aws",   "A10G",             1,   8,   32,   1'212'000'000,              0, "us-east-1", "aws-amd-gen3",   kAwsList},
  {"g5.12xlarge",                 "aws",   "A10G",             4,  48,  192,   5'672'000'000,              0, "us-east-1", "aws-amd-gen3",   kAwsList},
  {"g5.48xlarge",                 "aws",   "A10G",             8, 192,  768,  16'288'000'000,              0, "us-east-1", "aws-amd-gen3",   kAwsList},
  {"g6.xlarge",                   "aws",   "L4",               1,   4,   16,     804'800'000,              0, "us-east-1", "aws-amd-gen3",   kAwsList},
  {"g6.12xlarge",                 "aws",   "L4",               4,  48,  192,   4'601'600'000,              0, "us-east-1", "aws-amd-gen3",   kAwsList},
  {"g6.48xlarge",                 "aws",   "L4",               8, 192,  768,  13'350'400'000,              0, "us-east-1", "aws-amd-gen3",   kAwsList},
  {"g6e.xlarge",                  "aws",   "L40S",             1,   4,   32,   1'861'000'000,              0, "us-east-1", "aws-amd-gen3",   kAwsList},
  {"g6e.12xlarge",                "aws",   "L40S",             4,  48,  384,  10'492'640'000,              0, "us-east-1", "aws-amd-gen3",   kAwsList},
  {"g6e.48xlarge",                "aws",   "L40S",             8, 192, 1536,  30'131'180'000,              0, "us-east-1", "aws-amd-gen3",   kAwsList},
  {"a2-highgpu-1g",               "gcp",   "A100-40GB",        1,  12,   85,   3'673'385'000,  1'928'020'000, "us-central1", "gcp-n2",     kGcpList},
  {"a2-highgpu-8g",               "gcp",   "A100-40GB",        8,  96,  680,  29'387'080'000, 15'424'160'000, "us-central1", "gcp-n2",     kGcpList},
  {"a2-megagpu-16g",              "gcp",   "A100-40GB",       16,  96, 1360,  55'739'504'000, 29'255'680'000, "us-central1", "gcp-n2",     kGcpList},
  {"a2-ultragpu-1g",              "gcp",   "A100-80GB",        1,  12,  170,   5'068'797'890,  2'759'546'301, "us-central1", "gcp-n2",     kGcpList},
  {"a2-ultragpu-8g",              "gcp",   "A100-80GB",        8,  96, 1360,  40'550'383'123, 22'076'370'411, "us-central1", "gcp-n2",     kGcpList},
  {"a3-highgpu-1g",               "gcp",   "H100-80GB",        1,  26,  234,  11'061'249'988,  6'326'192'603, "us-central1", "gcp-c3",     kGcpList},
  {"a3-highgpu-8g",               "gcp",   "H100-80GB",        8, 208, 1872,  88'489'999'903, 50'609'540'822, "us-central1", "gcp-c3",     kGcpList},
  {"g2-standard-4",               "gcp",   "L4",               1,   4,   16,     706'832'255,    397'336'000, "us-central1", "gcp-n2",     kGcpList},
  {"g2-standard-24",              "gcp",   "L4",               2,  24,   96,   2'000'832'574,  1'124'816'000, "us-central1", "gcp-n2",     kGcpList},
  {"g2-standard-48",              "gcp",   "L4",               4,  48,  192,   4'001'665'148,  2'249'632'000, "us-central1", "gcp-n2",     kGcpList},
  {"g2-standard-96",              "gcp",   "L4",               8,  96,  384,   8'003'330'296,  4'499'264'000, "us-central1", "gcp-n2",     kGcpList},
  {"Standard_NC4as_T4_v3",        "azure", "T4",               1,   4,   28,     526'000'000,              0, "eastus", "aws-amd-gen3",      kAzureList},
  {"Standard_NC8as_T4_v3",        "azure", "T4",               1,   8,   56,     752'000'000,              0, "eastus", "aws-amd-gen3",      kAzureList},
  {"Standard_NC16as_T4_v3",       "azure", "T4",               1,  16,  110,   1'204'000'000,              0, "eastus", "aws-amd-gen3",      kAzureList},
  {"Standard_NC64as_T4_v3",       "azure", "T4",               4,  64,  440,   4'352'000'000,              0, "eastus", "aws-amd-gen3",      kAzureList},
  {"Standard_NV36ads_A10_v5",     "azure", "A10",              1,  36,  440,   3'200'000'000,              0, "eastus", "aws-amd-gen3",      kAzureList},
  {"Standard_NV72ads_A10_v5",     "azure", "A10",              2,  72,  880,   6'520'000'000,              0, "eastus", "aws-amd-gen3",      kAzureList},
  {"Standard_NC24ads_A100_v4",    "azure", "A100-80GB",        1,  24,  220,   3'673'000'000,              0, "eastus", "aws-amd-gen3",      kAzureList},
  {"Standard_NC96ads_A100_v4",    "azure", "A100-80GB",        4,  96,  880,  14'692'000'000,              0, "eastus", "aws-amd-gen3",      kAzureList},
  {"Standard_ND96asr_v4",         "azure", "A100-40GB",        8,  96,  900,  27'197'000'000,              0, "eastus", "aws-amd-gen3",      kAzureList},
  {"Standard_ND96amsr_A100_v4",   "azure", "A100-80GB",        8,  96, 1900,  32'770'000'000,              0, "eastus", "aws-amd-gen3",      kAzureList},
  {"Standard_NC40ads_H100_v5",    "azure", "H100-NVL-94GB",    1,  40,  320,   6'980'000'000,              0, "eastus", "aws-amd-gen3",      kAzureList},
  {"Standard_NC80adis_H100_v5",   "azure", "H100-NVL-94GB",    2,  80,  640,  13'960'000'000,              0, "eastus", "aws-amd-gen3",      kAzureList},
  {"Standard_ND96isr_H100_v5",    "azure", "H100-80GB",        8,  96, 1900,  98'320'000'000,              0, "eastus", "aws-intel-gen7",    kAzureList},
}};
// clang-format on

// The instance's on-demand split before the per-GPU rounding: {gpu, cpu, ram}.
struct Parts {
  Nanos gpu = 0, cpu = 0, ram = 0;
  bool floored = false;
};

Parts OnDemandParts(const InstanceType& t, const HostRates& r) {
  Parts p;
  p.cpu = HostCost(t.vcpu, r.per_vcpu_num, r.denominator);
  p.ram = HostCost(t.memory_gib, r.per_gib_num, r.denominator);
  const Nanos total = std::max<Nanos>(t.hourly_nanos, 0);
  const auto floor_gpu = static_cast<Nanos>(  // rounded up; 128 bits, as the product may not fit
      (static_cast<__int128>(total) * kMinGpuSharePermille + 999) / 1000);
  // In 128 bits: the host parts of a catalog's extreme (but accepted) rates may exceed the price.
  const __int128 gpu = static_cast<__int128>(total) - p.cpu - p.ram;
  p.gpu = static_cast<Nanos>(std::min<__int128>(gpu, total));
  if (gpu < floor_gpu) {
    // Keep the host parts' proportion, shrunk to the rest.
    std::array<std::uint64_t, 2> w = {static_cast<std::uint64_t>(std::max<Nanos>(p.cpu, 0)),
                                      static_cast<std::uint64_t>(std::max<Nanos>(p.ram, 0))};
    auto host = Apportion(total - floor_gpu, w);
    p.gpu = floor_gpu;
    p.cpu = host[0];
    p.ram = host[1];
    p.floored = true;
  }
  return p;
}

}  // namespace

Nanos HostCost(std::int64_t units, Nanos rate_num, std::int64_t denominator) {
  if (denominator <= 0) return 0;
  __int128 p = static_cast<__int128>(units) * rate_num;
  bool negative = p < 0;
  if (negative) p = -p;
  // Past int64 only for rates no real host has; held at the range's end rather than wrapped.
  const __int128 q = std::min<__int128>((p + denominator / 2) / denominator, INT64_MAX);
  return static_cast<Nanos>(negative ? -q : q);
}

InstanceSplit SplitInstancePrice(const InstanceType& type, const HostRates& rates, Nanos price) {
  // Checked in every build, not asserted: the split is money, and a division by a zero GPU
  // count would end the process.
  if (price < 0 || type.gpu_count <= 0) {
    InstanceSplit none;
    none.method = fmt::format("not split: {} GPUs at {}", type.gpu_count, DecimalFromNanos(price));
    return none;
  }
  const Parts od = OnDemandParts(type, rates);
  std::array<std::uint64_t, 3> w = {static_cast<std::uint64_t>(od.gpu),
                                    static_cast<std::uint64_t>(od.cpu),
                                    static_cast<std::uint64_t>(od.ram)};
  auto parts = Apportion(price, w);
  InstanceSplit s;
  s.floored = od.floored;
  const Nanos rest = parts[0] % type.gpu_count;  // < gpu_count nanos
  s.gpu_part = parts[0] - rest;
  s.cpu_part = parts[1] + rest;
  s.ram_part = parts[2];
  s.per_gpu = s.gpu_part / type.gpu_count;
  s.gpu_share_permille =
      price > 0 ? static_cast<int>(static_cast<__int128>(s.gpu_part) * 1000 / price) : 0;
  const std::string od_text = fmt::format(
      "on-demand {} = cpu {} vCPU x {} + ram {} GiB x {} ({}) + gpu {}{}",
      DecimalFromNanos(type.hourly_nanos), type.vcpu,
      DecimalFromNanos(HostCost(1, rates.per_vcpu_num, rates.denominator)), type.memory_gib,
      DecimalFromNanos(HostCost(1, rates.per_gib_num, rates.denominator)), rates.name,
      DecimalFromNanos(od.gpu),
      od.floored ? fmt::format(" (floored at {}%)", kMinGpuSharePermille / 10) : "");
  s.method =
      fmt::format("split of {}: gpu {} ({}.{}%) = {} x {}, cpu {}, ram {}; weights from {}",
                  DecimalFromNanos(price), DecimalFromNanos(s.gpu_part), s.gpu_share_permille / 10,
                  s.gpu_share_permille % 10, type.gpu_count, DecimalFromNanos(s.per_gpu),
                  DecimalFromNanos(s.cpu_part), DecimalFromNanos(s.ram_part), od_text);
  return s;
}

std::vector<HostRates> DefaultHostRates() {
  std::vector<HostRates> out;
  out.reserve(std::size(kRateSources));
  for (const auto& s : kRateSources) out.push_back(FromSource(s));
  return out;
}

std::vector<InstanceType> DefaultInstanceTypes() {
  std::vector<InstanceType> out;
  for (const auto& r : kTypes) {
    const std::optional<Nanos> spot = r.spot > 0 ? std::optional(r.spot) : std::nullopt;
    out.push_back({.name = r.name,
                   .provider = r.provider,
                   .gpu_model = r.gpu_model,
                   .gpu_count = r.gpus,
                   .hourly_nanos = r.hourly,
                   .spot_hourly_nanos = spot,
                   .vcpu = r.vcpu,
                   .memory_gib = r.gib,
                   .region = r.region,
                   .host_rates = r.rates,
                   .source = fmt::format(
                       "{} {} on-demand {}{}, {}; vCPU/memory from the provider's "
                       "published instance specifications",
                       r.provider, r.region, DecimalFromNanos(r.hourly),
                       spot ? fmt::format(" spot {}", DecimalFromNanos(*spot)) : "", r.list)});
  }
  return out;
}

}  // namespace gpuledger::cost
