#include "recommendations/window_summary.h"

#include <algorithm>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "common/rounding.h"
#include "cost/gpu_speed.h"
#include "model/compute_band.h"
#include "report/report.h"

namespace gpuledger::recommendations {
namespace {

// Whether the controller of a workload key ("namespace/Kind/name") scales by replicas.
bool ScalesByReplicas(std::string_view key) {
  const std::size_t a = key.find('/');
  const std::size_t b = a == std::string_view::npos ? a : key.find('/', a + 1);
  if (b == std::string_view::npos) return false;
  const std::string_view kind = key.substr(a + 1, b - a - 1);
  return kind == "Deployment" || kind == "StatefulSet" || kind == "ReplicaSet";
}

const std::vector<report::Dimension>& ByController() {
  static const std::vector<report::Dimension> by{{report::Dimension::Kind::kController, ""}};
  return by;
}

}  // namespace

rightsizing::GpuSpeed SpeedOf(std::string_view gpu_model) {
  const cost::GpuDatasheet sheet = cost::GpuModelSpeed(gpu_model);
  return {sheet.memory_bandwidth_gbs, sheet.fp16_dense_tflops};
}

std::string WorkloadKeyOf(const ConsumerInfo& consumer, const SummaryOptions& o) {
  if (!o.namespace_name.empty() && consumer.ref.namespace_name != o.namespace_name) return "";
  return report::WorkloadOf(consumer);
}

std::vector<WorkloadSummary> Summarize(std::vector<GatheredWorkload> gathered,
                                       const report::Report& by_controller,
                                       const SummaryOptions& o) {
  std::map<std::string, const report::Row*> row_of;
  for (const report::Row& r : by_controller.rows) row_of[r.key] = &r;
  std::vector<WorkloadSummary> out;
  out.reserve(gathered.size());
  for (GatheredWorkload& g : gathered) {
    WorkloadSummary s;
    rightsizing::WorkloadUsage& w = s.usage;
    w.workload = g.key;
    s.namespace_name = g.namespace_name;
    w.gpu_model = g.gpu_model;
    s.pricing_class = g.pricing_class;
    w.pool = s.pricing_class;
    w.gpu_memory_bytes = g.gpu_memory_bytes;
    if (const std::vector<Micros>& held = g.demand.hours; !held.empty()) {
      const auto hours = static_cast<std::int64_t>(held.size());
      w.hours_observed = static_cast<double>(hours);
      const std::int64_t span_hours = (held.back() - held.front()) / kMicrosPerHour + 1;
      w.coverage = static_cast<double>(hours) / static_cast<double>(span_hours);
      w.gpus_held_ppd =
          RoundHalfUp(g.allocated_us * kWholeGpu, static_cast<__int128>(hours) * kMicrosPerHour);
    }
    w.gpus_used = g.gpus_used;
    w.replica_per_gpu = ScalesByReplicas(g.key) && g.max_gpus_per_pod <= 1;
    w.compute_p50 = g.compute_p50;
    w.compute_p95 = g.compute_p95;
    w.compute_p99 = g.compute_p99;
    s.compute_samples = g.compute_samples;
    s.compute_basis =
        g.compute_from_histograms
            ? fmt::format("histogram: {} samples", g.compute_samples)
            : fmt::format(
                  "hourly means of {} GPU-hours (no histograms in the ledger: bursts under an "
                  "hour are averaged)",
                  g.compute_samples);
    w.memory_peak_bytes = g.memory_peak_bytes;
    w.memory_p99_bytes = g.memory_p99_bytes;
    s.memory_basis = g.memory_p99_from_histograms
                         ? "peak: the agent's hour peaks; p99: the memory histogram's bucket"
                         : "peak: the agent's hour peaks; p99: of the hourly peaks";

    // Its own price per GPU-hour, and the class.
    if (auto r = row_of.find(g.key); r != row_of.end()) {
      const report::Figures& f = r->second->figures;
      if (f.allocated_gpu_us > 0) {
        w.hourly_price_nanos =
            RoundHalfUp(static_cast<__int128>(f.cost_nanos) * kMicrosPerHour, f.allocated_gpu_us);
        w.compute_of_allocation =
            static_cast<double>(f.compute_gpu_us) / static_cast<double>(f.allocated_gpu_us);
      }
      // How far its compute may be off: an estimate's rules' measured band, none when a rule
      // was never measured or nothing but the grant was known; a measured figure (its own
      // counters: a MIG instance's GPM activity, an exclusive GPU) its rules' band or none.
      w.compute_rule = f.compute_rule;
      const std::optional<double> band = MeasuredComputeBandOfRules(f.compute_rule);
      w.compute_band = f.quality == Quality::kEstimated   ? band
                       : f.quality == Quality::kAllocated ? std::nullopt
                                                          : std::optional(band.value_or(0.0));
      s.utilization = r->second->utilization;
    }
    if (auto m = o.models_by_class.find(s.pricing_class); m != o.models_by_class.end())
      w.other_models = m->second;
    w.speed = SpeedOf(w.gpu_model);
    w.bound = s.utilization.cls == utilization::Class::kMemoryBound
                  ? rightsizing::Bound::kMemoryBandwidth
                  : rightsizing::Bound::kUnknown;
    s.demand = std::move(g.demand);
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::vector<WorkloadSummary>> SummarizeWorkloads(std::span<const DeviceHour> devices,
                                                        std::span<const UsageRow> usage,
                                                        const SummaryOptions& o) {
  // The report first: a window whose sums do not fit is its error.
  auto rep = report::BuildReport(devices, usage, ByController(), cost::Policy{},
                                 cost::IdleHandling{}, o.from_us, o.to_us);
  if (!rep) return rep.error();

  // Hour by hour, as a reader of the ledger gathers: the hour's devices (GPUs numbered in UUID
  // order), then its rows.
  std::map<std::string, std::int64_t> gpu_ids;
  std::map<Micros, std::vector<const DeviceHour*>> devices_by_hour;
  for (const DeviceHour& d : devices)
    if (d.hour_us >= o.from_us && d.hour_us < o.to_us) {
      gpu_ids.emplace(d.gpu.value, 0);
      devices_by_hour[d.hour_us].push_back(&d);
    }
  std::int64_t next_id = 0;
  for (auto& [uuid, id] : gpu_ids) id = next_id++;
  std::map<Micros, std::vector<const UsageRow*>> rows_by_hour;
  for (const UsageRow& u : usage)
    if (u.hour_us >= o.from_us && u.hour_us < o.to_us) rows_by_hour[u.hour_us].push_back(&u);

  WorkloadHours hours;
  for (const auto& [hour, hour_devices] : devices_by_hour) {
    for (const DeviceHour* d : hour_devices)
      hours.Device(hour, gpu_ids.at(d->gpu.value),
                   {d->metered_us, d->memory_total_bytes, hours.ModelId(d->gpu_model),
                    hours.ClassId(d->pricing_class)});
    auto rows = rows_by_hour.find(hour);
    if (rows == rows_by_hour.end()) continue;
    for (const UsageRow* u : rows->second) {
      const std::string key = WorkloadKeyOf(u->consumer, o);
      auto gpu = gpu_ids.find(u->gpu.value);
      if (key.empty() || gpu == gpu_ids.end()) continue;
      hours.Row(hours.Workload(key, u->consumer.ref.namespace_name), hours.Pod(u->consumer.ref),
                hour, gpu->second, *u);
    }
  }
  return Summarize(hours.Finish(o.compute_percentile), *rep, o);
}

}  // namespace gpuledger::recommendations
