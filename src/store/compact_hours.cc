#include "store/compact_hours.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "store/hour_record.h"
#include "store/row_codec.h"

namespace gpuledger::store {
namespace {

// A key's id, from the cache or else the table (remembered for next time).
Result<std::int64_t> IdOf(HourTables& tables, DimensionCache& cache, Dimension dimension,
                          const DimensionKey& key) {
  if (auto id = cache.Find(dimension, key)) return *id;
  auto id = tables.Intern(dimension, key);
  if (!id) return id;
  cache.Remember(dimension, key, *id);
  return *id;
}

// The order reads return a device-hour's rows in (the order of schema 7's key).
bool ReadOrder(const UsageRow* a, const UsageRow* b) {
  const ConsumerRef& x = a->consumer.ref;
  const ConsumerRef& y = b->consumer.ref;
  return std::tie(x.namespace_name, x.pod, x.container, x.pod_uid.value) <
         std::tie(y.namespace_name, y.pod, y.container, y.pod_uid.value);
}

// Decodes stored hours an hour at a time: ids the cache lacks are looked up together, then
// the hour's device-hours go out in GPU UUID order, then (unless only device-hours are
// wanted) their usage rows.
class HourDecoder {
 public:
  HourDecoder(HourTables& tables, DimensionCache& cache, LedgerScan& scan,
              std::string_view errors_name, bool usage)
      : tables_(tables), cache_(cache), scan_(scan), errors_name_(errors_name), usage_(usage) {}

  Status Add(const StoredHour& row) {
    if (!hour_.empty() && hour_.front().stored.hour != row.hour) {
      if (Status s = Flush(); !s) return s;
    }
    Decoded& d = hour_.emplace_back();
    d.stored = row;
    d.device.hour_us = row.hour * kMicrosPerHour;
    if (std::string what; !DecodeHourRecord(row.record, d.device, d.usage, &what)) {
      return Internal(fmt::format("{}: hours row (hour_us {}, gpu id {}): {}", errors_name_,
                                  d.device.hour_us, row.gpu, what));
    }
    return Status::Ok();
  }

  // Sends the buffered hour.
  Status Flush() {
    if (hour_.empty()) return Status::Ok();
    if (Status s = LearnMissing(); !s) return s;
    for (Decoded& d : hour_) {
      d.device.gpu = cache_.Gpu(d.stored.gpu);
      ApplyPlacement(cache_.Placement(d.stored.placement), d.device);
    }
    std::sort(hour_.begin(), hour_.end(), [](const Decoded& a, const Decoded& b) {
      return a.device.gpu.value < b.device.gpu.value;
    });
    for (const Decoded& d : hour_)
      if (Status s = scan_.OnDeviceHour(d.device); !s) return s;
    if (usage_)
      if (Status s = SendRows(); !s) return s;
    hour_.clear();
    return Status::Ok();
  }

  // The hour's usage rows, device by device.
  Status SendRows() {
    for (const Decoded& d : hour_) {
      for (const UsageFigures& f : d.usage) {
        row_.hour_us = d.device.hour_us;
        row_.gpu = d.device.gpu;
        const ConsumerInfo& c = cache_.Consumer(f.consumer);
        row_.consumer.ref = c.ref;
        row_.consumer.owner_kind = c.owner_kind;
        row_.consumer.owner_name = c.owner_name;
        ApplyContext(cache_.Context(f.context), row_);
        ApplyFigures(f, row_);
        if (Status s = scan_.OnUsage(row_); !s) return s;
        consumers_.insert(f.consumer);
      }
    }
    return Status::Ok();
  }

  // The labels of every consumer sent.
  Status Labels() {
    std::set<PodKey> pods;
    std::set<std::string> namespaces;
    for (std::int64_t id : consumers_) {
      const ConsumerRef& c = cache_.Consumer(id).ref;
      pods.emplace(c.namespace_name, c.pod, c.pod_uid.str());
      namespaces.insert(c.namespace_name);
    }
    const std::vector<PodKey> pod_list(pods.begin(), pods.end());
    if (Status s = tables_.PodLabels(pod_list, scan_); !s) return s;
    const std::vector<std::string> namespace_list(namespaces.begin(), namespaces.end());
    return tables_.NamespaceLabels(namespace_list, scan_);
  }

 private:
  struct Decoded {
    StoredHour stored;
    DeviceHour device;
    std::vector<UsageFigures> usage;
  };

