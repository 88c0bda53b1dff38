#pragma once
// The --listen flag of the agent and the server: "host:port".

#include <string>
#include <utility>

#include "common/result.h"

namespace gpuledger::http {

// Splits "host:port" ("0.0.0.0:9400", ":9400" for every address, "[::1]:9400"); port 0 means
// any free port. Bad input is kInvalidArgument naming the flag.
Result<std::pair<std::string, int>> ParseListen(const std::string& listen);

}  // namespace gpuledger::http
