// Test-only libcupti.so.13 (README.md): the CUPTI entry points the kernel-time tracer calls, with
// CUPTI's ABI (src/sources/kerneltime/cupti_abi.h) and CUPTI's documented buffer protocol: a
// buffer is asked for with the client's request callback when a record needs room, filled with
// records, and handed back through the completion callback by cuptiActivityFlushAll on the
// flushing thread; records that find no buffer are dropped and counted until read. Kernels are
// "launched" by the test through the gpuledger_fake_cupti_* entry points below.

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "sources/kerneltime/cupti_abi.h"

namespace {

// Record sizes this CUPTI writes: a kernel record as long as CUDA 12's CUpti_ActivityKernel9 and
// a memcpy-like record the tracer must step over.
constexpr std::size_t kKernelRecordBytes = 208;
constexpr std::size_t kOtherRecordBytes = 64;
constexpr CUpti_ActivityKind kOtherKind = static_cast<CUpti_ActivityKind>(1);  // MEMCPY

struct Buffer {
  std::uint8_t* data = nullptr;
  std::size_t size = 0;
  std::size_t used = 0;
};

struct State {
  std::mutex mu;
  CUpti_BuffersCallbackRequestFunc requested = nullptr;
  CUpti_BuffersCallbackCompleteFunc completed = nullptr;
  bool subscribed = false;
  bool kernels_enabled = false;
  Buffer current;
  std::vector<Buffer> full;
  int registrations = 0;
  int flushes = 0;
  int forced_flushes = 0;
  int disables = 0;
};

State& Fake() {
  static State* state = new State;  // outlives every caller, exit handlers included
  return *state;
}

std::atomic<std::size_t> dropped{0};

bool EnvSet(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' && v[0] != '0';
}

std::size_t RecordBytes(const CUpti_Activity* record) {
  return record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? kKernelRecordBytes
                                                               : kOtherRecordBytes;
}

// Writes one record through the client's buffers, asking for one as CUPTI does (on the
// "launching" thread, without CUPTI's own lock held across the client's callback).
void Emit(const void* record, std::size_t bytes) {
  State& s = Fake();
  std::unique_lock lock(s.mu);
  if (!s.kernels_enabled || s.requested == nullptr) return;
  if (s.current.data != nullptr && s.current.size - s.current.used < bytes) {
    s.full.push_back(std::exchange(s.current, Buffer{}));
  }
  if (s.current.data == nullptr) {
    const CUpti_BuffersCallbackRequestFunc request = s.requested;
    lock.unlock();
    Buffer fresh;
    std::size_t max_records = 0;
    request(&fresh.data, &fresh.size, &max_records);
    lock.lock();
    if (fresh.data == nullptr || fresh.size < bytes) {
      dropped.fetch_add(1);
      return;
    }
    s.current = fresh;
  }
  std::memcpy(s.current.data + s.current.used, record, bytes);
  s.current.used += bytes;
}

}  // namespace

// NOLINTBEGIN(readability-identifier-naming): CUPTI's names.
extern "C" {

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc* /*callback*/,
                           void* /*userdata*/) {
  State& s = Fake();
  std::lock_guard lock(s.mu);
  // GPULEDGER_FAKE_CUPTI_PROFILER: a profiler (Nsight, PyTorch's) holds CUPTI already.
  if (s.subscribed || EnvSet("GPULEDGER_FAKE_CUPTI_PROFILER"))
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  s.subscribed = true;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&s);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle /*subscriber*/) {
  State& s = Fake();
  std::lock_guard lock(s.mu);
  s.subscribed = false;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                           CUpti_BuffersCallbackCompleteFunc completed) {
  State& s = Fake();
  std::lock_guard lock(s.mu);
  if (requested == nullptr || completed == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  s.requested = requested;
  s.completed = completed;
  ++s.registrations;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  State& s = Fake();
  std::lock_guard lock(s.mu);
  // GPULEDGER_FAKE_CUPTI_NO_PRIVILEGE: the driver restricts profiling to admin users
  // (NVreg_RestrictProfilingToAdminUsers), as on many managed nodes.
  if (EnvSet("GPULEDGER_FAKE_CUPTI_NO_PRIVILEGE")) return CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
  if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) s.kernels_enabled = true;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  State& s = Fake();
  std::lock_guard lock(s.mu);
  if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) s.kernels_enabled = false;
  ++s.disables;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNextRecord(std::uint8_t* buffer, std::size_t valid_bytes,
                                       CUpti_Activity** record) {
  std::uint8_t* next =
      *record == nullptr ? buffer : reinterpret_cast<std::uint8_t*>(*record) + RecordBytes(*record);
  if (next >= buffer + valid_bytes) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(next);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext /*context*/, std::uint32_t /*stream*/,
                                              std::size_t* count) {
  if (count == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *count = dropped.exchange(0);  // reset on read, as CUPTI's count is
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityFlushAll(std::uint32_t flag) {
  State& s = Fake();
  std::vector<Buffer> ready;
  CUpti_BuffersCallbackCompleteFunc completed;
  {
    std::lock_guard lock(s.mu);
    if (s.completed == nullptr) return CUPTI_ERROR_NOT_INITIALIZED;
    ++s.flushes;
    if ((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0) ++s.forced_flushes;
    ready = std::exchange(s.full, {});
    // Every record here is complete when written, so the open buffer goes back too.
    if (s.current.used > 0) ready.push_back(std::exchange(s.current, Buffer{}));
    completed = s.completed;
  }
  for (const Buffer& b : ready) completed(nullptr, 0, b.data, b.size, b.used);
  return CUPTI_SUCCESS;
}

// --- The test's side: kernels "run", and what the tracer did to CUPTI. --------------------

__attribute__((visibility("default"))) void gpuledger_fake_cupti_kernel(std::uint32_t device,
                                                                        std::uint64_t start_ns,
                                                                        std::uint64_t end_ns) {
  std::uint8_t record[kKernelRecordBytes] = {};
  CUpti_ActivityKernelPrefix kernel{};
  kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  kernel.start = start_ns;
  kernel.end = end_ns;
  kernel.completed = end_ns;
  kernel.deviceId = device;
  std::memcpy(record, &kernel, sizeof kernel);
  Emit(record, sizeof record);
}

__attribute__((visibility("default"))) void gpuledger_fake_cupti_other_record() {
  std::uint8_t record[kOtherRecordBytes] = {};
  const CUpti_Activity other{kOtherKind};
  std::memcpy(record, &other, sizeof other);
  Emit(record, sizeof record);
}

// "registrations enabled subscribed flushes forced disables" as numbers, for the test to read.
__attribute__((visibility("default"))) void gpuledger_fake_cupti_state(int out[6]) {
  State& s = Fake();
  std::lock_guard lock(s.mu);
  out[0] = s.registrations;
  out[1] = s.kernels_enabled ? 1 : 0;
  out[2] = s.subscribed ? 1 : 0;
  out[3] = s.flushes;
  out[4] = s.forced_flushes;
  out[5] = s.disables;
}

}  // extern "C"
// NOLINTEND(readability-identifier-naming)
