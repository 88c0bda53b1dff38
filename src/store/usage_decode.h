#pragma once
// What every ledger store does the same way when it reads usage rows back: turn the text
// columns into enums, and join the label side tables onto the rows.

#include <map>
#include <string>
#include <string_view>
#include <tuple>

#include "model/ledger.h"

namespace gpuledger::store {

// The labels side tables, as read for one range.
struct LabelTables {
  using LabelMap = std::map<std::string, std::string>;
  std::map<std::tuple<std::string, std::string, std::string>, LabelMap> pods;  // ns, pod, uid
  std::map<std::string, LabelMap> namespaces;

  void AddPod(std::string ns, std::string pod, std::string uid, std::string key, std::string value);
  void AddNamespace(const std::string& ns, std::string key, std::string value);
  // Fills the row's pod and namespace labels from the tables.
  void Attach(UsageRow& row) const;
};

// Sets row.sharing and its qualities from their stored text. false, with `what` saying which
// value was unknown, for a row this build cannot read.
bool DecodeUsageEnums(UsageRow& row, std::string_view sharing_mode,
                      std::string_view compute_quality, std::string_view memory_quality,
                      std::string* what);
// Sets row.activity_quality from its stored text (schema 5; 'none' for rows written before).
bool DecodeActivityQuality(UsageRow& row, std::string_view activity_quality, std::string* what);

// The histogram column (schema 7): "" for a row without one (UsageHistogram::empty(), and
// rows written before), else the counts "c0,c1,c2,c3,c4,c5;m0,m1,m2,m3" (compute, memory).
std::string EncodeHistogram(const UsageHistogram& h);
// Sets row.histogram from its stored text; false, with `what` saying why, for text that is not
// what EncodeHistogram writes.
bool DecodeHistogram(UsageRow& row, std::string_view text, std::string* what);

// The pricing_class column of a device-hour: its class, or "unpriced" for PriceState::kUnpriced
// (the column's text for that state since schema 1; in memory it is the typed state).
std::string StoredPricingClass(const DeviceHour& d);
void DecodePricingClass(std::string text, DeviceHour& d);

}  // namespace gpuledger::store
