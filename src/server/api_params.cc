#include "server/api_params.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "common/field_error.h"
#include "ledger/report_request.h"

namespace gpuledger::server {

std::string UnknownParam(const Params& params, std::initializer_list<std::string_view> known) {
  for (const auto& [k, v] : params)
    if (std::find(known.begin(), known.end(), k) == known.end()) return k;
  return {};
}

std::string ParamOr(const Params& params, const std::string& key, const std::string& fallback) {
  auto it = params.find(key);
  return it == params.end() ? fallback : it->second;
}

Result<ledger::ReportQuery> ParseReportParams(store::LedgerStore& store, const Params& p) {
  auto extent = store.Extent();
  if (!extent) return extent.error();
  ledger::ReportRequest request;
  request.window = ParamOr(p, "window", request.window);
  request.group_by = ParamOr(p, "aggregate", request.group_by);
  request.policy = ParamOr(p, "policy", request.policy);
  request.idle = ParamOr(p, "idle", request.idle);
  request.step = ParamOr(p, "step", "");
  request.filter = ParamOr(p, "filter", "");
  auto query = ledger::ParseReportRequest(request, *extent, ParameterNames());
  if (query) query->max_sum_bytes = ledger::kServerSumBytes;  // one request must not take the pod
  return query;
}

const ledger::FieldNames& ParameterNames() {
  static const ledger::FieldNames kNames{"parameter 'window'", "parameter 'aggregate'",
                                         "parameter 'policy'", "parameter 'idle'",
                                         "parameter 'step'",   "parameter 'filter'"};
  return kNames;
}

ApiResponse FromError(const Error& e) {
  // kUnavailable: a read that met writes each time it tried; asking again is the remedy.
  const int status = e.code == ErrorCode::kInvalidArgument ? 400
                     : e.code == ErrorCode::kUnavailable   ? 503
                                                           : 500;
  return JsonError(status, e.message);
}

ApiResponse ParameterError(const Error& e, std::initializer_list<std::string_view> names) {
  if (e.code != ErrorCode::kInvalidArgument) return FromError(e);
  const std::optional<std::string_view> name = BadInputField(e, names);
  if (!name) return JsonError(400, e.message);
  const std::string_view m = e.message, rest = m.substr(name->size());
  // "headroom: expected ..." loses its prefix; "window '9x': ..." keeps its own words.
  if (rest.starts_with(": "))
    return JsonError(400, fmt::format("parameter '{}': {}", *name, rest.substr(2)));
  return JsonError(400, fmt::format("parameter '{}': {}", *name, m));
}

ApiResponse ReportError(const Error& e) {
  if (e.code == ErrorCode::kInvalidArgument) return JsonError(400, "parameter " + e.message);
  return FromError(e);
}

ApiResponse AnswerTooLarge(std::size_t steps_written, std::size_t steps) {
  return JsonError(
      400, fmt::format("the answer passes {} MiB after {} of its {} steps: narrow parameter "
                       "'window', lengthen 'step' (or accumulate), aggregate by fewer or coarser "
                       "levels, or add a 'filter'",
                       kMaxAnswerBytes >> 20, steps_written, steps));
}

}  // namespace gpuledger::server
