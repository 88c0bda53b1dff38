#include "fake_grpc/fake_server_control.h"

namespace gpuledger::fake {

void ServerControl::FailResourceExhausted(int n) {
  std::lock_guard lock(mu_);
  exhausted_left_ = n < 0 ? 0 : n;
}

void ServerControl::SetHang(bool hang) {
  {
    std::lock_guard lock(mu_);
    hang_ = hang;
  }
  cv_.notify_all();
}

void ServerControl::Close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

void ServerControl::Reopen() {
  std::lock_guard lock(mu_);
  closed_ = false;
}

grpc::Status ServerControl::Enter(grpc::ServerContext* context) {
  ++calls_;
  std::unique_lock lock(mu_);
  // Poll for cancellation: a sync handler is not woken when its client gives up.
  while (hang_ && !closed_ && !context->IsCancelled()) {
    cv_.wait_for(lock, std::chrono::milliseconds(10));
  }
  if (closed_) return {grpc::StatusCode::UNAVAILABLE, "fake server stopping"};
  if (context->IsCancelled()) return {grpc::StatusCode::CANCELLED, "client gave up"};
  if (exhausted_left_ > 0) {
    --exhausted_left_;
    return {grpc::StatusCode::RESOURCE_EXHAUSTED, "rejected by rate limit (fake)"};
  }
  return grpc::Status::OK;
}

}  // namespace gpuledger::fake
