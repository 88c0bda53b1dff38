#include "cost/node_pricing.h"
#include "common/money.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "common/strings.h"

namespace gpuledger::cost {
namespace {

const std::string* Label(const NodeInfo& node, std::string_view key) {
  auto it = node.labels.find(std::string(key));
  return it == node.labels.end() ? nullptr : &it->second;
}

bool Matches(const NodeOverride& o, const NodeInfo& node) {
  if (!o.node.empty()) return o.node == node.name;
  if (o.selector.empty()) return false;
  for (const auto& [k, v] : o.selector) {
    const std::string* got = Label(node, k);
    if (got == nullptr || *got != v) return false;
  }
  return true;
}

const NodeOverride* FindOverride(const Catalog& catalog, const NodeInfo& node) {
  for (const auto& o : catalog.overrides) {
    if (!o.node.empty() && o.node == node.name) return &o;
  }
  for (const auto& o : catalog.overrides) {
    if (o.node.empty() && Matches(o, node)) return &o;
  }
  return nullptr;
}

std::string Describe(const NodeOverride& o) {
  std::string who;
  if (!o.node.empty()) {
    who = fmt::format("node {}", o.node);
  } else {
    for (const auto& [k, v] : o.selector) {
      who += fmt::format("{}{}={}", who.empty() ? "selector " : ",", k, v);
    }
  }
  return fmt::format("override ({}{})", who, o.where.empty() ? "" : ", " + o.where);
}

// The class from the capacity-type labels, with the label that gave it; empty when none did.
std::pair<std::string, std::string> ClassFromLabels(const NodeInfo& node) {
  auto said = [](std::string_view key, const std::string& value) {
    return fmt::format("{}={}", key, value);
  };
  if (const std::string* v = Label(node, kLabelKarpenterCapacity)) {
    std::string c = Lower(*v);
    if (c == "spot" || c == "on-demand" || c == "reserved") {
      return {c, said(kLabelKarpenterCapacity, *v)};
    }
  }
  if (const std::string* v = Label(node, kLabelEksCapacity)) {
    if (*v == "SPOT") return {"spot", said(kLabelEksCapacity, *v)};
    if (*v == "ON_DEMAND") return {"on-demand", said(kLabelEksCapacity, *v)};
    if (*v == "CAPACITY_BLOCK") return {"reserved", said(kLabelEksCapacity, *v)};
  }
  for (std::string_view key : {kLabelGkeSpot, kLabelGkePreemptible}) {
    if (const std::string* v = Label(node, key); v != nullptr && Lower(*v) == "true") {
      return {"spot", said(key, *v)};
    }
  }
  if (const std::string* v = Label(node, kLabelAksPriority)) {
    std::string c = Lower(*v);
    if (c == "spot") return {"spot", said(kLabelAksPriority, *v)};
    if (c == "regular") return {"on-demand", said(kLabelAksPriority, *v)};
  }
  if (const std::string* v = Label(node, kLabelPricingClass); v != nullptr && !v->empty())
    return {Lower(*v), said(kLabelPricingClass, *v)};
  return {};
}

}  // namespace

Nanos ReservedInstancePrice(Nanos on_demand_nanos) {
  return static_cast<Nanos>((static_cast<__int128>(on_demand_nanos) * kReservedPercent + 50) / 100);
}

Nanos ElectricityPrice(MilliJoules energy_mj, Nanos per_kwh_nanos, int pue_permille) {
  if (energy_mj <= 0 || per_kwh_nanos <= 0 || pue_permille <= 0) return 0;
  // mJ x (PUE permille / 1000) x nanos/kWh / 3.6e9 mJ/kWh.
  constexpr __int128 kDen = static_cast<__int128>(1000) * 3'600'000'000LL;
  __int128 num = static_cast<__int128>(energy_mj) * pue_permille * per_kwh_nanos;
  __int128 q = (num + kDen / 2) / kDen;
  return q > INT64_MAX ? INT64_MAX : static_cast<Nanos>(q);
}

namespace {

// A node's price as it is resolved: the figures found so far and the steps that found them, which
// become its method.
struct Resolving {
  const Catalog& catalog;
  const NodeInfo& node;
  NodePrice p;
  std::vector<std::string> steps;
  const InstanceType* type = nullptr;  // its instance-type row, when the table has one
  const NodeOverride* ov = nullptr;    // the catalog's override of it, when there is one

