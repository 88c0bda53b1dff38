#pragma once
// GETs of a running `gpuledger server`'s API for the commands that read one (`report
// --server`, `audit --server`, `rightsize --server`): one place for the URL, the credentials and
// the error mapping, over the one HTTP client (http/client.h).

#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "http/client.h"

namespace gpuledger::cli {

// The --server flag of a reading command and its credentials (--token-file, --ca-file, ...).
struct ServerAccess {
  std::string url;  // http[s]://HOST[:PORT][/PREFIX]
  http::ClientAuth auth;
};

// GET `server.url` + `path` with `params`. The body of a 200; kInvalidArgument for a bad URL,
// credential file or a 400 (the server's JSON error names the parameter), kUnavailable for the rest
// (what was tried and why it failed); messages start with "--server <url>".
Result<std::string> GetFromServer(const ServerAccess& server, const std::string& path,
                                  const std::vector<std::pair<std::string, std::string>>& params);

}  // namespace gpuledger::cli
