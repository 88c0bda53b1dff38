#include "ledger/tokens.h"

#include <fmt/format.h>

#include "store/ledger_identity.h"

namespace gpuledger::ledger {

Result<TokenAnswer> ReadTokens(store::LedgerStore& store, ReadService* reads,
                               const TokenRequest& request, const FieldNames& names) {
  auto levels = report::ParseTokenGroupBy(request.group_by);
  if (!levels)
    return InvalidArgument(fmt::format("{}: {}", names.group_by, levels.error().message));
  auto extent = store.Extent();
  if (!extent) return extent.error();
  ReportRequest by_entry;
  by_entry.window = request.window;
  by_entry.policy = request.policy;
  by_entry.idle = request.idle;
  auto query = ParseReportRequest(by_entry, *extent, names);
  if (!query) return query.error();
  auto identity = store::ReadLedgerIdentity(store);
  if (!identity) return identity.error();
  // Every consumer with its metadata: whatever the tokens group by regroups it.
  query->group_by = {report::Dimension{report::Dimension::Kind::kEntry, ""}};
  query->max_sum_bytes = kServerSumBytes;
  ReadService one_query(OneQueryOptions());
  auto entries = (reads != nullptr ? *reads : one_query).Report(store, *query);
  if (!entries) return entries.error();
  auto tokens = store.ReadTokenHours(query->window);
  if (!tokens) return tokens.error();
  return TokenAnswer{report::CostTokens(*entries, *tokens, *levels),
                     ReadScope{*extent, query->window, identity->cluster, identity->currency}};
}

}  // namespace gpuledger::ledger
