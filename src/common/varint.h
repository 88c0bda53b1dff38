#pragma once
// LEB128 varints, signed values zigzag-encoded so any int64 round-trips exactly and small ones
// take one byte: what the ledger's compact records are made of (store/hour_record.h, the hours
// as stored; ledger/day_rollup.h, days kept summed).

#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace gpuledger {

inline void PutUnsigned(std::uint64_t v, std::string& out) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

inline void PutSigned(std::int64_t v, std::string& out) {
  const auto u = static_cast<std::uint64_t>(v);
  PutUnsigned((u << 1) ^ (v < 0 ? ~std::uint64_t{0} : 0), out);
}

// A length, then the bytes.
inline void PutText(std::string_view text, std::string& out) {
  PutUnsigned(text.size(), out);
  out.append(text);
}

// Reads varints from a record of `kind` ("hour record"), remembering the first failure: after
// it every read fails too and reads as 0 (or empty), and what() says where and why.
class VarintReader {
 public:
  VarintReader(std::string_view bytes, std::string_view kind) : bytes_(bytes), kind_(kind) {}

  std::uint64_t Unsigned(std::string_view field) {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= bytes_.size()) return Fail(field, "ends inside it");
      const auto byte = static_cast<std::uint8_t>(bytes_[pos_++]);
      // The tenth byte holds bit 63 only.
      if (shift == 63 && byte > 1) return Fail(field, "is longer than 64 bits");
      v |= std::uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80) == 0) {
        // One spelling per value: a record that reads back encodes to the same bytes.
        if (byte == 0 && shift > 0) return Fail(field, "is not in its shortest form");
        return v;
      }
    }
    return Fail(field, "is longer than 64 bits");
  }
  std::int64_t Signed(std::string_view field) {
    const std::uint64_t u = Unsigned(field);
    return static_cast<std::int64_t>((u >> 1) ^ (~(u & 1) + 1));
  }
  // An id or count: at most INT64_MAX.
  std::int64_t Count(std::string_view field) {
    const std::uint64_t u = Unsigned(field);
    if (u > static_cast<std::uint64_t>(INT64_MAX))
      return static_cast<std::int64_t>(Fail(field, "is past INT64_MAX"));
    return static_cast<std::int64_t>(u);
  }
  std::uint8_t Byte(std::string_view field) {
    if (pos_ >= bytes_.size()) return static_cast<std::uint8_t>(Fail(field, "is missing"));
    return static_cast<std::uint8_t>(bytes_[pos_++]);
  }
  // What PutText wrote: a view into the bytes.
  std::string_view Text(std::string_view field) {
    const std::uint64_t size = Unsigned(field);
    return Raw(size, field);
  }

  // The next `size` bytes as they are: a view into the bytes.
  std::string_view Raw(std::uint64_t size, std::string_view field) {
    if (size > left()) {
      Fail(field, "is longer than what is left");
      return {};
    }
    const std::string_view raw = bytes_.substr(pos_, size);
    pos_ += size;
    return raw;
  }

  bool ok() const { return what_.empty(); }
  bool AtEnd() const { return pos_ == bytes_.size(); }
  std::size_t left() const { return bytes_.size() - pos_; }
  const std::string& what() const { return what_; }
  std::uint64_t Fail(std::string_view field, std::string_view why) {
    if (what_.empty()) what_ = fmt::format("{} byte {}: {} {}", kind_, pos_, field, why);
    pos_ = bytes_.size();
    return 0;
  }

 private:
  std::string_view bytes_;
  std::string_view kind_;
  std::size_t pos_ = 0;
  std::string what_;
};

}  // namespace gpuledger
