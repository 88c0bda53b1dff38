#include "billing/bill.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>

#include "common/apportion.h"
#include "common/csv.h"
#include "common/money.h"
#include "common/strings.h"
#include "common/time_util.h"

namespace gpuledger::billing {
namespace {

constexpr std::string_view kRequired[] = {"BilledCost", "ResourceId", "ChargePeriodStart",
                                          "ChargePeriodEnd"};

}  // namespace

Result<std::vector<BillLine>> ParseFocusBill(std::string_view content, std::string_view file) {
  auto records = ParseCsv(content, file);
  if (!records) return records.error();
  if (records->empty()) return InvalidArgument(fmt::format("{}:1:1: empty bill (no header)", file));

  const CsvRecord& header = records->front();
  std::map<std::string, std::size_t, std::less<>> index;
  for (std::size_t i = 0; i < header.fields.size(); ++i) {
    // A column named twice is ambiguous (which BilledCost is the bill?): refused, not guessed.
    if (!index.emplace(std::string(Trim(header.fields[i].value)), i).second) {
      return InvalidArgument(fmt::format("{}:{}:{}: column {} appears twice in the header", file,
                                         header.line, header.fields[i].column,
                                         Trim(header.fields[i].value)));
    }
  }
  for (std::string_view name : kRequired) {
    if (!index.contains(name))
      return InvalidArgument(fmt::format("{}:{}:1: missing required column {} (needs {})", file,
                                         header.line, name, fmt::join(kRequired, ", ")));
  }
  auto column = [&](std::string_view name) -> std::optional<std::size_t> {
    auto it = index.find(name);
    if (it == index.end()) return std::nullopt;
    return it->second;
  };
  const std::size_t billed_col = *column("BilledCost");
  const std::size_t id_col = *column("ResourceId");
  const std::size_t start_col = *column("ChargePeriodStart");
  const std::size_t end_col = *column("ChargePeriodEnd");
  const auto currency_col = column("BillingCurrency");
  const auto name_col = column("ResourceName");
  const auto category_col = column("ChargeCategory");

  std::vector<BillLine> lines;
  for (std::size_t r = 1; r < records->size(); ++r) {
    const CsvRecord& rec = (*records)[r];
    if (rec.fields.size() != header.fields.size()) {
      int col = rec.fields.size() > header.fields.size() ? rec.fields[header.fields.size()].column
                                                         : rec.fields.back().column;
      return InvalidArgument(fmt::format("{}:{}:{}: {} fields, the header has {}", file, rec.line,
                                         col, rec.fields.size(), header.fields.size()));
    }
    auto where = [&](std::size_t c) {
      return fmt::format("{}:{}:{}", file, rec.line, rec.fields[c].column);
    };
    auto value = [&](std::size_t c) { return Trim(rec.fields[c].value); };

    BillLine line;
    line.line = rec.line;
    line.resource_id = std::string(value(id_col));
    if (name_col) line.resource_name = std::string(value(*name_col));
    if (category_col) line.charge_category = std::string(value(*category_col));
    if (currency_col) {
      line.currency = std::string(value(*currency_col));
      line.currency_column = rec.fields[*currency_col].column;
    }
    if (line.resource_id.empty() && line.resource_name.empty())
      return InvalidArgument(
          fmt::format("{}: ResourceId is empty (and no ResourceName)", where(id_col)));
    auto billed = NanosFromDecimal(value(billed_col));
    if (!billed)
      return InvalidArgument(
          fmt::format("{}: BilledCost {}", where(billed_col), billed.error().message));
    // A line beyond a billion is no bill a cluster gets; near the int64 range its negation and
    // the day sums would wrap.
    if (*billed > kMaxBilledLineNanos || *billed < -kMaxBilledLineNanos)
      return InvalidArgument(fmt::format("{}: BilledCost {}: expected at most {} either way",
                                         where(billed_col), value(billed_col),
                                         DecimalFromNanos(kMaxBilledLineNanos)));
    line.billed_nanos = *billed;
    auto start = ParseRfc3339(value(start_col));
    if (!start)
      return InvalidArgument(
          fmt::format("{}: ChargePeriodStart: {}", where(start_col), start.error().message));
    auto end = ParseRfc3339(value(end_col));
    if (!end)
      return InvalidArgument(
          fmt::format("{}: ChargePeriodEnd: {}", where(end_col), end.error().message));
    if (*end <= *start)
      return InvalidArgument(fmt::format("{}: ChargePeriodEnd {} is not after ChargePeriodStart {}",
                                         where(end_col), value(end_col), value(start_col)));
    line.start_us = *start;
    line.end_us = *end;
    lines.push_back(std::move(line));
  }
  return lines;
}

std::string MatchNode(const BillLine& line, std::span<const std::string> nodes) {
  auto known = [&](std::string_view name) {
    return !name.empty() && std::find(nodes.begin(), nodes.end(), name) != nodes.end();
  };
  if (known(line.resource_id)) return line.resource_id;
  if (known(line.resource_name)) return line.resource_name;
  std::string_view id = line.resource_id;
  if (auto slash = id.rfind('/'); slash != std::string_view::npos) {
    std::string_view suffix = id.substr(slash + 1);
    if (known(suffix)) return std::string(suffix);
  }
  return {};
}

std::string FactorRatio(Nanos billed_nanos, Nanos modelled_nanos) {
  if (modelled_nanos == 0) return billed_nanos == 0 ? "1/1" : (billed_nanos > 0 ? "1/0" : "-1/0");
  __int128 n = billed_nanos, d = modelled_nanos;
  if (d < 0) {
    n = -n;
    d = -d;
  }
  std::int64_t g = std::gcd(billed_nanos, modelled_nanos);
  if (g == 0) g = 1;
  return fmt::format("{}/{}", static_cast<std::int64_t>(n / g), static_cast<std::int64_t>(d / g));
}

std::int64_t FactorPpm(Nanos billed_nanos, Nanos modelled_nanos) {
  if (modelled_nanos == 0) return 0;
  __int128 n = static_cast<__int128>(billed_nanos) * 1'000'000;
  __int128 d = modelled_nanos;
  bool negative = (n < 0) != (d < 0);
  if (n < 0) n = -n;
  if (d < 0) d = -d;
  __int128 q = (2 * n + d) / (2 * d);
  return static_cast<std::int64_t>(negative ? -q : q);
}

Result<ReconcilePlan> PlanReconciliation(std::span<const BillLine> lines,
                                         std::span<const DeviceHour> devices,
                                         std::string_view ledger_currency,
                                         std::string_view bill_file, Micros imported_at_us) {
  using Key = std::tuple<Micros, std::string>;  // day, node
  std::vector<std::string> nodes;
  std::map<Key, Nanos> modelled;
  for (const DeviceHour& d : devices) {
    modelled[Key{DayStart(d.hour_us), d.node}] += d.price_nanos;
    nodes.push_back(d.node);
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());

  ReconcilePlan plan;
  std::map<Key, Nanos> billed;
  std::map<Key, int> first_line;
  std::string currency;
  int currency_line = 0;
  for (const BillLine& line : lines) {
    std::string id = line.resource_id.empty() ? line.resource_name : line.resource_id;
    if (!line.charge_category.empty() && line.charge_category != "Usage") {
      plan.warnings.push_back({line.line, id, line.billed_nanos,
                               fmt::format("ChargeCategory {} skipped: only Usage is reconciled",
                                           line.charge_category)});
      continue;
    }
    if (!line.currency.empty() && !ledger_currency.empty() && line.currency != ledger_currency)
      return InvalidArgument(
          fmt::format("{}:{}:{}: BillingCurrency {} differs from the ledger's {}", bill_file,
                      line.line, line.currency_column, line.currency, ledger_currency));
    // A ledger that records no currency (built by `server`) still takes one currency per bill.
    if (!line.currency.empty() && !currency.empty() && line.currency != currency)
      return InvalidArgument(fmt::format(
          "{}:{}:{}: BillingCurrency {} differs from {} on line {}: one bill, one currency",
          bill_file, line.line, line.currency_column, line.currency, currency, currency_line));
    if (!line.currency.empty() && currency.empty()) {
      currency = line.currency;
      currency_line = line.line;
    }
    std::string node = MatchNode(line, nodes);
    if (node.empty()) {
      plan.warnings.push_back({line.line, id, line.billed_nanos, "no such node in the ledger"});
      continue;
    }
    // A bill row covers an hour to a month (a year for an upfront commitment); a longer one is a
    // mistake that would make a warning or a record of every day (issue 58: a 1,000-year row
    // printed 50 MB of warnings).
    if (line.end_us - line.start_us > kMaxChargePeriodDays * kMicrosPerDay)
      return InvalidArgument(fmt::format(
          "{}:{}: the charge period {} to {} is longer than {} days; a bill row covers an hour "
          "to a year",
          bill_file, line.line, FormatRfc3339(line.start_us), FormatRfc3339(line.end_us),
          kMaxChargePeriodDays));
    // Split the row over the UTC days it overlaps, by overlap length (exact).
    std::vector<Micros> days;
    std::vector<std::uint64_t> weights;
    for (Micros day = DayStart(line.start_us); day < line.end_us; day += kMicrosPerDay) {
      Micros from = std::max(day, line.start_us);
      Micros to = std::min(day + kMicrosPerDay, line.end_us);
      days.push_back(day);
      weights.push_back(static_cast<std::uint64_t>(to - from));
    }
    const std::vector<Nanos> shares = Apportion(line.billed_nanos, weights);
    for (std::size_t k = 0; k < days.size(); ++k) {
      Key key{days[k], node};
      if (__builtin_add_overflow(billed[key], shares[k], &billed[key]))
        return InvalidArgument(
            fmt::format("{}:{}: node {} on {}: the day's BilledCost sums beyond the 64-bit range",
                        bill_file, line.line, node, FormatRfc3339(days[k]).substr(0, 10)));
      first_line.emplace(key, line.line);
    }
  }

  for (const auto& [key, amount] : billed) {
    const auto& [day, node] = key;
    auto it = modelled.find(key);
    if (it == modelled.end()) {
      plan.warnings.push_back(
          {first_line.at(key), node, amount,
           fmt::format("node {} has no device-hours on {}: nothing to reconcile", node,
                       FormatRfc3339(day).substr(0, 10))});
      continue;
    }
    if (amount < 0)
      return InvalidArgument(fmt::format(
          "{}:{}: node {} on {}: billed total {} is negative", bill_file, first_line.at(key), node,
          FormatRfc3339(day).substr(0, 10), DecimalFromNanos(amount)));
    Reconciliation r;
    r.node = node;
    r.day_us = day;
    r.modelled_nanos = it->second;
    r.billed_nanos = amount;
    r.factor = FactorRatio(amount, it->second);
    r.factor_ppm = FactorPpm(amount, it->second);
    r.currency = currency.empty() ? std::string(ledger_currency) : currency;
    r.bill_file = std::string(bill_file);
    r.imported_at_us = imported_at_us;
    plan.node_days.push_back(std::move(r));
  }
  std::stable_sort(plan.warnings.begin(), plan.warnings.end(),
                   [](const BillWarning& a, const BillWarning& b) { return a.line < b.line; });
  return plan;
}

}  // namespace gpuledger::billing
