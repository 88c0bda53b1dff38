#include "server/api_export.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <utility>

#include "ledger/billing_reads.h"
#include "ledger/export_rows.h"
#include "server/api_params.h"

namespace gpuledger::server {
namespace {

// What a client takes at once: a day of the export at 10,000 GPUs is about 32 MB.
constexpr std::size_t kPartBytes = 1 << 20;

// An export's text sent as it is written, a part at a time.
class StreamSink final : public ledger::ExportSink {
 public:
  explicit StreamSink(const http::SendPart& send) : send_(send) {}

  // Nothing sent can be taken back: the client is told the body is incomplete and asks again.
  Status Restart() override {
    if (!sent_) return Status::Ok();
    return Unavailable(
        "the ledger changed under days of the export already sent; the answer was cut: ask again");
  }
  Status Write(std::string_view text) override {
    while (!text.empty()) {
      const std::string_view part = text.substr(0, kPartBytes);
      sent_ = true;
      if (!send_(part)) return Unavailable("the client went away");
      text.remove_prefix(part.size());
    }
    return Status::Ok();
  }

 private:
  const http::SendPart& send_;
  bool sent_ = false;
};

}  // namespace

ApiResponse ExportFocus(ConnectionPool::Lease store, ledger::ReadService& reads, const Params& p) {
  if (auto u = UnknownParam(p, {"window", "period", "policy", "idle"}); !u.empty())
    return JsonError(400, fmt::format("unknown parameter '{}' (window, period, policy, idle)", u));
  ledger::ExportOptions o;
  o.window = ParamOr(p, "window", o.window);
  o.period = ParamOr(p, "period", o.period);
  o.policy = ParamOr(p, "policy", o.policy);
  o.idle = ParamOr(p, "idle", o.idle);
  o.format = "focus";
  auto resolved = ledger::ResolveExport(*store, o);
  if (!resolved) return ParameterError(resolved.error(), {"window", "period", "policy", "idle"});
  ApiResponse r{200, "text/csv; charset=utf-8", ""};
  r.stream = [store = std::make_shared<ConnectionPool::Lease>(std::move(store)), &reads,
              request = std::move(*resolved)](const http::SendPart& send) {
    StreamSink sink(send);
    Status written = ledger::WriteExport(**store, reads, request.request, request.format, sink);
    if (!written.ok())
      std::cerr << fmt::format("error: /api/v1/export/focus: {}\n", written.error().message);
    return written.ok();
  };
  return r;
}

}  // namespace gpuledger::server
