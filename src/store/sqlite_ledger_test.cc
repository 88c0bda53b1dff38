// SQLite-only behaviour of the ledger: read-only files, file permissions,
// locking, open errors. The store contract both stores share is in
// ledger_store_test.cc.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <string>

#include "store/ledger_store.h"
#include "store/sqlite_connection.h"
#include "store_test_env/store_test_env.h"

namespace gpuledger::store::testing {
namespace {

using ::testing::HasSubstr;

namespace fs = std::filesystem;

std::unique_ptr<LedgerStore> MustOpen(const std::string& path) {
  auto store = OpenSqliteLedger(path);
  EXPECT_TRUE(store) << store.error().message;
  return store ? std::move(*store) : nullptr;
}

TEST(SqliteLedger, WriteToReadOnlyLedgerFailsAndKeepsData) {
  TempDir dir;
  const std::string path = dir.File("ledger.db");
  LedgerHour a{MakeDevice(Hour(0), "GPU-a"), {}};
  a.usage = {MakeUsage(a.device, "team-a", "api-1", "server", 1'000)};
  {
    auto store = MustOpen(path);
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->WriteHours(std::span(&a, 1)));
  }
  auto ro = OpenSqliteLedger(path, SqliteLedgerOptions{.read_only = true});
  ASSERT_TRUE(ro) << ro.error().message;
  LedgerHour b{MakeDevice(Hour(1), "GPU-a"), {}};
  Status s = (*ro)->WriteHours(std::span(&b, 1));
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message, HasSubstr(path));
  EXPECT_THAT(s.error().message, HasSubstr("read-only"));
  EXPECT_FALSE((*ro)->PutMeta("cluster", "x"));
  EXPECT_EQ(MustReadUsage(**ro).size(), 1u);
  EXPECT_EQ(MustReadDevices(**ro).size(), 1u);
}

TEST(SqliteLedger, WriteToWriteProtectedFileFails) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores file permissions";
  TempDir dir;
  const std::string path = dir.File("ledger.db");
  LedgerHour a{MakeDevice(Hour(0), "GPU-a"), {}};
  {
    auto store = MustOpen(path);
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->WriteHours(std::span(&a, 1)));
  }
  fs::permissions(path, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  auto store = OpenSqliteLedger(path);
  if (!store) {  // refusing at open is as good as refusing at write, if it says
                 // why
    EXPECT_THAT(store.error().message, HasSubstr(path));
    return;
  }
  LedgerHour b{MakeDevice(Hour(1), "GPU-a"), {}};
  Status s = (*store)->WriteHours(std::span(&b, 1));
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message, HasSubstr(path));
  EXPECT_THAT(s.error().message, HasSubstr("read-only"));
  EXPECT_EQ(MustReadDevices(**store).size(), 1u);
}

TEST(SqliteLedger, LockedByAnotherWriterFailsUnavailable) {
  TempDir dir;
  const std::string path = dir.File("ledger.db");
  auto store = OpenSqliteLedger(path, SqliteLedgerOptions{.busy_timeout_ms = 20});
  ASSERT_TRUE(store) << store.error().message;

  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  LedgerHour a{MakeDevice(Hour(0), "GPU-a"), {}};
  Status s = (*store)->WriteHours(std::span(&a, 1));
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(s.error().message, HasSubstr(path));
  EXPECT_THAT(s.error().message, HasSubstr("locked"));
  EXPECT_TRUE((*store)->WriteHours(std::span(&a, 1)));
}

TEST(SqliteLedger, OpenErrorsNameThePath) {
  TempDir dir;
  const std::string missing = dir.File("no/such/dir/ledger.db");
  auto r = OpenSqliteLedger(missing);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr(missing));
  EXPECT_THAT(r.error().message, HasSubstr("does not exist"));

  const std::string garbage = dir.File("garbage.db");
  {
    std::ofstream out(garbage, std::ios::binary);
    for (int i = 0; i < 512; ++i) out << "this is not an sqlite database\n";
  }
  r = OpenSqliteLedger(garbage);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr(garbage));
  EXPECT_THAT(r.error().message, HasSubstr("not a database"));

  r = OpenSqliteLedger(dir.path().string());
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("directory"));

  r = OpenSqliteLedger(dir.File("absent.db"), SqliteLedgerOptions{.read_only = true});
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr(dir.File("absent.db")));
  EXPECT_THAT(r.error().message, HasSubstr("no such file"));
  EXPECT_FALSE(fs::exists(dir.File("absent.db")));
}

