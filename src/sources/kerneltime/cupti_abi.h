#pragma once
// Our own minimal CUPTI and CUDA driver declarations (issue 31): exactly the types and entry points
// the kernel-time tracer uses, with NVIDIA's names and the ABI of the real libcupti (CUDA 11 to
// 13) and libcuda.so.1, written from NVIDIA's CUPTI and driver API references.
//
// Why our own and not the headers: CUPTI's headers come with the CUDA toolkit or Debian's
// `libcupti-dev` in non-free, neither of which the build may assume (design section 8); and the
// tracer must read records from whichever CUPTI the process brings, so it may depend only on what
// every version since CUDA 11 shares. cupti_abi_test.cc checks every value and offset here
// against the real headers wherever a CUDA toolkit is installed.
//
// Two users: the tracer resolves these symbols with dlsym (cupti_loader.h), and the test
// stand-ins (testing/cupti_standin/) define them. Nothing here is linked against.

#include <cstddef>
#include <cstdint>

// CUPTI's and CUDA's own names, not ours: naming checks stop here.
// NOLINTBEGIN(readability-identifier-naming)
extern "C" {

// ---------------------------------------------------------------------------------------------
// CUPTI (cupti_result.h, cupti_activity.h, cupti_callbacks.h).
typedef enum {
  CUPTI_SUCCESS = 0,
  CUPTI_ERROR_INVALID_PARAMETER = 1,
  CUPTI_ERROR_MAX_LIMIT_REACHED = 12,  // cuptiActivityGetNextRecord: no more records in the buffer
  CUPTI_ERROR_NOT_COMPATIBLE = 14,     // this CUPTI cannot trace with this driver
  CUPTI_ERROR_NOT_INITIALIZED = 15,
  CUPTI_ERROR_INSUFFICIENT_PRIVILEGES = 35,
  CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED = 39,  // a profiler already holds CUPTI
} CUptiResult;

typedef enum {
  CUPTI_ACTIVITY_KIND_KERNEL = 3,              // serialized kernels (never enabled by us)
  CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL = 10,  // kernels, concurrency preserved
} CUpti_ActivityKind;

typedef enum {
  CUPTI_ACTIVITY_FLAG_FLUSH_FORCED = 1 << 0,  // cuptiActivityFlushAll: incomplete buffers too
} CUpti_ActivityFlag;

// Every activity record starts with its kind.
typedef struct {
  CUpti_ActivityKind kind;
} CUpti_Activity;

// The leading fields of a kernel record (CUpti_ActivityKernel4 to CUpti_ActivityKernel10 share
// them at these offsets; later fields differ by version and are never read). Timestamps are ns on
// the GPU's clock; start == end == 0 means CUPTI could not time the kernel.
typedef struct {
  CUpti_ActivityKind kind;  // CONCURRENT_KERNEL or KERNEL
  std::uint8_t cacheConfig;
  std::uint8_t sharedMemoryConfig;
  std::uint16_t registersPerThread;
  std::int32_t partitionedGlobalCacheRequested;
  std::int32_t partitionedGlobalCacheExecuted;
  std::uint64_t start;
  std::uint64_t end;
  std::uint64_t completed;
  std::uint32_t deviceId;  // the CUDA device ordinal, as cuDeviceGet numbers it
  std::uint32_t contextId;
  std::uint32_t streamId;
} CUpti_ActivityKernelPrefix;

typedef struct CUctx_st* CUcontext;
typedef struct CUpti_Subscriber_st* CUpti_SubscriberHandle;
typedef void(CUpti_CallbackFunc)(void* userdata, int domain, std::uint32_t cbid,
                                 const void* cbdata);
typedef void (*CUpti_BuffersCallbackRequestFunc)(std::uint8_t** buffer, std::size_t* size,
                                                 std::size_t* maxNumRecords);
typedef void (*CUpti_BuffersCallbackCompleteFunc)(CUcontext context, std::uint32_t streamId,
                                                  std::uint8_t* buffer, std::size_t size,
                                                  std::size_t validSize);

typedef CUptiResult (*cuptiSubscribe_fn)(CUpti_SubscriberHandle* subscriber,
                                         CUpti_CallbackFunc* callback, void* userdata);
typedef CUptiResult (*cuptiUnsubscribe_fn)(CUpti_SubscriberHandle subscriber);
typedef CUptiResult (*cuptiActivityRegisterCallbacks_fn)(
    CUpti_BuffersCallbackRequestFunc requested, CUpti_BuffersCallbackCompleteFunc completed);
typedef CUptiResult (*cuptiActivityEnable_fn)(CUpti_ActivityKind kind);
typedef CUptiResult (*cuptiActivityDisable_fn)(CUpti_ActivityKind kind);
typedef CUptiResult (*cuptiActivityGetNextRecord_fn)(std::uint8_t* buffer,
                                                     std::size_t validBufferSizeBytes,
                                                     CUpti_Activity** record);
typedef CUptiResult (*cuptiActivityGetNumDroppedRecords_fn)(CUcontext context,
                                                            std::uint32_t streamId,
                                                            std::size_t* dropped);
typedef CUptiResult (*cuptiActivityFlushAll_fn)(std::uint32_t flag);

// ---------------------------------------------------------------------------------------------
// CUDA driver (cuda.h): naming a device ordinal by its UUID.
typedef int CUresult;  // CUDA_SUCCESS = 0
typedef int CUdevice;
typedef struct {
  char bytes[16];
} CUuuid;

typedef CUresult (*cuDeviceGet_fn)(CUdevice* device, int ordinal);
// cuDeviceGetUuid_v2 gives a MIG compute instance's own UUID on a MIG device; the first version
// (cuDeviceGetUuid, still exported) predates MIG UUIDs. Where both exist and differ, the device is
// taken for a MIG instance ("MIG-..."); the agent matches the 16 bytes alone, so that prefix is a
// label, never what attribution depends on.
typedef CUresult (*cuDeviceGetUuid_fn)(CUuuid* uuid, CUdevice device);

}  // extern "C"
// NOLINTEND(readability-identifier-naming)

static_assert(sizeof(CUpti_Activity) == 4);
static_assert(offsetof(CUpti_ActivityKernelPrefix, start) == 16);
static_assert(offsetof(CUpti_ActivityKernelPrefix, end) == 24);
static_assert(offsetof(CUpti_ActivityKernelPrefix, deviceId) == 40);
static_assert(sizeof(CUuuid) == 16);
