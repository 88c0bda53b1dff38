#include "store/token_rows.h"

#include <array>
#include <map>

#include <fmt/format.h>

namespace gpuledger::store {
namespace {

constexpr std::array<SqlColumn, 13> kColumns = {{
    {"hour_us", SqlType::kInt},
    {"cluster", SqlType::kText},
    {"namespace", SqlType::kText},
    {"pod", SqlType::kText},
    {"pod_uid", SqlType::kText},
    {"container", SqlType::kText},
    {"model", SqlType::kText},
    {"engine", SqlType::kText},
    {"input_tokens", SqlType::kInt},
    {"output_tokens", SqlType::kInt},
    {"requests", SqlType::kInt},
    {"prefill_us", SqlType::kInt},
    {"decode_us", SqlType::kInt},
}};

}  // namespace

const SqlUpsert kTokenHourUpsert = {"token_hours", kColumns, 8, /*skip_unchanged=*/true};

Status CheckTokenHours(std::span<const TokenHour> rows, std::string_view location) {
  for (const TokenHour& r : rows) {
    const std::array<std::pair<const char*, std::int64_t>, 5> figures = {{
        {"input_tokens", r.input_tokens},
        {"output_tokens", r.output_tokens},
        {"requests", r.requests},
        {"prefill_us", r.prefill_us},
        {"decode_us", r.decode_us},
    }};
    for (const auto& [field, value] : figures)
      if (value < 0)
        return InvalidArgument(fmt::format(
            "{}: token_hours row (hour_us {}, consumer {}, model '{}', engine '{}'): {} is "
            "negative ({}); token figures count up from 0",
            location, r.hour_us, r.consumer.Key(), r.model, r.engine, field, value));
  }
  return Status::Ok();
}

std::vector<SqlValue> TokenHourCells(std::span<const TokenHour> rows) {
  std::map<decltype(std::declval<TokenHour>().Key()), const TokenHour*> last;
  for (const TokenHour& r : rows) last[r.Key()] = &r;
  std::vector<SqlValue> cells;
  cells.reserve(last.size() * kColumns.size());
  for (const auto& [key, r] : last)
    cells.insert(cells.end(),
                 {r->hour_us, std::string_view(r->cluster),
                  std::string_view(r->consumer.namespace_name), std::string_view(r->consumer.pod),
                  std::string_view(r->consumer.pod_uid.str()),
                  std::string_view(r->consumer.container), std::string_view(r->model),
                  std::string_view(r->engine), r->input_tokens, r->output_tokens, r->requests,
                  r->prefill_us, r->decode_us});
  return cells;
}

TokenHour DecodeTokenHour(SqlRow& row) {
  TokenHour r;
  r.hour_us = row.Int(0);
  r.cluster = row.Text(1);
  r.consumer = ConsumerRef{row.Text(2), row.Text(3), PodUid(row.Text(4)), row.Text(5)};
  r.model = row.Text(6);
  r.engine = row.Text(7);
  r.input_tokens = row.Int(8);
  r.output_tokens = row.Int(9);
  r.requests = row.Int(10);
  r.prefill_us = row.Int(11);
  r.decode_us = row.Int(12);
  return r;
}

}  // namespace gpuledger::store
