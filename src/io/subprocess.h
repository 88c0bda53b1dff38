#pragma once
// Running a helper program and taking its output: for kubeconfig exec credential plugins
// (k8s/exec_credential.h), which print a credential on stdout. Bounded in time and in output,
// so a plugin that hangs or floods cannot stall or exhaust the caller.

#include <chrono>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace gpuledger {

struct SubprocessRequest {
  std::vector<std::string> argv;  // argv[0] without a slash is looked up in PATH
  // Added to (or replacing in) the caller's environment.
  std::vector<std::pair<std::string, std::string>> env;
  std::chrono::milliseconds timeout{60'000};
  std::size_t max_output_bytes = 1 << 20;  // per stream; beyond it the process is killed
};

struct SubprocessResult {
  int exit_code = 0;  // the exit status, or 128 + the signal that ended it
  std::string out;
  std::string err;
};

// Runs it with stdin from /dev/null and waits. kNotFound when argv[0] cannot be run (not found,
// not executable); kUnavailable when it outlives the timeout or writes past the limit (it is
// killed). Any exit status is a successful return.
Result<SubprocessResult> RunSubprocess(const SubprocessRequest& request);

}  // namespace gpuledger
