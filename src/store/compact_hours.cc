#include "store/compact_hours.h"

#include <algorithm>
#include <array>
#include <climits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "store/hour_record.h"
#include "store/row_codec.h"

namespace gpuledger::store {
namespace {

using PodKey = std::tuple<std::string, std::string, std::string>;  // namespace, pod, pod UID

struct StoredHour {
  std::int64_t hour = 0;
  std::int64_t gpu = 0;
  std::int64_t placement = 0;
  std::string record;
};

constexpr std::array<SqlColumn, 4> kHoursColumns = {{
    {"hour", SqlType::kInt},
    {"gpu", SqlType::kInt},
    {"placement", SqlType::kInt},
    {"record", SqlType::kBytes},
}};
constexpr SqlUpsert kHoursUpsert = {"hours", kHoursColumns, 2, false};
constexpr std::array<SqlColumn, 1> kIdColumn = {{{"id", SqlType::kInt}}};
constexpr std::array<SqlColumn, 3> kPodColumns = {{
    {"namespace", SqlType::kText},
    {"pod", SqlType::kText},
    {"pod_uid", SqlType::kText},
}};

// `key`'s id in its dictionary, adding it when missing.
Result<std::int64_t> Intern(SqlConnection& db, Dimension dimension, const DimensionKey& key) {
  const DimensionTable& table = TableOf(dimension);
  std::string where;
  std::string values;
  for (std::size_t i = 0; i < table.columns.size(); ++i) {
    where += fmt::format("{}{} = ?{}", i == 0 ? "" : " AND ", table.columns[i], i + 1);
    values += fmt::format("{}?{}", i == 0 ? "" : ", ", i + 1);
  }
  const std::string find = fmt::format("SELECT id FROM {} WHERE {}", table.table, where);
  const std::string add =
      fmt::format("INSERT INTO {} ({}) VALUES ({}) ON CONFLICT DO NOTHING RETURNING id",
                  table.table, fmt::join(table.columns, ", "), values);
  const std::vector<SqlValue> args(key.begin(), key.end());
  // Found, else added, else added meanwhile by another writer (whose commit the insert waited
  // for): found then.
  for (const std::string* sql : {&find, &add, &find}) {
    auto id = db.FirstInt(fmt::format("write {}", table.table), *sql, args);
    if (!id) return id.error();
    if (*id) return **id;
  }
  return Internal(fmt::format("{}: {}: adding an entry returned no id", db.name(), table.table));
}

// A key's id, from the cache or else the table (remembered for next time).
Result<std::int64_t> IdOf(SqlConnection& db, DimensionCache& cache, Dimension dimension,
                          const DimensionKey& key) {
  if (auto id = cache.Find(dimension, key)) return *id;
  auto id = Intern(db, dimension, key);
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
// wanted) their usage rows; to a scan that takes rows by key, with the dictionary ids as keys.
class HourDecoder {
 public:
  HourDecoder(SqlConnection& db, DimensionCache& cache, LedgerScan& scan, bool usage)
      : db_(db), cache_(cache), scan_(scan), usage_(usage), by_key_(scan.ByKey()) {}

  Status Add(std::int64_t hour, std::int64_t gpu, std::int64_t placement, std::string_view record) {
    if (size_ > 0 && hour_[0].hour != hour) {
      if (Status s = Flush(); !s) return s;
    }
    if (size_ == hour_.size()) hour_.emplace_back();
    Decoded& d = hour_[size_++];  // reused: its rows keep their capacity
    d.hour = hour;
    d.gpu = gpu;
    d.placement = placement;
    d.device.hour_us = hour * kMicrosPerHour;
    if (std::string what; !DecodeHourRecord(record, d.device, d.usage, &what)) {
      return Internal(fmt::format("{}: hours row (hour_us {}, gpu id {}): {}", db_.name(),
                                  d.device.hour_us, gpu, what));
    }
    return Status::Ok();
  }

  // Sends the buffered hour.
  Status Flush() {
    if (size_ == 0) return Status::Ok();
    if (Status s = LearnMissing(); !s) return s;
    SortByGpuUuid();
    for (Decoded* d : order_) {
      if (by_key_) {
        if (Status s = SendKey(Dimension::kGpu, d->gpu); !s) return s;
        if (Status s = SendKey(Dimension::kPlacement, d->placement); !s) return s;
        if (Status s = scan_.OnKeyedDeviceHour(d->device, d->gpu, d->placement); !s) return s;
        continue;
      }
      d->device.gpu = cache_.Gpu(d->gpu);
      ApplyPlacement(cache_.Placement(d->placement), d->device);
      if (Status s = scan_.OnDeviceHour(d->device); !s) return s;
    }
    if (usage_)
      if (Status s = SendRows(); !s) return s;
    size_ = 0;
    return Status::Ok();
  }

  // The hour's usage rows, device by device.
  Status SendRows() {
    for (const Decoded* d : order_) {
      for (const UsageFigures& f : d->usage) {
        row_.hour_us = d->device.hour_us;
        ApplyFigures(f, row_);
        if (by_key_) {
          if (Status s = SendKey(Dimension::kConsumer, f.consumer); !s) return s;
          if (Status s = SendKey(Dimension::kContext, f.context); !s) return s;
          if (Status s = scan_.OnKeyedUsage(row_, d->gpu, f.consumer, f.context); !s) return s;
          continue;
        }
        row_.gpu = d->device.gpu;
        const ConsumerInfo& c = cache_.Consumer(f.consumer);
        row_.consumer.ref = c.ref;
        row_.consumer.owner_kind = c.owner_kind;
        row_.consumer.owner_name = c.owner_name;
        row_.consumer.labels = c.labels;
        row_.consumer.namespace_labels = c.namespace_labels;
        ApplyContext(cache_.Context(f.context), row_);
        if (Status s = scan_.OnUsage(row_); !s) return s;
      }
    }
    return Status::Ok();
  }

 private:
  struct Decoded {
    std::int64_t hour = 0;
    std::int64_t gpu = 0;
    std::int64_t placement = 0;
    DeviceHour device;  // figures only: strings are set when sent
    std::vector<UsageFigures> usage;
  };

  // order_: the hour's devices in GPU UUID order. An hour usually has the GPUs of the hour
  // before (rows come in GPU id order): then it has their order too, and nothing is compared.
  void SortByGpuUuid() {
    bool same = size_ == order_ids_.size();
    for (std::size_t i = 0; same && i < size_; ++i) same = hour_[i].gpu == order_ids_[i];
    if (!same) {
      order_ids_.clear();
      for (std::size_t i = 0; i < size_; ++i) order_ids_.push_back(hour_[i].gpu);
      permutation_.resize(size_);
      for (std::size_t i = 0; i < size_; ++i) permutation_[i] = i;
      std::sort(permutation_.begin(), permutation_.end(), [&](std::size_t a, std::size_t b) {
        return cache_.Gpu(order_ids_[a]).value < cache_.Gpu(order_ids_[b]).value;
      });
    }
    order_.clear();
    for (std::size_t i : permutation_) order_.push_back(&hour_[i]);
  }

  // A key's strings, the first time this scan names it.
  Status SendKey(Dimension dimension, std::int64_t id) {
    if (!sent_[static_cast<std::size_t>(dimension)].Emplace(id).second) return Status::Ok();
    switch (dimension) {
      case Dimension::kGpu:
        return scan_.OnGpuKey(id, cache_.Gpu(id));
      case Dimension::kPlacement:
        return scan_.OnPlacementKey(id, cache_.Placement(id));
      case Dimension::kConsumer:
        return scan_.OnConsumerKey(id, cache_.Consumer(id));
      case Dimension::kContext:
        return scan_.OnContextKey(id, cache_.Context(id));
    }
    return Status::Ok();
  }

  Status LearnMissing() {
    std::map<Dimension, std::set<std::int64_t>> missing;
    auto need = [&](Dimension dimension, std::int64_t id) {
      if (!cache_.Has(dimension, id)) missing[dimension].insert(id);
    };
    for (std::size_t i = 0; i < size_; ++i) {
      const Decoded& d = hour_[i];
      need(Dimension::kGpu, d.gpu);
      need(Dimension::kPlacement, d.placement);
      if (!usage_) continue;
      for (const UsageFigures& f : d.usage) {
        need(Dimension::kConsumer, f.consumer);
        need(Dimension::kContext, f.context);
      }
    }
    for (const auto& [missing_dimension, ids] : missing) {
      const Dimension dimension = missing_dimension;  // a binding no lambda may capture (C++17)
      const std::vector<std::int64_t> wanted(ids.begin(), ids.end());
      const DimensionTable& table = TableOf(dimension);
      const std::vector<SqlValue> cells(wanted.begin(), wanted.end());
      Status looked = db_.ForEachRowWithKey(
          fmt::format("read {}", table.table),
          fmt::format("SELECT id, {} FROM {}", fmt::join(table.columns, ", "), table.table),
          kIdColumn, cells, [&](SqlRow& row) -> Status {
            const std::int64_t id = row.Int(0);
            DimensionKey key;
            for (std::size_t i = 1; i <= table.columns.size(); ++i)
              key.push_back(row.Text(static_cast<int>(i)));
            if (Status s = row.Check(table.table); !s) return s;
            if (Status s = cache_.Learn(dimension, id, key); !s)
              return Internal(fmt::format("{}: {}", db_.name(), s.error().message));
            return Status::Ok();
          });
      if (!looked) return looked;
      for (std::int64_t id : wanted) {
        if (!cache_.Has(dimension, id)) {
          return Internal(fmt::format("{}: an hours row names {} id {}, which is not there",
                                      db_.name(), TableOf(dimension).table, id));
        }
      }
    }
    return Status::Ok();
  }

  SqlConnection& db_;
  DimensionCache& cache_;
  LedgerScan& scan_;
  bool usage_;  // false: device-hours only (their rows' strings are not looked up or copied)
  bool by_key_;
  std::vector<Decoded> hour_;  // [0, size_) is the hour being read
  std::size_t size_ = 0;
  std::vector<Decoded*> order_;           // the hour's devices in GPU UUID order
  std::vector<std::int64_t> order_ids_;   // the GPU ids order_ was sorted for, in stored order
  std::vector<std::size_t> permutation_;  // their positions in GPU UUID order
  UsageRow row_;                          // reused: its strings keep their capacity from row to row
  std::array<DenseIdMap<char>, kDimensions.size()> sent_;  // keys sent (ByKey)
};

// Keeps what a scan sends (ReadDeviceHours, ReadUsage).
class Collector final : public LedgerScan {
 public:
  std::vector<DeviceHour> devices;
  std::vector<UsageRow> usage;

  Status OnReconciliation(const Reconciliation&) override { return Status::Ok(); }
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

std::string DictionarySql(const SqlDialect& sql, Dimension dimension, std::string_view name) {
  const DimensionTable& table = TableOf(dimension);
  std::string out = fmt::format("CREATE TABLE {} (\n  id {}", name, sql.dictionary_id);
  for (std::string_view column : table.columns)
    out += fmt::format(",\n  {} {} NOT NULL", column, sql.text);
  if (table.long_columns == 0 || sql.long_text_key.empty()) {
    out +=
        fmt::format(",\n  UNIQUE ({})\n){};\n", fmt::join(table.columns, ", "), sql.table_options);
    return out;
  }
  // A key with digests is an index over expressions, which no table constraint can be.
  std::vector<std::string> key(table.columns.begin(), table.columns.end());
  for (std::size_t i = key.size() - table.long_columns; i < key.size(); ++i)
    key[i] = fmt::format(fmt::runtime(sql.long_text_key), key[i]);
  out += fmt::format("\n){};\nCREATE UNIQUE INDEX {}_key ON {} ({});\n", sql.table_options, name,
                     name, fmt::join(key, ", "));
  return out;
}

std::string CompactTablesSql(const SqlDialect& sql) {
  std::string out;
  for (Dimension dimension : kDimensions)
    out += DictionarySql(sql, dimension, TableOf(dimension).table);
  // One row per (hour, GPU): its key is the only index, and every read is a range of it.
  out += fmt::format(
      "CREATE TABLE hours (\n  hour {0} NOT NULL,\n  gpu {0} NOT NULL,\n  placement {0} NOT "
      "NULL,\n  record {1} NOT NULL,\n  PRIMARY KEY (hour, gpu)\n){2};\n",
      sql.small_integer, sql.bytes, sql.hours_options);
  return out;
}

std::int64_t FirstHourAtOrAfter(Micros t) {
  const std::int64_t q = t / kMicrosPerHour;  // rounds towards zero: up for negatives
  return t > 0 && t % kMicrosPerHour != 0 ? q + 1 : q;
}

Status WriteCompactHours(SqlConnection& db, DimensionCache& cache,
                         std::span<const LedgerHour> hours) {
  cache.Trim();
  std::vector<const UsageRow*> order;
  std::vector<UsageFigures> figures;
  // By (hour, gpu): an hour written twice in a span keeps the later (one upsert may not touch a
  // row twice).
  std::map<std::pair<std::int64_t, std::int64_t>, StoredHour> rows;
  for (const LedgerHour& hour : hours) {
    const DeviceHour& d = hour.device;
    auto gpu = IdOf(db, cache, Dimension::kGpu, GpuKey(d));
    if (!gpu) return gpu.status();
    auto placement = IdOf(db, cache, Dimension::kPlacement, PlacementKey(d));
    if (!placement) return placement.status();

    order.clear();
    for (const UsageRow& u : hour.usage) order.push_back(&u);
    std::sort(order.begin(), order.end(), ReadOrder);
    figures.clear();
    for (const UsageRow* u : order) {
      UsageFigures& f = figures.emplace_back(FiguresOf(*u));
      auto consumer = IdOf(db, cache, Dimension::kConsumer, ConsumerKey(*u));
      if (!consumer) return consumer.status();
      auto context = IdOf(db, cache, Dimension::kContext, ContextKey(*u));
      if (!context) return context.status();
      f.consumer = *consumer;
      f.context = *context;
    }
    StoredHour& row = rows[{HourIndex(d.hour_us), *gpu}];
    row.hour = HourIndex(d.hour_us);
    row.gpu = *gpu;
    row.placement = *placement;
    row.record.clear();
    EncodeHourRecord(d, figures, row.record);
  }
  std::vector<SqlValue> cells;
  cells.reserve(rows.size() * kHoursColumns.size());
  for (const auto& [key, row] : rows) {
    cells.insert(cells.end(), {row.hour, row.gpu, row.placement, SqlBytes{row.record}});
  }
  return db.Upsert("write hours", kHoursUpsert, cells);
}

Status MoveToCompactHours(LegacyRows<DeviceHour>& devices, LegacyRows<UsageRow>& usage,
                          SqlConnection& db) {
  constexpr std::size_t kBatchHours = 1024;  // written together: bounded memory, few round trips
  DimensionCache cache;
  std::vector<LedgerHour> batch;
  auto write_batch = [&]() -> Status {
    Status s = WriteCompactHours(db, cache, batch);
    batch.clear();
    if (!s)
      return Error{s.error().code,
                   fmt::format("{}: migrate schema 7 -> 8: {}", db.name(), s.error().message)};
    return s;
  };
  UsageRow u;
  auto more_usage = usage.Next(u);
  if (!more_usage) return more_usage.status();
  auto orphan = [&] {
    return InvalidArgument(fmt::format(
        "{}: migrate schema 7 -> 8: usage_hours row (hour_us {}, gpu {}, consumer {}): no "
        "device-hour of its own",
        db.name(), u.hour_us, u.gpu.str(), u.consumer.ref.Key()));
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

Status MoveLabelsIntoConsumers(SqlConnection& db) {
  const std::string what = "migrate schema 10 -> 11";
  std::map<PodKey, LabelMap> pods;
  std::map<std::string, LabelMap> namespaces;
  Status read = db.ForEachRow(
      what, "SELECT namespace, pod, pod_uid, key, value FROM pod_labels", {}, [&](SqlRow& row) {
        pods[{row.Text(0), row.Text(1), row.Text(2)}][row.Text(3)] = row.Text(4);
        return row.Check("pod_labels");
      });
  if (!read) return read;
  read = db.ForEachRow(what, "SELECT namespace, key, value FROM namespace_labels", {},
                       [&](SqlRow& row) {
                         namespaces[row.Text(0)][row.Text(1)] = row.Text(2);
                         return row.Check("namespace_labels");
                       });
  if (!read) return read;

  const DimensionTable& table = TableOf(Dimension::kConsumer);
  const std::size_t named = table.columns.size() - table.long_columns;  // the key before labels
  std::vector<SqlColumn> columns = {{"id", SqlType::kInt}};
  for (std::string_view column : table.columns) columns.push_back({column, SqlType::kText});
  std::vector<std::string> texts;  // the cells' strings: SqlValue views them
  std::vector<std::int64_t> ids;
  read = db.ForEachRow(what,
                       fmt::format("SELECT id, {} FROM consumers",
                                   fmt::join(std::span(table.columns).first(named), ", ")),
                       {}, [&](SqlRow& row) {
                         const std::int64_t id = row.Int(0);
                         std::vector<std::string> key;
                         for (std::size_t i = 1; i <= named; ++i)
                           key.push_back(row.Text(static_cast<int>(i)));
                         if (Status s = row.Check("consumers"); !s) return s;
                         auto pod = pods.find({key[0], key[1], key[2]});
                         auto ns = namespaces.find(key[0]);
                         if (pod == pods.end() && ns == namespaces.end()) return Status::Ok();
                         key.push_back(pod == pods.end() ? "" : EncodeLabels(pod->second));
                         key.push_back(ns == namespaces.end() ? "" : EncodeLabels(ns->second));
                         ids.push_back(id);
                         texts.insert(texts.end(), key.begin(), key.end());
                         return Status::Ok();
                       });
  if (!read) return read;
  std::vector<SqlValue> cells;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    cells.emplace_back(ids[i]);
    for (std::size_t c = 0; c < table.columns.size(); ++c)
      cells.emplace_back(std::string_view(texts[i * table.columns.size() + c]));
  }
  if (!cells.empty())
    if (Status s = db.Upsert(what, SqlUpsert{"consumers", columns, 1, false}, cells); !s) return s;
  if (Status s = db.Run(what, "DROP TABLE pod_labels", {}); !s) return s;
  return db.Run(what, "DROP TABLE namespace_labels", {});
}

namespace {

// Everything of `range`, or (usage false) its device-hours alone, without their rows.
Status ScanHours(SqlConnection& db, DimensionCache& cache, const TimeRange& range, LedgerScan& scan,
                 bool usage) {
  cache.Trim();
  HourDecoder decoder(db, cache, scan, usage);
  // Hours past the 32-bit column read as none rather than failing PostgreSQL's cast.
  constexpr std::int64_t kLast = INT32_MAX;
  const std::array<SqlValue, 2> args = {
      std::clamp<std::int64_t>(FirstHourAtOrAfter(range.from_us), -kLast, kLast),
      std::clamp<std::int64_t>(FirstHourAtOrAfter(range.to_us), -kLast, kLast)};
  Status read =
      db.ForEachRow("read hours",
                    "SELECT hour, gpu, placement, record FROM hours WHERE hour >= ?1 AND hour < ?2 "
                    "ORDER BY hour, gpu",
                    args, [&](SqlRow& row) {
                      const std::int64_t hour = row.Int(0);
                      const std::int64_t gpu = row.Int(1);
                      const std::int64_t placement = row.Int(2);
                      const std::string_view record = row.Bytes(3);
                      if (Status s = row.Check("hours"); !s) return s;
                      return decoder.Add(hour, gpu, placement, record);
                    });
  if (!read) return read;
  return decoder.Flush();
}

}  // namespace

Status ScanCompactHours(SqlConnection& db, DimensionCache& cache, const TimeRange& range,
                        LedgerScan& scan) {
  return ScanHours(db, cache, range, scan, /*usage=*/true);
}

Result<std::vector<DeviceHour>> ReadCompactDeviceHours(SqlConnection& db, DimensionCache& cache,
                                                       const TimeRange& range) {
  Collector collected;
  if (Status s = ScanHours(db, cache, range, collected, /*usage=*/false); !s) return s;
  return std::move(collected.devices);
}

Result<std::vector<UsageRow>> ReadCompactUsage(SqlConnection& db, DimensionCache& cache,
                                               const TimeRange& range) {
  Collector collected;
  if (Status s = ScanCompactHours(db, cache, range, collected); !s) return s;
  return std::move(collected.usage);
}

}  // namespace gpuledger::store
