#pragma once
// What the store tests share: row builders, a temp dir, and TestLedger, a fresh
// ledger of one kind per test (an SQLite file in a temp dir, or a PostgreSQL
// schema on the server that GPULEDGER_TEST_POSTGRES names), so the same tests
// run against both stores and runs never collide.

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "store/ledger_store.h"
#include "store/postgres_db.h"

namespace gpuledger::store::testing {

inline constexpr Micros kHour0 = 1'717'200'000LL * kMicrosPerSecond;  // 2024-06-01T00:00:00Z
static_assert(HourStart(kHour0) == kHour0);
inline Micros Hour(int n) { return kHour0 + n * kMicrosPerHour; }

// A unique directory under the system temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  std::string File(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

DeviceHour MakeDevice(Micros hour_us, const std::string& gpu);
UsageRow MakeUsage(const DeviceHour& d, const std::string& ns, const std::string& pod,
                   const std::string& container, GpuMicros allocated_us);
std::vector<UsageRow> MustReadUsage(LedgerStore& store, TimeRange range = {});
std::vector<DeviceHour> MustReadDevices(LedgerStore& store, TimeRange range = {});
// Every field of a row, labels included, for comparing rows read back with rows written.
std::string Describe(const DeviceHour& d);
std::string Describe(const UsageRow& u);
// "<hour index> <gpu> <consumer key>" per row, for order checks.
std::vector<std::string> Keys(const std::vector<UsageRow>& rows);

enum class StoreKind { kSqlite, kPostgres };
std::string StoreKindName(StoreKind kind);  // "Sqlite", "Postgres": test name suffixes

// One test's own ledger. Open() may be called again: each store opened sees the
// same data.
class TestLedger {
 public:
  virtual ~TestLedger() = default;
  virtual StoreKind kind() const = 0;
  virtual Result<std::unique_ptr<LedgerStore>> Open() = 0;
  // What the store's errors name: the file path, or
  // postgres://USER@HOST:PORT/DB.
  virtual std::string Location() const = 0;
  // Runs SQL on the ledger behind the store's back; the first column of the
  // first row ("" for none).
  virtual Result<std::string> Query(const std::string& sql) = 0;
  // How the store's message for a duplicate key starts.
  virtual std::string UniqueViolationText() const = 0;
  // Makes the ledger one the build of schema 7 wrote, holding `hours`
  // (store_test_env/version7_writer.h); Open() then migrates it.
  virtual Status WriteAsVersion7(std::span<const LedgerHour> hours) = 0;
};

// A fresh ledger of `kind`; nullptr with `skip` set when that store is not
// available here (PostgreSQL without GPULEDGER_TEST_POSTGRES). A configured
// server that cannot be reached is a test failure (ADD_FAILURE), never a skip.
std::unique_ptr<TestLedger> MakeTestLedger(StoreKind kind, std::string& skip);

// A test run against each store kind (INSTANTIATE_TEST_SUITE_P over StoreKind): SetUp makes the
// test's own ledger and opens a store on it, and skips where that kind is not available here.
class EachStoreTest : public ::testing::TestWithParam<StoreKind> {
 protected:
  void SetUp() override {
    std::string skip;
    ledger_ = MakeTestLedger(GetParam(), skip);
    if (!ledger_) GTEST_SKIP() << skip;
    auto opened = ledger_->Open();
    ASSERT_TRUE(opened.ok()) << opened.error().message;
    store_ = std::move(*opened);
  }

  std::unique_ptr<TestLedger> ledger_;
  std::unique_ptr<LedgerStore> store_;
};

// The PostgreSQL TestLedger: a schema of its own, dropped afterwards; the store
// connects with that schema as search_path and the schema's name as
// application_name.
class PostgresTestLedger final : public TestLedger {
 public:
  static Result<std::unique_ptr<PostgresTestLedger>> Create(const std::string& base_url);
  ~PostgresTestLedger() override;

  StoreKind kind() const override { return StoreKind::kPostgres; }
  Result<std::unique_ptr<LedgerStore>> Open() override { return OpenPostgresLedger(url_); }
  std::string Location() const override { return DescribePostgresServer(url_); }
  Result<std::string> Query(const std::string& sql) override;
  std::string UniqueViolationText() const override { return "duplicate key value"; }
  Status WriteAsVersion7(std::span<const LedgerHour> hours) override;

  const std::string& url() const { return url_; }  // the store's URL (with password)
  const std::string& schema() const { return schema_; }
  // Ends every server session the store holds (pg_terminate_backend): a lost
  // connection.
  Result<int> KillStoreConnections();

 private:
  PostgresTestLedger(std::unique_ptr<PgConn> admin, std::string url, std::string schema)
      : admin_(std::move(admin)), url_(std::move(url)), schema_(std::move(schema)) {}
  std::unique_ptr<PgConn> admin_;
  std::string url_;
  std::string schema_;
};

// The URL of the server the PostgreSQL tests use ("" when not configured), and
// the message a skipped test prints.
std::string PostgresTestUrl();
std::string PostgresSkipMessage();

}  // namespace gpuledger::store::testing
