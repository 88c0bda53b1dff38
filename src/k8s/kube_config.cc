#include "k8s/kube_config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>

#include "io/file_util.h"
#include "io/yaml_document.h"
#include "k8s/exec_credential.h"

namespace gpuledger::k8s {
namespace {

// Finds the entry named `name` in a kubeconfig list (clusters, users, contexts).
std::optional<YAML::Node> FindNamed(const YAML::Node& list, const std::string& name) {
  if (!list || !list.IsSequence()) {
    return std::nullopt;
  }
  for (const auto& entry : list) {
    if (entry.IsMap() && entry["name"] && entry["name"].as<std::string>() == name) {
      return entry;
    }
  }
  return std::nullopt;
}

std::string Str(const YAML::Node& node, const char* key) {
  if (!node || !node.IsMap() || !node[key] || node[key].IsNull()) {
    return "";
  }
  return node[key].as<std::string>();
}

class KubeconfigParser {
 public:
  explicit KubeconfigParser(const std::string& path) : path_(path) {
    base_dir_ = std::filesystem::path(path).parent_path().string();
  }

  Error Fail(const std::string& field, const std::string& what) const {
    return InvalidArgument(fmt::format("kubeconfig {}: {}: {}", path_, field, what));
  }

  std::string Resolve(const std::string& file) const {
    if (file.empty() || file.front() == '/' || base_dir_.empty()) {
      return file;
    }
    return (std::filesystem::path(base_dir_) / file).string();
  }

  // Inline `<key>-data` (base64) wins over the file `<key>`, as kubectl does.
  Result<std::string> DataOrFile(const YAML::Node& node, const std::string& field_prefix,
                                 const char* key) const {
    const std::string data_key = std::string(key) + "-data";
    std::string data = Str(node, data_key.c_str());
    if (!data.empty()) {
      auto decoded = DecodeBase64(data);
      if (!decoded) {
        return Fail(field_prefix + "." + data_key, "not valid base64");
      }
      return decoded;
    }
    std::string file = Str(node, key);
    if (file.empty()) {
      return std::string();
    }
    auto content = ReadFile(Resolve(file), kPemFile);
    if (!content) {
      return Fail(field_prefix + "." + key,
                  fmt::format("cannot read {}: {}", Resolve(file), content.error().message));
    }
    return content;
  }

