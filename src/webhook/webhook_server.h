#pragma once
// The validating admission webhook's HTTPS listener (docs/webhook.md):
//   POST /validate  an AdmissionReview v1 in, its answer out (webhook/admission_review.h)
//   POST /mutate    the same in; opted-in pods get the kernel-time tracer injected (issue 31)
//   GET  /healthz   "ok"
//   GET  /metrics   the counters below, Prometheus text
// TLS 1.2 at least (the API server speaks 1.2 and 1.3). The certificate and key are read once,
// at Bind: a rotated certificate takes a restart.
//
// Served by http::Server with TLS: handshakes and reads run on its event loop under its
// deadlines, so slow or stalled clients cannot hold the reviews' workers or /healthz.
//
// Thread-safety: reviews are answered concurrently by the server's workers; the policy is
// immutable after Bind and the counters are atomic, so Metrics() may be called from any thread.
// The process must ignore SIGPIPE (the gpuledger binary does): TLS writes to a peer that has
// gone would otherwise end it.

#include <memory>
#include <string>
#include <thread>

#include "common/result.h"
#include "guardrails/policy.h"
#include "webhook/admission_review.h"

namespace gpuledger::webhook {

struct WebhookServerConfig {
  std::string listen = "0.0.0.0:8443";  // host:port; port 0 picks a free one
  std::string cert_file;                // PEM certificate chain, the server's first
  std::string key_file;                 // PEM private key of that certificate
  guardrails::Policy policy;
};

class WebhookServer {
 public:
  // Loads the certificate and key and binds. kInvalidArgument naming the file for a missing,
  // unreadable or non-PEM certificate or key, or a key that is not the certificate's;
  // kInvalidArgument naming --webhook-listen when the address cannot be bound.
  static Result<std::unique_ptr<WebhookServer>> Bind(WebhookServerConfig config);
  ~WebhookServer();
  WebhookServer(const WebhookServer&) = delete;
  WebhookServer& operator=(const WebhookServer&) = delete;

  int port() const;
  const std::string& host() const;
  void Serve();  // blocks until Stop()
  void Stop();

  // gpuledger_webhook_requests_total{verdict} and gpuledger_webhook_findings_total{kind}.
  std::string Metrics() const;
  std::uint64_t Requests(Verdict verdict) const;

 private:
  struct Impl;
  explicit WebhookServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A WebhookServer serving on its own thread from Start until destroyed: the webhook beside
// another component (the API) with guaranteed teardown (style rule 15).
class BackgroundWebhook {
 public:
  static Result<std::unique_ptr<BackgroundWebhook>> Start(WebhookServerConfig config);
  ~BackgroundWebhook();  // stops the server and joins its thread
  BackgroundWebhook(const BackgroundWebhook&) = delete;
  BackgroundWebhook& operator=(const BackgroundWebhook&) = delete;

  WebhookServer& server() { return *server_; }
  // "https://127.0.0.1:8443/validate" (a wildcard host shown as 127.0.0.1).
  std::string Url() const;

 private:
  explicit BackgroundWebhook(std::unique_ptr<WebhookServer> server);
  std::unique_ptr<WebhookServer> server_;
  std::thread thread_;
};

}  // namespace gpuledger::webhook
