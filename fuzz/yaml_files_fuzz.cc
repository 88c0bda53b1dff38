// The YAML files a user hands gpuledger: a scenario (`demo --scenario`, the simulator), a price
// catalog (--catalog) and a guardrail policy (--policy). yaml-cpp parses; our readers must
// turn every document it accepts into a value or an error naming file, line and field.
// The first byte picks the reader, so one corpus seeds all three.

#include <cstdint>
#include <string_view>

#include "cost/catalog.h"
#include "guardrails/policy_yaml.h"
#include "sim/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      (void)gpuledger::sim::ParseScenario(text, "fuzz.yaml");
      break;
    case 1: {
      static const gpuledger::cost::Catalog kBase = gpuledger::cost::DefaultCatalog();
      (void)gpuledger::cost::ParseCatalogYaml(text, "fuzz.yaml", kBase);
      break;
    }
    default:
      (void)gpuledger::guardrails::ParsePolicyYaml(text, "fuzz.yaml");
  }
  return 0;
}
