// What the kernel-time tracer (libgpuledger-kerneltime.so, docs/kernel-time.md) costs per kernel
// on the thread that flushes: a full 256 KiB CUPTI buffer of kernel records (208 bytes each, CUDA
// 12's CUpti_ActivityKernel9), walked with a CUPTI-like cuptiActivityGetNextRecord and added to
// the per-device unions. CUPTI's own cost of recording a kernel needs a GPU and is measured by
// tests/gpu/check_kernel_time.sh. Usage: kerneltime_tracer [--benchmark_filter=...]

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "sources/kerneltime/tracer.h"

namespace {

using namespace gpuledger::kerneltime;

constexpr std::size_t kRecordBytes = 208;
constexpr std::size_t kBufferBytes = 256 * 1024;
constexpr std::size_t kRecords = kBufferBytes / kRecordBytes;

CUptiResult NextRecord(std::uint8_t* buffer, std::size_t valid, CUpti_Activity** record) {
  std::uint8_t* next =
      *record == nullptr ? buffer : reinterpret_cast<std::uint8_t*>(*record) + kRecordBytes;
  if (next >= buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(next);
  return CUPTI_SUCCESS;
}

CUptiResult NoneDropped(CUcontext, std::uint32_t, std::size_t* dropped) {
  *dropped = 0;
  return CUPTI_SUCCESS;
}

// Kernels of `streams` concurrent streams on one device, each `length_ns` long: with more than
// one stream they overlap, as a training step's do, and the union merges them.
void FillBuffer(std::vector<std::uint8_t>& buffer, std::uint64_t& clock_ns, int streams,
                std::uint64_t length_ns) {
  for (std::size_t i = 0; i < kRecords; ++i) {
    CUpti_ActivityKernelPrefix k{};
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = clock_ns + (i % streams) * (length_ns / 3);
    k.end = k.start + length_ns;
    k.deviceId = 0;
    k.streamId = static_cast<std::uint32_t>(i % streams);
    std::memcpy(buffer.data() + i * kRecordBytes, &k, sizeof k);
    if (i % streams == static_cast<std::size_t>(streams) - 1) clock_ns += length_ns + 2'000;
  }
}

void BM_TakeBuffer(benchmark::State& state) {
  const int streams = static_cast<int>(state.range(0));
  CuptiApi api;
  api.next_record = &NextRecord;
  api.dropped_records = &NoneDropped;
  std::string error;
  const std::string path = "/tmp/gpuledger-kerneltime-bench-" + std::to_string(::getpid());
  auto file = PublishedFile::Create(path, error);
  if (file == nullptr) {
    state.SkipWithError(error.c_str());
    return;
  }
  file->Remove();
  Tracer tracer(api, CudaDriverApi{}, std::move(file), ::getpid());
  std::vector<std::uint8_t> buffer(kBufferBytes);
  std::uint64_t clock_ns = 1'000'000;
  for (auto _ : state) {
    state.PauseTiming();
    FillBuffer(buffer, clock_ns, streams, 20'000);
    state.ResumeTiming();
    tracer.TakeBuffer(nullptr, 0, buffer.data(), kRecords * kRecordBytes);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kRecords));
  state.counters["ns_per_kernel"] =
      benchmark::Counter(static_cast<double>(state.iterations() * kRecords),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_TakeBuffer)->Arg(1)->Arg(4)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
