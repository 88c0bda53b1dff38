#include "cli/sim_command.h"

#include <fmt/format.h>

#include "cli/exit_code.h"
#include "io/file_util.h"
#include "sim/alibaba_import.h"
#include "sim/scenario.h"

namespace gpuledger::cli {

int RunSimExample(std::ostream& out) {
  out << sim::ExampleScenarioYaml();
  return 0;
}

int RunSimImportAlibaba(const ImportAlibabaOptions& o, std::ostream& out, std::ostream& err) {
  auto pods = ReadFile(o.pods);
  if (!pods) {
    err << "error: --pods: " << pods.error().message << "\n";
    return 2;
  }
  auto nodes = ReadFile(o.nodes);
  if (!nodes) {
    err << "error: --nodes: " << nodes.error().message << "\n";
    return 2;
  }
  auto yaml = sim::ImportAlibabaTrace(*pods, o.pods, *nodes, o.nodes);
  if (!yaml) return Fail(err, yaml.error());
  // Parse what we wrote: an import that the simulator would reject is a bug caught here.
  auto check = sim::ParseScenario(*yaml, o.out);
  if (!check) {
    err << "error: imported scenario does not validate: " << check.error().message << "\n";
    return 1;
  }
  if (Status s = WriteFile(o.out, *yaml); !s.ok()) {
    err << "error: --out: " << s.error().message << "\n";
    return 1;
  }
  out << fmt::format("wrote {}: {} nodes, {} workloads\n", o.out, check->nodes.size(),
                     check->workloads.size());
  return 0;
}

}  // namespace gpuledger::cli
