// A FOCUS bill (`gpuledger reconcile --bill`): CSV from a cloud provider's export, each row
// then split over the days it spans. Shares of a row must sum to its BilledCost.

#include <cstdint>
#include <string_view>

#include "billing/bill.h"
#include "common/csv.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view content(reinterpret_cast<const char*>(data), size);
  (void)gpuledger::ParseCsv(content, "fuzz.csv");
  (void)gpuledger::billing::ParseFocusBill(content, "fuzz.csv");
  return 0;
}
