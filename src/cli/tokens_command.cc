#include "cli/tokens_command.h"

#include <algorithm>
#include <functional>
#include <vector>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/exit_code.h"
#include "cli/open_ledger.h"
#include "common/money.h"
#include "common/text_columns.h"
#include "io/terminal.h"
#include "report/token_json.h"

namespace gpuledger::cli {
namespace {

using nlohmann::json;

// The tokens document, from the ledger or from the server's /api/v1/tokens (the same bytes).
Result<std::string> TokensJson(const TokensOptions& o) {
  if (o.db.empty())  // --server, or through the API server (server_client.h)
    return GetFromServer(o.Server(), "/api/v1/tokens",
                         {{"window", o.window},
                          {"aggregate", o.group_by},
                          {"policy", o.policy},
                          {"idle", o.idle}});
  auto store = OpenExistingLedger("--db", o.db);
  if (!store) return store.error();
  ledger::FieldNames names;
  names.window = "--window";
  names.group_by = "--by";
  names.policy = "--policy";
  names.idle = "--idle";
  auto answer = ledger::ReadTokens(**store, nullptr, o, names);
  if (!answer) return answer.error();
  return report::TokenReportToJson(answer->report, answer->scope.currency);
}

// A nullable integer figure as text: `render` of it, "-" for null.
template <typename F>
std::string Or(const json& value, F render) {
  return value.is_null() ? "-" : render(value.get<std::int64_t>());
}

std::string PerMillion(const json& nanos) {
  return Or(nanos, [](std::int64_t n) { return DecimalRatio(n, kNanosPerUnit, 4); });
}

}  // namespace

Result<std::string> TokensTableFromJson(const std::string& text, std::size_t columns) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return InvalidArgument("the tokens answer is not a JSON object");
  try {
    const std::string currency = doc.at("currency").get<std::string>();
    // A column: its head, width, its cell of a group, and its rank: in a narrow terminal the
    // columns of the highest ranks go first, so every line fits (keys keep 16 columns, 32 for
    // the per-1k figures to be shown).
    struct Column {
      std::string_view head;
      std::size_t width;
      std::function<std::string(const json&)> cell;
      int rank;
    };
    auto per_million = [](std::string_view which) {
      return [which](const json& g) { return PerMillion(g.at("per_million_tokens").at(which)); };
    };
    auto per_thousand = [](std::string_view which, std::int64_t unit, int scale) {
      return [=](const json& g) {
        return Or(g.at("per_1k_tokens").at(which),
                  [=](std::int64_t v) { return DecimalRatio(v, unit, scale); });
      };
    };
    std::vector<Column> table = {
        {"IN TOKENS", 13, [](const json& g) { return Thousands(g.at("input_tokens")); }, 5},
        {"OUT TOKENS", 13, [](const json& g) { return Thousands(g.at("output_tokens")); }, 6},
        {"GPU COST", 12, [](const json& g) { return DisplayMoney(g.at("cost_nanos")); }, 2},
        {"/1M IN", 9, per_million("input_nanos"), 3},
        {"/1M OUT", 9, per_million("output_nanos"), 4},
        {"/1M", 9, per_million("blended_nanos"), 1},
        {"QUALITY", 9, [](const json& g) { return g.at("quality").get<std::string>(); }, 7},
        {"GPU-S/1K", 9, per_thousand("compute_gpu_us", 1'000'000, 3), 8},
        {"J/1K", 9, per_thousand("energy_mj", 1'000, 1), 9}};
    auto figures_width = [&] {
      std::size_t w = 0;
      for (const Column& c : table) w += c.width + 1;
      return w;
    };
    for (int rank = 9; rank > 1; --rank) {
      const std::size_t key_room = rank >= 8 ? 32 : 16;
      if (figures_width() + key_room <= columns) break;
      std::erase_if(table, [&](const Column& c) { return c.rank == rank; });
    }
    const std::size_t figures = figures_width();
    const std::size_t key_width = columns > figures + 12 ? columns - figures : 12;
    std::string out = Wrap(fmt::format(
        "tokens by {} from {} to {}, {} policy, idle {} ({} per 1M tokens)",
        doc.at("group_by").get<std::string>(), doc.at("window").at("start").get<std::string>(),
        doc.at("window").at("end").get<std::string>(), doc.at("policy").get<std::string>(),
        doc.at("idle_handling").get<std::string>(), currency), "", columns);
    out += PadRight("KEY", key_width);
    for (const Column& c : table) out += " " + PadLeft(c.head, c.width);
    out += "\n";
    auto line = [&](const json& g) {
      std::string l = PadRight(g.at("key").get<std::string>(), key_width);
      for (const Column& c : table) l += " " + PadLeft(c.cell(g), c.width);
      return l + "\n";
    };
    for (const json& g : doc.at("groups")) out += line(g);
    out += line(doc.at("total"));
    for (const json& e : doc.at("engines_without_gpu"))
      out += fmt::format("note: the engine of {} served tokens no GPU row of the window explains "
                         "(counted at no GPU cost)\n",
                         e.get<std::string>());
    return out;
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("the tokens answer: ") + e.what());
  }
}

int RunTokens(const TokensOptions& o, std::ostream& out, std::ostream& err) {
  return PrintDocument(o.db, o.server, o.format, [&] { return TokensJson(o); },
                       TokensTableFromJson, out, err);
}

}  // namespace gpuledger::cli
