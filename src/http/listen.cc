#include "http/listen.h"

#include <fmt/format.h>

#include <charconv>
#include <string_view>

namespace gpuledger::http {

Result<std::pair<std::string, int>> ParseListen(const std::string& listen) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos)
    return InvalidArgument(
        fmt::format("--listen '{}': expected HOST:PORT, e.g. 0.0.0.0:9400", listen));
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "0.0.0.0";
  int port = -1;
  std::string_view p = std::string_view(listen).substr(colon + 1);
  auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
  if (ec != std::errc() || ptr != p.data() + p.size() || port < 0 || port > 65535)
    return InvalidArgument(fmt::format("--listen '{}': port must be 0-65535", listen));
  return std::pair{host, port};
}

}  // namespace gpuledger::http
