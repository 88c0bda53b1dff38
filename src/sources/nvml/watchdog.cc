#include "sources/nvml/watchdog.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <utility>

namespace gpuledger::nvml {

struct Watchdog::Shared {
  std::mutex mu;
  std::condition_variable cv;
  std::function<void()> job;  // pending job, taken by the worker
  std::string name;           // name of the pending or running job
  bool pending = false;
  bool running = false;
  bool stop = false;
  std::uint64_t issued = 0;    // jobs handed to the worker
  std::uint64_t finished = 0;  // jobs the worker completed
  std::shared_ptr<void> keep_alive;
  std::thread worker;

  static void Loop(std::shared_ptr<Shared> self) {
    std::unique_lock lock(self->mu);
    for (;;) {
      self->cv.wait(lock, [&] { return self->pending || self->stop; });
      if (!self->pending) {
        return;
      }
      std::function<void()> job = std::move(self->job);
      self->pending = false;
      self->running = true;
      lock.unlock();
      job();
      job = nullptr;  // release what the job owns before reporting completion
      lock.lock();
      self->running = false;
      self->name.clear();
      ++self->finished;
      self->cv.notify_all();
    }
  }
};

Watchdog::Watchdog(Micros deadline_us, std::shared_ptr<void> keep_alive)
    : deadline_us_(deadline_us), shared_(std::make_shared<Shared>()) {
  shared_->keep_alive = std::move(keep_alive);
  shared_->worker = std::thread(&Shared::Loop, shared_);
}

Watchdog::~Watchdog() {
  bool busy = false;
  {
    std::lock_guard lock(shared_->mu);
    shared_->stop = true;
    busy = shared_->running || shared_->pending;
  }
  shared_->cv.notify_all();
  if (busy) {
    shared_->worker.detach();
  } else {
    shared_->worker.join();
  }
}

Watchdog::Outcome Watchdog::Run(std::string name, std::function<void()> job) {
  std::unique_lock lock(shared_->mu);
  if (shared_->running || shared_->pending) {
    return Outcome::kStillHung;
  }
  shared_->job = std::move(job);
  shared_->name = std::move(name);
  shared_->pending = true;
  const std::uint64_t ticket = ++shared_->issued;
  shared_->cv.notify_all();
  const bool done = shared_->cv.wait_for(lock, std::chrono::microseconds(deadline_us_),
                                         [&] { return shared_->finished >= ticket; });
  return done ? Outcome::kDone : Outcome::kTimedOut;
}

bool Watchdog::Hung() const {
  std::lock_guard lock(shared_->mu);
  return shared_->running || shared_->pending;
}

std::string Watchdog::HungCall() const {
  std::lock_guard lock(shared_->mu);
  return shared_->name;
}

}  // namespace gpuledger::nvml
