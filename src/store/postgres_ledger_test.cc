// PostgreSQL-only behaviour of the ledger: errors that name the server and
// never the password, connection loss and reconnecting, migrations of an older
// schema, concurrent openers. The store contract both stores share is in
// ledger_store_test.cc. Tests needing a server skip without
// GPULEDGER_TEST_POSTGRES; the rest run everywhere.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "store/ledger_store.h"
#include "store/postgres_db.h"
#include "store_test_env/store_test_env.h"

namespace gpuledger::store::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(PostgresUrl, DescribesTheServerWithoutThePassword) {
  EXPECT_EQ(DescribePostgresServer("postgres://ledger:s3cr%21t@db.example:6432/gpu?sslmode=off"),
            "postgres://ledger@db.example:6432/gpu");
  EXPECT_EQ(DescribePostgresServer("host=/run/pg dbname=gpu user=me password=hunter2"),
            "postgres://me@/run/pg/gpu");
  EXPECT_EQ(DescribePostgresServer("postgresql:///gpu"), "postgres://localhost/gpu");
  EXPECT_EQ(DescribePostgresServer("postgres://%zz"), "postgres://(unparseable URL)");

  EXPECT_EQ(RedactPostgresUrl("postgres://ledger:s3cr%21t@db/gpu?sslmode=off&password=other%20pw"),
            "postgres://ledger:***@db/gpu?sslmode=off&password=***");
  EXPECT_EQ(RedactPostgresUrl("host=db password='a \\' b' dbname=gpu"),
            "host=db password='***' dbname=gpu");
  EXPECT_EQ(DisplayLedgerSpec("postgres://ledger:pw123@db/gpu"), "postgres://ledger:***@db/gpu");
  // A password that is a common substring: only its own place is touched (search-and-replace
  // printed "p***stgres://user@..." and told where every "o" was).
  EXPECT_EQ(DisplayLedgerSpec("postgres://user:o@127.0.0.1:1/x"),
            "postgres://user:***@127.0.0.1:1/x");
  auto short_password = OpenLedger("postgres://user:o@127.0.0.1:1/x?connect_timeout=2");
  ASSERT_FALSE(short_password);
  EXPECT_THAT(short_password.error().message,
              HasSubstr("postgres://user@127.0.0.1:1/x: connect: connection to server"));
  EXPECT_THAT(short_password.error().message, Not(HasSubstr("***")));
  EXPECT_EQ(DisplayLedgerSpec("sqlite:/x/pw123.db"), "sqlite:/x/pw123.db");
}

// bytea's hex form, as the ledger sends records and reads them back.
TEST(ByteaHex, RoundTripsEveryByteAndRefusesWhatIsNotHex) {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  const std::string hex = ByteaHex(all);
  EXPECT_EQ(hex.substr(0, 8), "\\x000102");
  std::string back;
  ASSERT_TRUE(DecodeByteaHex(hex, back));
  EXPECT_EQ(back, all);
  ASSERT_TRUE(DecodeByteaHex("\\xDEADbeef", back));
  EXPECT_EQ(back, "\xde\xad\xbe\xef");
  ASSERT_TRUE(DecodeByteaHex("\\x", back));
  EXPECT_EQ(back, "");
  for (const char* bad : {"", "\\", "x00", "\\x0", "\\x0g", "\\xg0", "\\x 0", "\\y00"}) {
    EXPECT_FALSE(DecodeByteaHex(bad, back)) << bad;
  }
}

