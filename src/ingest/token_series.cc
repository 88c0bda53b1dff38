#include "ingest/token_series.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "ingest/agent_series.h"

namespace gpuledger::ingest {
namespace {

using F = TokenField;

// Requests are those an engine counts as they finish with their tokens (vLLM, SGLang, TGI's
// successes); Triton counts the requests of every model of an ensemble apart, so its requests
// are the count of the output-token histogram, which only the model that generates observes.
// Triton's vLLM backend re-exports vLLM's counters under Triton's label `model`: the vLLM rows
// read them (ModelOf).
constexpr std::array<TokenSeries, 17> kTokenSeries = {{
    // vLLM (V0 vllm/engine/metrics.py, V1 vllm/v1/metrics/loggers.py): labels model_name and,
    // in V1, engine (one series per data-parallel engine, summed).
    {"vllm:prompt_tokens_total", "vllm", F::kInput, false},
    {"vllm:generation_tokens_total", "vllm", F::kOutput, false},
    {"vllm:request_success_total", "vllm", F::kRequests, false},  // per finished_reason
    {"vllm:request_prefill_time_seconds_sum", "vllm", F::kPrefill, true},
    {"vllm:request_decode_time_seconds_sum", "vllm", F::kDecode, true},
    // SGLang (--enable-metrics; python/sglang/srt/metrics/collector.py): label model_name.
    {"sglang:prompt_tokens_total", "sglang", F::kInput, false},
    {"sglang:generation_tokens_total", "sglang", F::kOutput, false},
    {"sglang:num_requests_total", "sglang", F::kRequests, false},
    // Hugging Face TGI (docs/source/reference/metrics.md): no model label, counters without
    // _total; tokens are the request histograms' sums, prefill/decode the batches' time.
    {"tgi_request_input_length_sum", "tgi", F::kInput, false},
    {"tgi_request_generated_tokens_sum", "tgi", F::kOutput, false},
    {"tgi_request_success", "tgi", F::kRequests, false},
    {"tgi_request_success_total", "tgi", F::kRequests, false},
    {"tgi_batch_inference_duration_sum", "tgi", F::kPrefill, true, "method", "prefill"},
    {"tgi_batch_inference_duration_sum", "tgi", F::kDecode, true, "method", "decode"},
    // Triton with the TensorRT-LLM backend (tensorrtllm_backend custom metrics): label model.
    {"nv_llm_input_token_len_sum", "triton", F::kInput, false},
    {"nv_llm_output_token_len_sum", "triton", F::kOutput, false},
    {"nv_llm_output_token_len_count", "triton", F::kRequests, false},
}};

}  // namespace

const TokenSeries* FindTokenSeries(const Sample& s) {
  for (const TokenSeries& t : kTokenSeries) {
    if (t.name != s.name) continue;
    if (!t.label.empty() && Label(s.labels, t.label) != t.value) continue;
    return &t;
  }
  return nullptr;
}

std::string_view ModelOf(const Sample& s) {
  std::string_view model = Label(s.labels, "model_name");
  return model.empty() ? Label(s.labels, "model") : model;
}

std::optional<std::int64_t> TokenCount(const TokenSeries& series, double value) {
  constexpr double kExact = 9007199254740992.0;  // 2^53
  if (!std::isfinite(value) || value < 0) return std::nullopt;
  const double scaled = series.seconds ? value * 1e6 : value;
  if (scaled >= kExact) return std::nullopt;
  return std::llround(scaled);
}

std::vector<std::string> TokenSeriesNames() {
  std::vector<std::string> names;
  for (const TokenSeries& t : kTokenSeries)
    if (std::find(names.begin(), names.end(), t.name) == names.end()) names.emplace_back(t.name);
  return names;
}

}  // namespace gpuledger::ingest
