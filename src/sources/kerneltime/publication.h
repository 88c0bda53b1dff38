#pragma once
// The kernel-time file: what the in-process tracer (libgpuledger-kerneltime.so) publishes for
// the agent, one small fixed-layout file per process (for example
// /run/gpuledger/kerneltime/<pod-uid>/<pid>, the PID as the process sees itself in its
// container), rewritten in place (issue 31).
//
// Layout, version 1, native byte order (writer and reader share the node): a header, 16 device
// records of 128 bytes, and a closing sequence number. Lock-free for the reader:
//   writer: seq_end := odd; fields; seq_begin := next even; seq_end := next even
//   reader: two whole reads, one after the other (ReadPublication); the second is whole when
//           it equals the first and seq_begin == seq_end, both even; torn otherwise (read again)
// One read alone is not enough: the kernel copies a file with a string instruction whose loads
// x86 may perform out of order, so one copy can see the closing mark before a field the
// writer is changing (a single-read reader accepted mixed files on a 2-core VM). Loads of the
// second read all follow those of the first, so a write that overlapped either changes a mark
// or a field between them.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace gpuledger::kerneltime {

inline constexpr char kMagic[8] = {'G', 'L', 'K', 'T', 'I', 'M', 'E', '\0'};
inline constexpr std::uint32_t kFormatVersion = 1;
inline constexpr std::size_t kMaxDevices = 16;
inline constexpr std::size_t kUuidBytes = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE

struct DeviceRecord {
  char uuid[kUuidBytes];     // "GPU-..." or "MIG-...", NUL-terminated
  std::uint64_t busy_ns;     // union of the process's kernels on it, cumulative
  std::uint64_t kernels;     // kernels seen, cumulative
  std::uint64_t clipped_ns;  // kernel time cut because its record came too late (busy_union.h)
  std::uint64_t reserved;
};
static_assert(sizeof(DeviceRecord) == 128);

struct FileLayout {
  char magic[8];
  std::uint32_t version;
  std::uint32_t device_count;
  std::uint64_t seq_begin;
  std::int64_t pid;
  std::uint64_t errors;  // CUPTI or file errors since the tracer started
  std::uint32_t flags;   // kDisabled...
  std::uint32_t reserved;
  std::int64_t started_unix_ns;
  std::int64_t updated_unix_ns;
  DeviceRecord devices[kMaxDevices];
  std::uint64_t seq_end;
};
static_assert(sizeof(FileLayout) == 64 + 16 * 128 + 8);
static_assert(offsetof(FileLayout, seq_begin) == 16 && offsetof(FileLayout, devices) == 64);

// Flags.
inline constexpr std::uint32_t kDisabled = 1;    // an error stopped the tracer
inline constexpr std::uint32_t kStoodAside = 2;  // another CUPTI subscriber (a profiler)

struct DeviceKernelTime {
  std::string uuid;
  std::uint64_t busy_ns = 0;
  std::uint64_t kernels = 0;
  std::uint64_t clipped_ns = 0;
  friend bool operator==(const DeviceKernelTime&, const DeviceKernelTime&) = default;
};

struct Publication {
  std::int64_t pid = 0;
  std::uint64_t errors = 0;
  std::uint32_t flags = 0;
  std::int64_t started_unix_ns = 0;
  std::int64_t updated_unix_ns = 0;
  std::uint64_t seq = 0;  // even; grows with every write
  std::vector<DeviceKernelTime> devices;
  friend bool operator==(const Publication&, const Publication&) = default;
};

// Reads the bytes of one file. kInvalidArgument for a file of another size, magic or version,
// or a UUID that is not NUL-terminated; kUnavailable for a read with its marks apart.
Result<Publication> DecodePublication(std::string_view bytes, std::string_view path);

// Reads a file the reader's way above: `read` twice (each a whole read of the file), decoded
// when both agree. kUnavailable for a torn read (read again); read's own errors as they are.
Result<Publication> ReadPublication(const std::function<Result<std::string>()>& read,
                                    std::string_view path);

// Writes `p` into `out` (a mapped file of sizeof(FileLayout) bytes) in the writer's order
// above; `p.seq` is ignored: the sequence advances from what `out` holds. At most kMaxDevices
// devices (the rest are dropped and counted in errors). The caller is the file's only writer.
void WritePublication(const Publication& p, FileLayout& out);

}  // namespace gpuledger::kerneltime
