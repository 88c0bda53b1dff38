#include "store_test_env/store_test_env.h"

#include "store_test_env/version7_writer.h"

#include <fmt/format.h>

#include <sqlite3.h>
#include <unistd.h>
#include "store/row_codec.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>

namespace gpuledger::store::testing {

namespace fs = std::filesystem;

namespace {

std::atomic<int> g_counter{0};

// As one path component: a parameterised test's name ("Name/Sqlite") would make TempDir a
// directory inside one that nothing removes.
std::string CurrentTestName() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info != nullptr ? info->name() : "x";
  std::replace(name.begin(), name.end(), '/', '_');
  return name;
}

class SqliteTestLedger final : public TestLedger {
 public:
  SqliteTestLedger() : path_(dir_.File("ledger.db")) {}
  StoreKind kind() const override { return StoreKind::kSqlite; }
  Result<std::unique_ptr<LedgerStore>> Open() override { return OpenSqliteLedger(path_); }
  std::string Location() const override { return path_; }
  Result<std::string> Query(const std::string& sql) override {
    sqlite3* db = nullptr;
    if (sqlite3_open(path_.c_str(), &db) != SQLITE_OK) {
      sqlite3_close(db);
      return IoError("test: cannot open " + path_);
    }
    std::string first;
    char* err = nullptr;
    int rc = sqlite3_exec(
        db, sql.c_str(),
        [](void* out, int cols, char** values, char**) {
          auto* s = static_cast<std::string*>(out);
          if (s->empty() && cols > 0 && values[0] != nullptr) *s = values[0];
          return 0;
        },
        &first, &err);
    std::string message = err != nullptr ? err : "";
    sqlite3_free(err);
    sqlite3_close(db);
    if (rc != SQLITE_OK) return IoError("test: " + sql + ": " + message);
    return first;
  }
  std::string UniqueViolationText() const override { return "UNIQUE constraint failed"; }
  Status WriteAsVersion7(std::span<const LedgerHour> hours) override {
    return WriteSqliteVersion7(path_, hours);
  }

 private:
  TempDir dir_;
  std::string path_;
};

std::string WithParams(const std::string& url, const std::string& params) {
  return url + (url.find('?') == std::string::npos ? "?" : "&") + params;
}

}  // namespace

TempDir::TempDir() {
  path_ = fs::temp_directory_path() / ("gpuledger_store_" + std::to_string(::getpid()) + "_" +
                                       std::to_string(g_counter++) + "_" + CurrentTestName());
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
  fs::remove_all(path_, ec);
}

DeviceHour MakeDevice(Micros hour_us, const std::string& gpu) {
  DeviceHour d;
  d.hour_us = hour_us;
  d.cluster = "prod-eu";
  d.node = "gpu-node-1";
  d.gpu = GpuUuid(gpu);
  d.gpu_model = "NVIDIA H100 80GB HBM3";
  d.sharing = SharingMode::kTimeSlicing;
  d.pricing_class = "on-demand";
  d.price_nanos = 4'100'000'000;  // $4.10
  d.metered_us = kMicrosPerHour;
  d.busy_us = 2'000'000'000;
  d.idle_us = kMicrosPerHour - d.busy_us;
  d.memory_total_bytes = 80 * kGiB;
  return d;
}

UsageRow MakeUsage(const DeviceHour& d, const std::string& ns, const std::string& pod,
                   const std::string& container, GpuMicros allocated_us) {
  UsageRow u;
  u.hour_us = d.hour_us;
  u.gpu = d.gpu;
  u.consumer.ref = ConsumerRef{ns, pod, PodUid("uid-" + pod), container};
  u.consumer.owner_kind = "Deployment";
  u.consumer.owner_name = pod.substr(0, pod.find('-'));
  u.node = d.node;
  u.gpu_model = d.gpu_model;
  u.sharing = d.sharing;
  u.device_id = d.gpu.str() + "::0";
  u.allocated_us = allocated_us;
  u.compute_us = allocated_us / 2;
  u.memory_kib_s = 18'874'368'000;  // 10 GiB held for half an hour
  u.peak_memory_bytes = 10 * kGiB;
  u.energy_mj = 123'456;
  u.compute_quality = Quality::kEstimated;
  u.memory_quality = Quality::kMeasured;
  u.compute_rule = "busy-by-memory";
  return u;
}

std::vector<UsageRow> MustReadUsage(LedgerStore& store, TimeRange range) {
  auto rows = store.ReadUsage(range);
  EXPECT_TRUE(rows) << rows.error().message;
  return rows ? *rows : std::vector<UsageRow>{};
}

std::vector<DeviceHour> MustReadDevices(LedgerStore& store, TimeRange range) {
  auto rows = store.ReadDeviceHours(range);
  EXPECT_TRUE(rows) << rows.error().message;
  return rows ? *rows : std::vector<DeviceHour>{};
}

std::vector<std::string> Keys(const std::vector<UsageRow>& rows) {
  std::vector<std::string> keys;
  keys.reserve(rows.size());
  for (const auto& r : rows) {
    keys.push_back(std::to_string((r.hour_us - kHour0) / kMicrosPerHour) + " " + r.gpu.str() + " " +
                   r.consumer.ref.Key());
  }
  return keys;
}

