#include "webhook/webhook_server.h"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <array>
#include <atomic>

#include "http/listen.h"
#include "http/server.h"
#include "io/file_util.h"
#include "prometheus/exposition_writer.h"
#include "prometheus/metric_table.h"

namespace gpuledger::webhook {
namespace {

// An AdmissionReview holds the object and, on UPDATE, the old one: Kubernetes objects are at
// most ~1.5 MiB each.
constexpr std::size_t kMaxReviewBytes = 8 << 20;
// The API server times a webhook out after timeoutSeconds (10 s by default, 30 s at most): a
// review that has not arrived whole in 10 s is of no use to it.
constexpr Micros kIoTimeoutUs = 10 * kMicrosPerSecond;
// The API server keeps a few connections per replica alive; a TLS session holds ~50 KiB.
constexpr std::size_t kMaxConnections = 256;

// The oldest OpenSSL error on this thread, cleared with the rest of the queue.
std::string OpenSslError() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "no detail";
  std::array<char, 256> text{};
  ERR_error_string_n(code, text.data(), text.size());
  return text.data();
}

using BioPtr = std::unique_ptr<BIO, decltype(&BIO_free)>;

BioPtr MemoryBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
}

// Puts the certificate chain (leaf first) and its key into `ctx`, and the protocol floor.
// Every failure names the file.
Status SetUpTls(SSL_CTX& ctx, const std::string& cert_file, const std::string& key_file) {
  auto cert_pem = ReadFile(cert_file, kPemFile);
  if (!cert_pem) return InvalidArgument("TLS certificate " + cert_pem.error().message);
  auto key_pem = ReadFile(key_file, kPemFile);
  if (!key_pem) return InvalidArgument("TLS key " + key_pem.error().message);

  BioPtr certs = MemoryBio(*cert_pem);
  X509* leaf = PEM_read_bio_X509(certs.get(), nullptr, nullptr, nullptr);
  if (leaf == nullptr || SSL_CTX_use_certificate(&ctx, leaf) != 1) {
    X509_free(leaf);
    return InvalidArgument(
        fmt::format("TLS certificate {}: not a PEM certificate ({})", cert_file, OpenSslError()));
  }
  X509_free(leaf);  // the context holds its own reference
  // The rest of the file is the chain up to (not necessarily including) the CA.
  while (X509* link = PEM_read_bio_X509(certs.get(), nullptr, nullptr, nullptr)) {
    if (SSL_CTX_add0_chain_cert(&ctx, link) != 1) {
      X509_free(link);
      return InvalidArgument(
          fmt::format("TLS certificate {}: bad chain certificate ({})", cert_file, OpenSslError()));
    }
  }
  ERR_clear_error();  // the loop ends on "no start line"

  BioPtr key_bio = MemoryBio(*key_pem);
  // An empty passphrase callback: an encrypted key fails here instead of prompting on a tty.
  auto no_passphrase = [](char*, int, int, void*) { return 0; };
  EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio.get(), nullptr, no_passphrase, nullptr);
  if (key == nullptr) {
    return InvalidArgument(fmt::format("TLS key {}: not an unencrypted PEM private key ({})",
                                       key_file, OpenSslError()));
  }
  // SSL_CTX_use_PrivateKey compares the key with the certificate already set.
  const bool used = SSL_CTX_use_PrivateKey(&ctx, key) == 1;
  EVP_PKEY_free(key);
  if (!used || SSL_CTX_check_private_key(&ctx) != 1) {
    return InvalidArgument(fmt::format("TLS key {} is not the key of certificate {} ({})", key_file,
                                       cert_file, OpenSslError()));
  }
  // TLS 1.2 at least (the API server's own floor); no compression (CRIME), no renegotiation.
  if (SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION) != 1)
    return Internal("TLS: cannot set the minimum protocol version: " + OpenSslError());
  SSL_CTX_set_options(
      &ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  return Status::Ok();
}

}  // namespace

struct WebhookServer::Impl {
  explicit Impl(const WebhookServerConfig& c) : policy(c.policy) {}

  void Count(const ReviewAnswer& answer) {
    requests[static_cast<std::size_t>(answer.verdict)].fetch_add(1, std::memory_order_relaxed);
    for (FindingKind kind : answer.decision.fired)
      findings[static_cast<std::size_t>(kind)].fetch_add(1, std::memory_order_relaxed);
  }

  // A snapshot of the counters: every verdict and admission kind, zeros included, so a rate()
  // has its series from the first scrape.
  std::string Metrics() const {
    using prometheus::kWebhookFindingsTotal;
    using prometheus::kWebhookRequestsTotal;
    prometheus::ExpositionWriter w;
    w.Family(kWebhookRequestsTotal);
    for (Verdict v : {Verdict::kAllowed, Verdict::kWarned, Verdict::kDenied, Verdict::kInvalid}) {
      w.Sample(kWebhookRequestsTotal.name, {{"verdict", ToString(v)}},
               static_cast<double>(requests[static_cast<std::size_t>(v)].load()));
    }
    w.Family(kWebhookFindingsTotal);
    for (FindingKind kind :
         {FindingKind::kPodSetsVisibleDevices, FindingKind::kPrivilegedWithoutRequest}) {
      w.Sample(kWebhookFindingsTotal.name, {{"kind", gpuledger::ToString(kind)}},
               static_cast<double>(findings[static_cast<std::size_t>(kind)].load()));
    }
    return w.Take();
  }

