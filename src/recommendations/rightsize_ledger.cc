#include "recommendations/rightsize_ledger.h"

#include <charconv>
#include <cmath>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "common/dense_id_map.h"
#include "ledger/reports.h"
#include "recommendations/workload_hours.h"
#include "report/window.h"

namespace gpuledger::recommendations {
namespace {

Result<double> ParseHeadroom(const std::string& text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v) || v < 1.0 ||
      v > 4.0)
    return InvalidArgument(fmt::format(
        "headroom: expected a factor from 1.0 to 4.0 above the memory peak (1.2 = 20% room), "
        "got '{}'",
        text));
  return v;
}

Result<rightsizing::Percentile> ParsePercentile(const std::string& text) {
  if (text == "p50") return rightsizing::Percentile::kP50;
  if (text == "p95") return rightsizing::Percentile::kP95;
  if (text == "p99") return rightsizing::Percentile::kP99;
  return InvalidArgument(fmt::format("percentile: expected p50, p95 or p99, got '{}'", text));
}

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
};

// What `hours` gathers of the days of [from, to), each one scan of `store`, oldest first.
Status GatherDays(store::LedgerStore& store, Micros from, Micros to, WorkloadHours& hours,
                  const SummaryOptions& options) {
  GatherScan scan(hours, options);
  while (from < to) {
    const Micros day_end = std::min(to, (from / kMicrosPerDay + 1) * kMicrosPerDay);
    if (Status s = store.Scan({from, day_end}, scan); !s.ok()) return s;
    from = day_end;
  }
  return Status::Ok();
}

// Every workload's figures over `window`, the ledger read a day at a time; with `open_more`, the
// later half of the days at once on a connection of its own (a thread each: the store's
// decoding is most of the time), appended to the first's.
Result<std::vector<GatheredWorkload>> Gather(store::LedgerStore& store, const TimeRange& window,
                                             const SummaryOptions& options,
                                             const store::StoreOpener& open_more) {
  WorkloadHours hours(options.compute_percentile);
  const Micros days = (window.to_us - window.from_us) / kMicrosPerDay;
  Micros split = window.to_us;
  std::unique_ptr<store::LedgerStore> other;
  if (open_more && days >= 2) {
    auto opened = open_more();
    if (opened) {
      other = std::move(*opened);
      split = (window.from_us / kMicrosPerDay + (days + 1) / 2) * kMicrosPerDay;
    }
  }
  WorkloadHours later(options.compute_percentile);
  Status later_read = Status::Ok();
  std::thread reader;
  if (other != nullptr)
    reader =
        std::thread([&] { later_read = GatherDays(*other, split, window.to_us, later, options); });
  const Status read = GatherDays(store, window.from_us, split, hours, options);
  if (reader.joinable()) reader.join();
  if (!read.ok()) return read.error();
  if (!later_read.ok()) return later_read.error();
  hours.Append(std::move(later));
  return hours.Finish();
}

}  // namespace

Result<RightsizeAnswer> ReadRightsizePlan(store::LedgerStore& store, ledger::ReadService* reads,
                                          const RightsizeQuery& query, const cost::Catalog& catalog,
                                          const store::StoreOpener& open_more) {
  auto headroom = ParseHeadroom(query.headroom);
  if (!headroom) return headroom.error();
  auto percentile = ParsePercentile(query.percentile);
  if (!percentile) return percentile.error();
  auto extent = store.Extent();
  if (!extent) return extent.error();
  auto window = report::ResolveWindow(query.window, *extent);
  if (!window) return window.error();

  RightsizeOptions options;
  options.summary.from_us = window->from_us;
  options.summary.to_us = window->to_us;
  options.summary.namespace_name = query.namespace_name;
  options.summary.compute_percentile = *percentile;
  options.summary.models_by_class = ModelsByClass(catalog);
  options.recommend.memory_headroom = *headroom;
  options.recommend.compute_percentile = *percentile;
  options.workload = query.workload;

  // What the ledger charged each workload and its utilization class: the report by controller,
  // under the allocation policy, as `report --by controller` answers it.
  ledger::ReportQuery by_controller;
  by_controller.window = *window;
  by_controller.group_by = {{report::Dimension::Kind::kController, ""}};
  by_controller.max_sum_bytes = ledger::kServerSumBytes;
  auto reports = reads != nullptr ? reads->Reports(store, by_controller)
                                  : ledger::ReadReports(store, by_controller);
  if (!reports) return reports.error();
  auto gathered = Gather(store, *window, options.summary, open_more);
  if (!gathered) return gathered.error();
  auto plan =
      PlanRightsizing(Summarize(std::move(*gathered), reports->front(), options.summary), options);
  if (!plan) return plan.error();
  return RightsizeAnswer{std::move(*plan), *window, *headroom, query.percentile};
}

}  // namespace gpuledger::recommendations
