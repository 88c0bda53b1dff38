#pragma once
// The settings of the one listener still on cpp-httplib, the admission webhook (it serves TLS;
// the agent and the API use http::Server, which applies the same settings itself). httplib.h
// is included only by .cc files (cmake/GpuledgerHttplib.cmake), hence the forward declaration.

namespace httplib {
class Server;
}

namespace gpuledger::prometheus {

// - The port is the listener's alone: cpp-httplib's default also sets SO_REUSEPORT, which lets
//   a second agent or server bind a port in use and share its connections silently (issue 29:
//   scrapes alternated between two agents and a 30 s scrape recorded 883 s per GPU); only
//   SO_REUSEADDR is kept, so a restart can rebind while old connections linger.
// - TCP_NODELAY: a response is written in two parts (headers, body), and with Nagle's algorithm
//   the second waits for the peer's delayed ACK, 40 ms per keep-alive response.
void ConfigureListener(httplib::Server& server);

}  // namespace gpuledger::prometheus
