#pragma once
// The in-process kernel-time tracer (issue 31): CUPTI's kernel activity records, per CUDA device,
// into the union of the process's kernel intervals (busy_union.h), published at least every
// flush period and at exit into the process's kernel-time file (published_file.h).
//
// It never harms the workload it runs in:
//   - a profiler that already holds CUPTI (Nsight, PyTorch's profiler, cuda-gdb) makes it step
//     aside before it touches anything (flag kStoodAside); CUPTI allows one subscriber, so the
//     probe is subscribe-then-unsubscribe and a profiler started later still gets CUPTI. One that
//     starts later and registers its own activity buffers takes the records from then on; this
//     tracer's counts then stop growing, which the agent's kernel-time-mismatch check notices;
//   - any CUPTI error disables it (flag kDisabled: kernel records are turned off again) and is
//     counted in the file, as are the records CUPTI dropped;
//   - its memory is bounded: at most `max_buffers` activity buffers in flight (past that CUPTI
//     drops records and counts them), at most kMaxDevices devices, bounded unions;
//   - no driver call and no CUPTI flush is made under its locks (CUPTI calls back into it from
//     application threads launching kernels), and no lock is held while writing the file longer
//     than a copy of 2 KiB.
//
// Thread-safe: CUPTI calls ProvideBuffer and TakeBuffer from any thread.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sources/kerneltime/busy_union.h"
#include "sources/kerneltime/cupti_loader.h"
#include "sources/kerneltime/published_file.h"

namespace gpuledger::kerneltime {

struct TracerOptions {
  std::chrono::milliseconds flush_period{100};
  std::size_t buffer_bytes = 256 * 1024;    // about 1,300 kernel records
  std::size_t max_buffers = 32;             // 8 MiB in flight at most
  std::size_t union_capacity = 4096;        // open intervals per device (busy_union.h)
  std::int64_t (*now_unix_ns)() = nullptr;  // the clock; null: the system clock
};

class Tracer {
 public:
  Tracer(CuptiApi cupti, CudaDriverApi cuda, std::unique_ptr<PublishedFile> file, std::int64_t pid,
         TracerOptions options = {});
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // Without CUPTI (`cupti` unresolved) publishes itself disabled. Steps aside for a profiler, or
  // registers the buffers, enables kernel records and starts the
  // flush thread; publishes the outcome either way. At most one started tracer per process
  // (CUPTI's buffer callbacks carry no user data: they reach it through one pointer).
  void Start();
  // At exit: stops the flush thread, flushes every buffer (incomplete ones too), publishes the
  // last figures and removes the file. Does nothing in a forked child (not its tracer).
  void Finish();

  // CUPTI's buffer callbacks.
  void ProvideBuffer(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records);
  void TakeBuffer(CUcontext context, std::uint32_t stream, std::uint8_t* buffer,
                  std::size_t valid_bytes);

 private:
  struct Device {
    std::uint32_t ordinal = 0;
    std::string uuid;  // "" until named (outside the locks, by the flush thread)
    BusyUnion busy;
  };

  void FlushLoop();
  void NameDevices();
  void Publish();
  // Turns kernel records off after a CUPTI error; counted once per failing call.
  void Disable();
  std::int64_t Now() const;

  CuptiApi cupti_;
  CudaDriverApi cuda_;
  std::unique_ptr<PublishedFile> file_;
  const std::int64_t pid_;
  const TracerOptions options_;
  const std::int64_t started_unix_ns_;

  std::mutex pool_mu_;  // the activity buffers
  std::vector<std::unique_ptr<std::uint8_t[]>> free_buffers_;
  std::vector<std::unique_ptr<std::uint8_t[]>> lent_buffers_;

  std::mutex state_mu_;  // everything below
  std::vector<Device> devices_;
  std::uint64_t errors_ = 0;
  std::uint32_t flags_ = 0;
  bool enabled_ = false;  // kernel records on and the flush thread running
  bool stopping_ = false;
  std::condition_variable wake_;
  std::thread flusher_;
};

}  // namespace gpuledger::kerneltime
