#include "cli/server_client.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/strings.h"
#include "http/client.h"
#include "io/file_util.h"
#include "k8s/api_transport.h"
#include "k8s/kube_config.h"

namespace gpuledger::cli {
namespace {

constexpr std::string_view kTokenSecret = "gpuledger-api-token";

// $KUBECONFIG's first existing file, else ~/.kube/config, as kubectl picks them (kubectl merges
// every file $KUBECONFIG lists; the first is where contexts usually live).
std::string DefaultKubeconfig() {
  namespace fs = std::filesystem;
  if (const char* list = std::getenv("KUBECONFIG"); list != nullptr && *list != '\0') {
    std::string_view rest(list);
    while (!rest.empty()) {
      const std::size_t colon = std::min(rest.find(':'), rest.size());
      std::string file(rest.substr(0, colon));
      if (!file.empty() && fs::exists(file)) return file;
      rest.remove_prefix(std::min(colon + 1, rest.size()));
    }
  }
  const char* home = std::getenv("HOME");
  return home != nullptr ? std::string(home) + "/.kube/config" : std::string();
}

// The `message` of a Kubernetes Status body, else the body's first line.
std::string StatusMessage(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.value("kind", "") == "Status" && j.contains("message") &&
      j["message"].is_string())
    return j["message"].get<std::string>();
  return body.substr(0, body.find('\n'));
}

// The API token and how it was found ("--token-file", "Secret NS/NAME", or why there is none).
struct Token {
  std::string value;
  std::string why_none;
};

Token ApiToken(const ServerAccess& server, k8s::ApiTransport& api) {
  if (!server.auth.bearer_token_file.empty()) {
    auto read = ReadTokenFile(server.auth.bearer_token_file);
    if (!read) return {"", "--token-file " + read.error().message};
    return {std::move(*read), ""};
  }
  const std::string secret = fmt::format("{}/{}", server.kube.namespace_name, kTokenSecret);
  auto res = api.Get(
      fmt::format("/api/v1/namespaces/{}/secrets/{}", server.kube.namespace_name, kTokenSecret));
  if (!res) return {"", fmt::format("Secret {}: {}", secret, res.error().message)};
  if (res->status != 200)
    return {"",
            fmt::format("Secret {}: HTTP {}: {}", secret, res->status, StatusMessage(res->body))};
  auto j = nlohmann::json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  const auto* data = j.is_object() && j.contains("data") ? &j["data"] : nullptr;
  if (data == nullptr || !data->is_object() || !data->contains("token") ||
      !(*data)["token"].is_string())
    return {"", fmt::format("Secret {}: no data.token", secret)};
  auto token = k8s::DecodeBase64((*data)["token"].get<std::string>());
  if (!token) return {"", fmt::format("Secret {}: data.token: {}", secret, token.error().message)};
  return {*token, ""};
}

// GET through the API server's service proxy to <namespace>/gpuledger-server:http.
Result<std::string> GetThroughKube(const ServerAccess& server, const std::string& path,
                                   const std::vector<std::pair<std::string, std::string>>& params) {
  const std::string file =
      server.kube.kubeconfig.empty() ? DefaultKubeconfig() : server.kube.kubeconfig;
  if (file.empty() || !std::filesystem::exists(file))
    return InvalidArgument(
        fmt::format("no --db, no --server, and no kubeconfig at {}: give one of them",
                    file.empty() ? std::string("~/.kube/config") : file));
  auto config = k8s::LoadKubeconfig(file, server.kube.context);
  if (!config) return Error{config.error().code, config.error().message};
  const std::string route =
      fmt::format("the API server {} (kubeconfig {}{})", config->server, file,
                  server.kube.context.empty() ? "" : ", context " + server.kube.context);
  auto api = k8s::MakeCurlTransport(*config);
  const Token token = ApiToken(server, *api);
  k8s::TransportOptions options;
  if (!token.value.empty()) options.extra_headers.push_back("X-Gpuledger-Token: " + token.value);
  auto proxy = k8s::MakeCurlTransport(*config, options);

  // The query, encoded by the one URL API (http::ParseUrl's), on the proxy's path.
  std::string target = fmt::format("/api/v1/namespaces/{}/services/gpuledger-server:http/proxy{}",
                                   server.kube.namespace_name, path);
  target += http::EncodeQuery(params);
  auto res = proxy->Get(target);
  if (!res) return Unavailable(fmt::format("{}: {}", route, res.error().message));
  if (res->status == 200) return std::move(res->body);
  const std::string message = StatusMessage(res->body);
  switch (res->status) {
    case 400:
      return InvalidArgument(fmt::format("{}: HTTP 400: {}", route, message));
    case 401:
      return Unavailable(fmt::format(
          "{}: HTTP 401: {}{}", route, message,
          token.value.empty()
              ? fmt::format(" (the gpuledger API token: {}; pass --token-file)", token.why_none)
              : std::string()));
    case 403:
      return Unavailable(fmt::format(
          "{}: HTTP 403: {} (reading through the API server needs get on services/proxy in "
          "namespace {})",
          route, message, server.kube.namespace_name));
    case 404:
    case 503:
      return Unavailable(
          fmt::format("{}: HTTP {}: {} (is gpuledger installed in namespace {}? docs/install.md; "
                      "--kube-namespace names another)",
                      route, res->status, message, server.kube.namespace_name));
    default:
      return Unavailable(fmt::format("{}: HTTP {}: {}", route, res->status, message));
  }
}

}  // namespace

Result<std::string> GetFromServer(const ServerAccess& server, const std::string& path,
                                  const std::vector<std::pair<std::string, std::string>>& params) {
  if (server.url.empty()) return GetThroughKube(server, path, params);
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
