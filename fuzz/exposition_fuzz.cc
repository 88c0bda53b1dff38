// The Prometheus text exposition parser (agents' /metrics, dcgm-exporter, scraped by the
// server), strict and skipping bad lines. Every sample it keeps must have a valid name.

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "prometheus/exposition_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (bool skip : {false, true}) {
    auto parsed = gpuledger::prometheus::ParseExposition(text, {.skip_bad_lines = skip});
    if (!parsed) continue;
    if (parsed->samples.size() != parsed->timestamps_ms.size()) std::abort();
    for (const auto& sample : parsed->samples)
      if (sample.name.empty()) std::abort();
  }
  return 0;
}
