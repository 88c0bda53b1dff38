#pragma once
// gzip (RFC 1952) for the scrape path: the agent answers "Accept-Encoding: gzip", the server
// and tests read gzipped bodies and exposition files. The inverse is capped: a body from the
// network is data, and a few kilobytes that inflate to gigabytes (a gzip bomb) must be an
// error, not an out-of-memory kill.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace gpuledger::http {

// Far above a real agent's exposition (~1.7 MB with 200 containers), far below memory.
inline constexpr std::size_t kMaxGunzipBytes = 256u << 20;

// zlib's default level, or its fastest (about four times as fast, a larger output): for bytes
// made while a reader waits.
enum class GzipLevel { kDefault, kFast };
// gzip of `data`.
std::string Gzip(std::string_view data, GzipLevel level = GzipLevel::kDefault);
// The inverse: an error (kInvalidArgument) for anything that is not one complete gzip stream,
// or that inflates past `max_bytes`.
Result<std::string> Gunzip(std::string_view data, std::size_t max_bytes = kMaxGunzipBytes);
// The same, handed to `on_chunk` a piece at a time (up to 256 KiB each, in order) instead of
// held whole: what reads a large body line by line keeps a piece, not the text. An error from
// `on_chunk` stops it and is returned.
Status GunzipChunks(std::string_view data, std::size_t max_bytes,
                    const std::function<Status(std::string_view)>& on_chunk);
// The same, handed to `on_line` a line at a time (without its '\n'; a last line without one
// too): what reads a body of lines keeps a piece and a line.
Status GunzipLines(std::string_view data, std::size_t max_bytes,
                   const std::function<Status(std::string_view)>& on_line);

}  // namespace gpuledger::http
