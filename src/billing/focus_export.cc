#include "billing/focus_export.h"
#include "common/enum_names.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <tuple>
#include <utility>

#include "billing/reconciled_prices.h"
#include "common/apportion.h"
#include "common/csv.h"
#include "common/money.h"
#include "common/time_range.h"
#include "common/time_util.h"

namespace gpuledger::billing {
namespace {

constexpr std::array<std::string_view, 57> kColumns = {
    "AvailabilityZone",
    "BilledCost",
    "BillingAccountId",
    "BillingAccountName",
    "BillingAccountType",
    "BillingCurrency",
    "BillingPeriodEnd",
    "BillingPeriodStart",
    "CapacityReservationId",
    "CapacityReservationStatus",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargeFrequency",
    "ChargePeriodEnd",
    "ChargePeriodStart",
    "CommitmentDiscountCategory",
    "CommitmentDiscountId",
    "CommitmentDiscountName",
    "CommitmentDiscountQuantity",
    "CommitmentDiscountStatus",
    "CommitmentDiscountType",
    "CommitmentDiscountUnit",
    "ConsumedQuantity",
    "ConsumedUnit",
    "ContractedCost",
    "ContractedUnitPrice",
    "EffectiveCost",
    "InvoiceId",
    "InvoiceIssuerName",
    "ListCost",
    "ListUnitPrice",
    "PricingCategory",
    "PricingQuantity",
    "PricingUnit",
    "ProviderName",
    "PublisherName",
    "RegionId",
    "RegionName",
    "ResourceId",
    "ResourceName",
    "ResourceType",
    "ServiceCategory",
    "ServiceName",
    "ServiceSubcategory",
    "SkuId",
    "SkuMeter",
    "SkuPriceDetails",
    "SkuPriceId",
    "SubAccountId",
    "SubAccountName",
    "SubAccountType",
    "Tags",
    // Custom columns (FOCUS: x_ prefix). 1.2 has no allocation columns (AllocatedMethodId and
    // friends arrive in 1.3); these carry the same facts until then.
    "x_AllocatedMethodId",
    "x_FocusVersion",
    "x_ParentResourceId",
    "x_ReconciliationFactor",
};

constexpr Micros kMicrosPerHourI = kMicrosPerHour;
constexpr std::string_view kUnit = "GPU-Hours";
// What an inference workload's charge bought (docs/tokens.md): its engines' tokens.
constexpr std::string_view kTokenUnit = "Tokens";

// The UTC calendar month holding t: FOCUS's billing period.
TimeRange MonthOf(Micros t) {
  const auto [y, m, d] = CivilFromDays(DayStart(t) / kMicrosPerDay);
  Micros start = DaysFromCivil(y, m, 1) * kMicrosPerDay;
  Micros end = (m == 12 ? DaysFromCivil(y + 1, 1, 1) : DaysFromCivil(y, m + 1, 1)) * kMicrosPerDay;
  return {start, end};
}

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// FOCUS 1.2 PricingCategory from the ledger's pricing class.
std::string_view PricingCategory(std::string_view pricing_class) {
  if (pricing_class == "on-demand") return "Standard";
  if (pricing_class == "spot") return "Dynamic";
  if (pricing_class == "reserved" || pricing_class == "committed") return "Committed";
  return "Other";
}

constexpr NameTable<RowKind, 3> kKindNames = {{
    {RowKind::kWorkload, "workload"},
    {RowKind::kIdle, "idle"},
    {RowKind::kUnattributed, "unattributed"},
}};

std::string_view KindName(RowKind kind) { return NameIn(kKindNames, kind, ""); }

std::string Team(const ConsumerLabels& labels, const std::string& key) {
  const std::string* value = labels.Find(key);
  return value != nullptr ? *value : std::string();
}

std::string Quantity(GpuMicros us) { return DecimalRatio(us, kMicrosPerHourI, 9); }

// Currency units per GPU-hour: nanos / GPU-µs scaled, rounded to 1e-9.
std::string UnitPrice(Nanos nanos, GpuMicros us) {
  if (us == 0) return "0";
  return DecimalRatio(static_cast<__int128>(nanos) * kMicrosPerHourI,
                      static_cast<__int128>(us) * kNanosPerUnit, 9);
}

}  // namespace

Result<ChargePeriod> ParseChargePeriod(std::string_view text) {
  if (text == "hour") return ChargePeriod::kHour;
  if (text == "day") return ChargePeriod::kDay;
  return InvalidArgument(fmt::format("period '{}': expected hour or day", text));
}

std::string ExportRow::ResourceId() const {
  switch (kind) {
    case RowKind::kWorkload:
      return namespace_name + "/" + owner_kind + "/" + owner_name;
    case RowKind::kIdle:
      return node + "/idle";
    case RowKind::kUnattributed:
      return node + "/unattributed";
  }
  return {};
}

void AddTokens(std::vector<ExportRow>& rows, const WorkloadTokens& tokens) {
  std::map<std::pair<Micros, std::string>, std::vector<ExportRow*>> rows_of;
  for (ExportRow& r : rows)
    if (r.kind == RowKind::kWorkload) rows_of[{r.period_start_us, r.ResourceId()}].push_back(&r);
  for (const auto& [key, count] : tokens) {
    auto it = rows_of.find(key);
    if (it == rows_of.end()) continue;
    std::vector<std::uint64_t> by_cost, by_time;
    for (const ExportRow* r : it->second) {
      by_cost.push_back(static_cast<std::uint64_t>(std::max<Nanos>(0, r->effective_nanos)));
      by_time.push_back(static_cast<std::uint64_t>(std::max<GpuMicros>(0, r->quantity_us)));
    }
    const bool costs = std::any_of(by_cost.begin(), by_cost.end(), [](auto w) { return w > 0; });
    const std::vector<std::int64_t> parts = Apportion(count, costs ? by_cost : by_time);
    for (std::size_t i = 0; i < parts.size(); ++i) it->second[i]->tokens = parts[i];
  }
}

ExportBuilder::ExportBuilder(ExportRequest request) : request_(std::move(request)) {}

void ExportBuilder::Add(ExportRow row, bool keep_zero) {
  if (!keep_zero && row.quantity_us == 0 && row.effective_nanos == 0 && row.list_nanos == 0) return;
  RowKey key{row.period_start_us, static_cast<int>(row.kind),
             row.namespace_name,  row.owner_kind,
             row.owner_name,      row.node,
             row.gpu_model,       row.sharing_mode,
             row.pricing_class,   row.team};
  auto [it, inserted] = rows_.try_emplace(std::move(key), row);
  if (inserted || !overflow_.ok()) return;
  // A row sums parts of device prices over its period: past 64 bits it is an error, never a
  // wrapped amount (a catalog can price an hour near the range's end).
  ExportRow& sum = it->second;
  const std::pair<std::int64_t*, std::int64_t> parts[] = {
      {&sum.quantity_us, row.quantity_us},
      {&sum.effective_nanos, row.effective_nanos},
      {&sum.list_nanos, row.list_nanos},
      {&sum.billed_nanos, row.billed_nanos}};
  for (const auto& [total, part] : parts)
    if (__builtin_add_overflow(*total, part, total)) {
      overflow_ = InvalidArgument(fmt::format(
          "export row {} from {}: its sum does not fit in 64 bits; export a shorter period",
          sum.ResourceId(), FormatRfc3339(sum.period_start_us)));
      return;
    }
}

void ExportBuilder::AddDeviceHour(const DeviceHour& modelled, const DeviceHour& priced,
                                  const Reconciliation* rec,
                                  std::span<const ExportConsumer> consumers,
                                  std::span<const cost::ConsumerWeights> weights,
                                  const std::map<std::string, std::string>* platform_labels) {
  const ExportRequest& request = request_;
  const bool by_compute = request.policy.kind == cost::PolicyKind::kCompute;
  const cost::DeviceHourCost list =
      cost::SplitDeviceHour(modelled, weights, request.policy, request.idle);
  const cost::DeviceHourCost eff =
      cost::SplitDeviceHour(priced, weights, request.policy, request.idle);

  ExportRow base;
  if (request.period == ChargePeriod::kHour) {
    base.period_start_us = modelled.hour_us;
    base.period_end_us = modelled.hour_us + kMicrosPerHour;
  } else {
    base.period_start_us = std::max(DayStart(modelled.hour_us), request.from_us);
    base.period_end_us = std::min(DayStart(modelled.hour_us) + kMicrosPerDay, request.to_us);
  }
  base.cluster = modelled.cluster.empty() ? request.cluster : modelled.cluster;
  base.node = modelled.node;
  base.gpu_model = modelled.gpu_model;
  base.sharing_mode = std::string(ToString(modelled.sharing));
  base.pricing_class = modelled.pricing_class;
  if (rec != nullptr) base.reconciliation_factor = rec->factor;
  auto billed = [&](Nanos effective_nanos) { return rec != nullptr ? effective_nanos : 0; };

  for (std::size_t k = 0; k < consumers.size(); ++k) {
    const ConsumerInfo& c = *consumers[k].consumer;
    ExportRow row = base;
    row.kind = RowKind::kWorkload;
    row.namespace_name = c.ref.namespace_name;
    row.owner_kind = c.owner_kind.empty() ? "Pod" : c.owner_kind;
    row.owner_name = c.owner_name.empty() ? c.ref.pod : c.owner_name;
    row.team = Team({*consumers[k].labels, *consumers[k].namespace_labels}, request.team_label);
    row.quantity_us = by_compute ? consumers[k].compute_us : consumers[k].allocated_us;
    row.effective_nanos = eff.consumers[k];
    row.list_nanos = list.consumers[k];
    row.billed_nanos = billed(eff.consumers[k]);
    Add(std::move(row), /*keep_zero=*/true);
  }
  ExportRow idle = base;
  idle.kind = RowKind::kIdle;
  idle.quantity_us = by_compute ? modelled.idle_us : modelled.unallocated_us;
  idle.effective_nanos = eff.idle;
  idle.list_nanos = list.idle;
  idle.billed_nanos = billed(eff.idle);
  if (request.idle.kind == cost::IdleHandling::Kind::kNamespace) {
    // The platform namespace pays for idle capacity (as in the report).
    idle.namespace_name = request.idle.namespace_name;
    static const LabelMap kNone;
    idle.team =
        Team({kNone, platform_labels != nullptr ? *platform_labels : kNone}, request.team_label);
  }
  Add(std::move(idle), false);
  ExportRow unattributed = base;
  unattributed.kind = RowKind::kUnattributed;
  unattributed.quantity_us = modelled.unattributed_us;
  unattributed.effective_nanos = eff.unattributed;
  unattributed.list_nanos = list.unattributed;
  unattributed.billed_nanos = billed(eff.unattributed);
  Add(std::move(unattributed), false);
}

Result<std::vector<ExportRow>> ExportBuilder::Finish() {
  if (!overflow_.ok()) return overflow_.error();
  std::vector<ExportRow> out;
  out.reserve(rows_.size());
  for (auto& [key, row] : rows_) out.push_back(std::move(row));
  rows_.clear();
  return out;
}

Result<std::vector<ExportRow>> BuildExportRows(const ExportRequest& request,
                                               std::span<const DeviceHour> devices,
                                               std::span<const UsageRow> usage,
                                               std::span<const Reconciliation> reconciliations) {
  std::vector<DeviceHour> effective = ApplyReconciliations(devices, reconciliations);
  std::map<std::tuple<std::string, Micros>, const Reconciliation*> reconciled;
  for (const Reconciliation& r : reconciliations) reconciled[{r.node, r.day_us}] = &r;

  using DeviceKey = std::tuple<Micros, std::string>;
  std::map<DeviceKey, std::vector<const UsageRow*>> by_device;
  std::map<std::string, std::map<std::string, std::string>> namespace_labels;
  for (const UsageRow& u : usage) {
    if (u.hour_us < request.from_us || u.hour_us >= request.to_us) continue;
    by_device[DeviceKey{u.hour_us, u.gpu.value}].push_back(&u);
    if (!u.consumer.namespace_labels.empty())
      namespace_labels[u.consumer.ref.namespace_name] = u.consumer.namespace_labels;
  }
  const std::map<std::string, std::string>* platform_labels = nullptr;
  if (auto it = namespace_labels.find(request.idle.namespace_name); it != namespace_labels.end())
    platform_labels = &it->second;

  ExportBuilder builder(request);
  std::vector<ExportConsumer> consumers;
  std::vector<cost::ConsumerWeights> weights;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const DeviceHour& modelled = devices[i];
    if (modelled.hour_us < request.from_us || modelled.hour_us >= request.to_us) continue;
    consumers.clear();
    weights.clear();
    if (auto it = by_device.find(DeviceKey{modelled.hour_us, modelled.gpu.value});
        it != by_device.end())
      for (const UsageRow* u : it->second) {
        consumers.push_back({&u->consumer, &u->consumer.labels, &u->consumer.namespace_labels,
                             u->allocated_us, u->compute_us});
        weights.push_back(cost::WeightsOf(*u));
      }
    const Reconciliation* rec = nullptr;
    if (auto it = reconciled.find({modelled.node, DayStart(modelled.hour_us)});
        it != reconciled.end())
      rec = it->second;
    builder.AddDeviceHour(modelled, effective[i], rec, consumers, weights, platform_labels);
  }
  return builder.Finish();
}

