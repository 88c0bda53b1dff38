#include "sim/engine_exposition.h"

#include <cmath>

#include <fmt/format.h>

namespace gpuledger::sim {
namespace {

// Seconds as an exposition value that reads back to the same µs.
std::string Seconds(Micros us) { return fmt::format("{}", static_cast<double>(us) / 1e6); }

std::string ProcessStart(Micros started_us) {
  return fmt::format(
      "# HELP process_start_time_seconds Start time of the process since unix epoch in "
      "seconds.\n# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds {}\n",
      static_cast<double>(started_us) / 1e6);
}

std::string Vllm(const InferenceSpec& s, const EngineCounts& c, Micros started_us) {
  const std::string l = fmt::format("engine=\"0\",model_name=\"{}\"", s.model);
  return ProcessStart(started_us) +
         fmt::format("# TYPE vllm:prompt_tokens_total counter\n"
                     "vllm:prompt_tokens_total{{{0}}} {1}\n"
                     "# TYPE vllm:generation_tokens_total counter\n"
                     "vllm:generation_tokens_total{{{0}}} {2}\n"
                     "# TYPE vllm:request_success_total counter\n"
                     "vllm:request_success_total{{{0},finished_reason=\"stop\"}} {3}\n"
                     "# TYPE vllm:request_prefill_time_seconds histogram\n"
                     "vllm:request_prefill_time_seconds_sum{{{0}}} {4}\n"
                     "vllm:request_prefill_time_seconds_count{{{0}}} {3}\n"
                     "# TYPE vllm:request_decode_time_seconds histogram\n"
                     "vllm:request_decode_time_seconds_sum{{{0}}} {5}\n"
                     "vllm:request_decode_time_seconds_count{{{0}}} {3}\n",
                     l, c.input_tokens, c.output_tokens, c.requests, Seconds(c.prefill_us),
                     Seconds(c.decode_us));
}

std::string Sglang(const InferenceSpec& s, const EngineCounts& c, Micros started_us) {
  const std::string l = fmt::format("model_name=\"{}\"", s.model);
  return ProcessStart(started_us) +
         fmt::format("# TYPE sglang:prompt_tokens_total counter\n"
                     "sglang:prompt_tokens_total{{{0}}} {1}\n"
                     "# TYPE sglang:generation_tokens_total counter\n"
                     "sglang:generation_tokens_total{{{0}}} {2}\n"
                     "# TYPE sglang:num_requests_total counter\n"
                     "sglang:num_requests_total{{{0}}} {3}\n",
                     l, c.input_tokens, c.output_tokens, c.requests);
}

std::string Tgi(const EngineCounts& c) {
  return fmt::format("# TYPE tgi_request_success counter\ntgi_request_success {2}\n"
                     "# TYPE tgi_request_input_length histogram\n"
                     "tgi_request_input_length_sum {0}\ntgi_request_input_length_count {2}\n"
                     "# TYPE tgi_request_generated_tokens histogram\n"
                     "tgi_request_generated_tokens_sum {1}\n"
                     "tgi_request_generated_tokens_count {2}\n"
                     "# TYPE tgi_batch_inference_duration histogram\n"
                     "tgi_batch_inference_duration_sum{{method=\"prefill\"}} {3}\n"
                     "tgi_batch_inference_duration_sum{{method=\"decode\"}} {4}\n",
                     c.input_tokens, c.output_tokens, c.requests, Seconds(c.prefill_us),
                     Seconds(c.decode_us));
}

std::string Triton(const InferenceSpec& s, const EngineCounts& c) {
  const std::string l = fmt::format("model=\"{}\",version=\"1\"", s.model);
  return fmt::format("# TYPE nv_inference_request_success counter\n"
                     "nv_inference_request_success{{model=\"ensemble\",version=\"1\"}} {3}\n"
                     "nv_inference_request_success{{{0}}} {3}\n"
                     "# TYPE nv_llm_input_token_len histogram\n"
                     "nv_llm_input_token_len_sum{{{0},response_metric_type=\"total_input_tokens\"}} "
                     "{1}\n"
                     "nv_llm_input_token_len_count{{{0},response_metric_type=\"total_input_tokens\""
                     "}} {3}\n"
                     "# TYPE nv_llm_output_token_len histogram\n"
                     "nv_llm_output_token_len_sum{{{0},response_metric_type=\"total_output_tokens\""
                     "}} {2}\n"
                     "nv_llm_output_token_len_count{{{0},response_metric_type=\"total_output_"
                     "tokens\"}} {3}\n",
                     l, c.input_tokens, c.output_tokens, c.requests);
}

}  // namespace

EngineCounts EngineCountsOf(const InferenceSpec& spec, const Truth& truth) {
  const double busy_s = truth.compute_gpu_us / 1e6;
  EngineCounts c;
  c.input_tokens = static_cast<std::int64_t>(std::floor(busy_s * spec.input_per_gpu_second));
  c.output_tokens = static_cast<std::int64_t>(std::floor(busy_s * spec.output_per_gpu_second));
  c.requests = static_cast<std::int64_t>(
      std::floor(static_cast<double>(c.output_tokens) / spec.output_per_request));
  if (spec.engine == "vllm" || spec.engine == "tgi") {
    c.prefill_us = std::llround(truth.compute_gpu_us * spec.prefill_share);
    c.decode_us = std::llround(truth.compute_gpu_us) - c.prefill_us;
  }
  return c;
}

std::string EngineExposition(const InferenceSpec& spec, const EngineCounts& counts,
                             Micros started_us) {
  if (spec.engine == "sglang") return Sglang(spec, counts, started_us);
  if (spec.engine == "tgi") return Tgi(counts);
  if (spec.engine == "triton") return Triton(spec, counts);
  return Vllm(spec, counts, started_us);
}

}  // namespace gpuledger::sim
