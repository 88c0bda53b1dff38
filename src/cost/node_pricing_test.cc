#include "cost/node_pricing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "cost/policy.h"
#include "test_paths.h"

namespace gpuledger::cost {
namespace {

using ::testing::HasSubstr;

NodeInfo Node(std::string name, std::map<std::string, std::string> labels) {
  NodeInfo n;
  n.name = std::move(name);
  n.labels = std::move(labels);
  return n;
}

// Host rates, by hand from the cited xlarge prices (4 vCPU each):
//   aws-amd-gen3:   c6a 0.153 (8 GiB), r6a 0.2268 (32 GiB): ram = 0.0738/24 = 0.003075 /GiB-h,
//                   cpu = (0.153 - 8 x 0.003075)/4 = 0.0321 /vCPU-h.
//   aws-intel-gen5: c5 0.17, r5 0.252: ram = 0.082/24 = 0.00341666.. , cpu = 0.03566666..
TEST(HostRates, DerivedFromTheCitedGeneralPurposePrices) {
  Catalog c = DefaultCatalog();
  const HostRates* amd = c.FindHostRates("aws-amd-gen3");
  ASSERT_NE(amd, nullptr);
  EXPECT_EQ(HostCost(1, amd->per_vcpu_num, amd->denominator), 32'100'000);
  EXPECT_EQ(HostCost(1, amd->per_gib_num, amd->denominator), 3'075'000);
  const HostRates* intel = c.FindHostRates("aws-intel-gen5");
  ASSERT_NE(intel, nullptr);
  EXPECT_EQ(HostCost(3, intel->per_vcpu_num, intel->denominator), 107'000'000);  // 3 x 0.0356..
  EXPECT_EQ(HostCost(3, intel->per_gib_num, intel->denominator), 10'250'000);    // 3 x 0.0034..
  const HostRates* n2 = c.FindHostRates("gcp-n2");  // GCP's own published a2/n2 rates
  ASSERT_NE(n2, nullptr);
  EXPECT_EQ(HostCost(1, n2->per_vcpu_num, n2->denominator), 31'611'000);
  EXPECT_EQ(HostCost(1, n2->per_gib_num, n2->denominator), 4'237'000);
}

// p5.48xlarge (8 x H100, 192 vCPU, 2048 GiB, $55.04, AMD host):
//   cpu = 192 x 0.0321 = 6.1632; ram = 2048 x 0.003075 = 6.2976;
//   gpu = 55.04 - 12.4608 = 42.5792 (77.36%) -> 5.3224 per H100.
// g4dn.12xlarge (4 x T4, 48 vCPU, 192 GiB, $3.912, Intel host):
//   cpu = 48 x 0.0356666.. = 1.712; ram = 192 x 0.0034166.. = 0.656;
//   gpu = 3.912 - 2.368 = 1.544 (39.47%) -> 0.386 per T4.
// One fixed GPU:CPU:RAM ratio would give both the same kind of share; here the H100 node's GPUs
// are 77% of its price and the T4 node's 39%.
TEST(ResolveNodePrice, BundledPriceSplitFollowsTheGpuModel) {
  Catalog c = DefaultCatalog();
  NodePrice h100 =
      ResolveNodePrice(c, Node("h", {{"node.kubernetes.io/instance-type", "p5.48xlarge"},
                                     {"karpenter.sh/capacity-type", "on-demand"}}));
  ASSERT_TRUE(h100.priced) << h100.method;
  EXPECT_EQ(h100.gpu_model, "H100-80GB");
  EXPECT_EQ(h100.pricing_class, "on-demand");
  EXPECT_EQ(h100.gpu_count, 8);
  EXPECT_EQ(h100.gpu_hourly_nanos, 5'322'400'000);
  EXPECT_EQ(h100.cpu_hourly_nanos, 6'163'200'000);
  EXPECT_EQ(h100.ram_hourly_nanos, 6'297'600'000);
  EXPECT_EQ(8 * h100.gpu_hourly_nanos + h100.cpu_hourly_nanos + h100.ram_hourly_nanos,
            55'040'000'000);  // the node total, to the nano
  EXPECT_THAT(h100.method, HasSubstr("node.kubernetes.io/instance-type"));
  EXPECT_THAT(h100.method, HasSubstr("(77.3%)"));
  EXPECT_THAT(h100.method, HasSubstr("aws-amd-gen3"));

  NodePrice t4 =
      ResolveNodePrice(c, Node("t", {{"node.kubernetes.io/instance-type", "g4dn.12xlarge"}}));
  ASSERT_TRUE(t4.priced) << t4.method;
  EXPECT_EQ(t4.gpu_model, "T4");
  EXPECT_EQ(t4.gpu_count, 4);
  EXPECT_EQ(t4.gpu_hourly_nanos, 386'000'000);
  EXPECT_EQ(t4.cpu_hourly_nanos, 1'712'000'000);
  EXPECT_EQ(t4.ram_hourly_nanos, 656'000'000);
  EXPECT_EQ(4 * t4.gpu_hourly_nanos + t4.cpu_hourly_nanos + t4.ram_hourly_nanos, 3'912'000'000);
  EXPECT_THAT(t4.method, HasSubstr("(39.4%)"));
}

TEST(SplitInstancePrice, EveryBuiltInTypeConservesItsPriceAndKeepsTheFloor) {
  Catalog c = DefaultCatalog();
  for (const InstanceType& t : c.instance_types) {
    const HostRates* r = c.FindHostRates(t.host_rates);
    ASSERT_NE(r, nullptr) << t.name;
    for (Nanos price : {t.hourly_nanos, t.spot_hourly_nanos.value_or(1), Nanos{0}, Nanos{7}}) {
      InstanceSplit s = SplitInstancePrice(t, *r, price);
      EXPECT_EQ(s.gpu_part + s.cpu_part + s.ram_part, price) << t.name;
      EXPECT_EQ(s.gpu_part, s.per_gpu * t.gpu_count) << t.name;
      EXPECT_GE(s.cpu_part, 0) << t.name;
      EXPECT_GE(s.ram_part, 0) << t.name;
    }
    InstanceSplit od = SplitInstancePrice(t, *r, t.hourly_nanos);
    EXPECT_GE(od.gpu_share_permille, kMinGpuSharePermille - 1) << t.name;
  }
}

// GCP a3-highgpu-8g (8 x H100, 208 vCPU, 1872 GiB, c3 rates 0.03465/vCPU-h, 0.003938/GiB-h):
//   on-demand 88.489999903: cpu 7.2072, ram 7.371936, gpu 73.910863903 -> 9.238857987 per GPU
//   (the 7-nano remainder of /8 goes to the CPU part);
//   spot 50.609540822 split by the same weights: gpu 42.271385332 -> 5.283923166 per GPU
//   (42.271385332 = 50.609540822 x 73.910863903 / 88.489999903, largest remainder).
TEST(ResolveNodePrice, SpotAndOnDemandOnTheSameGpuModel) {
  Catalog c = DefaultCatalog();
  NodePrice od =
      ResolveNodePrice(c, Node("a", {{"node.kubernetes.io/instance-type", "a3-highgpu-8g"}}));
  NodePrice spot =
      ResolveNodePrice(c, Node("b", {{"node.kubernetes.io/instance-type", "a3-highgpu-8g"},
                                     {"cloud.google.com/gke-spot", "true"}}));
  ASSERT_TRUE(od.priced && spot.priced) << od.method << "\n" << spot.method;
  EXPECT_EQ(od.gpu_model, spot.gpu_model);
  EXPECT_EQ(od.pricing_class, "on-demand");
  EXPECT_EQ(spot.pricing_class, "spot");
  EXPECT_EQ(od.gpu_hourly_nanos, 9'238'857'987);
  EXPECT_EQ(od.cpu_hourly_nanos, 7'207'200'007);
  EXPECT_EQ(spot.gpu_hourly_nanos, 5'283'923'166);
  EXPECT_EQ(8 * spot.gpu_hourly_nanos + spot.cpu_hourly_nanos + spot.ram_hourly_nanos,
            50'609'540'822);
  EXPECT_THAT(spot.method, HasSubstr("cloud.google.com/gke-spot=true"));

  // Known only by its GPU model: the catalog's per-GPU prices, spot below on-demand.
  NodeInfo l4 =
      Node("l4", {{"nvidia.com/gpu.product", "NVIDIA-L4"}, {"karpenter.sh/capacity-type", "spot"}});
  NodePrice l4_spot = ResolveNodePrice(c, l4);
  l4.labels["karpenter.sh/capacity-type"] = "on-demand";
  NodePrice l4_od = ResolveNodePrice(c, l4);
  EXPECT_EQ(l4_spot.gpu_hourly_nanos, 562'408'000);  // gcp g2-standard-96 spot 4.499264 / 8
  EXPECT_EQ(l4_od.gpu_hourly_nanos, 1'668'800'000);  // aws g6.48xlarge 13.3504 / 8
}

// Reserved = on-demand x 65%, split by the same weights: p5.48xlarge 55.04 x 0.65 = 35.776;
// gpu 42.5792 x 0.65 = 27.67648 -> 3.45956 per H100, cpu 4.00608, ram 4.09344.
TEST(ResolveNodePrice, ReservedByLabelAndByOverrideSelector) {
  Catalog c = DefaultCatalog();
  NodePrice by_label =
      ResolveNodePrice(c, Node("h", {{"node.kubernetes.io/instance-type", "p5.48xlarge"},
                                     {"karpenter.sh/capacity-type", "reserved"}}));
  EXPECT_EQ(by_label.pricing_class, "reserved");
  EXPECT_EQ(by_label.gpu_hourly_nanos, 3'459'560'000);
  EXPECT_EQ(by_label.cpu_hourly_nanos, 4'006'080'000);
  EXPECT_EQ(by_label.ram_hourly_nanos, 4'093'440'000);

  NodeOverride o;
  o.selector = {{"pool", "training"}};
  o.pricing_class = "reserved";
  o.where = "prices.yaml:3";
  c.overrides.push_back(o);
  NodeInfo n = Node("h2", {{"node.kubernetes.io/instance-type", "p5.48xlarge"},
                           {"karpenter.sh/capacity-type", "on-demand"},
                           {"pool", "training"}});
  NodePrice by_override = ResolveNodePrice(c, n);
  EXPECT_EQ(by_override.pricing_class, "reserved");
  EXPECT_EQ(by_override.gpu_hourly_nanos, 3'459'560'000);
  EXPECT_THAT(by_override.method, HasSubstr("selector pool=training"));
  EXPECT_THAT(by_override.method, HasSubstr("prices.yaml:3"));

  // A selector that does not match leaves the label's class.
  n.labels["pool"] = "inference";
  EXPECT_EQ(ResolveNodePrice(c, n).pricing_class, "on-demand");

  // A node-name override wins over selectors and may set the price itself.
  NodeOverride named;
  named.node = "h2";
  named.pricing_class = "reserved";
  named.hourly_per_gpu_nanos = 2'500'000'000;
  named.source = "3-year commitment";
  c.overrides.push_back(named);
  NodePrice by_name = ResolveNodePrice(c, n);
  EXPECT_EQ(by_name.gpu_hourly_nanos, 2'500'000'000);
  EXPECT_THAT(by_name.method, HasSubstr("node h2"));
  EXPECT_THAT(by_name.method, HasSubstr("3-year commitment"));

  // instance_hourly: the node's own price, split by the instance row's weights.
  c.overrides.back().hourly_per_gpu_nanos.reset();
  c.overrides.back().instance_hourly_nanos = 27'520'000'000;  // half of on-demand
  NodePrice by_instance = ResolveNodePrice(c, n);
  EXPECT_EQ(by_instance.gpu_hourly_nanos, 2'661'200'000);  // 5.3224 / 2
  EXPECT_EQ(8 * by_instance.gpu_hourly_nanos + by_instance.cpu_hourly_nanos +
                by_instance.ram_hourly_nanos,
            27'520'000'000);
}

TEST(ResolveNodePrice, EveryCapacityLabelFlavour) {
  Catalog c = DefaultCatalog();
  struct Case {
    std::string key, value, want;
  };
  const std::vector<Case> cases = {
      {"karpenter.sh/capacity-type", "spot", "spot"},
      {"karpenter.sh/capacity-type", "on-demand", "on-demand"},
      {"karpenter.sh/capacity-type", "reserved", "reserved"},
      {"eks.amazonaws.com/capacityType", "SPOT", "spot"},
      {"eks.amazonaws.com/capacityType", "ON_DEMAND", "on-demand"},
      {"cloud.google.com/gke-spot", "true", "spot"},
      {"cloud.google.com/gke-preemptible", "true", "spot"},
      {"kubernetes.azure.com/scalesetpriority", "spot", "spot"},
      {"kubernetes.azure.com/scalesetpriority", "regular", "on-demand"},
      {"gpuledger.io/pricing-class", "reserved", "reserved"},
      {"gpuledger.io/pricing-class", "Spot", "spot"},
  };
  for (const auto& tc : cases) {
    NodeInfo n =
        Node("n", {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}, {tc.key, tc.value}});
    n.pricing_class_hint = "on-prem";  // labels win over the configured class
    NodePrice p = ResolveNodePrice(c, n);
    EXPECT_EQ(p.pricing_class, tc.want) << tc.key << "=" << tc.value;
    EXPECT_THAT(p.method, HasSubstr(tc.key + "=" + tc.value));
    EXPECT_TRUE(p.priced) << p.method;
  }
  // "false" says nothing: the configured class applies.
  NodeInfo n = Node("n", {{"cloud.google.com/gke-spot", "false"}});
  n.gpu_model_hint = "H100-80GB";
  n.pricing_class_hint = "reserved";
  EXPECT_EQ(ResolveNodePrice(c, n).pricing_class, "reserved");
  // Legacy labels for instance type and region.
  NodePrice legacy =
      ResolveNodePrice(c, Node("l", {{"beta.kubernetes.io/instance-type", "g4dn.12xlarge"},
                                     {"failure-domain.beta.kubernetes.io/region", "us-east-1"}}));
  EXPECT_EQ(legacy.gpu_hourly_nanos, 386'000'000);
  EXPECT_EQ(legacy.region, "us-east-1");
  EXPECT_THAT(legacy.method, HasSubstr("beta.kubernetes.io/instance-type"));
  // Azure and its region label.
  NodePrice aks = ResolveNodePrice(
      c, Node("z", {{"node.kubernetes.io/instance-type", "Standard_ND96isr_H100_v5"},
                    {"topology.kubernetes.io/region", "eastus"},
                    {"kubernetes.azure.com/scalesetpriority", "regular"}}));
  EXPECT_EQ(aks.gpu_model, "H100-80GB");
  EXPECT_EQ(aks.pricing_class, "on-demand");
  EXPECT_TRUE(aks.priced);
}

TEST(ResolveNodePrice, UnknownInstanceTypeFallsBackToGpuProductThenUnpriced) {
  Catalog c = DefaultCatalog();
  NodePrice p =
      ResolveNodePrice(c, Node("x", {{"node.kubernetes.io/instance-type", "x9.mega"},
                                     {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}}));
  ASSERT_TRUE(p.priced) << p.method;
  EXPECT_EQ(p.gpu_model, "A100-80GB");
  EXPECT_EQ(p.gpu_hourly_nanos, 3'430'881'250);  // catalog: aws p4de.24xlarge 27.44705 / 8
  EXPECT_EQ(p.cpu_hourly_nanos, 0);
  EXPECT_THAT(p.method, HasSubstr("x9.mega"));
  EXPECT_THAT(p.method, HasSubstr("not in the instance-type table"));
  EXPECT_THAT(p.method, HasSubstr("nvidia.com/gpu.product"));

  NodePrice none =
      ResolveNodePrice(c, Node("y", {{"node.kubernetes.io/instance-type", "x9.mega"}}));
  EXPECT_FALSE(none.priced);
  EXPECT_EQ(none.gpu_hourly_nanos, 0);
  EXPECT_THAT(none.method, HasSubstr("unpriced: no instance type"));

  NodePrice g1 = ResolveNodePrice(c, Node("z", {{"nvidia.com/gpu.product", "G1"}}));
  EXPECT_FALSE(g1.priced);
  EXPECT_THAT(g1.method, HasSubstr("no price for gpu model 'G1'"));

  // A spot node whose instance row has no spot price uses the catalog's per-GPU spot price, and
  // is unpriced where there is none (never silently on-demand).
  NodePrice t4_spot =
      ResolveNodePrice(c, Node("t", {{"node.kubernetes.io/instance-type", "g4dn.12xlarge"},
                                     {"karpenter.sh/capacity-type", "spot"}}));
  EXPECT_FALSE(t4_spot.priced);
  EXPECT_THAT(t4_spot.method, HasSubstr("instance row has no spot price"));
}

// On-prem: $35,040 per H100 over 4 years (35,040 h) = $1.00 per GPU-hour; electricity
// $0.10/kWh x PUE 1.5. In one hour A used 0.2 kWh (720,000,000 mJ), B 0.4 kWh, idle 0.1 kWh:
// electricity 0.7 x 1.5 x 0.10 = 0.105 -> A 0.03, B 0.06 (twice A's), idle 0.015.
// Allocation policy, A and B each hold half the hour: capex 0.50 each.
TEST(OnPrem, ElectricityFollowsMeasuredEnergyExactly) {
  Catalog c = DefaultCatalog();
  OnPremConfig op;
  op.depreciation_hours = 4 * 8760;
  op.purchase_price_nanos["H100-80GB"] = 35'040 * kNanosPerUnit;
  op.electricity_per_kwh_nanos = 100'000'000;
  op.pue_permille = 1500;
  c.on_prem = op;
  NodeInfo n = Node("rack-1", {});
  n.gpu_model_hint = "NVIDIA H100 80GB HBM3";
  n.pricing_class_hint = "on-prem";
  NodePrice p = ResolveNodePrice(c, n);
  ASSERT_TRUE(p.priced) << p.method;
  EXPECT_EQ(p.gpu_hourly_nanos, 1'000'000'000);
  EXPECT_THAT(p.method, HasSubstr("measured energy x PUE 1.500"));

  EXPECT_EQ(ElectricityPrice(720'000'000, p.electricity_per_kwh_nanos, p.pue_permille), 30'000'000);
  DeviceHour d;
  d.metered_us = kMicrosPerHour;
  d.energy_mj = 2'520'000'000;
  d.idle_energy_mj = 360'000'000;
  d.energy_price_nanos = ElectricityPrice(d.energy_mj, p.electricity_per_kwh_nanos, p.pue_permille);
  EXPECT_EQ(d.energy_price_nanos, 105'000'000);
  d.price_nanos = PriceForMetered(p.gpu_hourly_nanos, d.metered_us) + d.energy_price_nanos;
  std::vector<UsageRow> usage(2);
  usage[0].allocated_us = kMicrosPerHour / 2;
  usage[0].energy_mj = 720'000'000;
  usage[1].allocated_us = kMicrosPerHour / 2;
  usage[1].energy_mj = 1'440'000'000;
  auto cost = SplitDeviceHour(d, usage, Policy{}, IdleHandling{});
  EXPECT_EQ(cost.consumers[0], 500'000'000 + 30'000'000);
  EXPECT_EQ(cost.consumers[1], 500'000'000 + 60'000'000);
  EXPECT_EQ(cost.idle, 15'000'000);
  EXPECT_EQ(cost.unattributed, 0);
  EXPECT_EQ(cost.consumers[1] - 500'000'000, 2 * (cost.consumers[0] - 500'000'000));

  // Without an on_prem section, on-prem nodes use the catalog's per-GPU estimate, no metering.
  Catalog plain = DefaultCatalog();
  NodePrice est = ResolveNodePrice(plain, n);
  EXPECT_EQ(est.gpu_hourly_nanos, 998'858'447 + 105'000'000);
  EXPECT_EQ(est.electricity_per_kwh_nanos, 0);
}

// "5.06879789041096" -> 5'068'797'890: to nanos, half up (the table's rounding).
Nanos RoundToNanos(const std::string& text) {
  auto dot = text.find('.');
  std::string whole = text.substr(0, dot);
  std::string frac = dot == std::string::npos ? "" : text.substr(dot + 1);
  frac.resize(10, '0');
  Nanos n = std::stoll(whole) * kNanosPerUnit + std::stoll(frac.substr(0, 9));
  return frac[9] >= '5' ? n + 1 : n;
}

// Every built-in instance type with a row in the summary has its prices, GPU model and count.
TEST(DefaultInstanceTypes, MatchThePublicPriceSummary) {
  const std::string path =
      std::string(gpuledger::test_paths::kSharedData) + "/pricing/gpu_instance_price_summary.csv";
  std::ifstream in(path);
  if (!in) GTEST_SKIP() << "no price data at " << path;
  Catalog c = DefaultCatalog();
  std::string line;
  std::getline(in, line);  // header
  int checked = 0;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) f.push_back(cell);
    ASSERT_GE(f.size(), 9u) << line;
    // provider,region,instance_type,gpu_model,gpu_count,ondemand,per_gpu,spot,spot_per_gpu,...
    const InstanceType* t = c.FindInstanceType(f[2], f[1]);
    if (f[4].find('.') != std::string::npos) {  // a fractional GPU: deliberately not a row
      EXPECT_EQ(t, nullptr) << f[2];
      continue;
    }
    ASSERT_NE(t, nullptr) << f[2];
    EXPECT_EQ(t->provider, f[0]);
    EXPECT_EQ(t->region, f[1]);
    EXPECT_EQ(t->gpu_count, std::stoi(f[4])) << f[2];
    EXPECT_EQ(t->gpu_model, NormalizeGpuModel(f[3])) << f[2];
    EXPECT_EQ(t->hourly_nanos, RoundToNanos(f[5])) << f[2];
    if (!f[7].empty()) {
      ASSERT_TRUE(t->spot_hourly_nanos) << f[2];
      EXPECT_EQ(*t->spot_hourly_nanos, RoundToNanos(f[7])) << f[2];
    } else {
      EXPECT_FALSE(t->spot_hourly_nanos) << f[2];
    }
    ++checked;
  }
  EXPECT_EQ(checked, 44);
}

}  // namespace
}  // namespace gpuledger::cost
