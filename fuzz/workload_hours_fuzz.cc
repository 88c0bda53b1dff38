// A day kept for rightsizing (recommendations/rightsize_days.h) as the ledger holds it, after
// gunzip: a ledger copied from elsewhere, damaged on disk or written by another build must be
// refused (and read from its rows), not read past its end or allocated from.

#include <cstdint>
#include <string_view>

#include "recommendations/workload_hours.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto day = gpuledger::recommendations::WorkloadHours::Decode(bytes);
  if (day.ok()) {
    // What reads back encodes to the same bytes: the format has one spelling per day.
    if (day->Encode() != bytes) __builtin_trap();
    (void)day->Finish(gpuledger::rightsizing::Percentile::kP95);
  }
  return 0;
}
