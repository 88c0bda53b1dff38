#pragma once
// The requests the HTTP server's loop (server.h) hands to its workers.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>

#include "http/request.h"

namespace gpuledger::http {

struct Job {
  std::uint64_t key = 0;
  Request request;
};

// Requests waiting for a worker. Pop blocks until a job arrives or Stop.
class JobQueue {
 public:
  void Push(Job job) {
    {
      std::lock_guard lock(mu_);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
  }
  std::optional<Job> Pop() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return stopped_ || !jobs_.empty(); });
    if (stopped_) return std::nullopt;
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    return job;
  }
  void Stop() {
    {
      std::lock_guard lock(mu_);
      stopped_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stopped_ = false;
};

}  // namespace gpuledger::http
