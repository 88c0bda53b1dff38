#pragma once
// `gpuledger sim example` and `gpuledger sim import-alibaba`.

#include <ostream>
#include <string>

namespace gpuledger::cli {

int RunSimExample(std::ostream& out);

struct ImportAlibabaOptions {
  std::string pods;
  std::string nodes;
  std::string out;
};
int RunSimImportAlibaba(const ImportAlibabaOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gpuledger::cli
