// Our CUPTI and driver declarations (cupti_abi.h) against NVIDIA's own headers, where a CUDA
// toolkit is installed (the test is not built otherwise): every value the tracer passes or
// compares, and every offset it reads, in each kernel record version CUPTI has shipped since
// CUDA 11 (CUpti_ActivityKernel4 to 10).

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cupti.h>
#include <gtest/gtest.h>

namespace ours {
#include "sources/kerneltime/cupti_abi.h"
}  // namespace ours

namespace {

template <typename Record>
constexpr bool SamePrefix() {
  using Prefix = ours::CUpti_ActivityKernelPrefix;
  return offsetof(Record, kind) == offsetof(Prefix, kind) &&
         offsetof(Record, start) == offsetof(Prefix, start) &&
         offsetof(Record, end) == offsetof(Prefix, end) &&
         offsetof(Record, completed) == offsetof(Prefix, completed) &&
         offsetof(Record, deviceId) == offsetof(Prefix, deviceId) &&
         offsetof(Record, contextId) == offsetof(Prefix, contextId) &&
         offsetof(Record, streamId) == offsetof(Prefix, streamId) &&
         sizeof(Record::start) == sizeof(Prefix::start) &&
         sizeof(Record::deviceId) == sizeof(Prefix::deviceId);
}

TEST(CuptiAbi, KernelRecordsOfEveryVersionShareTheFieldsTheTracerReads) {
  static_assert(SamePrefix<CUpti_ActivityKernel4>());
  static_assert(SamePrefix<CUpti_ActivityKernel5>());
  static_assert(SamePrefix<CUpti_ActivityKernel6>());
  static_assert(SamePrefix<CUpti_ActivityKernel7>());
  static_assert(SamePrefix<CUpti_ActivityKernel8>());
  static_assert(SamePrefix<CUpti_ActivityKernel9>());
  static_assert(SamePrefix<CUpti_ActivityKernel10>());
  // Any record: its kind first (CUPTI's CUpti_Activity is padded to 8 bytes; only kind is read).
  static_assert(offsetof(CUpti_Activity, kind) == offsetof(ours::CUpti_Activity, kind));
  static_assert(sizeof(CUuuid) == sizeof(ours::CUuuid));
  SUCCEED();
}

TEST(CuptiAbi, ConstantsAreCuptis) {
  EXPECT_EQ(int{ours::CUPTI_SUCCESS}, int{CUPTI_SUCCESS});
  EXPECT_EQ(int{ours::CUPTI_ERROR_INVALID_PARAMETER}, int{CUPTI_ERROR_INVALID_PARAMETER});
  EXPECT_EQ(int{ours::CUPTI_ERROR_MAX_LIMIT_REACHED}, int{CUPTI_ERROR_MAX_LIMIT_REACHED});
  EXPECT_EQ(int{ours::CUPTI_ERROR_NOT_COMPATIBLE}, int{CUPTI_ERROR_NOT_COMPATIBLE});
  EXPECT_EQ(int{ours::CUPTI_ERROR_NOT_INITIALIZED}, int{CUPTI_ERROR_NOT_INITIALIZED});
  EXPECT_EQ(int{ours::CUPTI_ERROR_INSUFFICIENT_PRIVILEGES},
            int{CUPTI_ERROR_INSUFFICIENT_PRIVILEGES});
  EXPECT_EQ(int{ours::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED},
            int{CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED});
  EXPECT_EQ(int{ours::CUPTI_ACTIVITY_KIND_KERNEL}, int{CUPTI_ACTIVITY_KIND_KERNEL});
  EXPECT_EQ(int{ours::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL},
            int{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL});
  EXPECT_EQ(int{ours::CUPTI_ACTIVITY_FLAG_FLUSH_FORCED}, int{CUPTI_ACTIVITY_FLAG_FLUSH_FORCED});
}

TEST(CuptiAbi, EntryPointsTakeWhatCuptiDeclares) {
  // Same parameter and return layout: each of ours, with CUPTI's enum types spelled as ints.
  static_assert(sizeof(CUptiResult) == sizeof(ours::CUptiResult));
  static_assert(sizeof(CUpti_ActivityKind) == sizeof(ours::CUpti_ActivityKind));
  static_assert(std::is_same_v<decltype(&cuptiActivityGetNumDroppedRecords),
                               CUptiResult (*)(CUcontext, uint32_t, size_t*)>);
  static_assert(std::is_same_v<decltype(&cuptiActivityFlushAll), CUptiResult (*)(uint32_t)>);
  static_assert(std::is_same_v<decltype(&cuDeviceGet), CUresult (*)(CUdevice*, int)>);
  static_assert(std::is_same_v<decltype(&cuDeviceGetUuid_v2), CUresult (*)(CUuuid*, CUdevice)>);
  static_assert(sizeof(CUresult) == sizeof(ours::CUresult));
  static_assert(sizeof(CUdevice) == sizeof(ours::CUdevice));
  SUCCEED();
}

}  // namespace
