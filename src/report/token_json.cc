#include "report/token_json.h"

#include <optional>

#include "common/json_writer.h"
#include "common/time_util.h"
#include "report/report_json.h"

namespace gpuledger::report {
namespace {

void IntOrNull(JsonWriter& w, std::string_view key, std::optional<std::int64_t> value) {
  w.Key(key);
  if (value)
    w.Int(*value);
  else
    w.Null();
}

void WriteGroup(JsonWriter& w, const TokenGroup& g) {
  const Figures& f = g.gpu;
  w.BeginObject();
  w.Int("allocated_gpu_us", f.allocated_gpu_us);
  WriteComputeErrorBand(w, f);  // how far the compute figure may be off, as report rows say
  w.Int("compute_gpu_us", f.compute_gpu_us);
  w.String("compute_source", FormatSource(f.quality, f.compute_rule));
  w.Int("cost_nanos", f.cost_nanos);
  w.Int("decode_us", g.decode_us);
  w.Int("energy_mj", f.energy_mj);
  w.Int("input_cost_nanos", g.input_cost_nanos);
  w.Int("input_tokens", g.input_tokens);
  w.String("key", g.key);
  w.Int("output_cost_nanos", g.output_cost_nanos);
  w.Int("output_tokens", g.output_tokens);
  w.Key("per_1k_tokens");
  w.BeginObject();
  IntOrNull(w, "compute_gpu_us", PerThousand(f.compute_gpu_us, g.tokens()));
  IntOrNull(w, "energy_mj", PerThousand(f.energy_mj, g.tokens()));
  w.EndObject();
  w.Key("per_million_tokens");
  w.BeginObject();
  IntOrNull(w, "blended_nanos", NanosPerMillion(f.cost_nanos, g.tokens()));
  IntOrNull(w, "input_nanos", NanosPerMillion(g.input_cost_nanos, g.input_tokens));
  IntOrNull(w, "output_nanos", NanosPerMillion(g.output_cost_nanos, g.output_tokens));
  w.EndObject();
  w.Int("prefill_us", g.prefill_us);
  w.String("quality", ToString(f.quality));
  w.Int("requests", g.requests);
  w.String("split", g.split);
  w.Key("tokens_per_gpu_hour");
  w.BeginObject();
  IntOrNull(w, "allocated", TokensPerGpuHour(g.tokens(), f.allocated_gpu_us));
  IntOrNull(w, "compute", TokensPerGpuHour(g.tokens(), f.compute_gpu_us));
  w.EndObject();
  w.EndObject();
}

}  // namespace

std::string TokenReportToJson(const TokenReport& r, std::string_view currency) {
  JsonWriter w(2);
  w.BeginObject();
  w.String("currency", currency);
  w.Key("engines_without_gpu");
  w.BeginArray();
  for (const std::string& e : r.engines_without_gpu) w.String(e);
  w.EndArray();
  w.String("group_by", ToString(r.group_by));
  w.Key("groups");
  w.BeginArray();
  for (const TokenGroup& g : r.groups) WriteGroup(w, g);
  w.EndArray();
  w.String("idle_handling", cost::ToString(r.idle_handling));
  w.String("policy", cost::ToString(r.policy));
  w.Key("total");
  WriteGroup(w, r.total);
  w.Key("window");
  w.BeginObject();
  w.String("end", FormatRfc3339(r.to_us));
  w.String("start", FormatRfc3339(r.from_us));
  w.EndObject();
  w.EndObject();
  return std::move(w).Take() + "\n";
}

}  // namespace gpuledger::report
