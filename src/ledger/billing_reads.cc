#include "ledger/billing_reads.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "billing/reconciled_prices.h"
#include "common/time_util.h"
#include "ledger/export_rows.h"
#include "ledger/report_request.h"
#include "report/window.h"
#include "store/ledger_identity.h"

namespace gpuledger::ledger {

Result<std::vector<DeviceHour>> ReadPricedDeviceHours(store::LedgerStore& store,
                                                      const TimeRange& range) {
  auto recs = store.ReadReconciliations({billing::WholeDays(range.from_us, range.to_us).from_us,
                                         billing::WholeDays(range.from_us, range.to_us).to_us});
  if (!recs) return recs.error();
  if (recs->empty()) return store.ReadDeviceHours(range);
  TimeRange days = billing::WholeDays(range.from_us, range.to_us);
  auto devices = store.ReadDeviceHours({days.from_us, days.to_us});
  if (!devices) return devices.error();
  std::vector<DeviceHour> priced = billing::ApplyReconciliations(*devices, *recs);
  std::erase_if(priced, [&](const DeviceHour& d) {
    return d.hour_us < range.from_us || d.hour_us >= range.to_us;
  });
  return priced;
}

namespace {

// The export held as a string, refused past a size.
class StringSink final : public ledger::ExportSink {
 public:
  StringSink(const billing::ExportRequest& request, std::size_t max_bytes)
      : request_(request), max_bytes_(max_bytes) {}
  Status Restart() override {
    text_.clear();
    return Status::Ok();
  }
  Status Write(std::string_view text) override {
    if (max_bytes_ > 0 && text_.size() + text.size() > max_bytes_)
      return InvalidArgument(fmt::format(
          "window: the export of {} to {} passes {}, more than one request is answered with; "
          "ask a shorter window (a day at a time), or run `gpuledger export --db` beside the "
          "ledger",
          FormatRfc3339(request_.from_us), FormatRfc3339(request_.to_us),
          max_bytes_ % (1 << 20) == 0 ? fmt::format("{} MiB", max_bytes_ >> 20)
                                      : fmt::format("{} bytes", max_bytes_)));
    text_ += text;
    return Status::Ok();
  }
  std::string Take() && { return std::move(text_); }

 private:
  const billing::ExportRequest& request_;
  const std::size_t max_bytes_;
  std::string text_;
};

}  // namespace

Result<ResolvedExport> ResolveExport(store::LedgerStore& store, const ExportOptions& o) {
  ResolvedExport out;
  billing::ExportRequest& request = out.request;
  auto period = billing::ParseChargePeriod(o.period);
  if (!period) return period.error();
  request.period = *period;
  if (Status s = ledger::ParseCostRules(o.policy, o.idle, request.policy, request.idle); !s.ok())
    return s.error();
  if (o.format != "focus" && o.format != "csv")
    return InvalidArgument(fmt::format("format '{}': expected focus or csv", o.format));
  out.format = o.format == "focus" ? ledger::ExportFormat::kFocus : ledger::ExportFormat::kPlain;
  request.team_label = o.team_label;

  auto scope = ledger::ResolveReadScope(store, o.window);
  if (!scope) return scope.error();
  request.from_us = scope->window.from_us;
  request.to_us = scope->window.to_us;
  request.currency = scope->currency;
  request.cluster = scope->cluster;
  return out;
}

Status ExportFromStore(store::LedgerStore& store, ledger::ReadService& reads,
                       const ExportOptions& options, ledger::ExportSink& sink) {
  auto resolved = ResolveExport(store, options);
  if (!resolved) return resolved.error();
  return ledger::WriteExport(store, reads, resolved->request, resolved->format, sink);
}

Result<std::string> ExportFromStore(store::LedgerStore& store, ledger::ReadService& reads,
                                    const ExportOptions& options, std::size_t max_bytes) {
  auto resolved = ResolveExport(store, options);
  if (!resolved) return resolved.error();
  StringSink sink(resolved->request, max_bytes);
  if (Status s = ledger::WriteExport(store, reads, resolved->request, resolved->format, sink);
      !s.ok())
    return s.error();
  return std::move(sink).Take();
}

Result<ReconcileResult> ImportBill(store::LedgerStore& store, std::string_view content,
                                   const std::string& bill_file, Micros imported_at_us) {
  auto lines = billing::ParseFocusBill(content, bill_file);
  if (!lines) return lines.error();
  ReconcileResult result;
  if (lines->empty()) return result;
  Micros from = lines->front().start_us, to = lines->front().end_us;
  for (const billing::BillLine& l : *lines) {
    from = std::min(from, l.start_us);
    to = std::max(to, l.end_us);
  }
  TimeRange days = billing::WholeDays(from, to);
  auto devices = store.ReadDeviceHours({days.from_us, days.to_us});
  if (!devices) return devices.error();
  auto meta = store.ReadMeta();
  if (!meta) return meta.error();
  std::string currency;
  if (auto it = meta->find("currency"); it != meta->end()) currency = it->second;
  auto plan = billing::PlanReconciliation(*lines, *devices, currency, bill_file, imported_at_us);
  if (!plan) return plan.error();
  if (Status s = store.WriteReconciliations(plan->node_days); !s) return s;
  result.plan = std::move(*plan);
  return result;
}

}  // namespace gpuledger::ledger