std::span<const std::string_view> FocusColumnNames() { return kColumns; }

std::string FocusCsvHeader() {
  std::string out;
  for (std::size_t i = 0; i < kColumns.size(); ++i) {
    if (i > 0) out += ',';
    out += kColumns[i];
  }
  out += '\n';
  return out;
}

std::string RenderFocusCsv(const ExportRequest& request, std::span<const ExportRow> rows) {
  return FocusCsvHeader() + RenderFocusRows(request, rows);
}

std::string RenderFocusRows(const ExportRequest& request, std::span<const ExportRow> rows) {
  std::string out;
  const std::string method =
      fmt::format("gpuledger/{}/{}", cost::ToString(request.policy), cost::ToString(request.idle));
  for (const ExportRow& r : rows) {
    auto [month_start, month_end] = MonthOf(r.period_start_us);
    const std::string resource_id = r.ResourceId();
    std::string resource_name, resource_type, description;
    switch (r.kind) {
      case RowKind::kWorkload:
        resource_name = r.owner_name;
        resource_type = r.owner_kind;
        description =
            fmt::format("GPU time of {} on node {} ({}, {}), {} cost policy", resource_id, r.node,
                        r.gpu_model, r.sharing_mode, cost::ToString(request.policy));
        break;
      case RowKind::kIdle:
        resource_name = "idle GPU capacity on " + r.node;
        resource_type = "Idle GPU capacity";
        description = fmt::format(
            "Idle GPU capacity (no workload {}) on node {} ({}, {}){}",
            request.policy.kind == cost::PolicyKind::kCompute ? "busy" : "allocated", r.node,
            r.gpu_model, r.sharing_mode,
            r.namespace_name.empty() ? "" : ", charged to namespace " + r.namespace_name);
        break;
      case RowKind::kUnattributed:
        resource_name = "unattributed GPU time on " + r.node;
        resource_type = "Unattributed GPU time";
        description =
            fmt::format("Unattributed GPU busy time (no known process) on node {} ({}, {})", r.node,
                        r.gpu_model, r.sharing_mode);
        break;
    }
    std::string tags = "{";
    auto tag = [&](std::string_view key, std::string_view value) {
      if (value.empty()) return;
      if (tags.size() > 1) tags += ',';
      tags += JsonString(key) + ":" + JsonString(value);
    };
    tag("gpuledger/namespace", r.namespace_name);
    if (r.kind == RowKind::kWorkload) tag("gpuledger/controller", resource_id);
    tag("gpuledger/node", r.node);
    tag("gpuledger/gpu_model", r.gpu_model);
    tag("gpuledger/sharing_mode", r.sharing_mode);
    tag("gpuledger/cost", KindName(r.kind));
    tag(request.team_label, r.team);
    tags += "}";
    const std::string sku = r.gpu_model + ":" + r.pricing_class;
    const std::string account = r.cluster.empty() ? request.provider_name : r.cluster;
    const std::string list_unit = UnitPrice(r.list_nanos, r.quantity_us);

    const std::array<std::string, kColumns.size()> fields = {
        "",                                // AvailabilityZone
        DecimalFromNanos(r.billed_nanos),  // BilledCost
        account,                           // BillingAccountId
        account,                           // BillingAccountName
        "Kubernetes Cluster",              // BillingAccountType
        request.currency,                  // BillingCurrency
        FormatRfc3339(month_end),          // BillingPeriodEnd
        FormatRfc3339(month_start),        // BillingPeriodStart
        "",                                // CapacityReservationId
        "",                                // CapacityReservationStatus
        "Usage",                           // ChargeCategory
        "",                                // ChargeClass (not a correction)
        description,                       // ChargeDescription
        "Usage-Based",                     // ChargeFrequency
        FormatRfc3339(r.period_end_us),    // ChargePeriodEnd
        FormatRfc3339(r.period_start_us),  // ChargePeriodStart
        "",
        "",
        "",
        "",
        "",
        "",
        "",                                                      // CommitmentDiscount*
        r.tokens ? std::to_string(*r.tokens) : Quantity(r.quantity_us),  // ConsumedQuantity
        std::string(r.tokens ? kTokenUnit : kUnit),                       // ConsumedUnit
        DecimalFromNanos(r.list_nanos),                          // ContractedCost
        list_unit,                                               // ContractedUnitPrice
        DecimalFromNanos(r.effective_nanos),                     // EffectiveCost
        "",                                                      // InvoiceId
        request.provider_name,                                   // InvoiceIssuerName
        DecimalFromNanos(r.list_nanos),                          // ListCost
        list_unit,                                               // ListUnitPrice
        std::string(PricingCategory(r.pricing_class)),           // PricingCategory
        Quantity(r.quantity_us),                                 // PricingQuantity
        std::string(kUnit),                                      // PricingUnit
        request.provider_name,                                   // ProviderName
        request.provider_name,                                   // PublisherName
        "",                                                      // RegionId
        "",                                                      // RegionName
        resource_id,                                             // ResourceId
        resource_name,                                           // ResourceName
        resource_type,                                           // ResourceType
        "Compute",                                               // ServiceCategory
        "Kubernetes GPU",                                        // ServiceName
        "Containers",                                            // ServiceSubcategory
        sku,                                                     // SkuId
        "GPU Hours",                                             // SkuMeter
        "",                                                      // SkuPriceDetails
        sku,                                                     // SkuPriceId
        r.namespace_name,                                        // SubAccountId
        r.namespace_name,                                        // SubAccountName
        r.namespace_name.empty() ? "" : "Kubernetes Namespace",  // SubAccountType
        tags,                                                    // Tags
        method,                                                  // x_AllocatedMethodId
        std::string(kFocusVersion),                              // x_FocusVersion
        r.node,                                                  // x_ParentResourceId
        r.reconciliation_factor,                                 // x_ReconciliationFactor
    };
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (i > 0) out += ',';
      out += CsvQuote(fields[i]);
    }
    out += '\n';
  }
  return out;
}