  // Region, instance type, pricing class and GPU model, each from the first source that says.
  void Identify() {
    // Region.
    if (const std::string* v = Label(node, kLabelRegion)) {
      p.region = *v;
      steps.push_back(fmt::format("region {} from {}", *v, kLabelRegion));
    } else if (const std::string* b = Label(node, kLabelRegionBeta)) {
      p.region = *b;
      steps.push_back(fmt::format("region {} from {}", *b, kLabelRegionBeta));
    } else if (!node.region_hint.empty()) {
      p.region = node.region_hint;
      steps.push_back(fmt::format("region {} (configured)", node.region_hint));
    }

    // Instance type.
    std::string instance_name;
    std::string_view instance_label;
    if (const std::string* v = Label(node, kLabelInstanceType)) {
      instance_name = *v;
      instance_label = kLabelInstanceType;
    } else if (const std::string* b = Label(node, kLabelInstanceTypeBeta)) {
      instance_name = *b;
      instance_label = kLabelInstanceTypeBeta;
    }
    type = instance_name.empty() ? nullptr : catalog.FindInstanceType(instance_name, p.region);
    if (type != nullptr) {
      p.instance_type = type->name;
      steps.push_back(
          fmt::format("instance type {} from {}: {} x {}, {} vCPU, {} GiB (row {}{})", type->name,
                      instance_label, type->gpu_count, type->gpu_model, type->vcpu,
                      type->memory_gib, type->region.empty() ? "any region" : type->region,
                      !p.region.empty() && !type->region.empty() && type->region != p.region
                          ? fmt::format(", no row for {}", p.region)
                          : ""));
    } else if (!instance_name.empty()) {
      steps.push_back(fmt::format("instance type {} from {} is not in the instance-type table",
                                  instance_name, instance_label));
    }

    // Override and class.
    ov = FindOverride(catalog, node);
    auto [label_class, class_label] = ClassFromLabels(node);
    if (ov != nullptr && !ov->pricing_class.empty()) {
      p.pricing_class = ov->pricing_class;
      steps.push_back(fmt::format("class {} from {}", p.pricing_class, Describe(*ov)));
    } else if (!label_class.empty()) {
      p.pricing_class = label_class;
      steps.push_back(fmt::format("class {} from {}", p.pricing_class, class_label));
    } else if (!node.pricing_class_hint.empty()) {
      p.pricing_class = node.pricing_class_hint;
      steps.push_back(
          fmt::format("class {} (configured; no capacity-type label)", p.pricing_class));
    } else {
      p.pricing_class = catalog.default_class;
      steps.push_back(
          fmt::format("class {} (catalog default; no capacity-type label)", p.pricing_class));
    }

    // GPU model.
    if (type != nullptr) {
      p.gpu_model = NormalizeGpuModel(type->gpu_model);
    } else if (const std::string* v = Label(node, kLabelGpuProduct)) {
      p.gpu_model = NormalizeGpuModel(*v);
      steps.push_back(fmt::format("model {} from {}={}", p.gpu_model, kLabelGpuProduct, *v));
    } else if (!node.gpu_model_hint.empty()) {
      p.gpu_model = NormalizeGpuModel(node.gpu_model_hint);
      steps.push_back(fmt::format("model {} (reported by the GPU)", p.gpu_model));
    }
  }

  NodePrice Finish(std::string price_step) {
    steps.push_back(std::move(price_step));
    std::string m;
    for (const auto& s : steps) m += (m.empty() ? "" : "; ") + s;
    p.method = std::move(m);
    return p;
  }
  // Prices it from its instance row's split of `price`; false when the row cannot split it.
  bool FromInstance(Nanos price, std::string what) {
    const HostRates* rates = catalog.FindHostRates(type->host_rates);
    // The parser checks names, GPU counts and prices; not reached for loaded ones.
    if (rates == nullptr || type->gpu_count <= 0 || price < 0) return false;
    InstanceSplit s = SplitInstancePrice(*type, *rates, price);
    p.priced = true;
    p.gpu_count = type->gpu_count;
    p.gpu_hourly_nanos = s.per_gpu;
    p.cpu_hourly_nanos = s.cpu_part;
    p.ram_hourly_nanos = s.ram_part;
    Finish(fmt::format("{}; {}", what, s.method));
    return true;
  }

