// gpuledger's side of the differential test against Prometheus's text parser: each file named
// on the command line through prometheus::ParseExposition (strict, as a scrape reads), printed
// in the canonical form promparse_peer.go prints for Prometheus's (see there).

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "prometheus/exposition_parser.h"

namespace {

std::string Hex(std::string_view bytes) {
  std::string out;
  out.reserve(2 * bytes.size());
  for (unsigned char c : bytes) out += fmt::format("{:02x}", c);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using gpuledger::prometheus::kNoTimestamp;
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "%s: cannot read\n", argv[i]);
      return 2;
    }
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::fputs(fmt::format("FILE {}\n", argv[i]).c_str(), stdout);
    auto parsed = gpuledger::prometheus::ParseExposition(text);
    if (!parsed) {
      std::fputs("REJECT\n", stdout);
      continue;
    }
    std::fputs(fmt::format("ACCEPT {}\n", parsed->samples.size()).c_str(), stdout);
    for (std::size_t k = 0; k < parsed->samples.size(); ++k) {
      const auto& s = parsed->samples[k];
      std::vector<std::string> pairs;
      for (const auto& [name, value] : s.labels) pairs.push_back(Hex(name) + "=" + Hex(value));
      std::sort(pairs.begin(), pairs.end());
      std::string joined;
      for (const auto& p : pairs) joined += (joined.empty() ? "" : ",") + p;
      const std::string bits = std::isnan(s.value)
                                   ? "nan"
                                   : fmt::format("{:016x}", std::bit_cast<std::uint64_t>(s.value));
      const std::int64_t ts = parsed->timestamps_ms[k];
      std::fputs(fmt::format("{}\t{}\t{}\t{}\n", Hex(s.name), joined, bits,
                             ts == kNoTimestamp ? std::string("-") : std::to_string(ts))
                     .c_str(),
                 stdout);
    }
  }
  return 0;
}
