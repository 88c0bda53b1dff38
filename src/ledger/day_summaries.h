#pragma once
// What a reader keeps of a day of the ledger's rows, so that the read service can hold it for the
// days that ended and a read of a month costs what its open days do (ReadService::Summaries):
// findings keep each day's idle segments and the rows of the subjects of recorded findings.

#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <string>

#include "common/result.h"
#include "common/time_range.h"
#include "ledger/snapshot.h"
#include "store/ledger_store.h"

namespace gpuledger::ledger {

class DaySummary {
 public:
  virtual ~DaySummary() = default;
};

class DaySummarizer {
 public:
  virtual ~DaySummarizer() = default;
  // What its summaries depend on beyond the ledger's rows (a policy): held per key.
  virtual std::string Key() const = 0;
  // The summary of the rows of hours `part` (a day, or the part of one a window holds) in
  // `rows`, which covers them; `store` for what the rows do not say (recorded findings).
  virtual Result<std::shared_ptr<const DaySummary>> Summarize(store::LedgerStore& store,
                                                              const Snapshot& rows,
                                                              const TimeRange& part) = 0;
  // Whether a held summary of `part` answers this read (false: the day is summarized again and
  // held in its place; a finding recorded after the day was held names a subject it lacks).
  virtual bool Serves(const DaySummary& held, const TimeRange& part) const = 0;
};

// A part of a window and its summary.
struct SummarizedPart {
  TimeRange range;
  std::shared_ptr<const DaySummary> summary;
};

// The summaries held by day, per summarizer key; the read service drops what a write touched,
// as it drops held days. The keys used last are kept (a server reads with one policy; tests and
// a policy being edited with a few). Not thread-safe.
class HeldSummaries {
 public:
  std::shared_ptr<const DaySummary> Find(const std::string& key, Micros day_us);
  void Hold(const std::string& key, Micros day_us, std::shared_ptr<const DaySummary> summary);
  void Drop(const TimeRange& touched);
  void DropBefore(Micros from_us);
  void Clear() { by_key_.clear(); }
  std::size_t days() const;

 private:
  static constexpr std::size_t kKeys = 4;
  struct Held {
    std::string key;
    std::map<Micros, std::shared_ptr<const DaySummary>> days;
  };
  std::deque<Held> by_key_;  // used last at the back
};

}  // namespace gpuledger::ledger