TEST(PostgresLedger, UnreachableServerIsUnavailableAndNamesIt) {
  // Port 1 on loopback: nothing listens there, the connect fails at once.
  auto store = OpenLedger("postgres://ledger:topsecret@127.0.0.1:1/gpu?connect_timeout=2");
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(store.error().message, HasSubstr("postgres://ledger@127.0.0.1:1/gpu: connect:"));
  EXPECT_THAT(store.error().message, Not(HasSubstr("topsecret")));

  auto malformed = OpenPostgresLedger("postgres://ledger:topsecret@127.0.0.1:1/gpu?nosuch=1");
  ASSERT_FALSE(malformed);
  EXPECT_EQ(malformed.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(malformed.error().message, HasSubstr("nosuch"));
  EXPECT_THAT(malformed.error().message, Not(HasSubstr("topsecret")));
}

// Version 10 kept labels in side tables, one set per pod and per namespace, consumers without
// them, and no statements: this takes a ledger of this build back to that shape (labels
// dropped, the side tables empty).
constexpr const char* kBackToVersion10 =
    "DROP TABLE token_hours; DROP TABLE day_rollups; DROP TABLE statements; ALTER TABLE consumers DROP COLUMN labels; "
    "ALTER TABLE consumers DROP "
    "COLUMN "
    "namespace_labels; ALTER TABLE consumers ADD UNIQUE (namespace, pod, pod_uid, container, "
    "owner_kind, owner_name); CREATE TABLE pod_labels (namespace TEXT COLLATE \"C\" NOT NULL, pod "
    "TEXT COLLATE \"C\" NOT NULL, pod_uid TEXT COLLATE \"C\" NOT NULL, key TEXT COLLATE \"C\" NOT "
    "NULL, value TEXT NOT NULL, PRIMARY KEY (namespace, pod, pod_uid, key)); CREATE TABLE "
    "namespace_labels (namespace TEXT COLLATE \"C\" NOT NULL, key TEXT COLLATE \"C\" NOT NULL, "
    "value TEXT NOT NULL, PRIMARY KEY (namespace, key)); ";

class PostgresLedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (PostgresTestUrl().empty()) GTEST_SKIP() << PostgresSkipMessage();
    auto ledger = PostgresTestLedger::Create(PostgresTestUrl());
    ASSERT_TRUE(ledger) << "GPULEDGER_TEST_POSTGRES is set but unusable: "
                        << ledger.error().message;
    ledger_ = std::move(*ledger);
  }
  std::unique_ptr<LedgerStore> Open() {
    auto store = ledger_->Open();
    EXPECT_TRUE(store) << store.error().message;
    return store ? std::move(*store) : nullptr;
  }
  // Writes `hour` as the build of schema 7 did, runs `rewind` (SQL that takes the schema back
  // to an older version), and opens the ledger, which must migrate it to the current version.
  std::unique_ptr<LedgerStore> WriteRewindAndReopen(const LedgerHour& hour,
                                                    const std::string& rewind) {
    Status written = ledger_->WriteAsVersion7(std::span(&hour, 1));
    EXPECT_TRUE(written) << written.error().message;
    auto r = ledger_->Query(rewind);
    EXPECT_TRUE(r) << r.error().message;
    auto store = Open();
    if (!store) return nullptr;
    auto meta = store->ReadMeta();
    EXPECT_TRUE(meta) << meta.error().message;
    if (meta) {
      EXPECT_EQ(meta->at("schema_version"), "15");
    }
    return store;
  }
  // The password in the test server's URL ("" when it has none).
  std::string Password() const {
    const std::string& url = ledger_->url();
    auto scheme = url.find("://");
    auto at = url.find('@');
    if (scheme == std::string::npos || at == std::string::npos) return "";
    auto colon = url.find(':', scheme + 3);
    return colon < at ? url.substr(colon + 1, at - colon - 1) : "";
  }

  std::unique_ptr<PostgresTestLedger> ledger_;
};

