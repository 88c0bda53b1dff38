#include "server/connection_pool.h"

namespace gpuledger::server {

ConnectionPool::Lease::~Lease() {
  if (store_) pool_->Return(std::move(store_));
}

ConnectionPool::ConnectionPool(StoreOpener open, std::size_t max_idle)
    : open_(std::move(open)), max_idle_(max_idle) {}

Result<ConnectionPool::Lease> ConnectionPool::Borrow() {
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      auto store = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(store));
    }
  }
  // Opened outside the lock: a slow connect must not hold up a borrower that finds an idle one.
  auto opened = open_();
  if (!opened) return opened.error();
  return Lease(this, std::move(*opened));
}

void ConnectionPool::Return(std::unique_ptr<store::LedgerStore> store) {
  std::lock_guard lock(mu_);
  if (idle_.size() < max_idle_) idle_.push_back(std::move(store));
}

}  // namespace gpuledger::server
