#pragma once
// Values by id, for ids a database hands out densely from 1 (the ledger's dictionary ids): a
// lookup is two array reads, no hashing. Ids in [0, kDense) index a table of 4 bytes an id
// (grown to the largest id held, at most 64 MiB); other ids are hashed. Values live in insertion
// order; a reference to one stays valid until the next Emplace or clear. Not thread-safe.

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gpuledger {

template <typename T>
class DenseIdMap {
 public:
  static constexpr std::int64_t kDense = std::int64_t{1} << 24;

  const T* Find(std::int64_t id) const {
    const std::uint32_t slot = SlotOf(id);
    return slot == 0 ? nullptr : &values_[slot - 1];
  }
  T* Find(std::int64_t id) {
    const std::uint32_t slot = SlotOf(id);
    return slot == 0 ? nullptr : &values_[slot - 1];
  }
  bool contains(std::int64_t id) const { return SlotOf(id) != 0; }

  // The value of `id`, added default-constructed when absent; second: whether it was added.
  std::pair<T&, bool> Emplace(std::int64_t id) {
    if (const std::uint32_t slot = SlotOf(id); slot != 0) return {values_[slot - 1], false};
    values_.emplace_back();
    ids_.push_back(id);
    const auto slot = static_cast<std::uint32_t>(values_.size());
    if (id >= 0 && id < kDense) {
      const auto i = static_cast<std::size_t>(id);
      if (i >= slots_.size()) {
        slots_.resize(std::min<std::size_t>(std::max(i + 1, 2 * slots_.size()), kDense), 0);
      }
      slots_[i] = slot;
    } else {
      sparse_[id] = slot;
    }
    return {values_.back(), true};
  }

  std::size_t size() const { return values_.size(); }
  bool empty() const { return values_.empty(); }
  // The ids held, in the order they were added.
  const std::vector<std::int64_t>& ids() const { return ids_; }

  // Forgets every id; the table keeps its size, so clearing costs what was held.
  void clear() {
    for (std::int64_t id : ids_) {
      if (id >= 0 && id < kDense) slots_[static_cast<std::size_t>(id)] = 0;
    }
    sparse_.clear();
    values_.clear();
    ids_.clear();
  }

 private:
  std::uint32_t SlotOf(std::int64_t id) const {
    if (id >= 0 && id < kDense) {
      const auto i = static_cast<std::size_t>(id);
      return i < slots_.size() ? slots_[i] : 0;
    }
    auto it = sparse_.find(id);
    return it == sparse_.end() ? 0 : it->second;
  }

  std::vector<std::uint32_t> slots_;  // 1 + the value's index; 0: absent
  std::unordered_map<std::int64_t, std::uint32_t> sparse_;
  std::vector<T> values_;
  std::vector<std::int64_t> ids_;
};

}  // namespace gpuledger