TEST_F(PostgresLedgerTest, ConnectionLossIsUnavailableAndTheNextCallReconnects) {
  auto store = Open();
  ASSERT_TRUE(store);
  LedgerHour a{MakeDevice(Hour(0), "GPU-a"), {}};
  a.usage = {MakeUsage(a.device, "team-a", "api-1", "server", 1'000)};
  ASSERT_TRUE(store->WriteHours(std::span(&a, 1)));

  auto killed = ledger_->KillStoreConnections();
  ASSERT_TRUE(killed) << killed.error().message;
  ASSERT_EQ(*killed, 1);
  auto lost = store->ReadDeviceHours({});
  ASSERT_FALSE(lost);
  EXPECT_EQ(lost.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(lost.error().message, HasSubstr(ledger_->Location()));
  EXPECT_THAT(lost.error().message, HasSubstr("begin transaction"));
  EXPECT_THAT(lost.error().message, HasSubstr("connection lost"));

  // The next call reconnects, with the same schema (search_path) as before.
  EXPECT_EQ(MustReadDevices(*store).size(), 1u);

  // A write that loses its connection keeps nothing, and the one after it
  // succeeds.
  ASSERT_EQ(*ledger_->KillStoreConnections(), 1);
  LedgerHour b{MakeDevice(Hour(1), "GPU-a"), {}};
  Status s = store->WriteHours(std::span(&b, 1));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(MustReadDevices(*store).size(), 1u);
  ASSERT_TRUE(store->WriteHours(std::span(&b, 1)));
  EXPECT_EQ(MustReadDevices(*store).size(), 2u);
  EXPECT_EQ(MustReadUsage(*store).size(), 1u);
}

TEST_F(PostgresLedgerTest, ErrorsNameTheServerAndStatementNeverThePassword) {
  const std::string password = Password();
  ASSERT_FALSE(password.empty()) << "the test server's URL should carry a password";

  // A statement error: a table gone from under the store.
  auto store = Open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(ledger_->Query("DROP TABLE ledger_changes"));
  LedgerHour h{MakeDevice(Hour(0), "GPU-a"), {}};
  h.usage = {MakeUsage(h.device, "team-a", "api-1", "server", 1)};
  Status s = store->WriteHours(std::span(&h, 1));
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message, HasSubstr(ledger_->Location() + ": log ledger change:"));
  EXPECT_THAT(s.error().message, HasSubstr("[42P01]"));
  EXPECT_THAT(s.error().message, Not(HasSubstr(password)));

  // A wrong password and a database that does not exist: refused at open,
  // naming the server.
  std::string wrong = ledger_->url();
  wrong.replace(wrong.find(password), password.size(), "wrong-" + password);
  auto refused = OpenPostgresLedger(wrong);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(refused.error().message, HasSubstr("password authentication failed"));
  EXPECT_THAT(refused.error().message, Not(HasSubstr(password)));

  const std::string location = ledger_->Location();
  const std::string db = location.substr(location.rfind('/') + 1);
  std::string missing = ledger_->url();
  missing.replace(missing.find("/" + db), db.size() + 1, "/no_such_db_here");
  auto absent = OpenPostgresLedger(missing);
  ASSERT_FALSE(absent);
  EXPECT_THAT(absent.error().message, HasSubstr("/no_such_db_here: connect:"));
  EXPECT_THAT(absent.error().message, HasSubstr("does not exist"));
  EXPECT_THAT(absent.error().message, Not(HasSubstr(password)));
}

// Version 5 had no findings table: this takes a schema written by this build back to that
// shape.
// (From this build's schema, through version 6: the histogram column dropped first.)
constexpr const char* kBackToVersion6 = "ALTER TABLE usage_hours DROP COLUMN histogram; ";
constexpr const char* kBackToVersion5 =
    "ALTER TABLE usage_hours DROP COLUMN histogram; DROP TABLE findings; ";

// Version 4 had no activity or share columns: this takes a schema written by
// this build back to that shape.
constexpr const char* kBackToVersion4 =
    "ALTER TABLE usage_hours DROP COLUMN sm_active_us, DROP COLUMN sm_occupancy_us, "
    "DROP COLUMN tensor_active_us, DROP COLUMN dram_active_us, "
    "DROP COLUMN activity_quality, DROP COLUMN activity_rule, DROP COLUMN share_source; ";

// Version 3 kept memory-time as DOUBLE PRECISION byte-µs: this takes a schema
// written by this build back to those columns (1 KiB-s = 1024e6 byte-µs).
constexpr const char* kBackToDoubleByteMicros =
    "ALTER TABLE device_hours ADD COLUMN unattributed_memory_byte_us "
    "DOUBLE PRECISION NOT NULL DEFAULT 0; "
    "UPDATE device_hours SET unattributed_memory_byte_us = "
    "unattributed_memory_kib_s * 1024e6::float8; "
    "ALTER TABLE device_hours DROP COLUMN unattributed_memory_kib_s; "
    "ALTER TABLE usage_hours ADD COLUMN memory_byte_us DOUBLE PRECISION NOT NULL DEFAULT 0; "
    "UPDATE usage_hours SET memory_byte_us = memory_kib_s * 1024e6::float8; "
    "ALTER TABLE usage_hours DROP COLUMN memory_kib_s; ";

// A schema at version 1 (before reconciliations and energy prices, with
// floating-point memory-time) keeps its rows and gains what versions 2 to 4
// add, the new price column at 0.
TEST_F(PostgresLedgerTest, MigratesAVersion1Schema) {
  LedgerHour hour{MakeDevice(Hour(0), "GPU-a"), {}};
  hour.device.energy_price_nanos = 0;
  hour.usage = {MakeUsage(hour.device, "team-a", "api-1", "server", 1'000)};
  auto store = WriteRewindAndReopen(
      hour, std::string(kBackToVersion5) + kBackToVersion4 + kBackToDoubleByteMicros +
                "DROP TABLE reconciliations; ALTER TABLE device_hours DROP COLUMN "
                "energy_price_nanos; "
                "UPDATE meta SET value = '1' WHERE key = 'schema_version'");
  ASSERT_TRUE(store);
  auto devices = MustReadDevices(*store);
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].price_nanos, hour.device.price_nanos);
  EXPECT_EQ(devices[0].energy_price_nanos, 0);
  auto usage = MustReadUsage(*store);
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0].memory_kib_s, hour.usage[0].memory_kib_s);
  auto recs = store->ReadReconciliations({});
  ASSERT_TRUE(recs) << recs.error().message;
  EXPECT_TRUE(recs->empty());
}

