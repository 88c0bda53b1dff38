#include "recommendations/rightsize_days.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/dense_id_map.h"
#include "http/gzip.h"
#include "model/reconciliation.h"

namespace gpuledger::recommendations {
namespace {

// Far above a day at 10,000 GPUs (about 2 MB before gzip), far below memory.
constexpr std::size_t kMaxDayBytes = std::size_t{1} << 30;

// The ledger's rows streamed by key into WorkloadHours: what is held is each workload's
// figures and the dictionaries' keys, never a row past its call.
class GatherScan final : public store::LedgerScan {
 public:
  GatherScan(WorkloadHours& hours, const SummaryOptions& options)
      : hours_(hours), options_(options) {}

  bool ByKey() const override { return true; }
  Status OnReconciliation(const Reconciliation&) override { return Status::Ok(); }
  Status OnDeviceHour(const DeviceHour&) override { return NotKeyed(); }
  Status OnUsage(const UsageRow&) override { return NotKeyed(); }
  Status OnGpuKey(std::int64_t, const GpuUuid&) override { return Status::Ok(); }
  Status OnContextKey(std::int64_t, const UsageRow&) override { return Status::Ok(); }
  Status OnPlacementKey(std::int64_t key, const DeviceHour& placement) override {
    placements_.Emplace(key).first = {hours_.ModelId(placement.gpu_model),
                                      hours_.ClassId(placement.pricing_class)};
    return Status::Ok();
  }
  Status OnConsumerKey(std::int64_t key, const ConsumerInfo& consumer) override {
    const std::string workload = WorkloadKeyOf(consumer, options_);
    workloads_.Emplace(key).first =
        workload.empty()
            ? Of{kNone, 0}
            : Of{hours_.Workload(workload, consumer.ref.namespace_name), hours_.Pod(consumer.ref)};
    return Status::Ok();
  }
  Status OnKeyedDeviceHour(const DeviceHour& figures, std::int64_t gpu_key,
                           std::int64_t placement_key) override {
    const Place* p = placements_.Find(placement_key);
    if (p == nullptr)
      return Internal(
          fmt::format("the ledger's scan named placement {} before its strings", placement_key));
    ++device_hours_;
    hours_.Device(figures.hour_us, gpu_key,
                  {figures.metered_us, figures.memory_total_bytes, p->model, p->pricing_class});
    return Status::Ok();
  }
  Status OnKeyedUsage(const UsageRow& figures, std::int64_t gpu_key, std::int64_t consumer_key,
                      std::int64_t) override {
    const Of* w = workloads_.Find(consumer_key);
    if (w == nullptr)
      return Internal(
          fmt::format("the ledger's scan named consumer {} before its strings", consumer_key));
    if (w->workload != kNone) hours_.Row(w->workload, w->pod, figures.hour_us, gpu_key, figures);
    return Status::Ok();
  }
  std::int64_t device_hours() const { return device_hours_; }

 private:
  static constexpr std::uint32_t kNone = UINT32_MAX;
  static Status NotKeyed() { return Internal("a scan by key was sent a row without keys"); }
  struct Place {
    std::uint32_t model = 0, pricing_class = 0;  // WorkloadHours' ids
  };
  struct Of {
    std::uint32_t workload = 0, pod = 0;
  };
  WorkloadHours& hours_;
  const SummaryOptions& options_;
  DenseIdMap<Place> placements_;
  DenseIdMap<Of> workloads_;  // consumer key -> its workload and pod
  std::int64_t device_hours_ = 0;
};

// The day the ledger keeps starting at `day_us`, read; nullopt when it keeps none, or bytes
// that do not read (damaged, or written by a build of the same format that erred): its rows
// are read instead.
Result<std::optional<WorkloadHours>> KeptDay(store::LedgerStore& store, Micros day_us) {
  auto kept = store.ReadDayRollup(day_us, RightsizeDayKind());
  if (!kept) return kept.error();
  if (!*kept) return std::optional<WorkloadHours>();
  auto bytes = http::Gunzip(**kept, kMaxDayBytes);
  if (!bytes) return std::optional<WorkloadHours>();
  auto day = WorkloadHours::Decode(*bytes);
  if (!day) return std::optional<WorkloadHours>();
  return std::optional<WorkloadHours>(std::move(*day));
}

bool WholeDay(const TimeRange& part) {
  return part.from_us % kMicrosPerDay == 0 && part.to_us - part.from_us == kMicrosPerDay;
}

}  // namespace

std::string RightsizeDayKind() { return fmt::format("rightsize {}", WorkloadHours::kFormat); }

Status GatherDays(store::LedgerStore& store, const TimeRange& range, const SummaryOptions& options,
                  WorkloadHours& hours) {
  GatherScan scan(hours, options);
  for (Micros from = range.from_us; from < range.to_us;) {
    const TimeRange part{from, std::min(range.to_us, DayStart(from) + kMicrosPerDay)};
    from = part.to_us;
    if (WholeDay(part)) {
      auto kept = KeptDay(store, part.from_us);
      if (!kept) return kept.error();
      if (*kept) {
        hours.Append(std::move(**kept), options.namespace_name);
        continue;
      }
    }
    if (Status s = store.Scan(part, scan); !s.ok()) return s;
  }
  return Status::Ok();
}

Result<int> KeepRightsizeDays(store::LedgerStore& store, const TimeRange& days,
                              const std::function<bool()>& stop) {
  const std::string kind = RightsizeDayKind();
  auto kept = store.KeptDays(kind, days);
  if (!kept) return kept.error();
  const SummaryOptions every_workload;
  int added = 0;
  for (Micros day = DayStart(days.from_us + kMicrosPerDay - 1);
       day + kMicrosPerDay <= days.to_us && !stop(); day += kMicrosPerDay) {
    if (std::binary_search(kept->begin(), kept->end(), day)) continue;
    // Read before the day: a write after it means the day may have changed, and is not kept.
    auto generation = store.Generation();
    if (!generation) return generation.error();
    WorkloadHours hours;
    GatherScan scan(hours, every_workload);
    if (Status s = store.Scan({day, day + kMicrosPerDay}, scan); !s.ok()) return s.error();
    if (scan.device_hours() == 0) continue;  // nothing recorded that day
    hours.Seal();
    auto written = store.WriteDayRollup(day, kind, *generation,
                                        http::Gzip(hours.Encode(), http::GzipLevel::kFast));
    if (!written) return written.error();
    if (*written) ++added;
  }
  return added;
}

}  // namespace gpuledger::recommendations
