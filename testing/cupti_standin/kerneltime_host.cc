// A stand-in CUDA application for the kernel-time tracer's tests (README.md): it loads the driver
// stand-in, then libgpuledger-kerneltime.so and calls InitializeInjection() as the CUDA driver
// does for CUDA_INJECTION64_PATH, then "runs kernels" through the CUPTI stand-in from a script.
//
// Usage: kerneltime_host SCRIPT. One command a line:
//   kernel DEVICE START_NS END_NS           one kernel record
//   kernels DEVICE START_NS LENGTH_NS N GAP_NS   N kernels, each LENGTH long, GAP apart
//   other                                   a record that is not a kernel
//   wait PATH                               until PATH exists (30 s at most)
// At exit, after the tracer's own exit handler, it prints what the tracer did to CUPTI:
//   cupti registrations=R enabled=E subscribed=S flushes=F forced=FF disables=D
// GPULEDGER_HOST_OWN_CUPTI=1 loads the CUPTI stand-in first, as an application with its own
// CUPTI (PyTorch) has it loaded.

#include <dlfcn.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "test_paths.h"

namespace {

using KernelFn = void (*)(std::uint32_t, std::uint64_t, std::uint64_t);
using OtherFn = void (*)();
using StateFn = void (*)(int[6]);

StateFn state_fn = nullptr;

void PrintCuptiState() {
  int s[6] = {};
  if (state_fn != nullptr) state_fn(s);
  std::printf("cupti registrations=%d enabled=%d subscribed=%d flushes=%d forced=%d disables=%d\n",
              s[0], s[1], s[2], s[3], s[4], s[5]);
  std::fflush(stdout);
}

int Fail(const std::string& why) {
  std::fprintf(stderr, "kerneltime_host: %s\n", why.c_str());
  return 2;
}

bool WaitForFile(const std::string& path) {
  struct stat st;
  for (int i = 0; i < 3000; ++i) {
    if (::stat(path.c_str(), &st) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  namespace paths = gpuledger::test_paths;
  if (argc != 2) return Fail("usage: kerneltime_host SCRIPT");
  // The CUDA runtime has loaded the driver before the driver loads the injection.
  if (dlopen(paths::kCudaStandin, RTLD_NOW | RTLD_GLOBAL) == nullptr) return Fail(dlerror());
  const char* own = std::getenv("GPULEDGER_HOST_OWN_CUPTI");
  if (own != nullptr && own[0] == '1' &&
      dlopen(paths::kCuptiStandin, RTLD_NOW | RTLD_GLOBAL) == nullptr)
    return Fail(dlerror());
  // Registered before the tracer's handler, so it runs after it (exit handlers run in reverse).
  std::atexit(&PrintCuptiState);

  void* tracer = dlopen(paths::kKernelTimeLib, RTLD_NOW | RTLD_LOCAL);
  if (tracer == nullptr) return Fail(dlerror());
  auto initialize = reinterpret_cast<int (*)()>(dlsym(tracer, "InitializeInjection"));
  if (initialize == nullptr) return Fail("no InitializeInjection");
  if (initialize() != 1) return Fail("InitializeInjection did not succeed");

  void* cupti = dlopen(paths::kCuptiStandin, RTLD_NOW | RTLD_LOCAL);
  if (cupti == nullptr) return Fail(dlerror());
  auto kernel = reinterpret_cast<KernelFn>(dlsym(cupti, "gpuledger_fake_cupti_kernel"));
  auto other = reinterpret_cast<OtherFn>(dlsym(cupti, "gpuledger_fake_cupti_other_record"));
  state_fn = reinterpret_cast<StateFn>(dlsym(cupti, "gpuledger_fake_cupti_state"));
  if (kernel == nullptr || other == nullptr || state_fn == nullptr)
    return Fail("the CUPTI stand-in lacks its test entry points");

  std::ifstream script(argv[1]);
  if (!script) return Fail(std::string(argv[1]) + ": cannot be read");
  std::string line;
  while (std::getline(script, line)) {
    std::istringstream words(line);
    std::string command;
    words >> command;
    if (command == "kernel") {
      std::uint32_t device;
      std::uint64_t start, end;
      words >> device >> start >> end;
      kernel(device, start, end);
    } else if (command == "kernels") {
      std::uint32_t device;
      std::uint64_t start, length, n, gap;
      words >> device >> start >> length >> n >> gap;
      for (std::uint64_t i = 0; i < n; ++i)
        kernel(device, start + i * (length + gap), start + i * (length + gap) + length);
    } else if (command == "other") {
      other();
    } else if (command == "wait") {
      std::string path;
      words >> path;
      if (!WaitForFile(path)) return Fail(path + " never appeared");
    } else if (!command.empty()) {
      return Fail("unknown command '" + command + "'");
    }
  }
  return 0;
}
