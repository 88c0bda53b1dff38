#pragma once
// The server's /metrics view of spend: the ledger's last complete UTC hour priced, by
// namespace (allocation policy, idle kept apart), its idle and its devices' cost, for
// dashboards and alerts (deploy/components/monitoring). Prometheus samples the gauges; sums
// over them are approximate, the API's reports are the exact bill.
//
// The hour is the one before the hour containing now, or the ledger's last hour when ingestion
// is behind. Reading it is a ledger read (an hour of rows), so a scrape never waits for one:
// HourCost renders what it read last and, when that is a minute old, reads again on a thread of
// its own.

#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "common/result.h"
#include "common/units.h"
#include "store/ledger_store.h"

namespace gpuledger::server {

// The series for the hour before `now_us`'s hour, read from `store`; "" when the ledger has no
// complete hour.
Result<std::string> RenderHourCost(store::LedgerStore& store, Micros now_us);

class HourCost {
 public:
  // `read` renders the series (RenderHourCost over a connection of its own).
  explicit HourCost(std::function<Result<std::string>(Micros now_us)> read)
      : read_(std::move(read)) {}
  ~HourCost();  // waits for a read in flight
  HourCost(const HourCost&) = delete;
  HourCost& operator=(const HourCost&) = delete;

  // The last rendering ("" until the first read ends, or after a failed one); starts a read in
  // the background when there is none in flight and the last began a minute or more before
  // `now_us`. Thread-safe.
  std::string Render(Micros now_us);

 private:
  static constexpr Micros kRefreshUs = 60 * kMicrosPerSecond;
  const std::function<Result<std::string>(Micros)> read_;
  std::mutex mu_;
  std::string rendered_;
  Micros started_at_us_ = -1;  // when the last read began
  bool reading_ = false;
  std::thread reader_;
};

}  // namespace gpuledger::server
