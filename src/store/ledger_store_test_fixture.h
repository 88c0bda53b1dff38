#pragma once
// The fixture of the tests every ledger store must pass: one test ledger per test, of the
// store the parameter names (SQLite, or PostgreSQL where GPULEDGER_TEST_POSTGRES names a server;
// skipped, saying so, without one).

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "store/ledger_store.h"
#include "store_test_env/store_test_env.h"

namespace gpuledger::store::testing {

class LedgerStoreTest : public ::testing::TestWithParam<StoreKind> {
 protected:
  void SetUp() override {
    std::string skip;
    ledger_ = MakeTestLedger(GetParam(), skip);
    if (!ledger_ && !skip.empty()) GTEST_SKIP() << skip;
    ASSERT_TRUE(ledger_);
  }

  // Opens this test's ledger (again): a new store over the same data.
  std::unique_ptr<LedgerStore> Open() {
    auto store = ledger_->Open();
    EXPECT_TRUE(store) << store.error().message;
    return store ? std::move(*store) : nullptr;
  }

  std::unique_ptr<TestLedger> ledger_;
};

}  // namespace gpuledger::store::testing
