#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "cost/catalog.h"

namespace gpuledger::cost {
namespace {

constexpr const char* kExample = R"(# prices.yaml
currency: USD
default_class: on-demand
prices:
  - gpu_model: H100-80GB
    class: on-demand
    region: us-east-1
    hourly: 6.88
    source: "aws p5.48xlarge 55.04/8, 2026-07-20"
  - gpu_model: NVIDIA L4
    class: on-prem
    hourly: 0.35
  - gpu_model: T4
    class: on-demand
    hourly: 0.5
)";

TEST(ParseCatalogYaml, ExampleOnTopOfTheDefaults) {
  Catalog base = DefaultCatalog();
  auto c = ParseCatalogYaml(kExample, "prices.yaml", base);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->Find("H100-80GB", "on-demand", "us-east-1")->hourly_nanos, 6'880'000'000);
  EXPECT_EQ(c->Find("H100-80GB", "on-demand", "us-east-1")->source,
            "aws p5.48xlarge 55.04/8, 2026-07-20");
  EXPECT_EQ(c->Find("L4", "on-prem")->hourly_nanos, 350'000'000);    // replaced, normalised name
  EXPECT_EQ(c->Find("T4", "on-demand")->hourly_nanos, 500'000'000);  // replaced
  EXPECT_EQ(c->Find("T4", "on-demand")->source, "");
  // Entries the file does not name are kept; a region entry is added beside the any-region one.
  EXPECT_EQ(c->Find("H100-80GB", "on-demand")->hourly_nanos, 6'880'000'000);
  EXPECT_EQ(c->Find("A10G", "on-demand")->hourly_nanos, 2'036'000'000);
  EXPECT_EQ(c->entries.size(), base.entries.size() + 1);
}

TEST(ParseCatalogYaml, EmptyDocumentKeepsTheBase) {
  auto c = ParseCatalogYaml("", "empty.yaml", DefaultCatalog());
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->entries.size(), DefaultCatalog().entries.size());
  auto d = ParseCatalogYaml("currency: EUR\ndefault_class: reserved\nprices:\n", "eur.yaml", {});
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->currency, "EUR");
  EXPECT_EQ(d->default_class, "reserved");
}

std::string ErrorOf(const std::string& text, const Catalog& base = {}) {
  auto c = ParseCatalogYaml(text, "prices.yaml", base);
  if (c) return "parsed";
  EXPECT_EQ(c.error().code, ErrorCode::kInvalidArgument);
  return c.error().message;
}

TEST(ParseCatalogYaml, ErrorsNameFileLineAndField) {
  EXPECT_EQ(ErrorOf("prices:\n  - gpu_model: T4\n    class: on-demand\n    hourly: cheap\n"),
            "prices.yaml:4: field 'hourly': expected a non-negative decimal number with at most 9 "
            "decimals, like 6.88; got 'cheap'");
  EXPECT_EQ(ErrorOf("prices:\n  - gpu_model: T4\n    class: on-demand\n    hourly: 0.1234567891\n"),
            "prices.yaml:4: field 'hourly': expected a non-negative decimal number with at most 9 "
            "decimals, like 6.88; got '0.1234567891'");
  // Issue 29: a price at the int64 range was accepted and wrapped the report's sums.
  EXPECT_EQ(ErrorOf("prices:\n  - gpu_model: T4\n    class: on-demand\n"
                    "    hourly: 9223372036.854775807\n"),
            "prices.yaml:4: field 'hourly': expected at most 1000000; got '9223372036.854775807'");
  EXPECT_TRUE(ParseCatalogYaml("prices:\n  - {gpu_model: T4, class: on-demand, hourly: 1000000}\n",
                               "prices.yaml", DefaultCatalog())
                  .ok());
  EXPECT_EQ(ErrorOf("currency: USD\nprice: []\n"),
            "prices.yaml:2: field 'price': unknown key; expected currency, default_class, prices, "
            "host_rates, instance_types, overrides or on_prem");
  EXPECT_EQ(ErrorOf("prices:\n  - gpu_model: T4\n    class: on-demand\n    hourly: 1\n"
                    "    zone: a\n"),
            "prices.yaml:5: field 'zone': unknown key; expected gpu_model, class, region, hourly "
            "or source");
  EXPECT_EQ(ErrorOf("prices:\n  - gpu_model: T4\n    class: on-demand\n"),
            "prices.yaml:2: field 'hourly': expected a number (missing)");
  EXPECT_EQ(ErrorOf("prices:\n  - gpu_model: T4\n    class: On Demand\n    hourly: 1\n"),
            "prices.yaml:3: field 'class': expected a pricing class like on-demand (lowercase, "
            "digits, '-')");
  EXPECT_EQ(ErrorOf("prices:\n  - gpu_model: T4\n    class: spot\n    hourly: -1\n"),
            "prices.yaml:4: field 'hourly': expected a non-negative decimal number with at most 9 "
            "decimals, like 6.88; got '-1'");
  EXPECT_EQ(ErrorOf("prices:\n  - gpu_model: [T4]\n    class: spot\n    hourly: 1\n"),
            "prices.yaml:2: field 'gpu_model': expected a GPU model name like H100-80GB");
  EXPECT_EQ(ErrorOf("prices: {gpu_model: T4}\n"),
            "prices.yaml:1: field 'prices': expected a list of prices");
  EXPECT_EQ(ErrorOf("prices:\n  - gpu_model: T4\n    class: spot\n    hourly: 1\n"
                    "  - gpu_model: Tesla T4\n    class: spot\n    hourly: 2\n"),
            "prices.yaml:5: field 'gpu_model': duplicate price for T4/spot/any region (first at "
            "line 2)");
  EXPECT_EQ(ErrorOf("currency: EUR\n", DefaultCatalog()),
            "prices.yaml:1: field 'currency': expected USD (the base catalog's currency; one "
            "catalog holds one currency)");
  EXPECT_EQ(ErrorOf("currency: dollars\n"),
            "prices.yaml:1: field 'currency': expected a 3-letter currency code like USD");
  EXPECT_EQ(ErrorOf("- a\n- b\n"),
            "prices.yaml:1: field '(document)': expected a mapping with keys currency, "
            "default_class, prices");
}

TEST(ParseCatalogYaml, InvalidYamlNamesTheLine) {
  std::string e = ErrorOf("currency: USD\nprices:\n  - gpu_model: T4\n   class: [on-demand\n");
  EXPECT_EQ(e.rfind("prices.yaml:", 0), 0u) << e;
  EXPECT_NE(e.find("invalid YAML"), std::string::npos) << e;
  e = ErrorOf("a: 1\n\tb: 2\n");
  EXPECT_EQ(e.rfind("prices.yaml:2:", 0), 0u) << e;
}

TEST(LoadCatalogFile, ReadsAFileAndReportsAMissingOne) {
  std::string path =
      ::testing::TempDir() + "/gpuledger_catalog_" + std::to_string(::getpid()) + ".yaml";
  {
    std::ofstream out(path);
    out << kExample;
  }
  auto c = LoadCatalogFile(path, Catalog{});
  std::remove(path.c_str());
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->entries.size(), 3u);
  auto missing = LoadCatalogFile(path, Catalog{});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kIo);
  EXPECT_NE(missing.error().message.find(path), std::string::npos);
}

