#pragma once
// What an inference engine served in one hour (issue 63): the exact deltas of the engine's own
// token, request and time counters, per (hour, consumer, model). Joined with the consumer's
// attributed GPU cost, energy and time of the same hours, they give the cost of a token.

#include <compare>
#include <cstdint>
#include <string>
#include <tuple>

#include "common/units.h"
#include "model/consumer.h"

namespace gpuledger {

struct TokenHour {
  Micros hour_us = 0;
  std::string cluster;
  ConsumerRef consumer;  // the engine's pod and container (the one whose port is scraped)
  std::string model;     // as the engine names it (a LoRA adapter where it names one)
  std::string engine;    // "vllm", "sglang", "tgi", "triton"
  std::int64_t input_tokens = 0;   // prompt tokens processed
  std::int64_t output_tokens = 0;  // tokens generated
  std::int64_t requests = 0;       // requests finished
  // The hour's time in prefill and in decode, summed over its requests, where the engine
  // reports them (its histograms' sums); 0 where it does not.
  Micros prefill_us = 0;
  Micros decode_us = 0;

  // A row is identified by these; the figures are what writing it again replaces.
  auto Key() const { return std::tie(hour_us, cluster, consumer, model, engine); }
  bool operator==(const TokenHour&) const = default;
};

}  // namespace gpuledger
