#pragma once
// Days kept summed (issue 32): a whole UTC day's report at its finest grain (a row per consumer,
// label set and GPU: report::Dimension::Kind::kEntry, as a closed statement keeps a month) for
// one policy and idle handling, kept in the ledger beside the day's rows. Any grouping of the
// day regroups from it, integer for integer what the day's rows give, so a cold report over 30
// days reads 30 of them rather than every usage row (at 10,000 GPUs about a million kept rows
// for 23.6 million). A write that touches a day drops what was kept of it
// (store::LedgerStore::WriteDayRollup), so one that is there is the day as it stands.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "cost/policy.h"
#include "ledger/days_summed.h"
#include "ledger/reports.h"
#include "report/report.h"
#include "store/ledger_store.h"

namespace gpuledger::ledger {

// A kept day's bytes: a day in another format is not read. Bump it whenever what a report sums
// from a day's rows changes (a split rule, a figure), so no build answers from days an older
// one summed.
inline constexpr std::uint64_t kDayRollupFormat = 2;  // 2: with compute_floor

// The ledger's last hours, which a live server may still be writing (an hour stays open to
// samples for its ingest's keep_open, 3 hours by default): the days they fall in are read from
// rows and never kept, and a keeper keeps only the days that ended before them.
inline constexpr Micros kOpenHours = 6;

// The store's name for days kept summed with a policy and idle handling (and this format).
std::string DayRollupKind(const cost::Policy& policy, const cost::IdleHandling& idle);

// Whether a query's whole days may be read kept summed: reports whose days sum to their
// windows (StepsSumToWindow), one over the window or one per step of whole days from a day's
// start (filtered or not: a day's rows are kept per entry, which a filter reads).
bool ReadsDaysSummed(const ReportQuery& query);

// A day summed: its report at its finest grain (BuildReports' answer to DayRollupQuery) and the
// magnitude sums of its rows (Snapshot::sums() of that day), so days read kept are checked for
// overflow as rows are.
struct DayRollup {
  report::Report day;
  report::SumCheck sums;
};

// The whole UTC day `snapshot` holds (Snapshot::Load of that day) summed for `query`'s policy
// and idle handling.
Result<DayRollup> SumDay(const Snapshot& snapshot, const ReportQuery& query,
                         const Parallelism& parallelism = {});

// The bytes the ledger keeps of a day (store::LedgerStore::WriteDayRollup's body).
std::string EncodeDayRollup(const report::Report& day, const report::SumCheck& sums);

// Keeps summed, for `query`'s policy and idle handling, every whole UTC day starting in `days`
// that the ledger does not keep yet, oldest first, each read alone (a day of the ledger in
// memory at a time); `stop` is asked between days. What a server runs in the background so
// that reports find the days kept. Returns how many it kept (a day written meanwhile is not).
Result<int> KeepDays(store::LedgerStore& store, const ReportQuery& query, const TimeRange& days,
                     const std::function<bool()>& stop);
// Reads the bytes of a kept day into `out`, its entries and rules into `tables`, inflating
// through `scratch`: a reader of many days reuses both, so their memory is allocated and
// faulted in once, not per day. kInternal, naming the byte, for bytes EncodeDayRollup did not
// write (another format, or damaged): the caller sums that day from its rows instead; `out` is
// then empty of rows.
Status DecodeDayRollup(std::string_view kept, DayTables& tables, SummedDay& out,
                       std::string& scratch);

}  // namespace gpuledger::ledger