  Result<ApiServerConfig> Parse(std::string_view yaml, const std::string& context_override) {
    auto loaded = LoadYamlDocument(yaml, "kubeconfig " + path_);
    if (!loaded) return loaded.error();
    const YAML::Node root = *loaded;
    if (!root.IsMap()) {
      return Fail("(document)", "expected a mapping");
    }
    std::string context_name = context_override;
    if (context_name.empty()) {
      context_name = Str(root, "current-context");
    }
    if (context_name.empty()) {
      return Fail("current-context", "missing");
    }
    auto ctx_entry = FindNamed(root["contexts"], context_name);
    if (!ctx_entry) {
      return Fail(fmt::format("contexts[{}]", context_name), "no such context");
    }
    YAML::Node ctx = (*ctx_entry)["context"];
    const std::string cluster_name = Str(ctx, "cluster");
    const std::string user_name = Str(ctx, "user");
    if (cluster_name.empty()) {
      return Fail(fmt::format("contexts[{}].context.cluster", context_name), "missing");
    }
    auto cluster_entry = FindNamed(root["clusters"], cluster_name);
    if (!cluster_entry) {
      return Fail(fmt::format("clusters[{}]", cluster_name), "no such cluster");
    }
    const std::string cprefix = fmt::format("clusters[{}].cluster", cluster_name);
    YAML::Node cluster = (*cluster_entry)["cluster"];
    ApiServerConfig config;
    config.source = path_;
    config.server = Str(cluster, "server");
    if (config.server.empty()) {
      return Fail(cprefix + ".server", "missing");
    }
    if (!config.server.starts_with("https://") && !config.server.starts_with("http://")) {
      return Fail(cprefix + ".server", fmt::format("\"{}\" is not an http(s) URL", config.server));
    }
    auto ca = DataOrFile(cluster, cprefix, "certificate-authority");
    if (!ca) {
      return ca.error();
    }
    config.ca_pem = std::move(*ca);
    config.insecure_skip_tls_verify = Str(cluster, "insecure-skip-tls-verify") == "true";

    if (user_name.empty()) {
      return config;
    }  // anonymous
    auto user_entry = FindNamed(root["users"], user_name);
    if (!user_entry) {
      return Fail(fmt::format("users[{}]", user_name), "no such user");
    }
    const std::string uprefix = fmt::format("users[{}].user", user_name);
    YAML::Node user = (*user_entry)["user"];
    if (user && user.IsMap() && user["exec"]) {
      return ParseExec(user["exec"], uprefix + ".exec", user, config);
    }
    if (user && user.IsMap() && user["auth-provider"]) {
      return Fail(uprefix + ".auth-provider", "auth-provider plugins are not supported");
    }
    auto cert = DataOrFile(user, uprefix, "client-certificate");
    if (!cert) {
      return cert.error();
    }
    auto key = DataOrFile(user, uprefix, "client-key");
    if (!key) {
      return key.error();
    }
    if (cert->empty() != key->empty()) {
      return Fail(uprefix + (cert->empty() ? ".client-certificate" : ".client-key"),
                  "missing (a client certificate needs both certificate and key)");
    }
    config.client_cert_pem = std::move(*cert);
    config.client_key_pem = std::move(*key);
    config.bearer_token = Str(user, "token");
    std::string token_file = Str(user, "tokenFile");
    if (!token_file.empty()) {
      config.bearer_token_file = Resolve(token_file);
      auto probe = ReadFile(config.bearer_token_file, kSecretFile);
      if (!probe) {
        return Fail(
            uprefix + ".tokenFile",
            fmt::format("cannot read {}: {}", config.bearer_token_file, probe.error().message));
      }
    }
    if (!Str(user, "username").empty()) {
      return Fail(uprefix + ".username", "basic authentication is not supported");
    }
    return config;
  }

 private:
  // users[].user.exec: a credential plugin, alone (kubectl refuses it beside a token or a
  // client certificate too).
  Result<ApiServerConfig> ParseExec(const YAML::Node& exec, const std::string& prefix,
                                    const YAML::Node& user, ApiServerConfig config) const {
    for (const char* other : {"token", "tokenFile", "client-certificate", "client-certificate-data",
                              "username", "auth-provider"})
      if (user[other])
        return Fail(prefix, fmt::format("given beside {}: use one way to log in", other));
    ExecPlugin plugin;
    plugin.source = fmt::format("kubeconfig {}: {}", path_, prefix);
    plugin.api_version = Str(exec, "apiVersion");
    if (plugin.api_version != "client.authentication.k8s.io/v1" &&
        plugin.api_version != "client.authentication.k8s.io/v1beta1")
      return Fail(prefix + ".apiVersion",
                  fmt::format("'{}': expected client.authentication.k8s.io/v1 or /v1beta1",
                              plugin.api_version));
    std::string command = Str(exec, "command");
    if (command.empty()) return Fail(prefix + ".command", "missing");
    // As kubectl: a relative path with a slash is the kubeconfig's folder's; a bare name is
    // looked up in PATH.
    if (command.find('/') != std::string::npos)
      command = std::filesystem::path(Resolve(command)).lexically_normal().string();
    plugin.argv.push_back(command);
    if (const YAML::Node args = exec["args"]; args && !args.IsNull()) {
      if (!args.IsSequence()) return Fail(prefix + ".args", "expected a list of strings");
      for (const auto& a : args) plugin.argv.push_back(a.as<std::string>());
    }
    if (const YAML::Node env = exec["env"]; env && !env.IsNull()) {
      if (!env.IsSequence()) return Fail(prefix + ".env", "expected a list of {name, value}");
      for (const auto& e : env) {
        const std::string name = Str(e, "name");
        if (name.empty()) return Fail(prefix + ".env", "an entry without a name");
        plugin.env.emplace_back(name, Str(e, "value"));
      }
    }
    plugin.install_hint = Str(exec, "installHint");
    plugin.provide_cluster_info = Str(exec, "provideClusterInfo") == "true";
    const std::string mode = Str(exec, "interactiveMode");
    if (mode == "Always")
      return Fail(prefix + ".interactiveMode",
                  "Always: the plugin needs a terminal, and gpuledger runs it without one (use a "
                  "plugin mode that can log in unattended, or a token)");
    if (!mode.empty() && mode != "Never" && mode != "IfAvailable")
      return Fail(prefix + ".interactiveMode",
                  fmt::format("'{}': expected Never, IfAvailable or Always", mode));
    config.exec_credentials = std::make_shared<ExecCredentialCache>(
        std::move(plugin),
        ExecClusterInfo{config.server, config.ca_pem, config.insecure_skip_tls_verify});
    return config;
  }

