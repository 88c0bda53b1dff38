#pragma once
// GETs of a running `gpuledger server`'s API for the commands that read one (`report
// --server`, `audit --server`): one place for the URL, the bearer token and the error mapping.

#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace gpuledger::cli {

// GET `server` + `path` with `params` (and "Authorization: Bearer <token>" from `token_file`
// when given). The body of a 200; kInvalidArgument for a bad URL, token file or a 400 (the
// server's JSON error names the parameter), kUnavailable for the rest; messages start with
// "--server <url>".
Result<std::string> GetFromServer(const std::string& server, const std::string& token_file,
                                  const std::string& path,
                                  const std::vector<std::pair<std::string, std::string>>& params);

}  // namespace gpuledger::cli