// Issue 58: `report --db` on another program's SQLite file wrote gpuledger's tables into it.
// Such a file is refused, untouched, naming its tables; an empty database becomes a ledger.
TEST(SqliteLedger, AnotherProgramsDatabaseIsRefusedUntouched) {
  TempDir dir;
  const std::string foreign = dir.File("app.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(foreign.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE users (id INTEGER); INSERT INTO users VALUES (1);",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  const auto size = fs::file_size(foreign);
  for (bool read_only : {false, true}) {
    auto r = OpenSqliteLedger(foreign, SqliteLedgerOptions{.read_only = read_only});
    ASSERT_FALSE(r) << read_only;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(r.error().message,
                HasSubstr("not a gpuledger ledger (it holds other tables: users)"));
  }
  EXPECT_EQ(fs::file_size(foreign), size);
  ASSERT_EQ(sqlite3_open(foreign.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* count = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_schema", -1, &count, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(count), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(count, 0), 1);
  sqlite3_finalize(count);
  sqlite3_close(db);

  const std::string empty = dir.File("empty.db");
  ASSERT_EQ(sqlite3_open(empty.c_str(), &db), SQLITE_OK);
  sqlite3_close(db);
  EXPECT_NE(MustOpen(empty), nullptr);
}

TEST(OpenLedger, DispatchesOnTheSpec) {
  TempDir dir;
  const std::string path = dir.File("ledger.db");
  EXPECT_FALSE(IsPostgresLedgerSpec(path));
  EXPECT_FALSE(IsPostgresLedgerSpec("sqlite:" + path));
  EXPECT_TRUE(IsPostgresLedgerSpec("postgres://u@h/db"));
  EXPECT_TRUE(IsPostgresLedgerSpec("postgresql://u@h/db"));
  EXPECT_EQ(SqliteLedgerPath("sqlite:" + path), path);
  EXPECT_EQ(SqliteLedgerPath(path), path);

  LedgerHour a{MakeDevice(Hour(0), "GPU-a"), {}};
  {
    auto store = OpenLedger("sqlite:" + path);
    ASSERT_TRUE(store) << store.error().message;
    ASSERT_TRUE((*store)->WriteHours(std::span(&a, 1)));
  }
  auto plain = OpenLedger(path);  // the same file, by its plain path
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_EQ(MustReadDevices(**plain).size(), 1u);
}

}  // namespace

// The connection keeps a bounded set of prepared statements; filling it from inside a row's
// callback (as a scan's dictionary reads do inside its hours) must not finalize the statement
// still being stepped.
TEST(SqliteConnection, StatementsPreparedWhileSteppingKeepTheOuterOne) {
  TempDir dir;
  auto db = SqliteDb::Open(dir.File("c.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  ASSERT_TRUE(db) << db.error().message;
  ASSERT_TRUE(
      (*db)->Exec("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2), (3);", "create"));
  SqliteConnection connection(**db);
  std::vector<std::int64_t> outer;
  Status read =
      connection.ForEachRow("outer", "SELECT x FROM t ORDER BY x", {}, [&](SqlRow& row) -> Status {
        outer.push_back(row.Int(0));
        for (int i = 0; i < 100; ++i) {  // more texts than the connection keeps
          const std::array<SqlValue, 1> args = {std::int64_t{i}};
          auto sum = connection.FirstInt("inner", fmt::format("SELECT ?1 + {}", i), args);
          if (!sum) return sum.error();
          if (*sum != std::optional<std::int64_t>(2 * i)) return Internal("wrong sum");
        }
        return Status::Ok();
      });
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(outer, (std::vector<std::int64_t>{1, 2, 3}));
}

}  // namespace gpuledger::store::testing