  std::string path_;
  std::string base_dir_;
};

}  // namespace

Result<std::string> DecodeBase64(std::string_view text) {
  std::array<int, 256> table{};
  table.fill(-1);
  const std::string_view alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (std::size_t i = 0; i < alphabet.size(); ++i) {
    table[static_cast<unsigned char>(alphabet[i])] = static_cast<int>(i);
  }
  std::string out;
  out.reserve(text.size() * 3 / 4);
  unsigned buffer = 0;
  int bits = 0;
  bool padding = false;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
      continue;
    }
    if (c == '=') {
      padding = true;
      continue;
    }
    int v = table[static_cast<unsigned char>(c)];
    if (v < 0 || padding) {
      return InvalidArgument("base64: invalid character");
    }
    buffer = (buffer << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  if (bits >= 6) {
    return InvalidArgument("base64: truncated");
  }
  return out;
}

std::string EncodeBase64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t v = 0;
    for (std::size_t k = 0; k < 3; ++k)
      v = (v << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    for (std::size_t k = 0; k < 4; ++k)
      out.push_back(k <= n ? kAlphabet[(v >> (18 - 6 * k)) & 0x3F] : '=');
  }
  return out;
}

Result<ApiServerConfig> ParseKubeconfig(std::string_view yaml, const std::string& path,
                                        const std::string& context) {
  try {
    return KubeconfigParser(path).Parse(yaml, context);
  } catch (const YAML::Exception& e) {  // a field of an unexpected shape
    return InvalidArgument(fmt::format("kubeconfig {}: {}", path, e.what()));
  }
}

Result<ApiServerConfig> LoadKubeconfig(const std::string& path, const std::string& context) {
  auto content = ReadFile(path, kConfigFile);
  if (!content) {
    return InvalidArgument(fmt::format("kubeconfig {}: {}", path, content.error().message));
  }
  return ParseKubeconfig(*content, path, context);
}

Result<ApiServerConfig> LoadInClusterConfig(const std::string& root, std::string_view host,
                                            std::string_view port) {
  if (host.empty() || port.empty()) {
    return Unavailable(
        "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set (is this "
        "running in a pod?)");
  }
  const std::string dir = root + std::string(kServiceAccountDir);
  ApiServerConfig config;
  config.source = "in-cluster service account " + dir;
  // An IPv6 service address needs brackets in a URL.
  const bool ipv6 = host.find(':') != std::string_view::npos;
  config.server = fmt::format("https://{}{}{}:{}", ipv6 ? "[" : "", host, ipv6 ? "]" : "", port);
  auto ca = ReadFile(dir + "/ca.crt", kPemFile);
  if (!ca) {
    return IoError(fmt::format("in-cluster: {}/ca.crt: {}", dir, ca.error().message));
  }
  config.ca_pem = std::move(*ca);
  config.bearer_token_file = dir + "/token";
  auto token = ReadFile(config.bearer_token_file, kSecretFile);
  if (!token) {
    return IoError(
        fmt::format("in-cluster: {}: {}", config.bearer_token_file, token.error().message));
  }
  return config;
}

}  // namespace gpuledger::k8s
