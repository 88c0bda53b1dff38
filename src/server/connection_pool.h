#pragma once
// Ledger connections for concurrent requests. Each request that reads the ledger borrows its
// own connection, so a long report never holds up a probe or another report: SQLite in WAL
// mode serves many readers beside one writer, and PostgreSQL sessions read concurrently. A
// connection goes back to the pool when the lease ends; at most `max_idle` are kept open
// (more are opened on demand while requests overlap, and closed when they end).
//
// Thread-safe.

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "common/result.h"
#include "store/ledger_store.h"

namespace gpuledger::server {

using StoreOpener = store::StoreOpener;

class ConnectionPool {
 public:
  // A borrowed connection; returned to the pool on destruction.
  class Lease {
   public:
    Lease(ConnectionPool* pool, std::unique_ptr<store::LedgerStore> store)
        : pool_(pool), store_(std::move(store)) {}
    Lease(Lease&&) = default;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    store::LedgerStore& operator*() const { return *store_; }
    store::LedgerStore* operator->() const { return store_.get(); }

   private:
    ConnectionPool* pool_;
    std::unique_ptr<store::LedgerStore> store_;
  };

  explicit ConnectionPool(StoreOpener open, std::size_t max_idle = 4);

  // An idle connection, or a new one from the opener (its error when that fails).
  Result<Lease> Borrow();

 private:
  void Return(std::unique_ptr<store::LedgerStore> store);

  StoreOpener open_;
  std::size_t max_idle_;
  std::mutex mu_;
  std::vector<std::unique_ptr<store::LedgerStore>> idle_;  // guarded by mu_
};

}  // namespace gpuledger::server