// A schema at version 3 (memory-time as DOUBLE PRECISION byte-µs) gets integer
// KiB-s columns, converted as the SQLite ledger converts them (rounded to
// nearest, halves away from zero, saturating at int64; NaN, which only
// PostgreSQL can hold, becomes 0), and the double columns are dropped.
TEST_F(PostgresLedgerTest, MigratesAVersion3SchemaToKibSeconds) {
  struct Case {
    const char* pod;
    const char* byte_us;  // as SQL
    KibSeconds kib_s;
  };
  const Case cases[] = {
      {"zero", "0", 0},
      {"just-below-half", "511999999", 0},
      {"half", "512000000", 1},
      {"one-and-a-half", "1536000000", 2},
      {"fraction", "1.5e15", 1'464'844},
      {"gib-hour", "3865470566400000000", 3'774'873'600},
      {"huge", "1e300", std::numeric_limits<KibSeconds>::max()},
      {"infinite", "'Infinity'", std::numeric_limits<KibSeconds>::max()},
      {"nan", "'NaN'", 0},
  };
  LedgerHour hour{MakeDevice(Hour(0), "GPU-a"), {}};
  for (const Case& c : cases) hour.usage.push_back(MakeUsage(hour.device, "ns", c.pod, "c", 1));
  std::string sql = std::string(kBackToVersion5) + kBackToVersion4 + kBackToDoubleByteMicros;
  for (const Case& c : cases) {
    sql += fmt::format("UPDATE usage_hours SET memory_byte_us = {}::float8 WHERE pod = '{}'; ",
                       c.byte_us, c.pod);
  }
  sql +=
      "UPDATE device_hours SET unattributed_memory_byte_us = 2.5e12; "  // 2441.40625 KiB-s
      "UPDATE meta SET value = '3' WHERE key = 'schema_version'";
  auto store = WriteRewindAndReopen(hour, sql);
  ASSERT_TRUE(store);
  auto devices = MustReadDevices(*store);
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].unattributed_memory_kib_s, 2441);
  EXPECT_EQ(devices[0].price_nanos, hour.device.price_nanos);
  auto usage = MustReadUsage(*store);
  ASSERT_EQ(usage.size(), std::size(cases));
  for (const Case& c : cases) {
    bool found = false;
    for (const UsageRow& u : usage) {
      if (u.consumer.ref.pod != c.pod) continue;
      found = true;
      EXPECT_EQ(u.memory_kib_s, c.kib_s) << c.pod;
      EXPECT_EQ(u.peak_memory_bytes, hour.usage[0].peak_memory_bytes) << c.pod;
    }
    EXPECT_TRUE(found) << c.pod;
  }
  // The double columns went with the tables (7 -> 8): nothing of the schema is floating-point.
  auto left = ledger_->Query(
      "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() "
      "AND data_type IN ('double precision', 'real')");
  ASSERT_TRUE(left) << left.error().message;
  EXPECT_EQ(*left, "0");

  // The migrated schema takes the integer unit.
  hour.usage.resize(1);
  hour.usage[0].memory_kib_s = 9'007'199'254'740'993;
  ASSERT_TRUE(store->WriteHours(std::span(&hour, 1)));
  EXPECT_EQ(MustReadUsage(*store).at(0).memory_kib_s, 9'007'199'254'740'993);
}

