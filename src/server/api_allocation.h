#pragma once
// /api/v1/allocation and OpenCost's allocation paths: a window's reports, a step at a time, as
// OpenCost's allocation sets: exact figures beside OpenCost's names and units (docs/api.md,
// docs/opencost.md).

#include "ledger/read_service.h"
#include "server/api.h"
#include "store/ledger_store.h"

namespace gpuledger::server {

// `opencost_names`: entries named as OpenCost names them (opencost_names.h), for its paths.
ApiResponse Allocation(store::LedgerStore& store, ledger::ReadService& reads, const Params& given,
                       bool opencost_names);

}  // namespace gpuledger::server
