// A stored hour record (store/hour_record.h) as a ledger file or database holds it: a ledger
// copied from elsewhere, damaged on disk or written by a newer build must be refused, not read
// past its end or allocated from.

#include <cstdint>
#include <string_view>

#include "store/hour_record.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  gpuledger::DeviceHour device;
  std::vector<gpuledger::store::UsageFigures> usage;
  std::string what;
  if (gpuledger::store::DecodeHourRecord(bytes, device, usage, &what)) {
    // What reads back encodes to the same bytes: the format has one spelling per value.
    std::string again;
    gpuledger::store::EncodeHourRecord(device, usage, again);
    if (again != bytes) __builtin_trap();
  }
  return 0;
}
