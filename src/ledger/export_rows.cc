#include "ledger/export_rows.h"

#include <algorithm>

#include "model/reconciliation.h"
#include "report/report.h"

namespace gpuledger::ledger {

namespace {

// The platform namespace's labels (idle handling namespace:): those of its last row in
// [from_us, to_us) of `s` with some; nullptr when none.
const LabelMap* PlatformLabels(const Snapshot& s, const billing::ExportRequest& request,
                               Micros from_us, Micros to_us) {
  if (request.idle.kind != cost::IdleHandling::Kind::kNamespace) return nullptr;
  const auto [first, last] = s.DeviceRange(from_us, to_us);
  const UsageColumns& u = s.usage();
  for (std::uint32_t i = s.first_usage()[last]; i > s.first_usage()[first]; --i) {
    const std::uint32_t c = u.consumer[i - 1];
    const LabelMap& labels = s.labels(c).namespace_labels;
    if (s.consumers()[c].ref.namespace_name == request.idle.namespace_name && !labels.empty())
      return &labels;
  }
  return nullptr;
}

// The tokens the window's engines served (token hours), by charge period and the workload of
// the pod that served them (its consumers in `s`: the pod's containers, or the one the rows
// name); a pod `s` does not know is left out, as it has no row to carry them.
Result<billing::WorkloadTokens> WorkloadTokensOf(store::LedgerStore& store, const Snapshot& s,
                                                 const billing::ExportRequest& request) {
  auto hours = store.ReadTokenHours({request.from_us, request.to_us});
  if (!hours) return hours.error();
  billing::WorkloadTokens out;
  if (hours->empty()) return out;
  std::map<std::pair<std::string, std::string>, const ConsumerInfo*> pods;  // (ns, pod)
  for (const ConsumerInfo& c : s.consumers())
    pods.emplace(std::pair{c.ref.namespace_name, c.ref.pod}, &c);
  for (const TokenHour& t : *hours) {
    auto it = pods.find({t.consumer.namespace_name, t.consumer.pod});
    if (it == pods.end()) continue;
    const Micros period = request.period == billing::ChargePeriod::kHour
                              ? HourStart(t.hour_us)
                              : DayStart(t.hour_us);
    out[{period, report::WorkloadOf(*it->second)}] += t.input_tokens + t.output_tokens;
  }
  return out;
}

// Writes each day's rows as it comes.
class ExportByDay final : public DayReader {
 public:
  ExportByDay(store::LedgerStore& store, const billing::ExportRequest& request,
              ExportFormat format, const LabelMap* platform_labels, ExportSink& sink)
      : store_(store),
        request_(request),
        format_(format),
        platform_labels_(platform_labels),
        sink_(sink) {}

  void Begin() override {
    status_ = begun_ ? sink_.Restart() : Status::Ok();
    begun_ = true;
    if (status_.ok())
      status_ = sink_.Write(format_ == ExportFormat::kFocus ? billing::FocusCsvHeader()
                                                            : billing::PlainCsvHeader());
  }

  Status OnDay(const Snapshot& s, const TimeRange& part) override {
    if (!status_.ok()) return status_;
    billing::ExportRequest day = request_;
    day.from_us = part.from_us;
    day.to_us = part.to_us;
    auto rows = BuildExportRows(s, day, platform_labels_);
    if (!rows) return rows.error();
    auto tokens = WorkloadTokensOf(store_, s, day);
    if (!tokens) return tokens.error();
    billing::AddTokens(*rows, *tokens);
    return sink_.Write(format_ == ExportFormat::kFocus ? billing::RenderFocusRows(request_, *rows)
                                                       : billing::RenderPlainRows(*rows));
  }

  const Status& status() const { return status_; }

 private:
  store::LedgerStore& store_;
  const billing::ExportRequest& request_;
  const ExportFormat format_;
  const LabelMap* platform_labels_;
  ExportSink& sink_;
  bool begun_ = false;
  Status status_ = Status::Ok();
};

}  // namespace

Result<std::vector<billing::ExportRow>> BuildExportRows(const Snapshot& s,
                                                        const billing::ExportRequest& request) {
  return BuildExportRows(s, request, PlatformLabels(s, request, request.from_us, request.to_us));
}

Result<std::vector<billing::ExportRow>> BuildExportRows(const Snapshot& s,
                                                        const billing::ExportRequest& request,
                                                        const LabelMap* platform_labels) {
  const auto [first, last] = s.DeviceRange(request.from_us, request.to_us);
  const UsageColumns& u = s.usage();
  billing::ExportBuilder builder(request);
  DeviceHour modelled;
  DeviceHour priced;
  std::vector<billing::ExportConsumer> consumers;
  std::vector<cost::ConsumerWeights> weights;
  for (std::size_t d = first; d < last; ++d) {
    const Placement& p = s.placements()[s.devices()[d].placement];
    s.FillDeviceNumbers(d, priced);
    priced.cluster = p.cluster;
    priced.node = p.node;
    priced.gpu = p.gpu;
    priced.gpu_model = p.gpu_model;
    priced.pricing_class = p.pricing_class;
    modelled = priced;
    const Snapshot::Reconciled* reconciled = s.ReconciledOf(d);
    if (reconciled != nullptr) modelled.price_nanos = reconciled->modelled_nanos;
    const std::uint32_t row_first = s.first_usage()[d];
    const std::uint32_t row_count = s.first_usage()[d + 1] - row_first;
    weights.resize(row_count);
    for (std::uint32_t k = 0; k < row_count; ++k) weights[k] = u.figures[row_first + k].weights;
    consumers.clear();
    for (std::uint32_t k = 0; k < row_count; ++k) {
      const std::uint32_t c = u.consumer[row_first + k];
      const ConsumerLabels labels = s.labels(c);
      consumers.push_back({&s.consumers()[c], &labels.labels, &labels.namespace_labels,
                           weights[k].allocated_us, weights[k].compute_us});
    }
    builder.AddDeviceHour(
        modelled, priced,
        reconciled != nullptr ? &s.reconciliations()[reconciled->reconciliation] : nullptr,
        consumers, weights, platform_labels);
  }
  return builder.Finish();
}

Status WriteExport(store::LedgerStore& store, ReadService& reads,
                   const billing::ExportRequest& request, ExportFormat format, ExportSink& sink) {
  // The platform namespace's labels of the window's last row that has some: its days from the
  // last back, until one has them.
  LabelMap platform;
  bool found = false;
  for (Micros to = request.to_us;
       request.idle.kind == cost::IdleHandling::Kind::kNamespace && to > request.from_us;) {
    const Micros from = std::max(request.from_us, DayStart(to - 1));
    auto snapshot = reads.SnapshotFor(store, {from, to});
    if (!snapshot) return snapshot.status();
    if (const LabelMap* labels = PlatformLabels(**snapshot, request, from, to)) {
      platform = *labels;
      found = true;
      break;
    }
    to = from;
  }
  ExportByDay writer(store, request, format, found ? &platform : nullptr, sink);
  if (Status s = reads.EachDay(store, {request.from_us, request.to_us}, writer); !s.ok()) return s;
  return writer.status();
}

}  // namespace gpuledger::ledger
