#include "cli/server_client.h"

#include <cstdlib>

#include <fmt/format.h>
#include <httplib.h>

#include "io/file_util.h"

namespace gpuledger::cli {

Result<std::string> GetFromServer(const std::string& server, const std::string& token_file,
                                  const std::string& path,
                                  const std::vector<std::pair<std::string, std::string>>& params) {
  std::string url = server;
  if (url.starts_with("http://")) url = url.substr(7);
  if (url.starts_with("https://"))
    return InvalidArgument("--server: https is not supported yet; use http:// (or a local proxy)");
  while (url.ends_with("/")) url.pop_back();
  auto colon = url.rfind(':');
  if (url.empty() || colon == std::string::npos)
    return InvalidArgument(fmt::format("--server '{}': expected http://HOST:PORT", server));
  int port = std::atoi(url.substr(colon + 1).c_str());
  if (port <= 0 || port > 65535)
    return InvalidArgument(fmt::format("--server '{}': expected http://HOST:PORT", server));
  httplib::Client client(url.substr(0, colon), port);
  client.set_connection_timeout(5, 0);
  client.set_read_timeout(60, 0);
  httplib::Headers headers;
  if (!token_file.empty()) {
    auto token = ReadFile(token_file);
    if (!token) return InvalidArgument("--token-file: " + token.error().message);
    std::string t = *token;
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
    headers.emplace("Authorization", "Bearer " + t);
  }
  httplib::Params query(params.begin(), params.end());
  auto res = client.Get(path, query, headers);
  if (!res)
    return Unavailable(fmt::format("--server {}: {}", server, httplib::to_string(res.error())));
  if (res->status != 200) {
    // The server's JSON error names the parameter; pass it on.
    std::string message = res->body;
    while (!message.empty() && message.back() == '\n') message.pop_back();
    return Error{res->status == 400 ? ErrorCode::kInvalidArgument : ErrorCode::kUnavailable,
                 fmt::format("--server {}: HTTP {}: {}", server, res->status, message)};
  }
  return std::move(res->body);
}

}  // namespace gpuledger::cli
