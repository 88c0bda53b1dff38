#pragma once
// Our own minimal NVML header (design section 8: NVML has no Debian package): exactly the types
// and entry points gpuledger uses, written from NVIDIA's NVML API reference with NVML's names and
// the ABI of the real libnvidia-ml.so.1 (R535 and later; H100/H200 need R525+/R550+).
//
// Two users: the agent resolves these symbols with dlsym into NvmlApi (nvml_api.h), and the test
// stand-in library (testing/) defines them. Nothing here is linked against.
//
// Units as NVML gives them: timestamps in CPU microseconds since the Unix epoch, memory in
// bytes (memorySizeMB in MiB), energy in millijoules, power in milliwatts, utilization in percent.

// NVML's own names, not ours: naming checks stop here.
// NOLINTBEGIN(readability-identifier-naming)
#ifdef __cplusplus
extern "C" {
#endif

// ---------------------------------------------------------------------------------------------
// Return codes (nvmlReturn_t). Values are NVML's; gpuledger names faults after them without the
// NVML_ERROR_ prefix ("GPU_IS_LOST").
typedef enum nvmlReturn_enum {
  NVML_SUCCESS = 0,                         // the call succeeded
  NVML_ERROR_UNINITIALIZED = 1,             // nvmlInit_v2 was not called (or failed)
  NVML_ERROR_INVALID_ARGUMENT = 2,          // a bad argument (also: MIG index out of range)
  NVML_ERROR_NOT_SUPPORTED = 3,             // the device cannot do this
  NVML_ERROR_NO_PERMISSION = 4,             // the caller lacks permission
  NVML_ERROR_ALREADY_INITIALIZED = 5,       // deprecated: never returned now
  NVML_ERROR_NOT_FOUND = 6,                 // nothing found (no samples, empty MIG slot)
  NVML_ERROR_INSUFFICIENT_SIZE = 7,         // the caller's buffer is too small: count says how big
  NVML_ERROR_INSUFFICIENT_POWER = 8,        // power cables not attached
  NVML_ERROR_DRIVER_NOT_LOADED = 9,         // the NVIDIA kernel driver is not loaded
  NVML_ERROR_TIMEOUT = 10,                  // a user-provided timeout passed
  NVML_ERROR_IRQ_ISSUE = 11,                // the kernel detected an interrupt issue
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,        // the NVML library could not be loaded
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,       // this NVML does not implement the function
  NVML_ERROR_CORRUPTED_INFOROM = 14,        // the infoROM is corrupted
  NVML_ERROR_GPU_IS_LOST = 15,              // the GPU fell off the bus or is otherwise gone
  NVML_ERROR_RESET_REQUIRED = 16,           // the GPU needs a reset
  NVML_ERROR_OPERATING_SYSTEM = 17,         // blocked by the OS / cgroups
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,  // library and kernel driver versions differ
  NVML_ERROR_IN_USE = 19,                   // the GPU is in use
  NVML_ERROR_MEMORY = 20,                   // out of memory
  NVML_ERROR_NO_DATA = 21,                  // no data
  NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,   // vGPU operation unavailable with ECC on
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,   // out of a critical resource other than memory
  NVML_ERROR_FREQ_NOT_SUPPORTED = 24,       // frequency not supported
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,  // a versioned struct's version is not supported
  NVML_ERROR_DEPRECATED = 26,                 // the function is deprecated
  NVML_ERROR_NOT_READY = 27,                  // the system is not ready
  NVML_ERROR_GPU_NOT_FOUND = 28,              // no GPUs were found
  NVML_ERROR_INVALID_STATE = 29,              // the resource is in an invalid state
  NVML_ERROR_UNKNOWN = 999                    // an internal driver error
} nvmlReturn_t;

// An opaque device handle: a physical GPU or a MIG device. Owned by NVML, valid until shutdown.
typedef struct nvmlDevice_st* nvmlDevice_t;

// Buffer sizes NVML documents for its string getters (the _V2 sizes fit every current value).
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80

// nvmlDeviceGetMigMode: currentMode / pendingMode values.
#define NVML_DEVICE_MIG_DISABLE 0x0
#define NVML_DEVICE_MIG_ENABLE 0x1

// nvmlProcessInfo_t.usedGpuMemory when the driver cannot tell (e.g. Windows WDDM).
#define NVML_VALUE_NOT_AVAILABLE (~0ULL)

// Versioned structs carry sizeof(struct) | (version << 24) in their first field.
#define NVML_STRUCT_VERSION(data, ver) \
  ((unsigned int)(sizeof(nvml##data##_v##ver##_t) | ((unsigned int)(ver) << 24U)))

// ---------------------------------------------------------------------------------------------
// Structs.

// nvmlDeviceGetMemoryInfo: device (or MIG device) memory in bytes.
typedef struct nvmlMemory_st {
  unsigned long long total;  // installed memory
  unsigned long long free;   // unallocated memory
  unsigned long long used;   // allocated memory (includes the driver's reservation)
} nvmlMemory_t;

// nvmlDeviceGetUtilizationRates: percent of the last sample period (1/6 s to 1 s by product).
typedef struct nvmlUtilization_st {
  unsigned int gpu;     // percent of time one or more kernels ran
  unsigned int memory;  // percent of time device memory was read or written
} nvmlUtilization_t;

// nvmlDevice{,MPS}ComputeRunningProcesses_v3 entries (R535+ layout, 32 bytes; R510-R530 drivers
// wrote the 24-byte layout without usedGpuCcProtectedMemory into the same _v3 entry point: the
// source detects the stride it was given, see ParseProcessInfos).
typedef struct nvmlProcessInfo_st {
  unsigned int pid;                             // process id
  unsigned long long usedGpuMemory;             // bytes, or NVML_VALUE_NOT_AVAILABLE
  unsigned int gpuInstanceId;                   // MIG GPU instance id; 0xFFFFFFFF without MIG
  unsigned int computeInstanceId;               // MIG compute instance id; 0xFFFFFFFF without MIG
  unsigned long long usedGpuCcProtectedMemory;  // confidential-computing protected memory, bytes
} nvmlProcessInfo_t;

// The pre-R535 _v3 entry (also nvmlProcessInfo_v2_t): 24 bytes.
typedef struct nvmlProcessInfo_v2_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t;

// nvmlDeviceGetProcessUtilization: one sample per process busy in a sample period.
typedef struct nvmlProcessUtilizationSample_st {
  unsigned int pid;              // process id
  unsigned long long timeStamp;  // CPU timestamp of the sample, µs since the epoch
  unsigned int smUtil;           // SM (3D/compute) utilization, percent
  unsigned int memUtil;          // frame buffer memory utilization, percent
  unsigned int encUtil;          // encoder utilization, percent
  unsigned int decUtil;          // decoder utilization, percent
} nvmlProcessUtilizationSample_t;

// nvmlDeviceGetProcessesUtilizationInfo element (R550+).
typedef struct nvmlProcessUtilizationInfo_v1_st {
  unsigned long long timeStamp;  // CPU timestamp of the sample, µs since the epoch
  unsigned int pid;              // process id
  unsigned int smUtil;           // SM (3D/compute) utilization, percent
  unsigned int memUtil;          // frame buffer memory utilization, percent
  unsigned int encUtil;          // encoder utilization, percent
  unsigned int decUtil;          // decoder utilization, percent
  unsigned int jpgUtil;          // JPEG engine utilization, percent
  unsigned int ofaUtil;          // optical flow engine utilization, percent
} nvmlProcessUtilizationInfo_v1_t;

// nvmlDeviceGetProcessesUtilizationInfo argument: in/out, version-tagged.
typedef struct nvmlProcessesUtilizationInfo_v1_st {
  unsigned int version;                  // in: nvmlProcessesUtilizationInfo_v1
  unsigned int processSamplesCount;      // in: procUtilArray capacity; out: entries written/needed
  unsigned long long lastSeenTimeStamp;  // in: return only samples newer than this (µs)
  nvmlProcessUtilizationInfo_v1_t* procUtilArray;  // caller-allocated; NULL to size
} nvmlProcessesUtilizationInfo_v1_t;
typedef nvmlProcessesUtilizationInfo_v1_t nvmlProcessesUtilizationInfo_t;
// = 24 | (1 << 24) = 0x01000018 on LP64.
#define nvmlProcessesUtilizationInfo_v1 NVML_STRUCT_VERSION(ProcessesUtilizationInfo, 1)

// nvmlDeviceGetAttributes_v2: meaningful on MIG device handles.
typedef struct nvmlDeviceAttributes_st {
  unsigned int multiprocessorCount;        // SMs
  unsigned int sharedCopyEngineCount;      // copy engines
  unsigned int sharedDecoderCount;         // decoders
  unsigned int sharedEncoderCount;         // encoders
  unsigned int sharedJpegCount;            // JPEG engines
  unsigned int sharedOfaCount;             // optical flow engines
  unsigned int gpuInstanceSliceCount;      // GPU instance slices (the "Ng" of "3g.40gb")
  unsigned int computeInstanceSliceCount;  // compute instance slices
  unsigned long long memorySizeMB;         // memory, MiB
} nvmlDeviceAttributes_t;

// nvmlDeviceGetSamples: which sampled quantity.
typedef enum nvmlSamplingType_enum {
  NVML_TOTAL_POWER_SAMPLES = 0,         // board power, mW
  NVML_GPU_UTILIZATION_SAMPLES = 1,     // GPU (kernel) utilization, percent
  NVML_MEMORY_UTILIZATION_SAMPLES = 2,  // memory utilization, percent
  NVML_ENC_UTILIZATION_SAMPLES = 3,     // encoder utilization, percent
  NVML_DEC_UTILIZATION_SAMPLES = 4,     // decoder utilization, percent
  NVML_PROCESSOR_CLK_SAMPLES = 5,       // processor clock, MHz
  NVML_MEMORY_CLK_SAMPLES = 6,          // memory clock, MHz
  NVML_MODULE_POWER_SAMPLES = 7,        // module power, mW
  NVML_JPG_UTILIZATION_SAMPLES = 8,     // JPEG utilization, percent
  NVML_OFA_UTILIZATION_SAMPLES = 9      // optical flow utilization, percent
} nvmlSamplingType_t;

// nvmlDeviceGetSamples: which member of nvmlValue_t is valid.
typedef enum nvmlValueType_enum {
  NVML_VALUE_TYPE_DOUBLE = 0,
  NVML_VALUE_TYPE_UNSIGNED_INT = 1,
  NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
  NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
  NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
  NVML_VALUE_TYPE_SIGNED_INT = 5,
  NVML_VALUE_TYPE_UNSIGNED_SHORT = 6
} nvmlValueType_t;

// A sample value; nvmlValueType_t says which member (8 bytes).
typedef union nvmlValue_st {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
} nvmlValue_t;

// nvmlDeviceGetSamples element.
typedef struct nvmlSample_st {
  unsigned long long timeStamp;  // CPU timestamp, µs since the epoch
  nvmlValue_t sampleValue;       // the value, typed by the call's sampleValType
} nvmlSample_t;

// ---- GPM (GPU Performance Monitoring): Hopper and newer, R520+ drivers ----------------------
// From NVIDIA's NVML API reference, "GPM Enums", "GPM Structs" and "GPM Functions" (R525, R550,
// R590: docs.nvidia.com/deploy/nvml-api/group__nvmlGpm*.html), the layouts checked against the
// nvml.h NVIDIA/go-nvml vendors (CUDA 12.2.140). Two samples of a device's counters, taken apart
// in time, give each metric's mean over the time between them.

// A sample buffer, allocated by nvmlGpmSampleAlloc and freed by nvmlGpmSampleFree. Opaque.
typedef struct nvmlGpmSample_st* nvmlGpmSample_t;

// The metrics gpuledger reads (nvmlGpmMetricId_t has ~100-330 more: NVLink, PCIe, NVDEC, ...).
// Each is a percentage 0.0 - 100.0 of the time between the two samples.
typedef enum nvmlGpmMetricId_enum {
  NVML_GPM_METRIC_GRAPHICS_UTIL = 1,    // any compute/graphics context active
  NVML_GPM_METRIC_SM_UTIL = 2,          // SMs busy (a warp resident), averaged over the SMs
  NVML_GPM_METRIC_SM_OCCUPANCY = 3,     // resident warps vs the theoretical maximum
  NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5,  // SMs doing any tensor operation
  NVML_GPM_METRIC_DRAM_BW_UTIL = 10     // DRAM bandwidth used vs the theoretical maximum
} nvmlGpmMetricId_t;

// Capacity of nvmlGpmMetricsGet_t::metrics. The header's NVML_GPM_METRIC_MAX grew with the
// metric list (98 in CUDA 12.2, 333 in CUDA 13) while NVML_GPM_METRICS_GET_VERSION stayed 1:
// drivers read and write only numMetrics entries, so the largest known value is safe with all.
#define NVML_GPM_METRIC_MAX 333

// One metric of nvmlGpmMetricsGet_t: metricId in; nvmlReturn, value and names out.
typedef struct nvmlGpmMetric_st {
  unsigned int metricId;    // in: an nvmlGpmMetricId_t
  nvmlReturn_t nvmlReturn;  // out: this metric's status; value is valid only on NVML_SUCCESS
  double value;             // out: the metric (percent for the ones above)
  struct {
    char* shortName;  // out: may be NULL
    char* longName;   // out: may be NULL
    char* unit;       // out: may be NULL
  } metricInfo;
} nvmlGpmMetric_t;

// nvmlGpmMetricsGet argument. The version is the plain number, not NVML_STRUCT_VERSION.
#define NVML_GPM_METRICS_GET_VERSION 1
typedef struct nvmlGpmMetricsGet_st {
  unsigned int version;     // in: NVML_GPM_METRICS_GET_VERSION
  unsigned int numMetrics;  // in: entries of metrics[] to compute
  nvmlGpmSample_t sample1;  // in: the earlier sample
  nvmlGpmSample_t sample2;  // in: the later sample
  nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;

// nvmlGpmQueryDeviceSupport argument (plain version number too; go-nvml's NVML_STRUCT_VERSION
// form got ARGUMENT_VERSION_MISMATCH, NVIDIA/go-nvml#168).
#define NVML_GPM_SUPPORT_VERSION 1
typedef struct nvmlGpmSupport_st {
  unsigned int version;            // in: NVML_GPM_SUPPORT_VERSION
  unsigned int isSupportedDevice;  // out: non-zero when the device supports GPM
} nvmlGpmSupport_t;

// ---------------------------------------------------------------------------------------------
// Entry points gpuledger resolves, as function pointer types (the symbol is the name without
// the _fn suffix). "optional": the source works without it and degrades that datum only.

// Initializes NVML for this process (reference counted). Required.
typedef nvmlReturn_t (*nvmlInit_v2_fn)(void);
// Releases what nvmlInit_v2 took. Required.
typedef nvmlReturn_t (*nvmlShutdown_fn)(void);
// A static English string for a return code. Optional.
typedef const char* (*nvmlErrorString_fn)(nvmlReturn_t result);
// The driver version, e.g. "550.54.15". Optional.
typedef nvmlReturn_t (*nvmlSystemGetDriverVersion_fn)(char* version, unsigned int length);
// Number of physical GPUs visible. Required.
typedef nvmlReturn_t (*nvmlDeviceGetCount_v2_fn)(unsigned int* deviceCount);
// Handle of the index-th physical GPU. Required.
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_v2_fn)(unsigned int index, nvmlDevice_t* device);
// "GPU-<uuid>" or "MIG-<uuid>". Required.
typedef nvmlReturn_t (*nvmlDeviceGetUUID_fn)(nvmlDevice_t device, char* uuid, unsigned int length);
// Product name, e.g. "NVIDIA H100 80GB HBM3"; a MIG device adds " MIG 3g.40gb". Required.
typedef nvmlReturn_t (*nvmlDeviceGetName_fn)(nvmlDevice_t device, char* name, unsigned int length);
// Memory total/free/used in bytes (GPU or MIG device). Required.
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfo_fn)(nvmlDevice_t device, nvmlMemory_t* memory);
// Utilization over the last sample period. Optional.
typedef nvmlReturn_t (*nvmlDeviceGetUtilizationRates_fn)(nvmlDevice_t device,
                                                         nvmlUtilization_t* utilization);
// Buffered samples newer than lastSeenTimeStamp; samples NULL sizes (*sampleCount). Optional.
typedef nvmlReturn_t (*nvmlDeviceGetSamples_fn)(nvmlDevice_t device, nvmlSamplingType_t type,
                                                unsigned long long lastSeenTimeStamp,
                                                nvmlValueType_t* sampleValType,
                                                unsigned int* sampleCount, nvmlSample_t* samples);
// Per-process samples newer than lastSeenTimeStamp (pre-R550 form). Optional.
typedef nvmlReturn_t (*nvmlDeviceGetProcessUtilization_fn)(
    nvmlDevice_t device, nvmlProcessUtilizationSample_t* utilization,
    unsigned int* processSamplesCount, unsigned long long lastSeenTimeStamp);
// Per-process samples newer than info->lastSeenTimeStamp (R550+, version-tagged). Optional.
typedef nvmlReturn_t (*nvmlDeviceGetProcessesUtilizationInfo_fn)(
    nvmlDevice_t device, nvmlProcessesUtilizationInfo_t* procesesUtilInfo);
// Compute processes on a GPU or MIG device; INSUFFICIENT_SIZE sets *infoCount. Optional.
typedef nvmlReturn_t (*nvmlDeviceGetComputeRunningProcesses_v3_fn)(nvmlDevice_t device,
                                                                   unsigned int* infoCount,
                                                                   nvmlProcessInfo_t* infos);
// MPS client processes, same protocol. Optional.
typedef nvmlReturn_t (*nvmlDeviceGetMPSComputeRunningProcesses_v3_fn)(nvmlDevice_t device,
                                                                      unsigned int* infoCount,
                                                                      nvmlProcessInfo_t* infos);
// Energy since the driver loaded, mJ (Volta+). Optional.
typedef nvmlReturn_t (*nvmlDeviceGetTotalEnergyConsumption_fn)(nvmlDevice_t device,
                                                               unsigned long long* energy);
// Board power draw, mW. Optional.
typedef nvmlReturn_t (*nvmlDeviceGetPowerUsage_fn)(nvmlDevice_t device, unsigned int* power);
// MIG mode now and after the next reset (NVML_DEVICE_MIG_*). Optional.
typedef nvmlReturn_t (*nvmlDeviceGetMigMode_fn)(nvmlDevice_t device, unsigned int* currentMode,
                                                unsigned int* pendingMode);
// Number of MIG device slots of a physical GPU. Optional.
typedef nvmlReturn_t (*nvmlDeviceGetMaxMigDeviceCount_fn)(nvmlDevice_t device, unsigned int* count);
// MIG device in slot index; NOT_FOUND for an empty slot. Optional.
typedef nvmlReturn_t (*nvmlDeviceGetMigDeviceHandleByIndex_fn)(nvmlDevice_t device,
                                                               unsigned int index,
                                                               nvmlDevice_t* migDevice);
// GPU instance id of a MIG device. Optional.
typedef nvmlReturn_t (*nvmlDeviceGetGpuInstanceId_fn)(nvmlDevice_t device, unsigned int* id);
// The physical GPU a MIG device belongs to. Optional.
typedef nvmlReturn_t (*nvmlDeviceGetDeviceHandleFromMigDeviceHandle_fn)(nvmlDevice_t migDevice,
                                                                        nvmlDevice_t* device);
// SM/engine/slice counts and memory of a (MIG) device. Optional.
typedef nvmlReturn_t (*nvmlDeviceGetAttributes_v2_fn)(nvmlDevice_t device,
                                                      nvmlDeviceAttributes_t* attributes);
// Whether a physical GPU supports GPM (isSupportedDevice; pre-Hopper: 0). Optional, like all GPM.
typedef nvmlReturn_t (*nvmlGpmQueryDeviceSupport_fn)(nvmlDevice_t device,
                                                     nvmlGpmSupport_t* gpmSupport);
// Allocates a sample buffer. Optional.
typedef nvmlReturn_t (*nvmlGpmSampleAlloc_fn)(nvmlGpmSample_t* gpmSample);
// Frees a buffer from nvmlGpmSampleAlloc. Optional.
typedef nvmlReturn_t (*nvmlGpmSampleFree_fn)(nvmlGpmSample_t gpmSample);
// Reads a physical GPU's counters into a sample. Optional.
typedef nvmlReturn_t (*nvmlGpmSampleGet_fn)(nvmlDevice_t device, nvmlGpmSample_t gpmSample);
// Reads one MIG GPU instance's counters (the parent GPU's handle and the instance's
// nvmlDeviceGetGpuInstanceId) into a sample. Optional.
typedef nvmlReturn_t (*nvmlGpmMigSampleGet_fn)(nvmlDevice_t device, unsigned int gpuInstanceId,
                                               nvmlGpmSample_t gpmSample);
// Computes metrics[0..numMetrics) between sample1 and sample2. Optional.
typedef nvmlReturn_t (*nvmlGpmMetricsGet_fn)(nvmlGpmMetricsGet_t* metricsGet);

#ifdef __cplusplus
}  // extern "C"

#include <cstddef>

static_assert(sizeof(nvmlMemory_t) == 24);
static_assert(sizeof(nvmlUtilization_t) == 8);
static_assert(sizeof(nvmlProcessInfo_t) == 32);
static_assert(sizeof(nvmlProcessInfo_v2_t) == 24);
static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32);
static_assert(sizeof(nvmlProcessUtilizationInfo_v1_t) == 40);
static_assert(sizeof(nvmlProcessesUtilizationInfo_v1_t) == 24);
static_assert(nvmlProcessesUtilizationInfo_v1 == 0x01000018U);
static_assert(sizeof(nvmlDeviceAttributes_t) == 40);
static_assert(sizeof(nvmlValue_t) == 8);
static_assert(sizeof(nvmlSample_t) == 16);
static_assert(sizeof(nvmlGpmSample_t) == 8);
static_assert(sizeof(nvmlGpmMetric_t) == 40);
static_assert(sizeof(nvmlGpmSupport_t) == 8);
static_assert(offsetof(nvmlGpmMetricsGet_t, sample1) == 8);
static_assert(offsetof(nvmlGpmMetricsGet_t, metrics) == 24);
static_assert(sizeof(nvmlGpmMetricsGet_t) == 24 + 40 * NVML_GPM_METRIC_MAX);
#endif
// NOLINTEND(readability-identifier-naming)
