#pragma once
// /api/v1/export/focus: the FOCUS export of a window, streamed as it is built (chunked): a day's
// rows at a time through the read service (ledger::WriteExport), each sent at the client's pace,
// so neither a month at 10,000 GPUs (about 1 GB) nor a client that stops reading grows the
// server past a day's rows. The options are checked before the answer begins: a bad one is a 400.

#include "ledger/read_service.h"
#include "server/api.h"
#include "server/connection_pool.h"

namespace gpuledger::server {

// The answer holds `store` until its stream is done.
ApiResponse ExportFocus(ConnectionPool::Lease store, ledger::ReadService& reads, const Params& p);

}  // namespace gpuledger::server
