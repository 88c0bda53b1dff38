#pragma once
// The read side of the server as one call: the REST API over a ledger, on an HTTP listener,
// until stopped. `gpuledger server` (with or without ingestion) and `gpuledger demo` serve
// through it.

#include <atomic>
#include <functional>
#include <ostream>
#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "cost/catalog.h"
#include "guardrails/policy.h"
#include "ingest/source_health.h"
#include "ledger/read_service.h"
#include "server/api.h"
#include "server/api_token.h"

namespace gpuledger::server {

// Read connections to a ledger for the API and the Events loop: read-only, never creating or
// migrating it (store::OpenLedgerReadOnly).
StoreOpener ReadConnections(const std::string& db);

struct ServeLedgerOptions {
  std::string db;                              // a ledger spec (store::OpenLedger)
  std::string listen;                          // HOST:PORT
  ApiToken token;                              // what /api requires (api_token.h); "": none
  bool fallback_any_port = false;              // when `listen`'s port is taken, a free one instead
  std::function<std::string()> extra_metrics;  // appended to the server's /metrics when given
  guardrails::Policy policy = guardrails::DefaultPolicy();
  cost::Catalog catalog = cost::DefaultCatalog();  // for /api/v1/recommendations
  // How often the ended days of the last `keep_days` are kept summed for the default policy and
  // idle handling (ledger/day_rollup.h: a cold report then reads a record per day); 0: never.
  Micros keep_days_every_us = 600 * kMicrosPerSecond;
  int keep_days = 35;
  const Clock* clock = nullptr;      // nullptr: the system's
  ledger::ReadServiceOptions reads;  // how many days of rows and of days summed it keeps
  // HOST:PORT of the OpenCost listener (HttpServer::Kind::kOpenCost); empty: none.
  std::string opencost_listen;
  // How the sources it ingests from fare (Api::SetSources); null: it ingests nothing.
  std::function<ingest::SourcesHealth()> sources;
  // A reader in front of a ledger others write (`server --read-only`, issue 64): opened
  // read-only, nothing migrated, no days kept summed (its writers keep them).
  bool read_only = false;
};

// Keeps summed the last `days` days that ended before the hours still open at `now_us` (of a
// ledger whose last hour is further back than those, its last `days` whole days), for
// the reports' default policy and idle handling (ledger::KeepDays), and gathered for
// rightsizing (recommendations::KeepRightsizeDays): what a writer of the ledger runs so that
// readers, which never write, find them kept. A failure is said on `err` and left: readers
// read those days' rows meanwhile.
void KeepEndedDays(store::LedgerStore& store, int days, Micros now_us,
                   const std::atomic<bool>& stop, std::ostream& err);

// The same for every day of the ledger that has ended at `now_us`, from its first: what a
// backfill (`server --backfill-only`), the ledger's writer while it runs, leaves behind.
void KeepEveryEndedDay(store::LedgerStore& store, Micros now_us, const std::atomic<bool>& stop,
                       std::ostream& err);

// Serves the ledger until `stop`; prints its URL to `out` once listening, and to `err` a warning
// when it serves an address beyond loopback without a token (and any failure to keep days,
// which leaves reports reading rows). An error when the ledger cannot be
// opened or the address bound.
Status ServeLedger(ServeLedgerOptions options, const std::atomic<bool>& stop, std::ostream& out,
                   std::ostream& err);

}  // namespace gpuledger::server
