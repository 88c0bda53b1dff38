#pragma once
// A simulated inference engine's metrics endpoint (issue 63): what vLLM, SGLang, TGI or Triton
// would expose for the tokens a pod served, in that engine's own series and labels
// (ingest/token_series.h reads them back). The counts follow the pod's true GPU busy time, so
// a test knows exactly what the ledger must hold.

#include <cstdint>
#include <string>

#include "common/units.h"
#include "sim/scenario.h"
#include "sim/simulator.h"

namespace gpuledger::sim {

// What an engine has counted since it started: integers, as its counters show them.
struct EngineCounts {
  std::int64_t input_tokens = 0, output_tokens = 0, requests = 0;
  Micros prefill_us = 0, decode_us = 0;
  bool operator==(const EngineCounts&) const = default;
};

// The counts of an engine whose pod has had `truth` so far: tokens and time in proportion to
// its GPU busy time (floored to whole tokens and requests, time to whole µs).
EngineCounts EngineCountsOf(const InferenceSpec& spec, const Truth& truth);

// The engine's exposition text (Prometheus text format 0.0.4) for `counts`, as the engine names
// its series: vLLM's and SGLang's with process_start_time_seconds (`started_us`), TGI's without a
// model label, Triton's with model and version. Time series only where the engine reports them.
std::string EngineExposition(const InferenceSpec& spec, const EngineCounts& counts,
                             Micros started_us);

}  // namespace gpuledger::sim
