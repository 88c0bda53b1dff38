// Schema migrations of the SQLite ledger that change existing tables: a file written by an
// older build keeps its rows when it is opened by this one.

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "store/ledger_store.h"

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

// Version 1 had no energy_price_nanos (and no reconciliations table): a file in that shape is
// made by writing with this build and taking both away again, then marking it version 1.
TEST(SqliteLedgerMigration, Version1FileKeepsItsRowsAndGetsEnergyPriceZero) {
  const fs::path dir = fs::temp_directory_path() /
                       ("gpuledger_migration_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "v1.db").string();
  fs::remove(path);

  LedgerHour hour;
  hour.device.hour_us = kHour0;
  hour.device.cluster = "prod";
  hour.device.node = "gpu-node-1";
  hour.device.gpu = GpuUuid("GPU-1");
  hour.device.gpu_model = "H100-80GB";
  hour.device.pricing_class = "on-prem";
  hour.device.price_nanos = 1'105'000'000;
  hour.device.energy_price_nanos = 105'000'000;
  hour.device.metered_us = kMicrosPerHour;
  hour.device.energy_mj = 2'520'000'000;
  UsageRow u;
  u.hour_us = kHour0;
  u.gpu = hour.device.gpu;
  u.consumer.ref.namespace_name = "ml";
  u.consumer.ref.pod = "train-0";
  u.consumer.ref.container = "main";
  u.node = hour.device.node;
  u.gpu_model = hour.device.gpu_model;
  u.allocated_us = kMicrosPerHour;
  u.energy_mj = 2'000'000'000;
  hour.usage.push_back(u);
  {
    auto store = OpenSqliteLedger(path);
    ASSERT_TRUE(store) << store.error().message;
    ASSERT_TRUE((*store)->WriteHours({&hour, 1}));
    auto rows = (*store)->ReadDeviceHours({});
    ASSERT_TRUE(rows);
    ASSERT_EQ(rows->size(), 1u);
    EXPECT_EQ(rows->front().energy_price_nanos, 105'000'000);  // round trip at the new version
  }
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
  // The migrated file takes the new column.
  hour.device.energy_price_nanos = 7;
  ASSERT_TRUE((*store)->WriteHours({&hour, 1}));
  EXPECT_EQ((*store)->ReadDeviceHours({})->front().energy_price_nanos, 7);
  store->reset();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuledger::store