std::string Describe(const DeviceHour& d) {
  return fmt::format("{} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {}", d.hour_us,
                     d.cluster, d.node, d.gpu.str(), d.gpu_model, ToString(d.sharing),
                     d.pricing_class, d.price_state == PriceState::kUnpriced, d.price_nanos,
                     d.energy_price_nanos, d.metered_us, d.unmetered_us, d.unallocated_us,
                     d.busy_us, d.idle_us, d.unattributed_us, d.memory_total_bytes,
                     d.unattributed_memory_kib_s, d.energy_mj, d.idle_energy_mj,
                     d.unattributed_energy_mj);
}
std::string Describe(const UsageRow& u) {
  const ConsumerInfo& c = u.consumer;
  std::string labels;
  for (const auto& [k, v] : c.labels) labels += k + "=" + v + ",";
  labels += ";";
  for (const auto& [k, v] : c.namespace_labels) labels += k + "=" + v + ",";
  return fmt::format(
      "{} {} {} {} {} {} {} {} {} {} {} {} | {} {} {} {} {} | {} {} {} | {} {} {} {} {} {} {} | "
      "{} {} | {}",
      u.hour_us, u.gpu.str(), c.ref.namespace_name, c.ref.pod, c.ref.pod_uid.str(), c.ref.container,
      c.owner_kind, c.owner_name, u.node, u.gpu_model, ToString(u.sharing), u.device_id,
      u.allocated_us, u.compute_us, u.memory_kib_s, u.peak_memory_bytes, u.energy_mj,
      ToString(u.compute_quality), ToString(u.memory_quality), u.compute_rule,
      u.activity.sm_active_us, u.activity.sm_occupancy_us, u.activity.tensor_active_us,
      u.activity.dram_active_us, ToString(u.activity_quality), u.activity_rule, u.share_source,
      EncodeHistogram(u.histogram), labels.size(), labels);
}

std::string StoreKindName(StoreKind kind) {
  return kind == StoreKind::kSqlite ? "Sqlite" : "Postgres";
}

std::string PostgresTestUrl() {
  const char* url = std::getenv("GPULEDGER_TEST_POSTGRES");
  return url != nullptr ? url : "";
}

std::string PostgresSkipMessage() {
  return "PostgreSQL store tests skipped: GPULEDGER_TEST_POSTGRES is not set. "
         "Set it to a "
         "server URL (postgres://USER:PASSWORD@HOST:PORT/DB; each test makes "
         "and drops its own "
         "schema there), or run `make test`, which starts a throwaway server "
         "with "
         "scripts/ci-postgres.sh";
}

std::unique_ptr<TestLedger> MakeTestLedger(StoreKind kind, std::string& skip) {
  if (kind == StoreKind::kSqlite) return std::make_unique<SqliteTestLedger>();
  const std::string base = PostgresTestUrl();
  if (base.empty()) {
    skip = PostgresSkipMessage();
    return nullptr;
  }
  auto ledger = PostgresTestLedger::Create(base);
  if (!ledger) {
    ADD_FAILURE() << "GPULEDGER_TEST_POSTGRES is set but unusable: " << ledger.error().message;
    return nullptr;
  }
  return std::move(*ledger);
}

Result<std::unique_ptr<PostgresTestLedger>> PostgresTestLedger::Create(const std::string& base) {
  auto admin = PgConn::Open(base);
  if (!admin) return admin.error();
  std::string schema = fmt::format("gpuledger_t{}_{}", ::getpid(), g_counter++);
  auto r = (*admin)->Exec("create test schema",
                          fmt::format("DROP SCHEMA IF EXISTS {0} CASCADE; CREATE SCHEMA {0}; "
                                      "SET search_path TO {0}",
                                      schema));
  if (!r) return r.error();
  std::string url =
      WithParams(base, "options=-csearch_path%3D" + schema + "&application_name=" + schema);
  return std::unique_ptr<PostgresTestLedger>(
      new PostgresTestLedger(std::move(*admin), std::move(url), std::move(schema)));
}

PostgresTestLedger::~PostgresTestLedger() {
  if (!admin_->Ensure()) return;
  (void)KillStoreConnections();  // a store still open would hold locks on the
                                 // schema
  (void)admin_->Exec("drop test schema", fmt::format("DROP SCHEMA IF EXISTS {} CASCADE", schema_));
}

Result<std::string> PostgresTestLedger::Query(const std::string& sql) {
  if (Status s = admin_->Ensure(); !s) return s;
  auto r = admin_->Exec("test query", fmt::format("SET search_path TO {}; {}", schema_, sql));
  if (!r) return r.error();
  if (r->rows() == 0) return std::string();
  return r->Text(0, 0);
}

Result<int> PostgresTestLedger::KillStoreConnections() {
  PgParams p;
  p.Add(schema_);
  auto r = admin_->Exec("terminate store sessions",
                        "SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity "
                        "WHERE application_name = $1 AND pid <> pg_backend_pid()",
                        p);
  if (!r) return r.error();
  std::int64_t n = 0;
  (void)r->Int(0, 0, n);
  return static_cast<int>(n);
}

Status PostgresTestLedger::WriteAsVersion7(std::span<const LedgerHour> hours) {
  return WritePostgresVersion7(url_, hours);
}

}  // namespace gpuledger::store::testing
