#include "cli/server_client.h"

#include <fmt/format.h>

#include "http/client.h"

namespace gpuledger::cli {

Result<std::string> GetFromServer(const ServerAccess& server, const std::string& path,
                                  const std::vector<std::pair<std::string, std::string>>& params) {
  auto base = http::ParseUrl(server.url);
  if (!base) return InvalidArgument("--server: " + base.error().message);
  std::string shown = base->shown;  // without a password
  if (!server.url.ends_with("/"))
    while (shown.ends_with("/")) shown.pop_back();
  std::string url = server.url;
  while (url.ends_with("/")) url.pop_back();  // a prefix ("/gpuledger") is kept
  http::ClientRequest request{url + path, params};
  request.timeout_us = 60 * kMicrosPerSecond;
  auto res = http::Get(request, server.auth);
  // The URL was checked above: an invalid argument now is a credential file, which it names.
  if (!res) return Error{res.error().code, "--server " + shown + ": " + res.error().message};
  if (res->status != 200) {
    // The server's JSON error names the parameter; pass it on.
    std::string message = res->body;
    while (!message.empty() && message.back() == '\n') message.pop_back();
    return Error{res->status == 400 ? ErrorCode::kInvalidArgument : ErrorCode::kUnavailable,
                 fmt::format("--server {}: HTTP {}: {}", shown, res->status, message)};
  }
  return std::move(res->body);
}

}  // namespace gpuledger::cli
