#pragma once
// A listening TCP socket that is the port's alone: SO_REUSEADDR (a restart rebinds while old
// connections linger in TIME_WAIT) and never SO_REUSEPORT, non-blocking, close-on-exec.

#include <string>

#include "common/result.h"

namespace gpuledger::http {

// Connections the kernel queues before they are accepted: enough for a burst of scrapes or
// probes while the loop is busy (the kernel caps it at net.core.somaxconn).
inline constexpr int kListenBacklog = 1024;

struct ListenSocket {
  int fd = -1;
  int port = 0;  // the bound port (the kernel's choice when 0 was asked)
};

// Binds `host`:`port` and listens with `backlog`. Errors are kInvalidArgument naming `flag`
// (what the user typed, e.g. "--listen '0.0.0.0:9400'") and why: the port is in use, the
// address is not this host's, or the name does not resolve.
Result<ListenSocket> ListenTcp(const std::string& host, int port, int backlog,
                               const std::string& flag);

}  // namespace gpuledger::http
