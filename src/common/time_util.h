#pragma once
// Time and size text: RFC 3339 instants, durations ("90s", "15m", "168h", "7d", "1h30m") and
// sizes ("20GiB", "512MiB", "3.5GB").

#include <string>
#include <string_view>

#include "common/result.h"
#include "common/units.h"

namespace gpuledger {

Result<Micros> ParseRfc3339(std::string_view text);   // "2026-11-23T00:00:00Z", offsets ok
std::string FormatRfc3339(Micros t);                  // always UTC, "Z", whole seconds
Result<Micros> ParseDuration(std::string_view text);  // units us ms s m h d; bare = seconds
Result<Bytes> ParseBytes(std::string_view text);      // B KB MB GB KiB MiB GiB TiB; bare = B

}  // namespace gpuledger
