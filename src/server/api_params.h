#pragma once
// What the API's endpoints share: their parameters read and checked, and errors turned into
// answers whose messages name the parameter (docs/api.md).

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>

#include "common/result.h"
#include "ledger/billing_reads.h"
#include "ledger/report_request.h"
#include "ledger/reports.h"
#include "server/api.h"
#include "store/ledger_store.h"

namespace gpuledger::server {

// The first parameter not in `known`, or "": a typo must not silently change a report.
std::string UnknownParam(const Params& params, std::initializer_list<std::string_view> known);

// The value of `key`, or `fallback` when it is absent.
std::string ParamOr(const Params& params, const std::string& key, const std::string& fallback);

// What the API calls a report's fields in an error: parameter 'window', parameter 'aggregate', ...
const ledger::FieldNames& ParameterNames();

// The report request every report endpoint shares, from its parameters; errors name the
// parameter. Reports and allocations answer the same question (ledger/report_request.h).
Result<ledger::ReportQuery> ParseReportParams(store::LedgerStore& store, const Params& p);

// 400 for bad input, 503 for a read that met writes each time it tried, 500 otherwise.
ApiResponse FromError(const Error& e);

// A lower layer's bad-input message about one of `names` in the words the report endpoints
// use (ParameterNames): "window 'x': expected ..." becomes "parameter 'window': window 'x':
// expected ...", "headroom: expected ..." loses its prefix to "parameter 'headroom': ". Other
// errors pass through FromError.
ApiResponse ParameterError(const Error& e, std::initializer_list<std::string_view> names);

// A report that could not be built: a window whose sums do not fit ("window: ...") is the
// request's fault, anything else the ledger's.
ApiResponse ReportError(const Error& e);

// What one answer of the report endpoints may hold: it is held whole, then copied to the wire,
// under a pod limit of 1 GiB (issue 58: one allocation by container with hourly steps over 30
// days at 240 GPUs was 317 MB). The FOCUS export is streamed and has no such limit.
inline constexpr std::size_t kMaxAnswerBytes = std::size_t{96} << 20;

// The 400 of an answer past kMaxAnswerBytes, after `steps_written` of its `steps`.
ApiResponse AnswerTooLarge(std::size_t steps_written, std::size_t steps);

}  // namespace gpuledger::server
