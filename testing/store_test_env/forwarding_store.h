#pragma once
// A ledger store that hands every call to a real one: a test overrides the call it wants to
// watch or hold (a write landing during a scan, a scan held at a gate) and the rest behaves as
// the real store.

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "store/ledger_store.h"

namespace gpuledger::store::testing {

class ForwardingStore : public LedgerStore {
 public:
  explicit ForwardingStore(LedgerStore& real) : real_(real) {}

  Status WriteHours(std::span<const LedgerHour> h) override { return real_.WriteHours(h); }
  Result<std::vector<DeviceHour>> ReadDeviceHours(const TimeRange& r) override {
    return real_.ReadDeviceHours(r);
  }
  Result<std::vector<UsageRow>> ReadUsage(const TimeRange& r) override {
    return real_.ReadUsage(r);
  }
  Status Scan(const TimeRange& r, LedgerScan& scan) override { return real_.Scan(r, scan); }
  Result<std::int64_t> Generation() override { return real_.Generation(); }
  Result<std::optional<LedgerChanges>> ChangesSince(std::int64_t g) override {
    return real_.ChangesSince(g);
  }
  Result<TimeRange> Extent() override { return real_.Extent(); }
  Status PutMeta(const std::string& k, const std::string& v) override {
    return real_.PutMeta(k, v);
  }
  Result<std::map<std::string, std::string>> ReadMeta() override { return real_.ReadMeta(); }
  Status UpdateMeta(const std::map<std::string, std::optional<std::string>>& c) override {
    return real_.UpdateMeta(c);
  }
  Status WriteReconciliations(std::span<const Reconciliation> r) override {
    return real_.WriteReconciliations(r);
  }
  Result<std::vector<Reconciliation>> ReadReconciliations(const TimeRange& r) override {
    return real_.ReadReconciliations(r);
  }
  Result<std::optional<std::string>> ReadDayRollup(Micros day, std::string_view kind) override {
    return real_.ReadDayRollup(day, kind);
  }
  Result<std::vector<Micros>> KeptDays(std::string_view kind, const TimeRange& r) override {
    return real_.KeptDays(kind, r);
  }
  Result<bool> WriteDayRollup(Micros day, std::string_view kind, std::int64_t g,
                              std::string_view body) override {
    return real_.WriteDayRollup(day, kind, g, body);
  }

 private:
  LedgerStore& real_;
};

}  // namespace gpuledger::store::testing
