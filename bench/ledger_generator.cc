// A large ledger written straight into a store, for the read-path benchmarks (issue 32): a
// cluster of 8-GPU nodes over whole days, every sharing mode, pods that come and go, teams as a
// namespace label. It writes what the server's ingestion would have written (each device-hour
// conserves: Σ allocated + unallocated == metered, busy == Σ compute + unattributed), without a
// week-long simulation: 10,000 GPUs x 30 days is 7.2 million device-hours.
//
// Usage: ledger_generator --db SPEC [--gpus 10000] [--days 30] [--seed 1]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "common/time_util.h"
#include "model/ledger.h"
#include "store/ledger_store.h"

namespace gpuledger {
namespace {

// splitmix64: fast, seedable, the same sequence on every platform.
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t Next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  int Below(int n) { return static_cast<int>(Next() % static_cast<std::uint64_t>(n)); }
  double Unit() { return static_cast<double>(Next() >> 11) / static_cast<double>(1ULL << 53); }

 private:
  std::uint64_t state_;
};

struct Model {
  const char* name;
  Bytes memory;
  Nanos hourly;
};
constexpr Model kModels[] = {{"NVIDIA H100 80GB HBM3", 80LL << 30, 4'100'000'000},
                             {"NVIDIA A100-SXM4-80GB", 80LL << 30, 2'750'000'000},
                             {"NVIDIA L4", 24LL << 30, 800'000'000},
                             {"NVIDIA H200", 141LL << 30, 5'200'000'000}};

// How many consumers a GPU of each mode holds at once, and the rule that splits its time.
struct Mode {
  SharingMode mode;
  int slots;
  Quality quality;
  const char* rule;
};
// Half the nodes exclusive (most clusters), the rest one mode each.
constexpr Mode kModes[] = {{SharingMode::kExclusive, 1, Quality::kMeasured, ""},
                           {SharingMode::kExclusive, 1, Quality::kMeasured, ""},
                           {SharingMode::kExclusive, 1, Quality::kMeasured, ""},
                           {SharingMode::kExclusive, 1, Quality::kMeasured, ""},
                           {SharingMode::kExclusive, 1, Quality::kMeasured, ""},
                           {SharingMode::kTimeSlicing, 4, Quality::kEstimated, "process-samples"},
                           {SharingMode::kMps, 4, Quality::kEstimated, "mps-thread-share"},
                           {SharingMode::kMig, 7, Quality::kMeasured, "mig-instance"},
                           {SharingMode::kFractional, 2, Quality::kEstimated, "process-samples"},
                           {SharingMode::kDra, 1, Quality::kMeasured, ""}};

constexpr int kGpusPerNode = 8;
constexpr int kTeams = 40;
constexpr int kNamespaces = 120;
const char* const kOwnerKinds[] = {"Deployment", "Job", "StatefulSet", "CronJob"};

// One consumer slot of a GPU: the pod in it now and until which hour.
struct Slot {
  bool busy = false;
  int until_hour = 0;
  ConsumerInfo consumer;
  double compute_share = 0;  // of the slot's allocated time
  double memory_share = 0;   // of the slot's memory
};

struct Gpu {
  std::string node;
  GpuUuid uuid;
  const Model* model = nullptr;
  const Mode* mode = nullptr;
  std::vector<Slot> slots;
};

class Generator {
 public:
  Generator(int gpus, std::uint64_t seed) : random_(seed) {
    for (int ns = 0; ns < kNamespaces; ++ns)
      namespace_labels_.push_back({{"team", fmt::format("team-{:02}", ns % kTeams)},
                                   {"cost-center", fmt::format("cc-{}", ns % 7)}});
    for (int g = 0; g < gpus; ++g) {
      const int node = g / kGpusPerNode;
      if (g % kGpusPerNode == 0) {
        node_model_ = &kModels[random_.Below(std::size(kModels))];
        node_mode_ = &kModes[random_.Below(std::size(kModes))];
      }
      Gpu gpu;
      gpu.node = fmt::format("gpu-node-{:04}", node);
      gpu.uuid = GpuUuid(fmt::format("GPU-{:08x}-bench-{:06}", random_.Next() >> 32, g));
      gpu.model = node_model_;
      gpu.mode = node_mode_;
      gpu.slots.resize(static_cast<std::size_t>(node_mode_->slots));
      gpus_.push_back(std::move(gpu));
    }
  }

  // Every GPU's ledger hour `hour` (hours since the start, at `hour_us`).
  std::vector<LedgerHour> Hour(int hour, Micros hour_us) {
    std::vector<LedgerHour> out;
    out.reserve(gpus_.size());
    for (Gpu& gpu : gpus_) out.push_back(DeviceHourOf(gpu, hour, hour_us));
    return out;
  }

 private:
  void Churn(Slot& slot, int hour) {
    if (slot.busy && hour < slot.until_hour) return;
    // A slot stays empty a while one time in four; a pod lives 1 to 72 hours.
    slot.busy = random_.Below(4) != 0;
    slot.until_hour = hour + 1 + random_.Below(72);
    if (!slot.busy) return;
    const int ns = random_.Below(kNamespaces);
    const int workload = random_.Below(12);
    const std::uint64_t id = random_.Next();
    ConsumerInfo& c = slot.consumer;
    c.ref.namespace_name = fmt::format("ns-{:03}", ns);
    c.owner_kind = kOwnerKinds[workload % std::size(kOwnerKinds)];
    c.owner_name = fmt::format("work-{}", workload);
    c.ref.pod = fmt::format("{}-{:010x}", c.owner_name, id >> 24);
    c.ref.pod_uid = PodUid(fmt::format("{:016x}-{:04x}", id, pods_++ & 0xffff));
    c.ref.container = workload % 3 == 0 ? "trainer" : "main";
    c.labels = {{"app", c.owner_name}};
    c.namespace_labels = namespace_labels_[static_cast<std::size_t>(ns)];
    slot.compute_share = random_.Unit();
    slot.memory_share = 0.1 + 0.9 * random_.Unit();
  }

  LedgerHour DeviceHourOf(Gpu& gpu, int hour, Micros hour_us) {
    LedgerHour h;
    DeviceHour& d = h.device;
    d.hour_us = hour_us;
    d.cluster = "bench";
    d.node = gpu.node;
    d.gpu = gpu.uuid;
    d.gpu_model = gpu.model->name;
    d.sharing = gpu.mode->mode;
    d.pricing_class = "on-demand";
    d.memory_total_bytes = gpu.model->memory;
    // One device-hour in two hundred had the agent down for ten minutes.
    d.metered_us = random_.Below(200) == 0 ? 50 * 60 * kMicrosPerSecond : kMicrosPerHour;
    d.unmetered_us = kMicrosPerHour - d.metered_us;
    d.price_nanos = gpu.model->hourly / kMicrosPerHour * d.metered_us;
    const auto slots = static_cast<GpuMicros>(gpu.slots.size());
    const GpuMicros slot_us = d.metered_us / slots;
    const Bytes slot_memory = d.memory_total_bytes / slots;
    GpuMicros allocated = 0;
    GpuMicros compute = 0;
    int index = 0;
    for (Slot& slot : gpu.slots) {
      Churn(slot, hour);
      ++index;
      if (!slot.busy) continue;
      UsageRow u;
      u.hour_us = hour_us;
      u.gpu = gpu.uuid;
      u.consumer = slot.consumer;
      u.node = gpu.node;
      u.gpu_model = gpu.model->name;
      u.sharing = gpu.mode->mode;
      u.device_id = slots == 1 ? gpu.uuid.str() : fmt::format("{}::{}", gpu.uuid.str(), index);
      u.allocated_us = slot_us;
      u.compute_us = static_cast<GpuMicros>(static_cast<double>(slot_us) * slot.compute_share);
      u.peak_memory_bytes =
          static_cast<Bytes>(static_cast<double>(slot_memory) * slot.memory_share);
      u.memory_kib_s = u.peak_memory_bytes / 1024 * (d.metered_us / kMicrosPerSecond) * 9 / 10;
      u.energy_mj = 250 * u.compute_us / 1000;  // 250 W while busy
      u.compute_quality = gpu.mode->quality;
      u.memory_quality = Quality::kMeasured;
      u.compute_rule = gpu.mode->rule;
      if (gpu.mode->mode == SharingMode::kExclusive) {
        u.activity = Activity{u.compute_us * 7 / 10, u.compute_us * 4 / 10, u.compute_us / 5,
                              u.compute_us / 3};
        u.activity_quality = Quality::kMeasured;
        u.activity_rule = "dcgm-profiling";
      }
      allocated += u.allocated_us;
      compute += u.compute_us;
      h.usage.push_back(std::move(u));
    }
    d.unallocated_us = d.metered_us - allocated;
    d.unattributed_us = compute > 0 ? compute / 100 : 0;
    d.busy_us = compute + d.unattributed_us;
    d.idle_us = d.metered_us - d.busy_us;
    d.unattributed_memory_kib_s = 512LL * 1024 * (d.metered_us / kMicrosPerSecond);
    d.idle_energy_mj = 60 * d.idle_us / 1000;  // 60 W idle
    d.unattributed_energy_mj = 250 * d.unattributed_us / 1000;
    d.energy_mj = d.idle_energy_mj + d.unattributed_energy_mj;
    for (const UsageRow& u : h.usage) d.energy_mj += u.energy_mj;
    return h;
  }

  Random random_;
  std::vector<Gpu> gpus_;
  std::vector<std::map<std::string, std::string>> namespace_labels_;
  const Model* node_model_ = nullptr;
  const Mode* node_mode_ = nullptr;
  std::uint64_t pods_ = 0;
};

}  // namespace
}  // namespace gpuledger

int main(int argc, char** argv) {
  using namespace gpuledger;
  CLI::App app{"write a large synthetic ledger for the read-path benchmarks"};
  std::string db;
  int gpus = 10000;
  int days = 30;
  std::uint64_t seed = 1;
  std::string start = "2026-11-01T00:00:00Z";
  app.add_option("--db", db, "ledger: a path, sqlite:PATH or postgres://URL")->required();
  app.add_option("--gpus", gpus, "GPUs (8 per node)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1'000'000));
  app.add_option("--days", days, "whole UTC days")
      ->capture_default_str()
      ->check(CLI::Range(1, 3660));
  app.add_option("--seed", seed, "random seed")->capture_default_str();
  app.add_option("--start", start, "first hour, RFC 3339")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  auto start_us = ParseRfc3339(start);
  if (!start_us || *start_us % (24 * kMicrosPerHour) != 0) {
    fmt::print(stderr, "error: --start '{}': expected a UTC midnight in RFC 3339\n", start);
    return 2;
  }
  auto store = store::OpenLedger(db);
  if (!store) {
    fmt::print(stderr, "error: {}\n", store.error().message);
    return 1;
  }
  if (Status s = (*store)->PutMeta("cluster", "bench"); !s) {
    fmt::print(stderr, "error: {}\n", s.error().message);
    return 1;
  }
  Generator generator(gpus, seed);
  const auto t0 = std::chrono::steady_clock::now();
  std::int64_t device_hours = 0;
  std::int64_t usage_rows = 0;
  for (int hour = 0; hour < days * 24; ++hour) {
    const std::vector<LedgerHour> hours =
        generator.Hour(hour, *start_us + static_cast<Micros>(hour) * kMicrosPerHour);
    if (Status s = (*store)->WriteHours(hours); !s) {
      fmt::print(stderr, "error: hour {}: {}\n", hour, s.error().message);
      return 1;
    }
    device_hours += static_cast<std::int64_t>(hours.size());
    for (const LedgerHour& h : hours) usage_rows += static_cast<std::int64_t>(h.usage.size());
    if (hour % 24 == 23)
      fmt::print(stderr, "day {}/{}: {} device-hours, {} usage rows, {:.0f} s\n", hour / 24 + 1,
                 days, device_hours, usage_rows,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  fmt::print("{} GPUs x {} days: {} device-hours, {} usage rows\n", gpus, days, device_hours,
             usage_rows);
  return 0;
}
