// dcgm-exporter's /metrics (`agent --source dcgm`): the exposition format with dcgm-exporter's
// labels and field names.

#include <cstdint>
#include <string_view>

#include "sources/dcgm/dcgm_exporter_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)gpuledger::sources::dcgm::ParseDcgmExporter(
      std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
