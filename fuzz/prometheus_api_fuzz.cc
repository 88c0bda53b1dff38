// Answers of a Prometheus HTTP API (`server --source prometheus=`): range queries of the
// agents' counters and instant queries of dcgm-exporter's profiling fields.

#include <cstdint>
#include <string_view>
#include <vector>

#include "ingest/prometheus_source.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace ingest = gpuledger::ingest;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  std::vector<ingest::TargetScrape> scrapes;
  (void)ingest::ParseMatrixResponse(body, scrapes);
  ingest::DcgmHourlyByGpu hourly;
  std::int64_t not_finite = 0;
  (void)ingest::ParseDcgmVectorResponse(body, "DCGM_FI_PROF_SM_ACTIVE", hourly, &not_finite);
  return 0;
}
