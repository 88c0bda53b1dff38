// The HTTP/1.1 request parser behind every listener (API, agent, webhook), with small limits so
// the fuzzer reaches them. A complete request never claims more bytes than it was given, and a
// refusal always carries its status and reason.

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "http/request.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using gpuledger::http::ParseOutcome;
  std::string_view buffer(reinterpret_cast<const char*>(data), size);
  const gpuledger::http::RequestLimits limits{.max_head_bytes = 512, .max_body_bytes = 256};
  // Pipelined requests, one after another, as the server takes them.
  for (int i = 0; i < 16 && !buffer.empty(); ++i) {
    ParseOutcome p = gpuledger::http::ParseRequest(buffer, limits);
    if (p.kind == ParseOutcome::Kind::kIncomplete) break;
    if (p.kind == ParseOutcome::Kind::kRefused) {
      if (p.status < 400 || p.status > 505 || p.reason.empty()) std::abort();
      break;
    }
    if (p.consumed == 0 || p.consumed > buffer.size()) std::abort();
    if (p.request.body.size() > limits.max_body_bytes) std::abort();
    buffer.remove_prefix(p.consumed);
  }
  std::string out;
  gpuledger::http::PercentDecode(std::string_view(reinterpret_cast<const char*>(data), size), true,
                                 out);
  return 0;
}