  Status LearnMissing() {
    std::map<Dimension, std::set<std::int64_t>> missing;
    auto need = [&](Dimension dimension, std::int64_t id) {
      if (!cache_.Has(dimension, id)) missing[dimension].insert(id);
    };
    for (const Decoded& d : hour_) {
      need(Dimension::kGpu, d.stored.gpu);
      need(Dimension::kPlacement, d.stored.placement);
      if (!usage_) continue;
      for (const UsageFigures& f : d.usage) {
        need(Dimension::kConsumer, f.consumer);
        need(Dimension::kContext, f.context);
      }
    }
    for (const auto& [missing_dimension, ids] : missing) {
      const Dimension dimension = missing_dimension;  // a binding no lambda may capture (C++17)
      const std::vector<std::int64_t> wanted(ids.begin(), ids.end());
      Status looked = tables_.Lookup(
          dimension, wanted, [&](std::int64_t id, const DimensionKey& key) -> Status {
            if (Status s = cache_.Learn(dimension, id, key); !s)
              return Internal(fmt::format("{}: {}", errors_name_, s.error().message));
            return Status::Ok();
          });
      if (!looked) return looked;
      for (std::int64_t id : wanted) {
        if (!cache_.Has(dimension, id)) {
          return Internal(fmt::format("{}: an hours row names {} id {}, which is not there",
                                      errors_name_, TableOf(dimension).table, id));
        }
      }
    }
    return Status::Ok();
  }

  HourTables& tables_;
  DimensionCache& cache_;
  LedgerScan& scan_;
  std::string_view errors_name_;
  bool usage_;  // false: device-hours only (their rows' strings are not looked up or copied)
  std::vector<Decoded> hour_;
  UsageRow row_;  // reused: its strings keep their capacity from row to row
  std::unordered_set<std::int64_t> consumers_;  // ids of the rows sent
};

// Keeps what a scan sends (ReadDeviceHours, ReadUsage).
class Collector final : public LedgerScan {
 public:
  std::vector<DeviceHour> devices;
  std::vector<UsageRow> usage;
  LabelTables labels;