  // The catalog's override of the node's price, when it has one.
  std::optional<NodePrice> FromOverride() {
    // Price: overrides first.
    if (ov != nullptr && ov->hourly_per_gpu_nanos) {
      p.priced = true;
      p.gpu_hourly_nanos = *ov->hourly_per_gpu_nanos;
      p.gpu_count = type != nullptr ? type->gpu_count : node.gpu_count_hint;
      return Finish(fmt::format("{} per GPU from {}{}", DecimalFromNanos(p.gpu_hourly_nanos),
                                Describe(*ov), ov->source.empty() ? "" : ": " + ov->source));
    }
    if (ov != nullptr && ov->instance_hourly_nanos) {
      const Nanos price = std::max<Nanos>(*ov->instance_hourly_nanos, 0);
      std::string what = fmt::format("node price {} from {}{}", DecimalFromNanos(price),
                                     Describe(*ov), ov->source.empty() ? "" : ": " + ov->source);
      if (type != nullptr && FromInstance(price, what)) return p;
      const int gpus = node.gpu_count_hint;
      if (gpus <= 0) {
        return Finish(fmt::format("unpriced: {} but the node's GPU count is unknown", what));
      }
      p.priced = true;
      p.gpu_count = gpus;
      p.gpu_hourly_nanos = price / gpus;
      // The remainder (< gpus nanos) is host: there is no instance row to split by.
      p.cpu_hourly_nanos = price - p.gpu_hourly_nanos * gpus;
      return Finish(fmt::format("{}; no instance-type row to split by: all of it is GPU, / {} GPUs",
                                what, gpus));
    }
    return std::nullopt;
  }

  // On-prem capex, the instance-type table, then the per-GPU catalog.
  NodePrice FromTables() {
    if (p.gpu_model.empty()) {
      return Finish(
          "unpriced: no instance type, no nvidia.com/gpu.product label and no model "
          "reported");
    }

    // On-prem with a purchase price: amortised capex per GPU; electricity metered on top.
    if (p.pricing_class == "on-prem" && catalog.on_prem) {
      const OnPremConfig& op = *catalog.on_prem;
      auto it = op.purchase_price_nanos.find(p.gpu_model);
      if (it != op.purchase_price_nanos.end() && op.depreciation_hours > 0) {
        p.priced = true;
        p.gpu_count = type != nullptr ? type->gpu_count : node.gpu_count_hint;
        p.gpu_hourly_nanos = (it->second + op.depreciation_hours / 2) / op.depreciation_hours;
        p.electricity_per_kwh_nanos = op.electricity_per_kwh_nanos;
        p.pue_permille = op.pue_permille;
        return Finish(fmt::format(
            "on-prem {}: purchase {} / {} h = {} per GPU-hour{}, plus measured energy x "
            "PUE {}.{:03d} "
            "x {} per kWh",
            p.gpu_model, DecimalFromNanos(it->second), op.depreciation_hours,
            DecimalFromNanos(p.gpu_hourly_nanos), op.where.empty() ? "" : " (" + op.where + ")",
            op.pue_permille / 1000, op.pue_permille % 1000,
            DecimalFromNanos(op.electricity_per_kwh_nanos)));
      }
      steps.push_back(fmt::format("on_prem has no purchase price for {}", p.gpu_model));
    }

    // The instance-type table.
    if (type != nullptr) {
      if (p.pricing_class == "on-demand") {
        if (FromInstance(type->hourly_nanos,
                         fmt::format("on-demand {} ({})", DecimalFromNanos(type->hourly_nanos),
                                     type->source))) {
          return p;
        }
      } else if (p.pricing_class == "spot" && type->spot_hourly_nanos) {
        if (FromInstance(*type->spot_hourly_nanos,
                         fmt::format("spot {} ({})", DecimalFromNanos(*type->spot_hourly_nanos),
                                     type->source))) {
          return p;
        }
      } else if (p.pricing_class == "reserved") {
        const Nanos reserved = ReservedInstancePrice(type->hourly_nanos);
        if (FromInstance(reserved, fmt::format("reserved {} = on-demand {} x {}% ({})",
                                               DecimalFromNanos(reserved),
                                               DecimalFromNanos(type->hourly_nanos),
                                               kReservedPercent, type->source))) {
          return p;
        }
      } else {
        steps.push_back(fmt::format("instance row has no {} price", p.pricing_class));
      }
    }

    // The per-GPU catalog.
    auto entry = catalog.Find(p.gpu_model, p.pricing_class, p.region);
    if (entry) {
      p.priced = true;
      p.gpu_hourly_nanos = entry->hourly_nanos;
      p.gpu_count = type != nullptr ? type->gpu_count : node.gpu_count_hint;
      return Finish(fmt::format("catalog {} {}{} {} per GPU-hour ({}; includes the host share)",
                                entry->gpu_model, entry->pricing_class,
                                entry->region.empty() ? "" : " " + entry->region,
                                DecimalFromNanos(entry->hourly_nanos), entry->source));
    }
    return Finish(fmt::format("unpriced: {}", entry.error().message));
  }
};

}  // namespace

NodePrice ResolveNodePrice(const Catalog& catalog, const NodeInfo& node) {
  Resolving r{catalog, node, {}, {}};
  r.Identify();
  if (std::optional<NodePrice> overridden = r.FromOverride()) return *overridden;
  return r.FromTables();
}

}  // namespace gpuledger::cost
