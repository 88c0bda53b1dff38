#pragma once
// What every ledger store does the same way with token hours (model/tokens.h): check a span
// before writing it, keep the last row of each key, and turn rows into cells and back.

#include <span>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "model/tokens.h"
#include "store/sql_connection.h"

namespace gpuledger::store {

// The token_hours table's columns: the key (TokenHour::Key()), then what an upsert replaces.
extern const SqlUpsert kTokenHourUpsert;
// The same columns as a SELECT list, in that order.
inline constexpr std::string_view kTokenHourColumns =
    "hour_us, cluster, namespace, pod, pod_uid, container, model, engine, "
    "input_tokens, output_tokens, requests, prefill_us, decode_us";

// kInvalidArgument "<location>: token_hours row (...): <field> is negative" for the first row
// with a negative figure; checked before a store writes anything.
Status CheckTokenHours(std::span<const TokenHour> rows, std::string_view location);

// The cells of the span's last row of each key, in key order (an upsert may not touch a row
// twice); string cells view the rows' strings.
std::vector<SqlValue> TokenHourCells(std::span<const TokenHour> rows);

// A row from a cursor on kTokenHourColumns.
TokenHour DecodeTokenHour(SqlRow& row);

}  // namespace gpuledger::store
