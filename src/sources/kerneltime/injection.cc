// libgpuledger-kerneltime.so's one exported symbol (issue 31): the CUDA driver loads the library
// named by CUDA_INJECTION64_PATH when the process initializes CUDA and calls
// InitializeInjection() once. The webhook (webhook/kernel_time_patch.h) sets that variable and
// GPULEDGER_KERNELTIME_DIR, the pod's own publish directory.
//
// Whatever goes wrong, CUDA initialization goes on: the function always reports success, and a
// tracer that cannot run prints one line to stderr and leaves the process alone.

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "sources/kerneltime/cupti_loader.h"
#include "sources/kerneltime/published_file.h"
#include "sources/kerneltime/tracer.h"

namespace {

using gpuledger::kerneltime::Tracer;

// The process's tracer. Never destroyed: it must outlive every CUPTI callback and static
// destructor of the process; Finish() at exit is all the teardown it needs.
Tracer* process_tracer = nullptr;

void FinishAtExit() { process_tracer->Finish(); }

void Say(const std::string& what) {
  std::fprintf(stderr, "gpuledger-kerneltime: %s; kernel time is not published\n", what.c_str());
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  namespace kt = gpuledger::kerneltime;
  if (process_tracer != nullptr) return 1;
  const char* dir = std::getenv("GPULEDGER_KERNELTIME_DIR");
  if (dir == nullptr || dir[0] == '\0') {
    Say("GPULEDGER_KERNELTIME_DIR is not set");
    return 1;
  }
  const std::int64_t pid = ::getpid();
  std::string error;
  auto file = kt::PublishedFile::Create(std::string(dir) + "/" + std::to_string(pid), error);
  if (file == nullptr) {
    Say(error);
    return 1;
  }
  kt::CuptiApi cupti;
  // Without CUPTI the tracer still starts, to say so in the file (the agent counts it).
  if (!kt::LoadCupti(std::getenv("GPULEDGER_CUPTI_PATH"), cupti, error)) Say(error);
  process_tracer = new Tracer(std::move(cupti), kt::FindCudaDriver(), std::move(file), pid);
  process_tracer->Start();
  std::atexit(&FinishAtExit);
  return 1;
}