  Status OnReconciliation(const Reconciliation&) override { return Status::Ok(); }
  Status OnPodLabel(const std::string& ns, const std::string& pod, const std::string& uid,
                    const std::string& key, const std::string& value) override {
    labels.AddPod(ns, pod, uid, key, value);
    return Status::Ok();
  }
  Status OnNamespaceLabel(const std::string& ns, const std::string& key,
                          const std::string& value) override {
    labels.AddNamespace(ns, key, value);
    return Status::Ok();
  }
  Status OnDeviceHour(const DeviceHour& d) override {
    devices.push_back(d);
    return Status::Ok();
  }
  Status OnUsage(const UsageRow& u) override {
    usage.push_back(u);
    return Status::Ok();
  }
};

}  // namespace

std::string CompactTablesSql(const SqlDialect& sql) {
  std::string out;
  for (Dimension dimension : kDimensions) {
    const DimensionTable& table = TableOf(dimension);
    out += fmt::format("CREATE TABLE {} (\n  id {}", table.table, sql.dictionary_id);
    for (std::string_view column : table.columns)
      out += fmt::format(",\n  {} {} NOT NULL", column, sql.text);
    out +=
        fmt::format(",\n  UNIQUE ({})\n){};\n", fmt::join(table.columns, ", "), sql.table_options);
  }
  // One row per (hour, GPU): its key is the only index, and every read is a range of it.
  out += fmt::format(
      "CREATE TABLE hours (\n  hour {0} NOT NULL,\n  gpu {0} NOT NULL,\n  placement {0} NOT "
      "NULL,\n  record {1} NOT NULL,\n  PRIMARY KEY (hour, gpu)\n){2};\n",
      sql.small_integer, sql.bytes, sql.hours_options);
  return out;
}

std::string FindIdSql(const SqlDialect& sql, Dimension dimension) {
  const DimensionTable& table = TableOf(dimension);
  std::string where;
  for (std::size_t i = 0; i < table.columns.size(); ++i)
    where +=
        fmt::format("{}{} = {}{}", i == 0 ? "" : " AND ", table.columns[i], sql.placeholder, i + 1);
  return fmt::format("SELECT id FROM {} WHERE {}", table.table, where);
}

std::string AddEntrySql(const SqlDialect& sql, Dimension dimension) {
  const DimensionTable& table = TableOf(dimension);
  std::string values;
  for (std::size_t i = 0; i < table.columns.size(); ++i)
    values += fmt::format("{}{}{}", i == 0 ? "" : ", ", sql.placeholder, i + 1);
  return fmt::format("INSERT INTO {} ({}) VALUES ({}) ON CONFLICT DO NOTHING RETURNING id",
                     table.table, fmt::join(table.columns, ", "), values);
}

std::string EntrySql(const SqlDialect& sql, Dimension dimension) {
  const DimensionTable& table = TableOf(dimension);
  return fmt::format("SELECT {} FROM {} WHERE id = {}1", fmt::join(table.columns, ", "),
                     table.table, sql.placeholder);
}

std::int64_t FirstHourAtOrAfter(Micros t) {
  const std::int64_t q = t / kMicrosPerHour;  // rounds towards zero: up for negatives
  return t > 0 && t % kMicrosPerHour != 0 ? q + 1 : q;
}

Status WriteCompactHours(HourTables& tables, DimensionCache& cache,
                         std::span<const LedgerHour> hours) {
  cache.Trim();
  std::vector<const UsageRow*> order;
  std::vector<UsageFigures> figures;
  StoredHour row;
  for (const LedgerHour& hour : hours) {
    const DeviceHour& d = hour.device;
    auto gpu = IdOf(tables, cache, Dimension::kGpu, GpuKey(d));
    if (!gpu) return gpu.status();
    auto placement = IdOf(tables, cache, Dimension::kPlacement, PlacementKey(d));
    if (!placement) return placement.status();

    order.clear();
    for (const UsageRow& u : hour.usage) order.push_back(&u);
    std::sort(order.begin(), order.end(), ReadOrder);
    figures.clear();
    for (const UsageRow* u : order) {
      UsageFigures& f = figures.emplace_back(FiguresOf(*u));
      auto consumer = IdOf(tables, cache, Dimension::kConsumer, ConsumerKey(*u));
      if (!consumer) return consumer.status();
      auto context = IdOf(tables, cache, Dimension::kContext, ContextKey(*u));
      if (!context) return context.status();
      f.consumer = *consumer;
      f.context = *context;
    }
    row.hour = HourIndex(d.hour_us);
    row.gpu = *gpu;
    row.placement = *placement;
    row.record.clear();
    EncodeHourRecord(d, figures, row.record);
    if (Status s = tables.PutHour(row); !s) {
      return Error{s.error().code, fmt::format("{} (hour_us {}, gpu {})", s.error().message,
                                               d.hour_us, d.gpu.str())};
    }
  }
  return tables.FinishWrites();
}

Status MoveToCompactHours(LegacyRows<DeviceHour>& devices, LegacyRows<UsageRow>& usage,
                          HourTables& tables, std::string_view errors_name) {
  constexpr std::size_t kBatchHours = 1024;  // written together: bounded memory, few round trips
  DimensionCache cache;
  std::vector<LedgerHour> batch;
  auto write_batch = [&]() -> Status {
    Status s = WriteCompactHours(tables, cache, batch);
    batch.clear();
    if (!s)
      return Error{s.error().code,
                   fmt::format("{}: migrate schema 7 -> 8: {}", errors_name, s.error().message)};
    return s;
  };
  UsageRow u;
  auto more_usage = usage.Next(u);
  if (!more_usage) return more_usage.status();
  auto orphan = [&] {
    return InvalidArgument(fmt::format(
        "{}: migrate schema 7 -> 8: usage_hours row (hour_us {}, gpu {}, consumer {}): no "
        "device-hour of its own",
        errors_name, u.hour_us, u.gpu.str(), u.consumer.ref.Key()));
  };
  for (;;) {
    LedgerHour& hour = batch.emplace_back();
    auto more_devices = devices.Next(hour.device);
    if (!more_devices) return more_devices.status();
    if (!*more_devices) {
      batch.pop_back();
      break;
    }
    const DeviceHour& d = hour.device;
    while (*more_usage && std::tie(u.hour_us, u.gpu.value) <= std::tie(d.hour_us, d.gpu.value)) {
      if (u.hour_us != d.hour_us || u.gpu != d.gpu) return orphan();
      hour.usage.push_back(u);
      more_usage = usage.Next(u);
      if (!more_usage) return more_usage.status();
    }
    if (batch.size() == kBatchHours)
      if (Status s = write_batch(); !s) return s;
  }
  if (*more_usage) return orphan();
  return write_batch();
}

namespace {

// Everything of `range`, or (usage false) its device-hours alone, without rows or labels.
Status ScanHours(HourTables& tables, DimensionCache& cache, const TimeRange& range,
                 LedgerScan& scan, std::string_view errors_name, bool usage) {
  cache.Trim();
  HourDecoder decoder(tables, cache, scan, errors_name, usage);
  Status read =
      tables.ForEachHour(FirstHourAtOrAfter(range.from_us), FirstHourAtOrAfter(range.to_us),
                         [&](const StoredHour& row) { return decoder.Add(row); });
  if (!read) return read;
  if (Status s = decoder.Flush(); !s) return s;
  return usage ? decoder.Labels() : Status::Ok();
}

}  // namespace

Status ScanCompactHours(HourTables& tables, DimensionCache& cache, const TimeRange& range,
                        LedgerScan& scan, std::string_view errors_name) {
  return ScanHours(tables, cache, range, scan, errors_name, /*usage=*/true);
}

Result<std::vector<DeviceHour>> ReadCompactDeviceHours(HourTables& tables, DimensionCache& cache,
                                                       const TimeRange& range,
                                                       std::string_view errors_name) {
  Collector collected;
  if (Status s = ScanHours(tables, cache, range, collected, errors_name, /*usage=*/false); !s)
    return s;
  return std::move(collected.devices);
}

Result<std::vector<UsageRow>> ReadCompactUsage(HourTables& tables, DimensionCache& cache,
                                               const TimeRange& range,
                                               std::string_view errors_name) {
  Collector collected;
  if (Status s = ScanCompactHours(tables, cache, range, collected, errors_name); !s) return s;
  for (UsageRow& u : collected.usage) collected.labels.Attach(u);
  return std::move(collected.usage);
}

}  // namespace gpuledger::store
