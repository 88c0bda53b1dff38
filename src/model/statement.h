#pragma once
// A closed period's priced statement (issue 38): what a month cost, frozen when it was closed,
// so later prices, bills, catalogs or labels never change what finance booked. Closing again
// makes a new version beside the old; the ledger keeps every version.

#include <string>

#include "common/units.h"

namespace gpuledger {

struct Statement {
  std::string period;  // the UTC month, "2026-11"
  Micros from_us = 0;  // the month's first hour
  Micros to_us = 0;    // the next month's first hour
  std::string policy;  // as cost::ToString writes them
  std::string idle;
  int version = 0;  // 1, 2, ... per (period, policy, idle): given by the store
  Micros closed_at_us = 0;
  std::string build;  // the gpuledger version that priced it
  // What priced it, as JSON: the device-hour prices per GPU model and pricing class and the
  // bills' factors per node-day.
  std::string provenance;
  // The period's report at its finest grain (report::Dimension::Kind::kEntry), gzipped: its
  // heading, then a row per line, as report JSON (ledger/statements.cc). Any grouping of the
  // period is regrouped from it. Empty when only the heading was read.
  std::string body;
  Nanos total_cost_nanos = 0;  // the report's device cost, for listings
};

}  // namespace gpuledger
