// Schema migrations of the SQLite ledger that change existing tables: a file written by an
// older build keeps its rows when it is opened by this one.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <span>
#include <string>

#include "store/ledger_store.h"
#include "store/sqlite_schema.h"
#include "store_test_env/version7_writer.h"

namespace gpuledger::store {
namespace {

namespace fs = std::filesystem;

constexpr Micros kHour0 = 1'717'200'000LL * kMicrosPerSecond;  // 2024-06-01T00:00:00Z

void Exec(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  std::string message = err != nullptr ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << message << "\n" << sql;
}

// The first column of the first row of `sql` ("" for none, or on error).
std::string QueryText(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string out;
  if (sqlite3_open(path.c_str(), &db) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0) != nullptr) {
      out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return out;
}

// Version 10 kept labels in side tables, one set per pod and per namespace, consumers without
// them, and no statements: this takes a ledger of this build back to that shape (labels
// dropped, the side tables empty).
constexpr const char* kBackToVersion10 =
    "DROP TABLE token_hours; DROP TABLE day_rollups; DROP TABLE statements; CREATE TABLE c10 (id INTEGER PRIMARY KEY, "
    "namespace TEXT NOT NULL, pod "
    "TEXT NOT NULL, "
    "pod_uid TEXT NOT NULL, container TEXT NOT NULL, owner_kind TEXT NOT NULL, owner_name TEXT "
    "NOT NULL, UNIQUE (namespace, pod, pod_uid, container, owner_kind, owner_name)) STRICT; "
    "INSERT INTO c10 SELECT id, namespace, pod, pod_uid, container, owner_kind, owner_name FROM "
    "consumers; DROP TABLE consumers; ALTER TABLE c10 RENAME TO consumers; "
    "CREATE TABLE pod_labels (namespace TEXT NOT NULL, pod TEXT NOT NULL, pod_uid TEXT NOT NULL, "
    "key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (namespace, pod, pod_uid, key)) STRICT; "
    "CREATE TABLE namespace_labels (namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT "
    "NULL, PRIMARY KEY (namespace, key)) STRICT;";

// Version 6 had no histogram column: this takes a version-7 file back to it.
constexpr const char* kBackToVersion6 = "ALTER TABLE usage_hours DROP COLUMN histogram;";

// Version 5 had no findings table either: this takes a version-7 file back to
// that shape.
constexpr const char* kBackToVersion5 =
    "ALTER TABLE usage_hours DROP COLUMN histogram; DROP TABLE findings;";

// Version 4 had no activity or share columns: this takes a version-7 file back to
// that shape (the columns 4 -> 5 adds, dropped).
constexpr const char* kBackToVersion4 =
    "ALTER TABLE usage_hours DROP COLUMN sm_active_us;"
    "ALTER TABLE usage_hours DROP COLUMN sm_occupancy_us;"
    "ALTER TABLE usage_hours DROP COLUMN tensor_active_us;"
    "ALTER TABLE usage_hours DROP COLUMN dram_active_us;"
    "ALTER TABLE usage_hours DROP COLUMN activity_quality;"
    "ALTER TABLE usage_hours DROP COLUMN activity_rule;"
    "ALTER TABLE usage_hours DROP COLUMN share_source;";

// Version 3 kept memory-time as REAL byte-µs (unattributed_memory_byte_us, memory_byte_us):
// this takes a version-7 file back to those columns (1 KiB-s = 1024e6 byte-µs).
constexpr const char* kBackToRealByteMicros =
    "ALTER TABLE device_hours ADD COLUMN unattributed_memory_byte_us REAL NOT NULL DEFAULT 0;"
    "UPDATE device_hours SET unattributed_memory_byte_us = unattributed_memory_kib_s * 1024e6;"
    "ALTER TABLE device_hours DROP COLUMN unattributed_memory_kib_s;"
    "ALTER TABLE usage_hours ADD COLUMN memory_byte_us REAL NOT NULL DEFAULT 0;"
    "UPDATE usage_hours SET memory_byte_us = memory_kib_s * 1024e6;"
    "ALTER TABLE usage_hours DROP COLUMN memory_kib_s;";

// A new file holding `hours` as the build of schema version 7 wrote it; the tests below take
// it further back with SQL.
void WriteAsVersion7(const std::string& path, std::span<const LedgerHour> hours) {
  Status written = testing::WriteSqliteVersion7(path, hours);
  ASSERT_TRUE(written) << written.error().message;
}

fs::path TestDir() {
  return fs::temp_directory_path() /
         ("gpuledger_migration_" + std::to_string(::getpid()) + "_" +
          ::testing::UnitTest::GetInstance()->current_test_info()->name());
}

// One device-hour on gpu-node-1 (GPU-1, H100-80GB) and a usage row of ml/`pod`/main on it.
LedgerHour MakeHour(const char* pricing_class, Nanos price_nanos) {
  LedgerHour hour;
  hour.device.hour_us = kHour0;
  hour.device.cluster = "prod";
  hour.device.node = "gpu-node-1";
  hour.device.gpu = GpuUuid("GPU-1");
  hour.device.gpu_model = "H100-80GB";
  hour.device.pricing_class = pricing_class;
  hour.device.price_nanos = price_nanos;
  return hour;
}

UsageRow MakeUsage(const DeviceHour& device, const char* pod) {
  UsageRow u;
  u.hour_us = device.hour_us;
  u.gpu = device.gpu;
  u.consumer.ref.namespace_name = "ml";
  u.consumer.ref.pod = pod;
  u.consumer.ref.container = "main";
  u.node = device.node;
  u.gpu_model = device.gpu_model;
  return u;
}

// Version 1 had no energy_price_nanos (and no reconciliations table), and REAL memory-time: a
// file in that shape is made by writing a version-7 file and taking them away again, then
// marking it version 1.
// Opens `path` as this build does, migrating it, and checks it came to this build's schema.
std::unique_ptr<LedgerStore> OpenMigrated(const std::string& path) {
  auto store = OpenSqliteLedger(path);
  EXPECT_TRUE(store) << store.error().message;
  if (!store) return nullptr;
  EXPECT_EQ((*store)->ReadMeta()->at("schema_version"), std::to_string(kSchemaVersion));
  return std::move(*store);
}

TEST(SqliteLedgerMigration, Version1FileKeepsItsRowsAndGetsEnergyPriceZero) {
  const fs::path dir = TestDir();
  fs::create_directories(dir);
  const std::string path = (dir / "v1.db").string();
  fs::remove(path);

  LedgerHour hour = MakeHour("on-prem", 1'105'000'000);
  hour.device.energy_price_nanos = 105'000'000;
  hour.device.metered_us = kMicrosPerHour;
  hour.device.energy_mj = 2'520'000'000;
  UsageRow u = MakeUsage(hour.device, "train-0");
  u.allocated_us = kMicrosPerHour;
  u.energy_mj = 2'000'000'000;
  u.memory_kib_s = 3'774'873'600;  // 1 GiB for an hour
  hour.usage.push_back(u);
  WriteAsVersion7(path, {&hour, 1});
  Exec(path, kBackToVersion5);
  Exec(path, kBackToVersion4);
  Exec(path, kBackToRealByteMicros);
  Exec(path,
       "ALTER TABLE device_hours DROP COLUMN energy_price_nanos;"
       "DROP TABLE IF EXISTS reconciliations;"
       "UPDATE meta SET value = '1' WHERE key = 'schema_version';");

  auto store = OpenSqliteLedger(path);
  ASSERT_TRUE(store) << store.error().message;
  auto meta = (*store)->ReadMeta();
  ASSERT_TRUE(meta);
  EXPECT_NE(meta->at("schema_version"), "1");
  auto rows = (*store)->ReadDeviceHours({});
  ASSERT_TRUE(rows) << rows.error().message;
  ASSERT_EQ(rows->size(), 1u);
  const DeviceHour& d = rows->front();
  EXPECT_EQ(d.node, "gpu-node-1");
  EXPECT_EQ(d.pricing_class, "on-prem");
  EXPECT_EQ(d.price_nanos, 1'105'000'000);
  EXPECT_EQ(d.energy_mj, 2'520'000'000);
  EXPECT_EQ(d.energy_price_nanos, 0);  // version 1 had no electricity part
  auto usage = (*store)->ReadUsage({});
  ASSERT_TRUE(usage);
  ASSERT_EQ(usage->size(), 1u);
  EXPECT_EQ(usage->front().energy_mj, 2'000'000'000);
  EXPECT_EQ(usage->front().memory_kib_s, 3'774'873'600);
  // The migrated file takes the new column.
  hour.device.energy_price_nanos = 7;
  ASSERT_TRUE((*store)->WriteHours({&hour, 1}));
  EXPECT_EQ((*store)->ReadDeviceHours({})->front().energy_price_nanos, 7);
  store->reset();
  fs::remove_all(dir);
}

// Version 3 kept memory-time as REAL byte-µs. Opening such a file converts it to integer KiB-s
// (rounded to nearest, halves away from zero; saturating at int64), drops the REAL columns and
// keeps the tables STRICT.
TEST(SqliteLedgerMigration, Version3FileGetsMemoryTimeInKibSeconds) {
  const fs::path dir = TestDir();
  fs::create_directories(dir);
  const std::string path = (dir / "v3.db").string();
  fs::remove(path);

  // byte-µs as version 3 stored them, and the KiB-s each becomes.
  struct Case {
    const char* pod;
    double byte_us;
    KibSeconds kib_s;
  };
  const Case cases[] = {
      {"zero", 0.0, 0},
      {"just-below-half", 511'999'999.0, 0},                     // 0.4999... KiB-s
      {"half", 512'000'000.0, 1},                                // 0.5: away from zero
      {"one-and-a-half", 1'536'000'000.0, 2},                    // 1.5
      {"fraction", 1.5e15, 1'464'844},                           // 1'464'843.75
      {"gib-hour", 3'865'470'566'400'000'000.0, 3'774'873'600},  // 1 GiB x 1 h, exact
      {"huge", 1e300, std::numeric_limits<KibSeconds>::max()},   // saturates
  };

  LedgerHour hour = MakeHour("on-demand", 4'100'000'000);
  hour.device.metered_us = kMicrosPerHour;
  hour.device.memory_total_bytes = 80 * kGiB;
  for (const Case& c : cases) {
    UsageRow u = MakeUsage(hour.device, c.pod);
    u.allocated_us = 1;
    u.peak_memory_bytes = 7;
    hour.usage.push_back(u);
  }
  WriteAsVersion7(path, {&hour, 1});
  Exec(path, kBackToVersion5);
  Exec(path, kBackToVersion4);
  Exec(path, kBackToRealByteMicros);
  for (const Case& c : cases) {
    Exec(path, fmt::format("UPDATE usage_hours SET memory_byte_us = {:.17g} WHERE pod = '{}'",
                           c.byte_us, c.pod)
                   .c_str());
  }
  Exec(path,
       "UPDATE device_hours SET unattributed_memory_byte_us = 2.5e12;"  // 2441.40625 KiB-s
       "UPDATE meta SET value = '3' WHERE key = 'schema_version';");
  ASSERT_EQ(QueryText(path, "SELECT typeof(memory_byte_us) FROM usage_hours LIMIT 1"), "real");

  auto store = OpenSqliteLedger(path);
  ASSERT_TRUE(store) << store.error().message;
  auto meta = (*store)->ReadMeta();
  ASSERT_TRUE(meta);
  EXPECT_EQ(meta->at("schema_version"), "15");
  auto devices = (*store)->ReadDeviceHours({});
  ASSERT_TRUE(devices) << devices.error().message;
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ(devices->front().unattributed_memory_kib_s, 2441);
  EXPECT_EQ(devices->front().price_nanos, 4'100'000'000);
  EXPECT_EQ(devices->front().memory_total_bytes, 80 * kGiB);
  auto usage = (*store)->ReadUsage({});
  ASSERT_TRUE(usage) << usage.error().message;
  ASSERT_EQ(usage->size(), std::size(cases));
  for (const Case& c : cases) {
    bool found = false;
    for (const UsageRow& u : *usage) {
      if (u.consumer.ref.pod != c.pod) continue;
      found = true;
      EXPECT_EQ(u.memory_kib_s, c.kib_s) << c.pod;
      EXPECT_EQ(u.peak_memory_bytes, 7) << c.pod;  // the other columns keep their values
      EXPECT_EQ(u.allocated_us, 1) << c.pod;
    }
    EXPECT_TRUE(found) << c.pod;
  }

  // The REAL columns went with the tables (7 -> 8): nothing of the file is REAL.
  EXPECT_EQ(QueryText(path,
                      "SELECT count(*) FROM sqlite_schema s, pragma_table_info(s.name) c "
                      "WHERE s.type = 'table' AND c.type = 'REAL'"),
            "0");

  // The migrated file round-trips the integer unit.
  hour.usage.resize(1);
  hour.usage[0].memory_kib_s = 9'007'199'254'740'993;
  hour.device.unattributed_memory_kib_s = 42;
  ASSERT_TRUE((*store)->WriteHours({&hour, 1}));
  EXPECT_EQ((*store)->ReadUsage({})->front().memory_kib_s, 9'007'199'254'740'993);
  EXPECT_EQ((*store)->ReadDeviceHours({})->front().unattributed_memory_kib_s, 42);
  store->reset();
  fs::remove_all(dir);
}

// Version 4 had no activity and share columns. Opening such a file adds them: its rows have no
// activity (0 GPU-µs, quality 'none', no rule) and no share source, the tables stay STRICT, and
// the migrated file takes and returns the new values.
TEST(SqliteLedgerMigration, Version4FileGetsActivityColumnsAsNone) {
  const fs::path dir = TestDir();
  fs::create_directories(dir);
  const std::string path = (dir / "v4.db").string();
  fs::remove(path);

  LedgerHour hour = MakeHour("on-demand", 4'100'000'000);
  hour.device.metered_us = kMicrosPerHour;
  UsageRow u = MakeUsage(hour.device, "train-0");
  u.allocated_us = kMicrosPerHour;
  u.compute_us = kMicrosPerHour / 2;
  u.memory_kib_s = 3'774'873'600;
  u.compute_quality = Quality::kMeasured;
  u.compute_rule = "process-samples";
  u.activity = Activity{11, 12, 13, 14};  // dropped with the columns below
  u.activity_quality = Quality::kMeasured;
  u.activity_rule = "gpm";
  u.share_source = "resource:gpu_milli";
  hour.usage.push_back(u);
  WriteAsVersion7(path, {&hour, 1});
  Exec(path, kBackToVersion5);
  Exec(path, kBackToVersion4);
  Exec(path, "UPDATE meta SET value = '4' WHERE key = 'schema_version';");
  ASSERT_EQ(QueryText(path,
                      "SELECT count(*) FROM pragma_table_info('usage_hours') "
                      "WHERE name = 'sm_active_us'"),
            "0");

  auto store = OpenMigrated(path);
  ASSERT_NE(store, nullptr);
  auto usage = store->ReadUsage({});
  ASSERT_TRUE(usage) << usage.error().message;
  ASSERT_EQ(usage->size(), 1u);
  const UsageRow& r = usage->front();
  EXPECT_EQ(r.activity, Activity{});
  EXPECT_EQ(r.activity_quality, Quality::kNone);
  EXPECT_EQ(r.activity_rule, "");
  EXPECT_EQ(r.share_source, "");
  EXPECT_EQ(r.compute_us, kMicrosPerHour / 2);  // the other columns keep their values
  EXPECT_EQ(r.memory_kib_s, 3'774'873'600);
  EXPECT_EQ(r.compute_rule, "process-samples");

  // The migrated file takes the new columns, and a rewrite replaces them.
  ASSERT_TRUE(store->WriteHours({&hour, 1}));
  auto again = store->ReadUsage({});
  ASSERT_TRUE(again);
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ(again->front().activity, (Activity{11, 12, 13, 14}));
  EXPECT_EQ(again->front().activity_quality, Quality::kMeasured);
  EXPECT_EQ(again->front().activity_rule, "gpm");
  EXPECT_EQ(again->front().share_source, "resource:gpu_milli");
  store.reset();
  fs::remove_all(dir);
}

// Version 6 had no histogram column. Opening such a file adds it, STRICT still; the rows read
// without histograms, and the migrated file takes them.
TEST(SqliteLedgerMigration, Version6FileGetsAnEmptyHistogramColumn) {
  const fs::path dir = TestDir();
  fs::create_directories(dir);
  const std::string path = (dir / "v6.db").string();
  fs::remove(path);

  LedgerHour hour = MakeHour("on-demand", 4'100'000'000);
  UsageRow u = MakeUsage(hour.device, "train-0");
  u.allocated_us = kMicrosPerHour;
  u.histogram.compute = {0, 0, 60, 0, 0, 0};
  u.histogram.memory = {0, 0, 60, 0};
  hour.usage.push_back(u);
  WriteAsVersion7(path, {&hour, 1});
  Exec(path, kBackToVersion6);
  Exec(path, "UPDATE meta SET value = '6' WHERE key = 'schema_version';");

  auto store = OpenMigrated(path);
  ASSERT_NE(store, nullptr);
  auto usage = store->ReadUsage({});
  ASSERT_TRUE(usage) << usage.error().message;
  ASSERT_EQ(usage->size(), 1u);
  EXPECT_TRUE(usage->front().histogram.empty());
  EXPECT_EQ(usage->front().allocated_us, kMicrosPerHour);
  ASSERT_TRUE(store->WriteHours({&hour, 1}));
  auto again = store->ReadUsage({});
  ASSERT_TRUE(again);
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ(again->front().histogram, u.histogram);
  store.reset();
  fs::remove_all(dir);
}

// Version 8 had no change log: a file written by it opens with an empty one, which cannot say
// what changed before it existed, and logs every write after.
TEST(SqliteLedgerMigration, Version8FileGetsAnEmptyChangeLog) {
  const fs::path dir = TestDir();
  fs::create_directories(dir);
  const std::string path = (dir / "v8.db").string();
  fs::remove(path);
  LedgerHour hour = MakeHour("on-demand", 4'100'000'000);
  {
    auto store = OpenSqliteLedger(path);
    ASSERT_TRUE(store) << store.error().message;
    ASSERT_TRUE((*store)->WriteHours({&hour, 1}));  // generation 1
  }
  Exec(path,
       (std::string(kBackToVersion10) +
        "DROP TABLE ledger_changes; UPDATE meta SET value = '8' WHERE key = 'schema_version';")
           .c_str());

  auto store = OpenMigrated(path);
  ASSERT_NE(store, nullptr);
  auto before = store->ChangesSince(0);
  ASSERT_TRUE(before) << before.error().message;
  EXPECT_FALSE(*before);  // generation 1 was written before the log
  ASSERT_TRUE(store->WriteHours({&hour, 1}));
  auto after = store->ChangesSince(1);
  ASSERT_TRUE(after) << after.error().message;
  ASSERT_TRUE(*after);
  EXPECT_EQ((*after)->generation, 2);
  EXPECT_EQ((*after)->touched,
            (TimeRange{hour.device.hour_us, hour.device.hour_us + kMicrosPerHour}));
  store.reset();
  fs::remove_all(dir);
}

// Version 9's placements had no layout. Opening such a file rebuilds the table with it: the
// entries keep their ids (the hours name them) with layout "", and a device-hour written with
// a layout reads back with it, as a placement of its own.
TEST(SqliteLedgerMigration, Version9FileGetsPlacementLayouts) {
  const fs::path dir = TestDir();
  fs::create_directories(dir);
  const std::string path = (dir / "v9.db").string();
  fs::remove(path);
  LedgerHour hour = MakeHour("on-demand", 4'100'000'000);
  hour.usage = {MakeUsage(hour.device, "train-0")};
  hour.usage[0].allocated_us = 1'000;
  {
    auto store = OpenSqliteLedger(path);
    ASSERT_TRUE(store) << store.error().message;
    ASSERT_TRUE((*store)->WriteHours({&hour, 1}));
  }
  Exec(path, kBackToVersion10);
  Exec(path,
       "CREATE TABLE p9 (id INTEGER PRIMARY KEY, cluster TEXT NOT NULL, node TEXT NOT NULL, "
       "gpu_model TEXT NOT NULL, sharing_mode TEXT NOT NULL, pricing_class TEXT NOT NULL, "
       "UNIQUE (cluster, node, gpu_model, sharing_mode, pricing_class)) STRICT; "
       "INSERT INTO p9 SELECT id, cluster, node, gpu_model, sharing_mode, pricing_class "
       "FROM placements; DROP TABLE placements; ALTER TABLE p9 RENAME TO placements; "
       "UPDATE meta SET value = '9' WHERE key = 'schema_version';");

  auto store = OpenMigrated(path);
  ASSERT_NE(store, nullptr);
  auto before = store->ReadDeviceHours({});
  ASSERT_TRUE(before) << before.error().message;
  ASSERT_EQ(before->size(), 1u);
  EXPECT_EQ((*before)[0].layout, "");
  EXPECT_EQ((*before)[0].price_nanos, 4'100'000'000);
  auto usage = store->ReadUsage({});
  ASSERT_TRUE(usage) << usage.error().message;
  ASSERT_EQ(usage->size(), 1u);
  EXPECT_EQ((*usage)[0].allocated_us, 1'000);

  LedgerHour mig = hour;
  mig.device.hour_us += kMicrosPerHour;
  mig.device.layout = "4g.71gb+3g.71gb";
  mig.usage[0].hour_us = mig.device.hour_us;
  ASSERT_TRUE(store->WriteHours({&mig, 1}));
  auto after = store->ReadDeviceHours({});
  ASSERT_TRUE(after) << after.error().message;
  ASSERT_EQ(after->size(), 2u);
  EXPECT_EQ((*after)[0].layout, "");
  EXPECT_EQ((*after)[1].layout, "4g.71gb+3g.71gb");
  store.reset();
  EXPECT_EQ(QueryText(path, "SELECT count(*) FROM placements"), "2");
  fs::remove_all(dir);
}

// Version 10 kept one label set per pod and per namespace, as last written, so relabelling
// rewrote history. Opening such a file gives each consumer the sets its pod and namespace had
// (all an older ledger knew), drops the side tables, and from then on each hour keeps its own.
TEST(SqliteLedgerMigration, Version10FileMovesLabelsIntoConsumers) {
  const fs::path dir = TestDir();
  fs::create_directories(dir);
  const std::string path = (dir / "v10.db").string();
  fs::remove(path);
  LedgerHour hour = MakeHour("on-demand", 4'100'000'000);
  hour.usage = {MakeUsage(hour.device, "train-0"), MakeUsage(hour.device, "train-1")};
  {
    auto store = OpenSqliteLedger(path);
    ASSERT_TRUE(store) << store.error().message;
    ASSERT_TRUE((*store)->WriteHours({&hour, 1}));
  }
  const ConsumerRef& train0 = hour.usage[0].consumer.ref;
  Exec(path, kBackToVersion10);
  Exec(path, fmt::format("INSERT INTO pod_labels VALUES ('{0}', '{1}', '{2}', 'team', 'vision'), "
                         "('{0}', '{1}', '{2}', 'app', 'trainer'); INSERT INTO namespace_labels "
                         "VALUES ('{0}', 'cost-center', 'cc-7'); UPDATE meta SET value = '10' "
                         "WHERE key = 'schema_version';",
                         train0.namespace_name, train0.pod, train0.pod_uid.str())
                 .c_str());

  auto store = OpenMigrated(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(QueryText(path,
                      "SELECT count(*) FROM sqlite_schema WHERE name IN ('pod_labels', "
                      "'namespace_labels')"),
            "0");
  const std::map<std::string, std::string> pod = {{"app", "trainer"}, {"team", "vision"}};
  const std::map<std::string, std::string> ns = {{"cost-center", "cc-7"}};
  auto usage = store->ReadUsage({});
  ASSERT_TRUE(usage) << usage.error().message;
  ASSERT_EQ(usage->size(), 2u);
  EXPECT_EQ((*usage)[0].consumer.labels, pod);
  EXPECT_EQ((*usage)[0].consumer.namespace_labels, ns);
  EXPECT_TRUE((*usage)[1].consumer.labels.empty());
  EXPECT_EQ((*usage)[1].consumer.namespace_labels, ns);

  // The next hour, relabelled: a consumer entry of its own; the migrated hour keeps its labels.
  LedgerHour next = hour;
  next.device.hour_us += kMicrosPerHour;
  for (UsageRow& u : next.usage) {
    u.hour_us = next.device.hour_us;
    u.consumer.labels = {{"team", "speech"}};
    u.consumer.namespace_labels = ns;
  }
  ASSERT_TRUE(store->WriteHours({&next, 1}));
  usage = store->ReadUsage({});
  ASSERT_TRUE(usage) << usage.error().message;
  ASSERT_EQ(usage->size(), 4u);
  EXPECT_EQ((*usage)[0].consumer.labels, pod);
  EXPECT_EQ((*usage)[2].consumer.labels, next.usage[0].consumer.labels);
  store.reset();
  EXPECT_EQ(QueryText(path, "SELECT count(*) FROM consumers"), "4");
  fs::remove_all(dir);
}

// Version 5 had no findings. Opening such a file adds the table and its index; the hours stay,
// there are no findings, the table is STRICT, and the migrated file records findings.
TEST(SqliteLedgerMigration, Version5FileGetsAnEmptyFindingsTable) {
  const fs::path dir = TestDir();
  fs::create_directories(dir);
  const std::string path = (dir / "v5.db").string();
  fs::remove(path);

  LedgerHour hour = MakeHour("on-demand", 4'100'000'000);
  UsageRow u = MakeUsage(hour.device, "train-0");
  u.allocated_us = kMicrosPerHour;
  hour.usage.push_back(u);
  WriteAsVersion7(path, {&hour, 1});
  Exec(path, kBackToVersion5);
  Exec(path, "UPDATE meta SET value = '5' WHERE key = 'schema_version';");
  ASSERT_EQ(QueryText(path, "SELECT count(*) FROM sqlite_schema WHERE name = 'findings'"), "0");

  auto store = OpenMigrated(path);
  ASSERT_NE(store, nullptr);
  auto usage = store->ReadUsage({});
  ASSERT_TRUE(usage) << usage.error().message;
  ASSERT_EQ(usage->size(), 1u);
  EXPECT_EQ(usage->front().allocated_us, kMicrosPerHour);
  auto none = store->ReadFindings({});
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(QueryText(path,
                      "SELECT strict FROM pragma_table_list "
                      "WHERE name = 'findings' AND schema = 'main'"),
            "1");
  EXPECT_EQ(QueryText(path,
                      "SELECT count(*) FROM sqlite_schema "
                      "WHERE type = 'index' AND name = 'findings_open_by_node'"),
            "1");

  Finding f;
  f.kind = FindingKind::kUnallocatedAccess;
  f.cluster = "prod";
  f.node = "gpu-node-1";
  f.subject = u.consumer.ref;
  f.gpu_uuid = "GPU-1";
  f.evidence = "pids=4242 granted=none";
  f.first_seen_us = kHour0;
  f.last_seen_us = kHour0 + 5;
  ASSERT_TRUE(store->WriteFindings({&f, 1}));
  auto got = store->ReadFindings({});
  ASSERT_TRUE(got) << got.error().message;
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ(got->front(), f);
  EXPECT_EQ(QueryText(path,
                      "SELECT kind || ' ' || severity || ' ' || typeof(first_seen_us) || "
                      "' ' || typeof(resolved_us) FROM findings"),
            "unallocated-access warning integer null");
  store.reset();
  fs::remove_all(dir);
}

// Version 13 had no token hours: opening such a file adds the table, the hours kept.
TEST(SqliteLedgerMigration, Version13FileGetsAnEmptyTokenHoursTable) {
  const fs::path dir = TestDir();
  fs::create_directories(dir);
  const std::string path = (dir / "v13.db").string();
  fs::remove(path);
  LedgerHour hour = MakeHour("on-demand", 4'100'000'000);
  {
    auto store = OpenSqliteLedger(path);
    ASSERT_TRUE(store) << store.error().message;
    ASSERT_TRUE((*store)->WriteHours({&hour, 1}));
  }
  Exec(path, "DROP TABLE token_hours; UPDATE meta SET value = '13' WHERE key = 'schema_version';");

  auto store = OpenMigrated(path);
  ASSERT_NE(store, nullptr);
  auto devices = store->ReadDeviceHours({});
  ASSERT_TRUE(devices) << devices.error().message;
  EXPECT_EQ(devices->size(), 1u);
  TokenHour t;
  t.hour_us = kHour0;
  t.cluster = "prod";
  t.consumer.namespace_name = "ml";
  t.consumer.pod = "llm-0";
  t.model = "m";
  t.engine = "vllm";
  t.input_tokens = 42;
  ASSERT_TRUE(store->WriteTokenHours({&t, 1}));
  auto tokens = store->ReadTokenHours({INT64_MIN, INT64_MAX});
  ASSERT_TRUE(tokens) << tokens.error().message;
  ASSERT_EQ(tokens->size(), 1u);
  EXPECT_EQ(tokens->front(), t);
  EXPECT_EQ(QueryText(path,
                      "SELECT strict FROM pragma_table_list "
                      "WHERE name = 'token_hours' AND schema = 'main'"),
            "1");
  store.reset();
  fs::remove_all(dir);
}

// Version 14 kept one cluster's ingest state in unscoped keys: opening such a file moves them
// under the cluster its meta names (issue 64), values and other keys untouched.
TEST(SqliteLedgerMigration, Version14FileMovesTheIngestStateUnderItsCluster) {
  const fs::path dir = TestDir();
  fs::create_directories(dir);
  const std::string path = (dir / "v14.db").string();
  fs::remove(path);
  {
    auto store = OpenSqliteLedger(path);
    ASSERT_TRUE(store) << store.error().message;
  }
  Exec(path,
       "UPDATE meta SET value = '14' WHERE key = 'schema_version';"
       "INSERT INTO meta VALUES ('cluster', 'prod-eu'), ('ingest_state/engine', '[1]'),"
       " ('ingest_state/instance/n1:9400', '{}'), ('token_state', '{\"t\":1}'),"
       " ('prometheus_cursor', '1795392000000000'), ('currency', 'EUR'),"
       " ('ingest_statement', 'not state');");
  auto store = OpenMigrated(path);
  ASSERT_NE(store, nullptr);
  auto meta = store->ReadMeta();
  ASSERT_TRUE(meta) << meta.error().message;
  meta->erase("ledger_generation");
  EXPECT_EQ(*meta, (std::map<std::string, std::string>{
                       {"cluster", "prod-eu"},
                       {"cluster/prod-eu/ingest_state/engine", "[1]"},
                       {"cluster/prod-eu/ingest_state/instance/n1:9400", "{}"},
                       {"cluster/prod-eu/prometheus_cursor", "1795392000000000"},
                       {"cluster/prod-eu/token_state", "{\"t\":1}"},
                       {"currency", "EUR"},
                       {"ingest_statement", "not state"},
                       {"schema_version", "15"}}));
  store.reset();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuledger::store
