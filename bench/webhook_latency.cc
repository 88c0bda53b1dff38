// Admission latency of the webhook as the API server sees it: the WebhookServer in this process
// on 127.0.0.1:0 with a throwaway certificate, AdmissionReviews of a realistic pod POSTed over
// verified TLS, (1) over one keep-alive connection, (2) over a few concurrent keep-alive
// connections, (3) with a new TLS connection per review. Prints p50 / p99 / max in ms and
// whether p99 < 10 ms (the API server's default timeout is 10 s; admission latency adds to every
// pod creation, so the webhook must be negligible).
//
//   build/bench/webhook_latency [REVIEWS=2000] [CONNECTIONS=4]

#include <fmt/format.h>
#include <httplib.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "test_tls/test_tls.h"
#include "webhook/webhook_server.h"

namespace {

using gpuledger::webhook::BackgroundWebhook;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// A training pod as a Deployment's controller creates it: two containers, a few dozen env
// vars, probes, volumes (about 3 KB of JSON; real reviews carry managedFields too).
std::string ReviewBody(int i) {
  json env = json::array();
  for (int k = 0; k < 30; ++k)
    env.push_back(
        {{"name", fmt::format("TRAIN_OPTION_{}", k)}, {"value", fmt::format("value-{}", k)}});
  if (i % 2 == 1) env.push_back({{"name", "NVIDIA_VISIBLE_DEVICES"}, {"value", "all"}});
  json trainer = {
      {"name", "trainer"},
      {"image", "nvcr.io/nvidia/pytorch:24.01-py3"},
      {"command", {"torchrun", "--nproc-per-node=1", "train.py"}},
      {"env", env},
      {"resources",
       {{"limits", {{"nvidia.com/gpu", "1"}, {"cpu", "8"}, {"memory", "64Gi"}}},
        {"requests", {{"cpu", "4"}, {"memory", "32Gi"}}}}},
      {"volumeMounts",
       {{{"name", "data"}, {"mountPath", "/data"}}, {{"name", "shm"}, {"mountPath", "/dev/shm"}}}},
      {"readinessProbe", {{"httpGet", {{"path", "/ready"}, {"port", 8080}}}}}};
  json sidecar = {{"name", "log-shipper"},
                  {"image", "fluent/fluent-bit:3.0"},
                  {"resources", {{"requests", {{"cpu", "100m"}, {"memory", "128Mi"}}}}},
                  {"securityContext", {{"privileged", false}, {"runAsNonRoot", true}}}};
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"generateName", "trainer-7d9f8c-"},
        {"namespace", "ml-team"},
        {"labels", {{"app", "trainer"}, {"team", "vision"}, {"pod-template-hash", "7d9f8c"}}},
        {"annotations", {{"kubectl.kubernetes.io/restartedAt", "2026-01-01T00:00:00Z"}}},
        {"ownerReferences",
         {{{"apiVersion", "apps/v1"},
           {"kind", "ReplicaSet"},
           {"name", "trainer-7d9f8c"},
           {"uid", "2f0c8d9e"},
           {"controller", true}}}}}},
      {"spec",
       {{"containers", {trainer, sidecar}},
        {"volumes",
         {{{"name", "data"}, {"persistentVolumeClaim", {{"claimName", "data"}}}},
          {{"name", "shm"}, {"emptyDir", {{"medium", "Memory"}}}}}},
        {"nodeSelector", {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}}},
        {"tolerations",
         {{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}}}}}};
  return json{
      {"apiVersion", "admission.k8s.io/v1"},
      {"kind", "AdmissionReview"},
      {"request",
       {{"uid", fmt::format("bench-{}", i)},
        {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
        {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
        {"operation", "CREATE"},
        {"namespace", "ml-team"},
        {"userInfo", {{"username", "system:serviceaccount:kube-system:replicaset-controller"}}},
        {"object", pod},
        {"dryRun", false}}}}
      .dump();
}

struct Stats {
  std::vector<double> ms;
  int failures = 0;
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t at = std::min(v.size() - 1, static_cast<std::size_t>(p * (v.size() - 1) + 0.5));
  return v[at];
}

std::unique_ptr<httplib::SSLClient> Client(int port, const std::string& ca) {
  auto c = std::make_unique<httplib::SSLClient>("127.0.0.1", port);
  c->set_ca_cert_path(ca.c_str());
  c->enable_server_certificate_verification(true);
  c->set_keep_alive(true);
  c->set_tcp_nodelay(true);  // as the API server's Go client does
  return c;
}

// `count` reviews over `client` (one keep-alive connection), or a new client per review.
void Send(int port, const std::string& ca, const std::vector<std::string>& bodies, int first,
          int count, bool new_connection_each, Stats& stats) {
  auto client = Client(port, ca);
  for (int i = first; i < first + count; ++i) {
    if (new_connection_each) client = Client(port, ca);
    const std::string& body = bodies[static_cast<std::size_t>(i) % bodies.size()];
    const auto start = Clock::now();
    auto res = client->Post("/validate", body, "application/json");
    const auto end = Clock::now();
    if (!res || res->status != 200) {
      ++stats.failures;
      continue;
    }
    stats.ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
  }
}

void Report(const char* what, int connections, const Stats& s, double seconds) {
  const double p99 = Percentile(s.ms, 0.99);
  fmt::print(
      "{:<34} {:>5} reviews  {:>2} conn  p50 {:6.3f} ms  p99 {:6.3f} ms  max {:7.3f} ms  "
      "{:6.0f}/s  failures {}  p99 < 10 ms: {}\n",
      what, s.ms.size(), connections, Percentile(s.ms, 0.5), p99,
      s.ms.empty() ? 0.0 : *std::max_element(s.ms.begin(), s.ms.end()), s.ms.size() / seconds,
      s.failures, p99 < 10.0 ? "yes" : "NO");
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);  // as the binary does (webhook_server.h)
  const int reviews = argc > 1 ? std::max(1, std::atoi(argv[1])) : 2000;
  const int connections = argc > 2 ? std::max(1, std::atoi(argv[2])) : 4;

  char dir_template[] = "/tmp/gpuledger-webhook-bench-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) return 1;
  const std::string dir = dir_template;
  auto certs = gpuledger::webhook::testing::MakeTestCertificates(dir);
  if (!certs) {
    fmt::print(stderr, "certificates: {}\n", certs.error().message);
    return 1;
  }
  auto webhook = BackgroundWebhook::Start(
      {"127.0.0.1:0", certs->cert_file, certs->key_file, gpuledger::guardrails::DefaultPolicy()});
  if (!webhook) {
    fmt::print(stderr, "webhook: {}\n", webhook.error().message);
    return 1;
  }
  const int port = (*webhook)->server().port();
  std::vector<std::string> bodies;
  for (int i = 0; i < 16; ++i) bodies.push_back(ReviewBody(i));
  fmt::print("webhook at {}; review body {} bytes; {} hardware threads\n", (*webhook)->Url(),
             bodies[0].size(), std::thread::hardware_concurrency());

  {  // warm-up: first handshake, allocations, page faults
    Stats warm;
    Send(port, certs->ca_file, bodies, 0, 50, false, warm);
  }
  int failures = 0;
  {
    Stats s;
    const auto start = Clock::now();
    Send(port, certs->ca_file, bodies, 0, reviews, false, s);
    Report("one keep-alive connection", 1, s,
           std::chrono::duration<double>(Clock::now() - start).count());
    failures += s.failures;
  }
  {
    std::vector<Stats> per(static_cast<std::size_t>(connections));
    std::vector<std::thread> threads;
    const auto start = Clock::now();
    for (int c = 0; c < connections; ++c) {
      threads.emplace_back([&, c] {
        Send(port, certs->ca_file, bodies, c * (reviews / connections), reviews / connections,
             false, per[static_cast<std::size_t>(c)]);
      });
    }
    for (auto& t : threads) t.join();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    Stats all;
    for (const Stats& s : per) {
      all.ms.insert(all.ms.end(), s.ms.begin(), s.ms.end());
      all.failures += s.failures;
    }
    Report("concurrent keep-alive connections", connections, all, seconds);
    failures += all.failures;
  }
  {
    Stats s;
    const int count = std::max(1, reviews / 10);
    const auto start = Clock::now();
    Send(port, certs->ca_file, bodies, 0, count, true, s);
    Report("new TLS connection per review", 1, s,
           std::chrono::duration<double>(Clock::now() - start).count());
    failures += s.failures;
  }
  webhook->reset();
  std::filesystem::remove_all(dir);
  return failures == 0 ? 0 : 1;
}
