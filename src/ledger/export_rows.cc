#include "ledger/export_rows.h"

namespace gpuledger::ledger {

Result<std::vector<billing::ExportRow>> BuildExportRows(const Snapshot& s,
                                                        const billing::ExportRequest& request) {
  const auto [first, last] = s.DeviceRange(request.from_us, request.to_us);
  const UsageColumns& u = s.usage();
  // The platform namespace's labels: those of its last row in the window with some (as
  // billing::BuildExportRows takes them from the window's rows, the last one winning).
  const LabelMap* platform_labels = nullptr;
  if (request.idle.kind == cost::IdleHandling::Kind::kNamespace)
    for (std::uint32_t i = s.first_usage()[last]; i > s.first_usage()[first]; --i) {
      const std::uint32_t c = u.consumer[i - 1];
      const LabelMap& labels = s.labels(c).namespace_labels;
      if (s.consumers()[c].ref.namespace_name == request.idle.namespace_name && !labels.empty()) {
        platform_labels = &labels;
        break;
      }
    }

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

}  // namespace gpuledger::ledger
