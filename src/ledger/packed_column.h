#pragma once
// A column of records kept narrow, exactly (issue 32: the kept snapshot's memory). A ledger's
// figures are bounded by an hour: GPU-µs and millijoules of one device-hour fit in 32 bits,
// KiB-s of memory and nano-dollars in 48. So a record is kept as its narrow form (`Packed`),
// one array of them, read in one stream; a record that does not fit (a negative figure, or
// one past its width) is kept whole on the side, found by its index, and its narrow form only
// says so.
//
// `Packed` has: `using Whole`; `bool Pack(const Whole&)` (false: does not fit); `Whole Unpack()
// const`; `void MarkAside()`; `bool aside() const`.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace gpuledger::ledger {

// Keeps elements [first, last) of a column, renumbered from 0.
template <typename T>
void KeepRange(std::vector<T>& column, std::size_t first, std::size_t last) {
  column.erase(column.begin() + static_cast<std::ptrdiff_t>(last), column.end());
  column.erase(column.begin(), column.begin() + static_cast<std::ptrdiff_t>(first));
}

// `value` into `low` (and `high`, the bits above 32), when it is in [0, 2^bits).
inline bool Narrow(std::int64_t value, std::uint32_t& low) {
  if (value < 0 || value > INT64_C(0xFFFFFFFF)) return false;
  low = static_cast<std::uint32_t>(value);
  return true;
}
inline bool Narrow(std::int64_t value, std::uint32_t& low, std::uint16_t& high) {
  if (value < 0 || value > INT64_C(0xFFFFFFFFFFFF)) return false;
  low = static_cast<std::uint32_t>(value);
  high = static_cast<std::uint16_t>(value >> 32);
  return true;
}
inline std::int64_t Widen(std::uint32_t low, std::uint16_t high) {
  return static_cast<std::int64_t>((std::uint64_t{high} << 32) | low);
}

template <typename Packed>
class PackedColumn {
 public:
  using Whole = typename Packed::Whole;

  Whole operator[](std::size_t i) const {
    const Packed& p = packed_[i];
    if (!p.aside()) [[likely]]
      return p.Unpack();
    return Aside(i);
  }

  void push_back(const Whole& whole) {
    packed_.emplace_back();
    Set(packed_.size() - 1, whole);
  }

  // Record i replaced by `whole` (e.g. a figure known only once the rows after it are read).
  void Set(std::size_t i, const Whole& whole) {
    Packed p{};
    const bool fits = p.Pack(whole);
    const auto it = AsideAt(aside_, i);
    const bool was_aside = it != aside_.end() && it->first == i;
    if (fits) {
      if (was_aside) aside_.erase(it);
    } else {
      p = Packed{};
      p.MarkAside();
      if (was_aside)
        it->second = whole;
      else
        aside_.insert(it, {i, whole});
    }
    packed_[i] = p;
  }

  std::size_t size() const { return packed_.size(); }
  void reserve(std::size_t n) { packed_.reserve(n); }
  void clear() {
    packed_.clear();
    aside_.clear();
  }
  // Keeps records [first, last), renumbered from 0.
  void Keep(std::size_t first, std::size_t last) {
    KeepRange(packed_, first, last);
    std::erase_if(aside_, [&](const auto& a) { return a.first < first || a.first >= last; });
    for (auto& a : aside_) a.first -= first;
  }
  // The bytes its records take (the reserved room aside).
  std::size_t bytes() const {
    return packed_.size() * sizeof(Packed) + aside_.size() * sizeof(aside_.front());
  }

 private:
  Whole Aside(std::size_t i) const { return AsideAt(aside_, i)->second; }
  // The first record set aside at or after index i (const or not, as `aside` is).
  template <typename Aside>
  static auto AsideAt(Aside& aside, std::size_t i) {
    return std::lower_bound(aside.begin(), aside.end(), i,
                            [](const auto& a, std::size_t k) { return a.first < k; });
  }

  std::vector<Packed> packed_;
  std::vector<std::pair<std::size_t, Whole>> aside_;  // by index, ascending
};

template <typename Packed>
void KeepRange(PackedColumn<Packed>& column, std::size_t first, std::size_t last) {
  column.Keep(first, last);
}

}  // namespace gpuledger::ledger
