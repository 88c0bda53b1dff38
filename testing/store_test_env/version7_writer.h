#pragma once
// Ledgers as the build of schema version 7 wrote them (before the compact hours, issue 37):
// the schema the shipped migrations make up to 7, and one row per device-hour and per usage
// row with every string in it, and the labels the rows carry. For the tests of the 7 -> 8 migration
// and of the older migrations, which take such a ledger further back with SQL.

#include <span>
#include <string>

#include "common/result.h"
#include "model/ledger.h"

namespace gpuledger::store::testing {

Status WriteSqliteVersion7(const std::string& path, std::span<const LedgerHour> hours);
Status WritePostgresVersion7(const std::string& url, std::span<const LedgerHour> hours);

}  // namespace gpuledger::store::testing
