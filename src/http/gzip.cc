#include "http/gzip.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>

namespace gpuledger::http {
namespace {

// deflate fails only on a broken invariant (bad parameters, out of memory): abort loudly.
[[noreturn]] void DieZlib(const char* what, const z_stream& zs) {
  std::fprintf(stderr, "gzip: %s failed: %s\n", what, zs.msg != nullptr ? zs.msg : "error");
  std::abort();
}

// zlib's avail_in is 32-bit: hands `data` over in pieces, `handed` bytes so far.
void FeedInput(z_stream& zs, std::string_view data, std::size_t& handed) {
  if (zs.avail_in != 0 || handed == data.size()) return;
  const std::size_t n = std::min<std::size_t>(data.size() - handed, UINT_MAX);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + handed));
  zs.avail_in = static_cast<uInt>(n);
  handed += n;
}

}  // namespace

std::string Gzip(std::string_view data, GzipLevel level) {
  z_stream zs{};
  // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
  if (deflateInit2(&zs, level == GzipLevel::kFast ? Z_BEST_SPEED : Z_DEFAULT_COMPRESSION,
                   Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    DieZlib("deflateInit2", zs);
  std::string out(std::max<std::size_t>(deflateBound(&zs, data.size()), 64), '\0');
  std::size_t handed = 0;  // input bytes given to zlib so far (avail_in is 32-bit)
  for (;;) {
    FeedInput(zs, data, handed);
    if (zs.total_out == out.size()) out.resize(out.size() * 2);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + zs.total_out);
    zs.avail_out = static_cast<uInt>(std::min<std::size_t>(out.size() - zs.total_out, UINT_MAX));
    const int ret = deflate(&zs, handed == data.size() ? Z_FINISH : Z_NO_FLUSH);
    if (ret == Z_STREAM_END) break;
    if (ret == Z_STREAM_ERROR) DieZlib("deflate", zs);
  }
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

Status GunzipChunks(std::string_view data, std::size_t max_bytes,
                    const std::function<Status(std::string_view)>& on_chunk) {
  constexpr std::size_t kChunk = 256u << 10;
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) return Internal("gunzip: inflateInit2 failed");
  std::string out(kChunk, '\0');
  std::size_t handed = 0;
  Status result = Internal("gunzip: not finished");
  for (;;) {
    FeedInput(zs, data, handed);
    zs.next_out = reinterpret_cast<Bytef*>(out.data());
    zs.avail_out = static_cast<uInt>(out.size());
    const int ret = inflate(&zs, Z_NO_FLUSH);
    if (zs.total_out > max_bytes) {
      result = InvalidArgument(fmt::format(
          "gunzip: the stream expands past the limit of {} bytes (a gzip bomb, or raise the "
          "limit)",
          max_bytes));
      break;
    }
    if (const std::size_t produced = out.size() - zs.avail_out; produced > 0) {
      if (Status s = on_chunk(std::string_view(out.data(), produced)); !s) {
        result = std::move(s);
        break;
      }
    }
    if (ret == Z_STREAM_END) {
      result = zs.avail_in != 0 || handed != data.size()
                   ? InvalidArgument("gunzip: trailing data after the gzip stream")
                   : Status::Ok();
      break;
    }
    if (ret == Z_BUF_ERROR && zs.avail_in == 0 && handed == data.size()) {
      result = InvalidArgument("gunzip: truncated gzip stream");
      break;
    }
    if (ret != Z_OK && ret != Z_BUF_ERROR) {
      result = InvalidArgument(
          fmt::format("gunzip: corrupt gzip stream: {}", zs.msg != nullptr ? zs.msg : "error"));
      break;
    }
  }
  inflateEnd(&zs);
  return result;
}

Status GunzipLines(std::string_view data, std::size_t max_bytes,
                   const std::function<Status(std::string_view)>& on_line) {
  std::string partial;  // a line cut by the end of a piece
  Status read = GunzipChunks(data, max_bytes, [&](std::string_view piece) {
    for (std::size_t end = piece.find('\n'); end != std::string_view::npos;
         end = piece.find('\n')) {
      Status s = Status::Ok();
      if (partial.empty()) {
        s = on_line(piece.substr(0, end));
      } else {
        partial.append(piece.substr(0, end));
        s = on_line(partial);
        partial.clear();
      }
      if (!s) return s;
      piece.remove_prefix(end + 1);
    }
    partial.append(piece);
    return Status::Ok();
  });
  if (read && !partial.empty()) return on_line(partial);
  return read;
}

Result<std::string> Gunzip(std::string_view data, std::size_t max_bytes) {
  std::string out;
  out.reserve(
      std::min(std::max<std::size_t>(data.size() * 4, 256), std::max<std::size_t>(max_bytes, 1)));
  if (Status s = GunzipChunks(data, max_bytes,
                              [&](std::string_view chunk) {
                                out.append(chunk);
                                return Status::Ok();
                              });
      !s)
    return s.error();
  return out;
}

}  // namespace gpuledger::http
