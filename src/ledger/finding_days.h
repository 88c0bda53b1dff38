#pragma once
// What findings keep of a day of the ledger's rows (ledger/day_summaries.h), so that the read
// service holds it for the days that ended and /api/v1/findings over a month reads its open
// days only: each series' idle segments (guardrails/idle_runs.h), and the rows and device-hours
// that price the findings recorded over the day (FindingCosts), a few thousand at 10,000 GPUs
// where the day has half a million rows.
//
// A held day serves a later read while it holds the subject (and, for a stale grant, the node)
// of every finding that read prices over it; a finding recorded after the day was held makes it
// summarized again.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "guardrails/idle_runs.h"
#include "guardrails/policy.h"
#include "guardrails/price_findings.h"
#include "ledger/day_summaries.h"
#include "model/finding.h"

namespace gpuledger::ledger {

struct FindingsDay final : ledger::DaySummary {
  std::vector<guardrails::IdleSeriesDay> idle;
  // The rows of the subjects of the findings recorded over the day, with their device-hour's
  // price and their pod labels (an index into label_sets).
  struct Row {
    Micros hour_us = 0;
    std::string node;
    ConsumerRef subject;
    std::string gpu, device_id;
    GpuMicros allocated_us = 0, compute_us = 0;
    KibSeconds memory_kib_s = 0;
    guardrails::HourPrice price;
    std::uint32_t labels = 0;
  };
  std::vector<Row> rows;
  std::vector<LabelMap> label_sets;
  std::set<ConsumerRef> subjects;
  // The device-hours of the nodes of stale grants recorded over the day.
  struct DeviceHour {
    Micros hour_us = 0;
    std::string node, gpu;
    guardrails::HourPrice price;
  };
  std::vector<DeviceHour> device_hours;
  std::set<std::string, std::less<>> nodes;
  // The GPU each MIG instance of the day's rows is a slice of, in the order the rows named them.
  std::vector<std::pair<std::string, std::string>> instances;
};

class FindingsSummarizer final : public ledger::DaySummarizer {
 public:
  // `priced`: the findings this read prices (a day summarized keeps their subjects whatever
  // the store says); `window`: the read's, whose recorded findings are read once, unfiltered,
  // the first time a day is summarized.
  FindingsSummarizer(const guardrails::Policy& policy, const std::vector<Finding>& priced,
                     TimeRange window)
      : policy_(policy), priced_(priced), window_(window) {}

  std::string Key() const override;
  Result<std::shared_ptr<const ledger::DaySummary>> Summarize(store::LedgerStore& store,
                                                              const ledger::Snapshot& rows,
                                                              const TimeRange& part) override;
  bool Serves(const ledger::DaySummary& held, const TimeRange& part) const override;

 private:
  const guardrails::Policy& policy_;
  const std::vector<Finding>& priced_;
  const TimeRange window_;
  std::optional<std::vector<Finding>> recorded_;  // every finding recorded over the window
};

}  // namespace gpuledger::ledger
