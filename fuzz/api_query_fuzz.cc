// The REST API's query strings (every /api/v1 path with its window, aggregate, policy, idle,
// step, filter, ... parameters), from raw request bytes through the HTTP parser to the API over
// a small SQLite ledger: what any client that can reach the server sends.

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "http/request.h"
#include "model/ledger.h"
#include "server/api.h"
#include "store/ledger_store.h"

namespace {

using namespace gpuledger;

constexpr Micros kHour0 = 1'764'547'200LL * kMicrosPerSecond;  // 2025-12-01T00:00:00Z

// Two GPUs of one node over three hours, one shared by two pods, one idle: enough for every
// grouping, policy and idle handling to have something to split.
void WriteLedger(store::LedgerStore& store) {
  std::vector<LedgerHour> hours;
  for (int h = 0; h < 3; ++h)
    for (int g = 0; g < 2; ++g) {
      LedgerHour lh;
      DeviceHour& d = lh.device;
      d.hour_us = kHour0 + h * kMicrosPerHour;
      d.cluster = "fuzz";
      d.node = "node-a";
      d.gpu = GpuUuid("GPU-" + std::to_string(g));
      d.gpu_model = "H100-80GB";
      d.sharing = g == 0 ? SharingMode::kTimeSlicing : SharingMode::kExclusive;
      d.pricing_class = "on-demand";
      d.price_nanos = 4 * kNanosPerUnit;
      d.metered_us = kMicrosPerHour;
      d.busy_us = g == 0 ? kMicrosPerHour / 2 : 0;
      d.idle_us = d.metered_us - d.busy_us;
      d.unallocated_us = g == 0 ? 0 : kMicrosPerHour;
      d.memory_total_bytes = 80LL << 30;
      if (g == 0)
        for (const char* pod : {"train-1", "serve-1"}) {
          UsageRow u;
          u.hour_us = d.hour_us;
          u.gpu = d.gpu;
          u.node = d.node;
          u.gpu_model = d.gpu_model;
          u.sharing = d.sharing;
          u.consumer.ref = {pod[0] == 't' ? "research" : "web", pod, PodUid{pod}, "main"};
          u.consumer.owner_kind = "Deployment";
          u.consumer.owner_name = pod;
          u.consumer.labels = {{"team", pod[0] == 't' ? "ml" : "web"}};
          u.allocated_us = kMicrosPerHour / 2;
          u.compute_us = kMicrosPerHour / 4;
          u.memory_kib_s = 1 << 20;
          u.compute_quality = Quality::kMeasured;
          u.memory_quality = Quality::kMeasured;
          lh.usage.push_back(std::move(u));
        }
      hours.push_back(std::move(lh));
    }
  if (!store.WriteHours(hours).ok()) std::abort();
}

// A fresh ledger for this process, written once, removed at exit.
struct Ledger {
  Ledger()
      : path((std::filesystem::temp_directory_path() /
              ("gpuledger-fuzz-api-" + std::to_string(::getpid()) + ".db"))
                 .string()) {
    std::filesystem::remove(path);
    auto store = store::OpenSqliteLedger(path);
    if (!store) std::abort();
    WriteLedger(**store);
  }
  ~Ledger() {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
  }
  const std::string path;
};

// One Api for the whole run, destroyed at exit (its background thread joined there) before
// its ledger is removed: statics go in the reverse of their construction.
server::Api& TheApi() {
  static const Ledger ledger;
  static server::Api api([] { return store::OpenSqliteLedger(ledger.path); }, "t0ken");
  return api;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  http::ParseOutcome parsed = http::ParseRequest(bytes, {});
  if (parsed.kind != http::ParseOutcome::Kind::kComplete) return 0;
  const server::Params params(parsed.request.query.begin(), parsed.request.query.end());
  const std::string& given = parsed.request.Header("authorization");
  const server::ApiResponse answer =
      TheApi().Handle(parsed.request.path, params, given.empty() ? "Bearer t0ken" : given);
  if (answer.status < 200 || answer.status > 599) std::abort();
  return 0;
}
