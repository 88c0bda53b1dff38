#include "k8s/exec_credential.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common/time_util.h"
#include "io/subprocess.h"
#include "k8s/kube_config.h"

namespace gpuledger::k8s {
namespace {

constexpr Micros kRefreshBeforeExpiryUs = 10 * kMicrosPerSecond;

// The last line or so of a plugin's stderr, for an error message.
std::string Tail(const std::string& text) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  if (t.size() > 300) t = "..." + t.substr(t.size() - 300);
  return t;
}

}  // namespace

std::string ExecInfoJson(const ExecPlugin& plugin, const ExecClusterInfo& cluster) {
  nlohmann::json spec = {{"interactive", false}};
  if (plugin.provide_cluster_info) {
    nlohmann::json c = {{"server", cluster.server}};
    if (!cluster.ca_pem.empty()) c["certificate-authority-data"] = EncodeBase64(cluster.ca_pem);
    if (cluster.insecure_skip_tls_verify) c["insecure-skip-tls-verify"] = true;
    spec["cluster"] = std::move(c);
  }
  return nlohmann::json{
      {"apiVersion", plugin.api_version}, {"kind", "ExecCredential"}, {"spec", std::move(spec)}}
      .dump();
}

Result<ExecCredential> ParseExecCredential(std::string_view json, const ExecPlugin& plugin) {
  auto fail = [&](const std::string& what) {
    return InvalidArgument(fmt::format("{}: the plugin's answer {}", plugin.source, what));
  };
  const nlohmann::json doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return fail("is not a JSON object");
  const std::string api_version = doc.value("apiVersion", "");
  if (api_version != plugin.api_version)
    return fail(fmt::format("has apiVersion '{}', the kubeconfig asked for '{}'", api_version,
                            plugin.api_version));
  if (doc.value("kind", "") != "ExecCredential") return fail("is not kind ExecCredential");
  const auto status = doc.find("status");
  if (status == doc.end() || !status->is_object()) return fail("has no status");
  auto text = [&](const char* key) {
    auto it = status->find(key);
    return it != status->end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  ExecCredential c;
  c.token = text("token");
  c.client_cert_pem = text("clientCertificateData");
  c.client_key_pem = text("clientKeyData");
  if (c.client_cert_pem.empty() != c.client_key_pem.empty())
    return fail("has a client certificate without its key, or a key without its certificate");
  if (c.token.empty() && c.client_cert_pem.empty())
    return fail("has neither status.token nor status.clientCertificateData");
  if (const std::string expiry = text("expirationTimestamp"); !expiry.empty()) {
    auto at = ParseRfc3339(expiry);
    if (!at)
      return fail(fmt::format("has expirationTimestamp '{}': {}", expiry, at.error().message));
    c.expires_unix_us = *at;
  }
  return c;
}

Result<ExecCredential> RunExecPlugin(const ExecPlugin& plugin, const ExecClusterInfo& cluster,
                                     std::chrono::milliseconds timeout) {
  SubprocessRequest request;
  request.argv = plugin.argv;
  request.env = plugin.env;
  request.env.emplace_back("KUBERNETES_EXEC_INFO", ExecInfoJson(plugin, cluster));
  request.timeout = timeout;
  auto run = RunSubprocess(request);
  if (!run) {
    std::string message = fmt::format("{}: {}", plugin.source, run.error().message);
    if (run.error().code == ErrorCode::kNotFound && !plugin.install_hint.empty())
      message += "\n" + plugin.install_hint;
    return Error{run.error().code, message};
  }
  if (run->exit_code != 0)
    return Unavailable(fmt::format("{}: {} exited with status {}{}{}", plugin.source,
                                   plugin.argv.front(), run->exit_code,
                                   run->err.empty() ? "" : ": ", Tail(run->err)));
  return ParseExecCredential(run->out, plugin);
}

ExecCredentialCache::ExecCredentialCache(ExecPlugin plugin, ExecClusterInfo cluster,
                                         const Clock* clock, std::chrono::milliseconds timeout)
    : plugin_(std::move(plugin)),
      cluster_(std::move(cluster)),
      timeout_(timeout),
      clock_(clock != nullptr ? *clock : TheSystemClock()) {}

Result<ExecCredential> ExecCredentialCache::Get() {
  std::lock_guard lock(mu_);
  if (kept_ && (!kept_->expires_unix_us ||
                *kept_->expires_unix_us - clock_.Now().wall_us > kRefreshBeforeExpiryUs))
    return *kept_;
  kept_.reset();
  ++runs_;
  auto fresh = RunExecPlugin(plugin_, cluster_, timeout_);
  if (!fresh) return fresh.error();
  kept_ = *fresh;
  return fresh;
}

void ExecCredentialCache::Invalidate() {
  std::lock_guard lock(mu_);
  kept_.reset();
}

int ExecCredentialCache::runs() const {
  std::lock_guard lock(mu_);
  return runs_;
}

}  // namespace gpuledger::k8s
