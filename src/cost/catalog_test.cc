#include "cost/catalog.h"
#include "common/money.h"
#include "test_paths.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace gpuledger::cost {
namespace {

TEST(NormalizeGpuModel, NvmlAndCommonSpellings) {
  const std::map<std::string, std::string> cases = {
      {"NVIDIA H100 80GB HBM3", "H100-80GB"},
      {"H100-SXM5-80GB", "H100-80GB"},
      {"H100", "H100-80GB"},
      {"NVIDIA-H100-80GB-HBM3", "H100-80GB"},  // GPU feature discovery label
      {"nvidia-h100-80gb", "H100-80GB"},       // GKE accelerator label
      {"NVIDIA H200", "H200-141GB"},
      {"H200 141GB", "H200-141GB"},
      {"NVIDIA A100-SXM4-80GB", "A100-80GB"},
      {"NVIDIA A100 80GB PCIe", "A100-80GB"},
      {"NVIDIA A100-SXM4-40GB", "A100-40GB"},
      {"A100-PCIE-40GB", "A100-40GB"},
      {"NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "A100-40GB"},  // MIG: priced as the parent
      {"nvidia-tesla-a100", "A100-40GB"},
      {"Tesla T4", "T4"},
      {"Tesla-T4-SHARED", "T4"},  // time-slicing renamed product
      {"NVIDIA L4", "L4"},
      {"NVIDIA A10G", "A10G"},
      {"NVIDIA A10", "A10"},
      {"NVIDIA L40S", "L40S"},
      {"Tesla V100-SXM2-16GB", "V100-16GB"},
      {"V100M16", "V100-16GB"},
      {"V100M32", "V100-32GB"},
      {"Tesla V100-SXM2-32GB", "V100-32GB"},
      {"Tesla P100-PCIE-16GB", "P100"},
      {"P100", "P100"},
      {"  NVIDIA GeForce RTX 4090 ", "NVIDIA GeForce RTX 4090"},  // unknown: trimmed
      {"G1", "G1"},
      {"", ""},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(NormalizeGpuModel(in), want) << in;
}

TEST(NormalizeGpuModel, CatalogNamesAreFixedPoints) {
  for (const auto& e : DefaultCatalog().entries) {
    EXPECT_EQ(NormalizeGpuModel(e.gpu_model), e.gpu_model);
  }
}

Catalog Small() {
  Catalog c;
  c.entries = {
      {"H100-80GB", "on-demand", "", 6'880'000'000, "any"},
      {"H100-80GB", "on-demand", "eu-west-1", 7'000'000'000, "eu"},
      {"H100-80GB", "spot", "us-central1", 6'326'192'603, "gcp"},
      {"T4", "on-demand", "", 978'000'000, "t4"},
  };
  return c;
}

TEST(CatalogFind, MostSpecificRegionFirstThenAnyRegion) {
  Catalog c = Small();
  EXPECT_EQ(c.Find("H100-80GB", "on-demand", "eu-west-1")->hourly_nanos, 7'000'000'000);
  EXPECT_EQ(c.Find("H100-80GB", "on-demand", "us-east-1")->hourly_nanos, 6'880'000'000);
  EXPECT_EQ(c.Find("H100-80GB", "on-demand")->hourly_nanos, 6'880'000'000);
  EXPECT_EQ(c.Find("NVIDIA H100 80GB HBM3", "on-demand")->source, "any");  // normalised
  EXPECT_EQ(c.Find("Tesla T4", "")->hourly_nanos, 978'000'000);  // empty class: default_class
}

TEST(CatalogFind, NoFallbackAcrossClassesOrToOtherRegions) {
  Catalog c = Small();
  auto spot = c.Find("T4", "spot");
  ASSERT_FALSE(spot);
  EXPECT_EQ(spot.error().code, ErrorCode::kNotFound);
  EXPECT_NE(spot.error().message.find("'spot'"), std::string::npos) << spot.error().message;
  // A region-specific entry does not serve other regions, nor a region-less query.
  EXPECT_FALSE(c.Find("H100-80GB", "spot", "us-east-1"));
  EXPECT_FALSE(c.Find("H100-80GB", "spot"));
  EXPECT_TRUE(c.Find("H100-80GB", "spot", "us-central1"));
  EXPECT_FALSE(c.Find("G1", "on-demand"));
}

TEST(DefaultCatalog, OnDemandPricesPerGpuHour) {
  // Instance price / GPU count, by hand.
  const std::map<std::string, Nanos> want = {
      {"H100-80GB", 6'880'000'000},   // 55.04 / 8
      {"H200-141GB", 7'912'000'000},  // 63.296 / 8
      {"A100-80GB", 3'430'881'250},   // 27.44705 / 8
      {"A100-40GB", 2'744'705'250},   // 21.957642 / 8
      {"L40S", 3'766'397'500},        // 30.13118 / 8
      {"L4", 1'668'800'000},          // 13.3504 / 8
      {"A10G", 2'036'000'000},        // 16.288 / 8
      {"T4", 978'000'000},            // 7.824 / 8
      {"V100-16GB", 3'060'000'000},   // 24.48 / 8
      {"V100-32GB", 3'901'500'000},   // 31.212 / 8
      {"A10", 3'260'000'000},         // 6.52 / 2
      {"P100", 1'530'000'000},        // estimate: 3.06 / 2
  };
  Catalog c = DefaultCatalog();
  EXPECT_EQ(c.currency, "USD");
  EXPECT_EQ(c.default_class, "on-demand");
  for (const auto& [model, nanos] : want) {
    auto e = c.Find(model, "on-demand");
    ASSERT_TRUE(e) << e.error().message;
    EXPECT_EQ(e->hourly_nanos, nanos) << model;
  }
  EXPECT_EQ(c.Find("P100", "on-demand")->source.rfind("estimate", 0), 0u);
  EXPECT_EQ(c.Find("H100-80GB", "on-demand")->source,
            "aws p5.48xlarge us-east-1 on-demand 55.04/8, karpenter-provider-aws price list "
            "2026-07-20");
}

TEST(DefaultCatalog, SpotReservedAndOnPrem) {
  Catalog c = DefaultCatalog();
  // GCP us-central1 spot, 8-GPU machines / 8.
  EXPECT_EQ(c.Find("H100-80GB", "spot")->hourly_nanos, 6'326'192'603);  // 50.6095408219178/8
  EXPECT_EQ(c.Find("A100-80GB", "spot")->hourly_nanos, 2'759'546'301);  // 22.0763704109589/8
  EXPECT_EQ(c.Find("A100-40GB", "spot")->hourly_nanos, 1'928'020'000);  // 15.42416/8
  EXPECT_EQ(c.Find("L4", "spot")->hourly_nanos, 562'408'000);           // 4.499264/8
  EXPECT_FALSE(c.Find("T4", "spot"));  // no spot data: an error, not on-demand
  // Reserved = on-demand x 0.65, half up.
  EXPECT_EQ(c.Find("H100-80GB", "reserved")->hourly_nanos, 4'472'000'000);
  EXPECT_EQ(c.Find("A100-80GB", "reserved")->hourly_nanos, 2'230'072'813);  // .5 rounds up
  EXPECT_NE(c.Find("H100-80GB", "reserved")->source.find("0.65"), std::string::npos);
  // On-prem: 35,000 / 35,040 h = 0.998858447 + 700 W x 1.5 x 0.10 / 1000 = 0.105.
  EXPECT_EQ(c.Find("H100-80GB", "on-prem")->hourly_nanos, 1'103'858'447);
  EXPECT_EQ(c.Find("T4", "on-prem")->hourly_nanos, 81'847'032);  // 71'347'032 + 10'500'000
  EXPECT_FALSE(c.Find("A10G", "on-prem"));                       // an AWS-only part
}

TEST(DefaultCatalog, CoverageAndCitations) {
  Catalog c = DefaultCatalog();
  for (const char* model : {"H100-80GB", "H200-141GB", "A100-80GB", "A100-40GB", "L4", "T4", "A10G",
                            "A10", "L40S", "V100-16GB", "V100-32GB", "P100"}) {
    for (const char* cls : {"on-demand", "reserved"}) {
      EXPECT_TRUE(c.Find(model, cls)) << model << " " << cls;
    }
  }
  std::set<std::tuple<std::string, std::string, std::string>> keys;
  for (const auto& e : c.entries) {
    EXPECT_TRUE(keys.emplace(e.gpu_model, e.pricing_class, e.region).second) << e.gpu_model;
    EXPECT_GT(e.hourly_nanos, 0) << e.gpu_model;
    EXPECT_FALSE(e.source.empty()) << e.gpu_model;
    EXPECT_TRUE(e.source.find("20") != std::string::npos) << "no date: " << e.source;
    EXPECT_TRUE(e.gpu_model != "G1" && e.gpu_model != "G2" && e.gpu_model != "G3");
  }
}

// Checks the cited instance prices against the price lists in ../shared/data when present.
std::map<std::string, std::string> ReadPrices(const std::string& path, const std::string& region) {
  std::map<std::string, std::string> out;  // instance -> price text
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // the files have CRLF endings
    std::stringstream ss(line);
    std::string r, instance, price;
    std::getline(ss, r, ',');
    std::getline(ss, instance, ',');
    std::getline(ss, price, ',');
    if (r == region) out[instance] = price;
  }
  return out;
}

TEST(DefaultCatalog, OnDemandMatchesThePublicPriceLists) {
  const std::string dir = std::string(gpuledger::test_paths::kSharedData) + "/pricing/";
  auto aws = ReadPrices(dir + "aws_ec2_ondemand_us-east-1_karpenter.csv", "us-east-1");
  auto azure = ReadPrices(dir + "azure_vm_ondemand_gpu_skus_all_regions_karpenter.csv", "eastus");
  if (aws.empty() || azure.empty()) GTEST_SKIP() << "no price data under " << dir;
  int checked = 0;
  for (const auto& e : DefaultCatalog().entries) {
    if (e.pricing_class != "on-demand" || e.source.rfind("estimate", 0) == 0) continue;
    // "<provider> <instance> <region> on-demand <price>/<gpus>, ..."
    std::stringstream ss(e.source);
    std::string provider, instance, region, word, fraction;
    ss >> provider >> instance >> region >> word >> fraction;
    auto slash = fraction.find('/');
    ASSERT_NE(slash, std::string::npos) << e.source;
    int gpus = std::stoi(fraction.substr(slash + 1));
    const auto& list = provider == "aws" ? aws : azure;
    auto it = list.find(instance);
    ASSERT_NE(it, list.end()) << e.source;
    auto listed = NanosFromDecimal(it->second);
    ASSERT_TRUE(listed) << it->second;
    auto cited = NanosFromDecimal(fraction.substr(0, slash));
    ASSERT_TRUE(cited);
    EXPECT_EQ(*listed, *cited) << e.source;
    EXPECT_EQ((2 * *listed + gpus) / (2 * gpus), e.hourly_nanos) << e.source;
    ++checked;
  }
  EXPECT_EQ(checked, 11);
}

}  // namespace
}  // namespace gpuledger::cost