constexpr const char* kSections = R"(# node pricing
host_rates:
  - {name: dc-epyc, per_vcpu: 0.02, per_gib: 0.002, source: "our colo quote 2026"}
instance_types:
  - name: x8.large
    provider: mycloud
    gpu_model: NVIDIA H100 80GB HBM3
    gpu_count: 8
    vcpu: 100
    memory_gib: 1000
    hourly: 40
    spot_hourly: 20
    host_rates: dc-epyc
    source: "mycloud list 2026-09"
  - {name: p5.48xlarge, provider: aws, gpu_model: H100-80GB, gpu_count: 8, vcpu: 192,
     memory_gib: 2048, hourly: 50, region: eu-west-1, host_rates: aws-amd-gen3}
overrides:
  - {node: gpu-7, class: reserved, hourly_per_gpu: 2.5, source: "3-year deal"}
  - selector: {pool: training}
    class: reserved
on_prem:
  depreciation_years: 5
  purchase_price: {H100-80GB: 30000, "NVIDIA L4": 4380}
  electricity_per_kwh: 0.12
  pue: 1.4
)";

TEST(ParseCatalogYaml, InstanceTypesOverridesAndOnPrem) {
  Catalog base = DefaultCatalog();
  auto c = ParseCatalogYaml(kSections, "nodes.yaml", base);
  ASSERT_TRUE(c) << c.error().message;
  const InstanceType* x8 = c->FindInstanceType("x8.large", "anywhere");
  ASSERT_NE(x8, nullptr);
  EXPECT_EQ(x8->gpu_model, "H100-80GB");
  EXPECT_EQ(x8->hourly_nanos, 40'000'000'000);
  EXPECT_EQ(*x8->spot_hourly_nanos, 20'000'000'000);
  EXPECT_EQ(x8->source, "mycloud list 2026-09 (nodes.yaml:5)");
  // 40 = cpu 100 x 0.02 (2) + ram 1000 x 0.002 (2) + gpu 36 -> 4.5 per GPU.
  const HostRates* dc = c->FindHostRates("dc-epyc");
  ASSERT_NE(dc, nullptr);
  InstanceSplit s = SplitInstancePrice(*x8, *dc, x8->hourly_nanos);
  EXPECT_EQ(s.per_gpu, 4'500'000'000);
  EXPECT_EQ(s.cpu_part, 2'000'000'000);
  EXPECT_EQ(s.ram_part, 2'000'000'000);
  // A region row is added beside the built-in us-east-1 row, which stays.
  EXPECT_EQ(c->FindInstanceType("p5.48xlarge", "eu-west-1")->hourly_nanos, 50'000'000'000);
  EXPECT_EQ(c->FindInstanceType("p5.48xlarge", "us-east-1")->hourly_nanos, 55'040'000'000);
  EXPECT_EQ(c->instance_types.size(), base.instance_types.size() + 2);
  ASSERT_EQ(c->overrides.size(), 2u);
  EXPECT_EQ(c->overrides[0].node, "gpu-7");
  EXPECT_EQ(*c->overrides[0].hourly_per_gpu_nanos, 2'500'000'000);
  EXPECT_EQ(c->overrides[0].where, "nodes.yaml:18");
  EXPECT_EQ(c->overrides[1].selector, (std::map<std::string, std::string>{{"pool", "training"}}));
  EXPECT_EQ(c->overrides[1].pricing_class, "reserved");
  ASSERT_TRUE(c->on_prem);
  EXPECT_EQ(c->on_prem->depreciation_hours, 5 * 8760);
  EXPECT_EQ(c->on_prem->purchase_price_nanos.at("L4"), 4'380'000'000'000);
  EXPECT_EQ(c->on_prem->electricity_per_kwh_nanos, 120'000'000);
  EXPECT_EQ(c->on_prem->pue_permille, 1400);
}

TEST(ParseCatalogYaml, NodeSectionErrorsNameFileLineAndField) {
  struct Case {
    const char* text;
    const char* want;
  };
  const Case cases[] = {
      {"instance_types:\n  - {name: a, gpu_model: T4, gpu_count: 0, vcpu: 4, memory_gib: 16, "
       "hourly: 1, provider: aws}\n",
       "n.yaml:2: field 'gpu_count': expected a whole number >= 1; got '0'"},
      {"instance_types:\n  - name: a\n    gpu_model: T4\n    gpu_count: 1\n    vcpu: 4\n"
       "    memory_gib: 16\n    hourly: cheap\n",
       "n.yaml:7: field 'hourly': expected a non-negative decimal number"},
      {"instance_types:\n  - {name: a, gpu_model: T4, gpu_count: 1, vcpu: 4, memory_gib: 16, "
       "hourly: 1}\n",
       "n.yaml:2: field 'host_rates': expected host rates to split the price by"},
      {"instance_types:\n  - {name: a, gpu_model: T4, gpu_count: 1, vcpu: 4, memory_gib: 16,\n"
       "     hourly: 1, host_rates: nope}\n",
       "n.yaml:3: field 'host_rates': unknown host rates 'nope'; expected one of: aws-intel-gen5"},
      {"instance_types:\n  - {name: a, gpu_model: T4, gpu_count: 1, vcpu: 4, hourly: 1, "
       "provider: gcp}\n",
       "n.yaml:2: field 'memory_gib': expected a whole number (missing)"},
      {"instance_types:\n  - {name: a, gpu_model: T4, gpu_count: 1, vcpu: 4, memory_gib: 1, "
       "hourly: 1, provider: gcp}\n  - {name: a, gpu_model: T4, gpu_count: 1, vcpu: 4, "
       "memory_gib: 1, hourly: 1, provider: gcp}\n",
       "n.yaml:3: field 'name': duplicate instance type a/any region (first at line 2)"},
      {"overrides:\n  - {class: reserved}\n",
       "n.yaml:2: field 'node': expected exactly one of node and selector"},
      {"overrides:\n  - {node: a, selector: {x: y}, class: reserved}\n",
       "n.yaml:2: field 'node': expected exactly one of node and selector"},
      {"overrides:\n  - node: a\n    hourly_per_gpu: 1\n    instance_hourly: 8\n",
       "n.yaml:2: field 'instance_hourly': expected at most one of"},
      {"overrides:\n  - node: a\n    class: Reserved\n",
       "n.yaml:3: field 'class': expected a pricing class like reserved"},
      {"overrides:\n  - node: a\n    colour: blue\n",
       "n.yaml:3: field 'colour': unknown key; expected node, selector"},
      {"on_prem:\n  depreciation_years: 4\n  purchase_price: {H100: 30000}\n"
       "  electricity_per_kwh: 0.1\n  pue: 0.9\n",
       "n.yaml:5: field 'pue': expected a facility overhead factor in [1, 10]"},
      {"on_prem:\n  depreciation_years: 4\n  purchase_price: {H100: lots}\n"
       "  electricity_per_kwh: 0.1\n",
       "n.yaml:3: field 'purchase_price.H100': expected a non-negative decimal number"},
      {"on_prem:\n  depreciation_years: 4\n  purchase_price: {H100: 1}\n",
       "n.yaml:2: field 'electricity_per_kwh': expected a price per kWh (missing)"},
      {"host_rates:\n  - {name: x, per_vcpu: 0.1}\n",
       "n.yaml:2: field 'per_gib': expected a price per GiB-hour (missing)"},
      {"nodes: []\n",
       "n.yaml:1: field 'nodes': unknown key; expected currency, default_class, "
       "prices, host_rates, instance_types, overrides or on_prem"},
  };
  for (const auto& tc : cases) {
    auto c = ParseCatalogYaml(tc.text, "n.yaml", DefaultCatalog());
    ASSERT_FALSE(c) << tc.text;
    EXPECT_EQ(c.error().message.rfind(tc.want, 0), 0u)
        << "got:  " << c.error().message << "\nwant: " << tc.want;
  }
}

}  // namespace
}  // namespace gpuledger::cost