// A schema at version 4 (no activity or share columns) keeps its rows and gets
// the columns with 0, 'none' and '' in them, typed as the SQLite ledger's; the
// migrated schema takes and replaces the new values.
TEST_F(PostgresLedgerTest, MigratesAVersion4SchemaToActivityColumns) {
  LedgerHour hour{MakeDevice(Hour(0), "GPU-a"), {}};
  hour.usage = {MakeUsage(hour.device, "team-a", "api-1", "server", 1'000)};
  hour.usage[0].activity = Activity{11, 12, 13, 14};
  hour.usage[0].activity_quality = Quality::kMeasured;
  hour.usage[0].activity_rule = "gpm";
  hour.usage[0].share_source = "resource:gpu_milli";
  auto store =
      WriteRewindAndReopen(hour, std::string(kBackToVersion5) + kBackToVersion4 +
                                     "UPDATE meta SET value = '4' WHERE key = 'schema_version'");
  ASSERT_TRUE(store);
  auto usage = MustReadUsage(*store);
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0].activity, Activity{});
  EXPECT_EQ(usage[0].activity_quality, Quality::kNone);
  EXPECT_EQ(usage[0].activity_rule, "");
  EXPECT_EQ(usage[0].share_source, "");
  EXPECT_EQ(usage[0].allocated_us, 1'000);
  EXPECT_EQ(usage[0].memory_kib_s, hour.usage[0].memory_kib_s);

  ASSERT_TRUE(store->WriteHours(std::span(&hour, 1)));
  auto again = MustReadUsage(*store);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].activity, (Activity{11, 12, 13, 14}));
  EXPECT_EQ(again[0].activity_quality, Quality::kMeasured);
  EXPECT_EQ(again[0].activity_rule, "gpm");
  EXPECT_EQ(again[0].share_source, "resource:gpu_milli");
}

