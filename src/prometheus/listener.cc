#include "prometheus/listener.h"

#include <sys/socket.h>

#include <httplib.h>

namespace gpuledger::prometheus {

void ConfigureListener(httplib::Server& server) {
  server.set_tcp_nodelay(true);
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
}

}  // namespace gpuledger::prometheus