  http::Response Handle(const http::Request& req) {
    if (req.path == "/mutate") {
      if (req.method != "POST") {
        http::Response r = http::TextResponse(405, "/mutate answers POST");
        r.headers.emplace_back("Allow", "POST");
        return r;
      }
      ReviewAnswer answer = AnswerMutation(req.body, policy);
      http::Response r;
      r.status = answer.http_status;
      r.content_type = answer.content_type;
      r.body = std::move(answer.body);
      return r;
    }
    const bool review = req.path == "/validate";
    const bool read = req.path == "/healthz" || req.path == "/metrics";
    if (!review && !read)
      return http::TextResponse(404, fmt::format("no endpoint {}: the webhook serves /validate, "
                                                 "/mutate, /healthz and /metrics",
                                                 req.path));
    const char* allowed = review ? "POST" : "GET, HEAD";
    if (review ? req.method != "POST" : (req.method != "GET" && req.method != "HEAD")) {
      http::Response r = http::TextResponse(405, fmt::format("{} answers {}", req.path, allowed));
      r.headers.emplace_back("Allow", allowed);
      return r;
    }
    http::Response r;
    if (review) {
      ReviewAnswer answer = AnswerReview(req.body, policy);
      Count(answer);
      r.status = answer.http_status;
      r.content_type = answer.content_type;
      r.body = std::move(answer.body);
    } else if (req.path == "/healthz") {
      r = http::TextResponse(200, "ok");
    } else {
      r.content_type = "text/plain; version=0.0.4";
      r.body = Metrics();
    }
    return r;
  }

  const guardrails::Policy policy;
  std::unique_ptr<http::Server> https;
  std::array<std::atomic<std::uint64_t>, 4> requests{};  // by Verdict
  std::array<std::atomic<std::uint64_t>, kFindingKinds> findings{};
};

WebhookServer::WebhookServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WebhookServer::~WebhookServer() { Stop(); }

Result<std::unique_ptr<WebhookServer>> WebhookServer::Bind(WebhookServerConfig config) {
  auto addr = http::ParseListen(config.listen);
  if (!addr) {
    return InvalidArgument(fmt::format(
        "--webhook-listen '{}': expected HOST:PORT with a port 0-65535, e.g. 0.0.0.0:8443",
        config.listen));
  }
  if (config.cert_file.empty() || config.key_file.empty())
    return InvalidArgument("the webhook needs a TLS certificate and its key");
  std::shared_ptr<SSL_CTX> tls(SSL_CTX_new(TLS_server_method()), &SSL_CTX_free);
  if (!tls) return Internal("TLS: the server context could not be created: " + OpenSslError());
  if (Status s = SetUpTls(*tls, config.cert_file, config.key_file); !s.ok()) return s.error();

  auto impl = std::make_unique<Impl>(config);
  http::ServerOptions options;
  options.flag = "--webhook-listen";
  options.tls = std::move(tls);
  options.probe_paths = {"/healthz"};
  options.max_connections = kMaxConnections;
  options.request_timeout_us = kIoTimeoutUs;
  options.write_timeout_us = kIoTimeoutUs;
  options.limits.max_body_bytes = kMaxReviewBytes;
  // Only the reviews carry bodies, and the bodies held at once are bounded: 130 stalled 8 MiB
  // bodies took the webhook to 1.1 GB (issue 58). The API server sends a review at a time per
  // connection, a few KiB to a few MiB each.
  options.limits.body_paths = {"/validate", "/mutate"};
  options.max_pending_body_bytes = 4 * kMaxReviewBytes;
  auto https = http::Server::Bind(
      config.listen, [self = impl.get()](const http::Request& req) { return self->Handle(req); },
      std::move(options));
  if (!https) return https.error();
  impl->https = std::move(*https);
  return std::unique_ptr<WebhookServer>(new WebhookServer(std::move(impl)));
}

int WebhookServer::port() const { return impl_->https->port(); }
const std::string& WebhookServer::host() const { return impl_->https->host(); }
void WebhookServer::Serve() { impl_->https->Serve(); }

void WebhookServer::Stop() {
  if (impl_) impl_->https->Stop();
}

std::uint64_t WebhookServer::Requests(Verdict verdict) const {
  return impl_->requests[static_cast<std::size_t>(verdict)].load(std::memory_order_relaxed);
}

std::string WebhookServer::Metrics() const { return impl_->Metrics(); }

Result<std::unique_ptr<BackgroundWebhook>> BackgroundWebhook::Start(WebhookServerConfig config) {
  auto server = WebhookServer::Bind(std::move(config));
  if (!server) return server.error();
  return std::unique_ptr<BackgroundWebhook>(new BackgroundWebhook(std::move(*server)));
}

BackgroundWebhook::BackgroundWebhook(std::unique_ptr<WebhookServer> server)
    : server_(std::move(server)), thread_([s = server_.get()] { s->Serve(); }) {}

BackgroundWebhook::~BackgroundWebhook() {
  server_->Stop();
  thread_.join();
}

std::string BackgroundWebhook::Url() const {
  const std::string& host = server_->host();
  const bool any = host.empty() || host == "0.0.0.0" || host == "::";
  const std::string shown = any                                   ? "127.0.0.1"
                            : host.find(':') != std::string::npos ? "[" + host + "]"
                                                                  : host;
  return fmt::format("https://{}:{}/validate", shown, server_->port());
}

}  // namespace gpuledger::webhook