// A schema at version 6 (no histogram column) keeps its rows, reads them without histograms,
// and takes them once migrated.
TEST_F(PostgresLedgerTest, MigratesAVersion6SchemaToHistograms) {
  LedgerHour hour{MakeDevice(Hour(0), "GPU-a"), {}};
  hour.usage = {MakeUsage(hour.device, "team-a", "api-1", "server", 1'000)};
  hour.usage[0].histogram.compute = {1, 2, 3, 4, 5, 6};
  auto store =
      WriteRewindAndReopen(hour, std::string(kBackToVersion6) +
                                     "UPDATE meta SET value = '6' WHERE key = 'schema_version'");
  ASSERT_TRUE(store);
  auto usage = MustReadUsage(*store);
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_TRUE(usage[0].histogram.empty());
  EXPECT_EQ(usage[0].allocated_us, 1'000);
  ASSERT_TRUE(store->WriteHours(std::span(&hour, 1)));
  auto again = MustReadUsage(*store);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].histogram, hour.usage[0].histogram);
}

// A schema at version 9 (placements without a layout) gets the column, in the placements' key:
// old entries read as "", a device-hour with a layout reads back with it.
TEST_F(PostgresLedgerTest, MigratesAVersion9SchemaToPlacementLayouts) {
  LedgerHour hour{MakeDevice(Hour(0), "GPU-a"), {}};
  hour.usage = {MakeUsage(hour.device, "team-a", "api-1", "server", 1'000)};
  {
    auto store = Open();
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->WriteHours(std::span(&hour, 1)));
  }
  auto r = ledger_->Query(
      std::string(kBackToVersion10) +
      "ALTER TABLE placements DROP COLUMN layout; "
      "ALTER TABLE placements ADD UNIQUE (cluster, node, gpu_model, sharing_mode, pricing_class); "
      "UPDATE meta SET value = '9' WHERE key = 'schema_version'");
  ASSERT_TRUE(r) << r.error().message;
  auto store = Open();
  ASSERT_TRUE(store);
  EXPECT_EQ(store->ReadMeta()->at("schema_version"), "15");
  auto before = store->ReadDeviceHours({});
  ASSERT_TRUE(before) << before.error().message;
  ASSERT_EQ(before->size(), 1u);
  EXPECT_EQ((*before)[0].layout, "");
  ASSERT_EQ(MustReadUsage(*store).size(), 1u);
  LedgerHour mig = hour;
  mig.device.hour_us = Hour(1);
  mig.device.layout = "4g.71gb+3g.71gb";
  mig.usage[0].hour_us = Hour(1);
  ASSERT_TRUE(store->WriteHours(std::span(&mig, 1)));
  auto after = store->ReadDeviceHours({});
  ASSERT_TRUE(after) << after.error().message;
  ASSERT_EQ(after->size(), 2u);
  EXPECT_EQ((*after)[0].layout, "");
  EXPECT_EQ((*after)[1].layout, "4g.71gb+3g.71gb");
  EXPECT_EQ(*ledger_->Query("SELECT count(*) FROM placements"), "2");
}

// A schema at version 10 kept one label set per pod and per namespace in side tables: its
// consumers get them (keyed by their digests), the side tables go, and a relabelled hour written
// after keeps its own labels beside the migrated one's.
TEST_F(PostgresLedgerTest, MigratesAVersion10SchemaToConsumerLabels) {
  LedgerHour hour{MakeDevice(Hour(0), "GPU-a"), {}};
  hour.usage = {MakeUsage(hour.device, "team-a", "api-1", "server", 1'000)};
  {
    auto store = Open();
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->WriteHours(std::span(&hour, 1)));
  }
  const ConsumerRef& c = hour.usage[0].consumer.ref;
  auto r = ledger_->Query(fmt::format(
      "{3}INSERT INTO pod_labels VALUES ('{0}', '{1}', '{2}', 'team', 'vision'); INSERT INTO "
      "namespace_labels VALUES ('{0}', 'cost-center', 'cc-7'); UPDATE meta SET value = '10' "
      "WHERE key = 'schema_version'",
      c.namespace_name, c.pod, c.pod_uid.str(), kBackToVersion10));
  ASSERT_TRUE(r) << r.error().message;
  auto store = Open();
  ASSERT_TRUE(store);
  EXPECT_EQ(store->ReadMeta()->at("schema_version"), "15");
  EXPECT_EQ(*ledger_->Query("SELECT count(*) FROM information_schema.tables WHERE table_schema = "
                            "current_schema() AND table_name IN ('pod_labels', "
                            "'namespace_labels')"),
            "0");
  auto before = MustReadUsage(*store);
  ASSERT_EQ(before.size(), 1u);
  EXPECT_EQ(before[0].consumer.labels, (std::map<std::string, std::string>{{"team", "vision"}}));
  EXPECT_EQ(before[0].consumer.namespace_labels,
            (std::map<std::string, std::string>{{"cost-center", "cc-7"}}));

  LedgerHour next = hour;
  next.device.hour_us = Hour(1);
  next.usage[0].hour_us = Hour(1);
  next.usage[0].consumer.labels = {{"team", "speech"}};
  next.usage[0].consumer.namespace_labels = before[0].consumer.namespace_labels;
  ASSERT_TRUE(store->WriteHours(std::span(&next, 1)));
  auto after = MustReadUsage(*store);
  ASSERT_EQ(after.size(), 2u);
  EXPECT_EQ(after[0].consumer.labels, before[0].consumer.labels);
  EXPECT_EQ(after[1].consumer.labels, next.usage[0].consumer.labels);
  EXPECT_EQ(*ledger_->Query("SELECT count(*) FROM consumers"), "2");
}

// A schema at version 5 (no findings) keeps its rows and gets the findings table, typed as the
// SQLite ledger's, with its partial index; the migrated schema records findings.
TEST_F(PostgresLedgerTest, MigratesAVersion5SchemaToFindings) {
  LedgerHour hour{MakeDevice(Hour(0), "GPU-a"), {}};
  hour.usage = {MakeUsage(hour.device, "team-a", "api-1", "server", 1'000)};
  auto store =
      WriteRewindAndReopen(hour, std::string(kBackToVersion5) +
                                     "UPDATE meta SET value = '5' WHERE key = 'schema_version'");
  ASSERT_TRUE(store);
  auto usage = MustReadUsage(*store);
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0].allocated_us, 1'000);
  auto none = store->ReadFindings({});
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_TRUE(none->empty());
  auto types = ledger_->Query(
      "SELECT string_agg(column_name || ':' || data_type, ',' ORDER BY column_name) "
      "FROM information_schema.columns WHERE table_schema = current_schema() "
      "AND table_name = 'findings' AND column_name LIKE '%_us'");
  ASSERT_TRUE(types) << types.error().message;
  EXPECT_EQ(*types, "first_seen_us:bigint,last_seen_us:bigint,resolved_us:bigint");
  auto index = ledger_->Query(
      "SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() "
      "AND indexname = 'findings_open_by_node'");
  ASSERT_TRUE(index) << index.error().message;
  EXPECT_THAT(*index, HasSubstr("WHERE (resolved_us IS NULL)"));

  Finding f;
  f.kind = FindingKind::kIdleAllocation;
  f.severity = Severity::kInfo;
  f.cluster = "prod";
  f.node = "gpu-node-1";
  f.subject = hour.usage[0].consumer.ref;
  f.gpu_uuid = "GPU-a";
  f.evidence = "hours=24";
  f.first_seen_us = Hour(0);
  f.last_seen_us = Hour(24);
  f.resolved_us = Hour(24);
  ASSERT_TRUE(store->WriteFindings(std::span(&f, 1)));
  auto got = store->ReadFindings({});
  ASSERT_TRUE(got) << got.error().message;
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ(got->front(), f);
}

// Servers started together against a new database: one migrates, the others
// wait and find it done; every one opens.
TEST_F(PostgresLedgerTest, ConcurrentOpenersMigrateOnce) {
  constexpr int kOpeners = 6;
  std::vector<std::string> errors(kOpeners);
  std::vector<std::thread> threads;
  for (int i = 0; i < kOpeners; ++i) {
    threads.emplace_back([&, i] {
      auto store = ledger_->Open();
      if (!store) errors[static_cast<std::size_t>(i)] = store.error().message;
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) EXPECT_EQ(e, "");
  auto tables = ledger_->Query(
      "SELECT count(*) FROM information_schema.tables "
      "WHERE table_schema = current_schema()");
  ASSERT_TRUE(tables) << tables.error().message;
  // meta reconciliations findings, the four dictionaries, hours, ledger_changes, statements,
  // day_rollups, token_hours
  EXPECT_EQ(*tables, "12");
}

}  // namespace
}  // namespace gpuledger::store::testing
