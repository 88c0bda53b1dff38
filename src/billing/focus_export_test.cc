#include "billing/focus_export.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <numeric>
#include <regex>
#include <set>

#include "common/csv.h"
#include "common/money.h"

namespace gpuledger::billing {
namespace {

constexpr Micros kDay0 = 1'717'200'000LL * kMicrosPerSecond;  // 2024-06-01T00:00:00Z
constexpr Nanos kDollar = kNanosPerUnit;

enum class Type { kDecimal, kDateTime, kString, kJson };

// FOCUS 1.2 columns this export must carry, with the spec's data type and whether the spec
// forbids null for our rows (ChargeCategory "Usage", not a correction). From the FOCUS 1.2
// column definitions (focus.finops.org/focus-specification/v1-2, "Column ID" / "Data type" /
// "Allows nulls"); the Mandatory ones plus the Conditional ones that apply to a usage dataset.
struct Spec {
  Type type;
  bool not_null;
};
const std::map<std::string, Spec>& FocusSpec() {
  static const std::map<std::string, Spec> kSpec = {
      {"BilledCost", {Type::kDecimal, true}},
      {"BillingAccountId", {Type::kString, true}},
      {"BillingAccountName", {Type::kString, false}},
      {"BillingAccountType", {Type::kString, false}},
      {"BillingCurrency", {Type::kString, true}},
      {"BillingPeriodEnd", {Type::kDateTime, true}},
      {"BillingPeriodStart", {Type::kDateTime, true}},
      {"ChargeCategory", {Type::kString, true}},
      {"ChargeClass", {Type::kString, false}},
      {"ChargeDescription", {Type::kString, false}},
      {"ChargeFrequency", {Type::kString, false}},
      {"ChargePeriodEnd", {Type::kDateTime, true}},
      {"ChargePeriodStart", {Type::kDateTime, true}},
      {"ConsumedQuantity", {Type::kDecimal, true}},
      {"ConsumedUnit", {Type::kString, true}},
      {"ContractedCost", {Type::kDecimal, true}},
      {"ContractedUnitPrice", {Type::kDecimal, true}},
      {"EffectiveCost", {Type::kDecimal, true}},
      {"InvoiceIssuerName", {Type::kString, true}},
      {"ListCost", {Type::kDecimal, true}},
      {"ListUnitPrice", {Type::kDecimal, true}},
      {"PricingCategory", {Type::kString, true}},
      {"PricingQuantity", {Type::kDecimal, true}},
      {"PricingUnit", {Type::kString, true}},
      {"ProviderName", {Type::kString, true}},
      {"PublisherName", {Type::kString, true}},
      {"RegionId", {Type::kString, false}},
      {"RegionName", {Type::kString, false}},
      {"ResourceId", {Type::kString, true}},
      {"ResourceName", {Type::kString, true}},
      {"ResourceType", {Type::kString, true}},
      {"ServiceCategory", {Type::kString, true}},
      {"ServiceName", {Type::kString, true}},
      {"ServiceSubcategory", {Type::kString, true}},
      {"SkuId", {Type::kString, true}},
      {"SkuMeter", {Type::kString, true}},
      {"SkuPriceId", {Type::kString, true}},
      {"SubAccountId", {Type::kString, false}},
      {"SubAccountName", {Type::kString, false}},
      {"Tags", {Type::kJson, true}},
  };
  return kSpec;
}

// Allowed values (FOCUS 1.2) for the enumerated columns.
const std::map<std::string, std::vector<std::string>> kAllowed = {
    {"ChargeCategory", {"Usage", "Purchase", "Tax", "Credit", "Adjustment"}},
    {"ChargeFrequency", {"One-Time", "Recurring", "Usage-Based"}},
    {"PricingCategory", {"Standard", "Dynamic", "Committed", "Other"}},
    {"ServiceCategory",
     {"AI and Machine Learning", "Analytics", "Business Applications", "Compute", "Databases",
      "Developer Tools", "Multicloud", "Identity", "Integration", "Internet of Things",
      "Management and Governance", "Media", "Migration", "Mobile", "Networking", "Security",
      "Storage", "Web", "Other"}},
};

bool Matches(Type type, const std::string& v) {
  static const std::regex kDecimal(R"(^-?[0-9]+(\.[0-9]+)?$)");
  static const std::regex kDatetime(R"(^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$)");
  switch (type) {
    case Type::kDecimal:
      return std::regex_match(v, kDecimal);
    case Type::kDateTime:
      return std::regex_match(v, kDatetime);
    case Type::kString:
      return true;
    case Type::kJson: {
      auto j = nlohmann::json::parse(v, nullptr, /*allow_exceptions=*/false);
      if (!j.is_object()) return false;
      for (const auto& [k, value] : j.items())
        if (!value.is_string()) return false;
      return true;
    }
  }
  return false;
}

DeviceHour Device(std::string node, int hour, std::string gpu, Nanos price) {
  DeviceHour d;
  d.hour_us = kDay0 + hour * kMicrosPerHour;
  d.cluster = "prod";
  d.node = std::move(node);
  d.gpu = GpuUuid(std::move(gpu));
  d.gpu_model = "H100";
  d.sharing = SharingMode::kTimeSlicing;
  d.pricing_class = "on-demand";
  d.price_nanos = price;
  d.metered_us = kMicrosPerHour;
  d.unallocated_us = kMicrosPerHour / 4;
  d.idle_us = kMicrosPerHour / 2;
  return d;
}

UsageRow Usage(const DeviceHour& d, std::string ns, std::string pod, std::string owner,
               GpuMicros allocated) {
  UsageRow u;
  u.hour_us = d.hour_us;
  u.gpu = d.gpu;
  u.node = d.node;
  u.gpu_model = d.gpu_model;
  u.sharing = d.sharing;
  PodUid uid("uid-" + pod);
  u.consumer.ref = ConsumerRef{std::move(ns), std::move(pod), std::move(uid), "main"};
  u.consumer.owner_kind = "Deployment";
  u.consumer.owner_name = std::move(owner);
  u.consumer.namespace_labels = {{"team", "ml"}};
  u.allocated_us = allocated;
  u.compute_us = allocated / 2;
  return u;
}

// A small ledger: node a (two hours, $60 + $40, two workloads sharing a GPU and idle), node b.
struct Ledger {
  std::vector<DeviceHour> devices;
  std::vector<UsageRow> usage;
};
Ledger MakeLedger() {
  Ledger l;
  l.devices = {Device("a", 0, "GPU-a", 60 * kDollar), Device("a", 1, "GPU-a", 40 * kDollar),
               Device("b", 0, "GPU-b", 7 * kDollar)};
  l.devices[2].unallocated_us = 0;  // nb holds the whole GPU
  for (int i = 0; i < 2; ++i) {
    l.usage.push_back(Usage(l.devices[i], "research", "train-1", "train", kMicrosPerHour / 2));
    l.usage.push_back(Usage(l.devices[i], "serving", "api-1", "api", kMicrosPerHour / 4));
    l.usage.back().consumer.labels = {{"team", "web"}};
  }
  l.usage.push_back(Usage(l.devices[2], "research", "nb-1", "nb", kMicrosPerHour));
  return l;
}

ExportRequest Request() {
  ExportRequest r;
  r.from_us = kDay0;
  r.to_us = kDay0 + kMicrosPerDay;
  r.cluster = "prod";
  return r;
}

std::vector<std::map<std::string, std::string>> ParseRows(const std::string& csv) {
  auto records = ParseCsv(csv, "export.csv");
  EXPECT_TRUE(records.ok());
  std::vector<std::map<std::string, std::string>> rows;
  const auto& header = records->front().fields;
  for (std::size_t r = 1; r < records->size(); ++r) {
    std::map<std::string, std::string> row;
    EXPECT_EQ((*records)[r].fields.size(), header.size());
    for (std::size_t c = 0; c < header.size(); ++c)
      row[header[c].value] = (*records)[r].fields[c].value;
    rows.push_back(std::move(row));
  }
  return rows;
}

Nanos SumColumn(const std::vector<std::map<std::string, std::string>>& rows,
                const std::string& column) {
  Nanos total = 0;
  for (const auto& row : rows) total += *NanosFromDecimal(row.at(column));
  return total;
}

// Two idle hours of one node priced near the range's end: their day row does not fit in 64
// bits, and the export says so rather than wrapping into a negative cost (issue 35).
TEST(FocusExport, ADayRowPastTheInt64RangeIsAnErrorNotAWrap) {
  const Nanos half = INT64_MAX / 2 + 1;
  std::vector<DeviceHour> devices = {Device("a", 0, "GPU-a", half), Device("a", 1, "GPU-a", half)};
  ExportRequest request = Request();
  request.period = ChargePeriod::kHour;
  EXPECT_TRUE(BuildExportRows(request, devices, {}, {}).ok());  // each hour fits alone
  request.period = ChargePeriod::kDay;
  auto rows = BuildExportRows(request, devices, {}, {});
  ASSERT_FALSE(rows.ok());
  EXPECT_THAT(rows.error().message, ::testing::HasSubstr("does not fit in 64 bits"));
  EXPECT_THAT(rows.error().message, ::testing::HasSubstr("a/idle"));
  EXPECT_FALSE(ExportFocusCsv(request, devices, {}, {}).ok());
}

TEST(FocusExport, ColumnsAndTypesFollowTheSpec) {
  Ledger l = MakeLedger();
  for (ChargePeriod period : {ChargePeriod::kHour, ChargePeriod::kDay}) {
    ExportRequest request = Request();
    request.period = period;
    std::string csv = *ExportFocusCsv(request, l.devices, l.usage, {});
    auto records = ParseCsv(csv, "export.csv");
    ASSERT_TRUE(records.ok());
    std::set<std::string> header;
    for (const auto& f : records->front().fields) header.insert(f.value);
    for (const auto& [name, spec] : FocusSpec()) EXPECT_TRUE(header.contains(name)) << name;
    for (const auto& name : header)  // only FOCUS columns or x_ custom columns
      EXPECT_TRUE(FocusSpec().contains(name) || name.starts_with("x_") ||
                  std::find(FocusColumnNames().begin(), FocusColumnNames().end(), name) !=
                      FocusColumnNames().end())
          << name;
    auto rows = ParseRows(csv);
    ASSERT_FALSE(rows.empty());
    for (const auto& row : rows) {
      for (const auto& [name, spec] : FocusSpec()) {
        const std::string& v = row.at(name);
        if (v.empty()) {
          EXPECT_FALSE(spec.not_null) << name << " is null";
          continue;
        }
        EXPECT_TRUE(Matches(spec.type, v)) << name << " = '" << v << "'";
      }
      for (const auto& [name, allowed] : kAllowed)
        EXPECT_THAT(allowed, ::testing::Contains(row.at(name))) << name;
      EXPECT_EQ(row.at("x_FocusVersion"), "1.2");
      EXPECT_LE(row.at("ChargePeriodStart"), row.at("ChargePeriodEnd"));
      EXPECT_EQ(row.at("BillingPeriodStart"), "2024-06-01T00:00:00Z");
      EXPECT_EQ(row.at("BillingPeriodEnd"), "2024-07-01T00:00:00Z");
    }
  }
}

TEST(FocusExport, EffectiveCostSumsToTheDeviceTotalAndBilledIsZero) {
  Ledger l = MakeLedger();
  for (const char* policy : {"allocation", "compute", "memory", "hybrid:0.5"}) {
    for (const char* idle : {"keep", "share", "namespace:platform"}) {
      ExportRequest request = Request();
      request.policy = *cost::ParsePolicy(policy);
      request.idle = *cost::ParseIdleHandling(idle);
      auto rows = ParseRows(*ExportFocusCsv(request, l.devices, l.usage, {}));
      EXPECT_EQ(SumColumn(rows, "EffectiveCost"), 107 * kDollar) << policy << " " << idle;
      EXPECT_EQ(SumColumn(rows, "ListCost"), 107 * kDollar);
      EXPECT_EQ(SumColumn(rows, "BilledCost"), 0);
    }
  }
}

TEST(FocusExport, WorkloadRowsCarryTagsAndHandComputedCosts) {
  Ledger l = MakeLedger();
  auto rows = *BuildExportRows(Request(), l.devices, l.usage, {});
  // Day rows on node a: train holds 1/2 of each hour -> $30 + $20; api 1/4 -> $15 + $10;
  // idle 1/4 -> $25; node b: nb $7.
  std::map<std::string, Nanos> cost;
  for (const ExportRow& r : rows) cost[r.ResourceId()] += r.effective_nanos;
  EXPECT_EQ(cost["research/Deployment/train"], 50 * kDollar);
  EXPECT_EQ(cost["serving/Deployment/api"], 25 * kDollar);
  EXPECT_EQ(cost["a/idle"], 25 * kDollar);
  EXPECT_EQ(cost["research/Deployment/nb"], 7 * kDollar);

  auto csv_rows = ParseRows(RenderFocusCsv(Request(), rows));
  bool found = false;
  for (const auto& row : csv_rows) {
    if (row.at("ResourceId") != "serving/Deployment/api") continue;
    found = true;
    auto tags = nlohmann::json::parse(row.at("Tags"));
    EXPECT_EQ(tags["gpuledger/namespace"], "serving");
    EXPECT_EQ(tags["team"], "web");  // the pod label wins over the namespace's "ml"
    EXPECT_EQ(tags["gpuledger/gpu_model"], "H100");
    EXPECT_EQ(tags["gpuledger/sharing_mode"], "time-slicing");
    EXPECT_EQ(tags["gpuledger/node"], "a");
    EXPECT_EQ(row.at("EffectiveCost"), "25");
    EXPECT_EQ(row.at("ConsumedQuantity"), "0.5");  // 2 x 1/4 GPU-hour
    EXPECT_EQ(row.at("ListUnitPrice"), "50");      // $25 for 0.5 GPU-hours
    EXPECT_EQ(row.at("SubAccountId"), "serving");
    EXPECT_EQ(row.at("ChargePeriodStart"), "2024-06-01T00:00:00Z");
    EXPECT_EQ(row.at("ChargePeriodEnd"), "2024-06-02T00:00:00Z");
  }
  EXPECT_TRUE(found);
}

TEST(FocusExport, ReconciledNodeDayBillsExactlyTheInvoice) {
  Ledger l = MakeLedger();
  Reconciliation r;
  r.node = "a";
  r.day_us = kDay0;
  r.modelled_nanos = 100 * kDollar;
  r.billed_nanos = 90 * kDollar;
  r.factor = "9/10";
  auto rows = ParseRows(*ExportFocusCsv(Request(), l.devices, l.usage, std::vector{r}));
  EXPECT_EQ(SumColumn(rows, "BilledCost"), 90 * kDollar);     // node b is not billed
  EXPECT_EQ(SumColumn(rows, "EffectiveCost"), 97 * kDollar);  // $90 billed + $7 modelled
  EXPECT_EQ(SumColumn(rows, "ListCost"), 107 * kDollar);      // the model is kept
  for (const auto& row : rows) {
    if (row.at("x_ParentResourceId") == "a") {
      EXPECT_EQ(row.at("BilledCost"), row.at("EffectiveCost"));
      EXPECT_EQ(row.at("x_ReconciliationFactor"), "9/10");
    } else {
      EXPECT_EQ(row.at("BilledCost"), "0");
    }
  }
}

TEST(FocusExport, PlainCsvIsIntegers) {
  Ledger l = MakeLedger();
  std::string csv = RenderPlainCsv(*BuildExportRows(Request(), l.devices, l.usage, {}));
  EXPECT_THAT(csv, ::testing::StartsWith("period_start,period_end,kind,"));
  EXPECT_THAT(csv, ::testing::HasSubstr(",serving/Deployment/api,1800000000,25000000000,"
                                        "25000000000,0,"));
}

// A workload's tokens of a period go to its rows of that period by their effective cost,
// exactly, or by their GPU time where they cost nothing; other rows keep none.
TEST(FocusExport, AWorkloadsTokensSplitOverItsRowsOfThePeriod) {
  auto row = [](Micros period, std::string node, Nanos cost, GpuMicros time) {
    ExportRow r;
    r.period_start_us = period;
    r.namespace_name = "llm";
    r.owner_kind = "Deployment";
    r.owner_name = "vllm";
    r.node = std::move(node);
    r.effective_nanos = cost;
    r.quantity_us = time;
    return r;
  };
  std::vector<ExportRow> rows = {row(0, "a", 300, 5), row(0, "b", 100, 5), row(10, "a", 0, 1),
                                 row(10, "b", 0, 3)};
  ExportRow other = row(0, "a", 50, 5);
  other.owner_name = "web";
  rows.push_back(other);
  ExportRow idle = row(0, "a", 10, 5);
  idle.kind = RowKind::kIdle;
  rows.push_back(idle);
  AddTokens(rows, {{{0, "llm/Deployment/vllm"}, 1001},
                   {{10, "llm/Deployment/vllm"}, 8},
                   {{20, "llm/Deployment/vllm"}, 5}});  // a period with no row: not given
  EXPECT_EQ(rows[0].tokens, 751);  // 3/4, the odd token
  EXPECT_EQ(rows[1].tokens, 250);
  EXPECT_EQ(rows[2].tokens, 2);  // by GPU time: 1 of 4
  EXPECT_EQ(rows[3].tokens, 6);
  EXPECT_FALSE(rows[4].tokens);
  EXPECT_FALSE(rows[5].tokens);
}

}  // namespace
}  // namespace gpuledger::billing
