#pragma once
// Where tests and test tools find the checkout, the shared data and the binaries they run, as
// this build tree knows them. Defined in one generated file (cmake/GpuledgerTestPaths.cmake) so
// that no compile flag carries an absolute path: every other translation unit compiles the same
// in any folder, and ccache hits survive a clone elsewhere. Link gpuledger_test_paths.

namespace gpuledger::test_paths {

extern const char* const kSourceDir;     // the checkout
extern const char* const kSharedData;    // ../shared/data beside it; tests skip what is absent
extern const char* const kGpuledgerBin;  // the built gpuledger binary
extern const char* const kNvmlStandin;   // the NVML stand-in library ("" when not built)
extern const char* const kSimNodeBin;    // the gpuledger-sim-node tool ("" when not built)
// libgpuledger-kerneltime.so and the CUPTI and CUDA driver stand-ins it is tested with
// (testing/cupti_standin/; "" when not built).
extern const char* const kKernelTimeLib;
extern const char* const kCuptiStandin;
extern const char* const kCudaStandin;

}  // namespace gpuledger::test_paths
