#include "sources/kerneltime/tracer.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace gpuledger::kerneltime {
namespace {

// CUPTI's buffer callbacks have no user-data argument: the started tracer is reached here. Set
// once by Start(); the tracer lives until the process ends.
Tracer* started_tracer = nullptr;

void BufferRequested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  started_tracer->ProvideBuffer(buffer, size, max_records);
}

void BufferCompleted(CUcontext context, std::uint32_t stream, std::uint8_t* buffer,
                     std::size_t /*size*/, std::size_t valid_bytes) {
  started_tracer->TakeBuffer(context, stream, buffer, valid_bytes);
}

void IgnoreCallback(void* /*userdata*/, int /*domain*/, std::uint32_t /*cbid*/,
                    const void* /*cbdata*/) {}

std::int64_t SystemNowUnixNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Tracer::Tracer(CuptiApi cupti, CudaDriverApi cuda, std::unique_ptr<PublishedFile> file,
               std::int64_t pid, TracerOptions options)
    : cupti_(std::move(cupti)),
      cuda_(cuda),
      file_(std::move(file)),
      pid_(pid),
      options_(options),
      started_unix_ns_(Now()) {}

Tracer::~Tracer() {
  {
    std::lock_guard lock(state_mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (flusher_.joinable()) flusher_.join();
}

std::int64_t Tracer::Now() const {
  return options_.now_unix_ns != nullptr ? options_.now_unix_ns() : SystemNowUnixNs();
}

void Tracer::Start() {
  if (cupti_.subscribe == nullptr) {  // no CUPTI could be loaded
    {
      std::lock_guard lock(state_mu_);
      flags_ |= kDisabled;
      ++errors_;
    }
    Publish();
    return;
  }
  // A subscriber already there is a profiler (or another tracer): stand aside untouched.
  CUpti_SubscriberHandle probe = nullptr;
  const CUptiResult subscribed = cupti_.subscribe(&probe, &IgnoreCallback, nullptr);
  if (subscribed != CUPTI_SUCCESS) {
    {
      std::lock_guard lock(state_mu_);
      if (subscribed == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        flags_ |= kStoodAside;
      } else {
        flags_ |= kDisabled;
        ++errors_;
      }
    }
    Publish();
    return;
  }
  cupti_.unsubscribe(probe);

  started_tracer = this;
  if (cupti_.register_callbacks(&BufferRequested, &BufferCompleted) != CUPTI_SUCCESS ||
      cupti_.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    Disable();
    Publish();
    return;
  }
  {
    std::lock_guard lock(state_mu_);
    enabled_ = true;
  }
  Publish();
  flusher_ = std::thread([this] { FlushLoop(); });
}

void Tracer::Finish() {
  if (static_cast<std::int64_t>(::getpid()) != pid_) return;
  bool was_enabled;
  {
    std::lock_guard lock(state_mu_);
    stopping_ = true;
    was_enabled = enabled_;
  }
  wake_.notify_all();
  if (flusher_.joinable()) flusher_.join();
  if (was_enabled && cupti_.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != CUPTI_SUCCESS) Disable();
  NameDevices();
  Publish();
  file_->Remove();
}

void Tracer::FlushLoop() {
  std::unique_lock lock(state_mu_);
  while (!stopping_ && enabled_) {
    wake_.wait_for(lock, options_.flush_period, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    // Completed buffers only: the application keeps running at full speed meanwhile.
    if (cupti_.flush_all(0) != CUPTI_SUCCESS) Disable();
    NameDevices();
    Publish();
    lock.lock();
  }
}

void Tracer::ProvideBuffer(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *max_records = 0;  // as many as fit
  std::lock_guard lock(pool_mu_);
  if (free_buffers_.empty() && lent_buffers_.size() < options_.max_buffers)
    free_buffers_.push_back(std::make_unique<std::uint8_t[]>(options_.buffer_bytes));
  if (free_buffers_.empty()) {
    // Every buffer is in flight: CUPTI drops the records and counts them (read in TakeBuffer).
    *buffer = nullptr;
    *size = 0;
    return;
  }
  lent_buffers_.push_back(std::move(free_buffers_.back()));
  free_buffers_.pop_back();
  *buffer = lent_buffers_.back().get();
  *size = options_.buffer_bytes;
}

void Tracer::TakeBuffer(CUcontext context, std::uint32_t stream, std::uint8_t* buffer,
                        std::size_t valid_bytes) {
  bool failed = false;
  std::size_t dropped = 0;
  if (cupti_.dropped_records(context, stream, &dropped) != CUPTI_SUCCESS) dropped = 0;
  {
    std::lock_guard lock(state_mu_);
    errors_ += dropped;
    CUpti_Activity* record = nullptr;
    while (buffer != nullptr && valid_bytes > 0) {
      const CUptiResult next = cupti_.next_record(buffer, valid_bytes, &record);
      if (next == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
      if (next != CUPTI_SUCCESS) {
        failed = true;
        break;
      }
      if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
          record->kind != CUPTI_ACTIVITY_KIND_KERNEL)
        continue;
      CUpti_ActivityKernelPrefix kernel;
      std::memcpy(&kernel, record, sizeof kernel);
      auto device = std::find_if(devices_.begin(), devices_.end(),
                                 [&](const Device& d) { return d.ordinal == kernel.deviceId; });
      if (device == devices_.end()) {
        if (devices_.size() == kMaxDevices) {
          ++errors_;  // a 17th device in one process: its time cannot be published
          continue;
        }
        devices_.push_back({kernel.deviceId, "", BusyUnion(options_.union_capacity)});
        device = devices_.end() - 1;
      }
      device->busy.Add(kernel.start, kernel.end);
    }
  }
  if (failed) Disable();
  if (buffer == nullptr) return;
  std::lock_guard lock(pool_mu_);
  auto lent = std::find_if(lent_buffers_.begin(), lent_buffers_.end(),
                           [&](const auto& b) { return b.get() == buffer; });
  if (lent == lent_buffers_.end()) return;  // not ours: never freed here
  free_buffers_.push_back(std::move(*lent));
  lent_buffers_.erase(lent);
}

void Tracer::NameDevices() {
  std::vector<std::uint32_t> unnamed;
  {
    std::lock_guard lock(state_mu_);
    for (const Device& d : devices_)
      if (d.uuid.empty()) unnamed.push_back(d.ordinal);
  }
  for (std::uint32_t ordinal : unnamed) {
    std::string uuid = DeviceUuid(cuda_, ordinal);  // a driver call: no lock held
    std::lock_guard lock(state_mu_);
    if (uuid.empty()) {
      ++errors_;  // the agent cannot match an unnamed device; named by ordinal to say so
      uuid = "cuda-device-" + std::to_string(ordinal);
    }
    for (Device& d : devices_)
      if (d.ordinal == ordinal) d.uuid = uuid;
  }
}

void Tracer::Publish() {
  Publication p;
  {
    std::lock_guard lock(state_mu_);
    p.pid = pid_;
    p.errors = errors_;
    p.flags = flags_;
    p.started_unix_ns = started_unix_ns_;
    p.updated_unix_ns = Now();
    for (const Device& d : devices_)
      if (!d.uuid.empty())
        p.devices.push_back({d.uuid, d.busy.busy_ns(), d.busy.kernels(), d.busy.clipped_ns()});
  }
  file_->Write(p);  // only the flush thread, Start and Finish write: never two at once
}

void Tracer::Disable() {
  bool turn_off;
  {
    std::lock_guard lock(state_mu_);
    ++errors_;
    turn_off = (flags_ & kDisabled) == 0;
    flags_ |= kDisabled;
    enabled_ = false;
  }
  if (turn_off) cupti_.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
}

}  // namespace gpuledger::kerneltime