std::string PlainCsvHeader() {
  return "period_start,period_end,kind,cluster,namespace,owner_kind,owner_name,node,gpu_model,"
         "sharing_mode,pricing_class,team,resource_id,gpu_us,effective_cost_nanos,"
         "list_cost_nanos,billed_cost_nanos,reconciliation_factor,tokens\n";
}

std::string RenderPlainCsv(std::span<const ExportRow> rows) {
  return PlainCsvHeader() + RenderPlainRows(rows);
}

std::string RenderPlainRows(std::span<const ExportRow> rows) {
  std::string out;
  for (const ExportRow& r : rows) {
    const std::array<std::string, 19> fields = {
        FormatRfc3339(r.period_start_us),
        FormatRfc3339(r.period_end_us),
        std::string(KindName(r.kind)),
        r.cluster,
        r.namespace_name,
        r.owner_kind,
        r.owner_name,
        r.node,
        r.gpu_model,
        r.sharing_mode,
        r.pricing_class,
        r.team,
        r.ResourceId(),
        std::to_string(r.quantity_us),
        std::to_string(r.effective_nanos),
        std::to_string(r.list_nanos),
        std::to_string(r.billed_nanos),
        r.reconciliation_factor,
        r.tokens ? std::to_string(*r.tokens) : "",
    };
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (i > 0) out += ',';
      out += CsvQuote(fields[i]);
    }
    out += '\n';
  }
  return out;
}

Result<std::string> ExportFocusCsv(const ExportRequest& request,
                                   std::span<const DeviceHour> devices,
                                   std::span<const UsageRow> usage,
                                   std::span<const Reconciliation> reconciliations) {
  auto rows = BuildExportRows(request, devices, usage, reconciliations);
  if (!rows) return rows.error();
  return RenderFocusCsv(request, *rows);
}

}  // namespace gpuledger::billing
