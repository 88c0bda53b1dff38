#pragma once
// The process exit code of a command that failed with `error`: 2 for bad input (a flag, a
// file's field: the user can fix it), 1 for any other failure. 0 is success, said by the caller.

#include <ostream>

#include "common/result.h"

namespace gpuledger::cli {

inline int ExitCodeFor(const Error& error) {
  return error.code == ErrorCode::kInvalidArgument ? 2 : 1;
}

// Says `error` on `err` ("error: <message>") and returns its exit code.
inline int Fail(std::ostream& err, const Error& error) {
  err << "error: " << error.message << "\n";
  return ExitCodeFor(error);
}

}  // namespace gpuledger::cli
