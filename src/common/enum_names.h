#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

namespace gpuledger {

// One table of an enum's names serves both directions, so a name added for
// printing is parsed too and the two can never disagree.
template <typename E, std::size_t N>
using NameTable = std::array<std::pair<E, std::string_view>, N>;

// The name of `value`, or `otherwise` where the table lacks it.
template <typename E, std::size_t N>
constexpr std::string_view NameIn(const NameTable<E, N>& table, E value,
                                  std::string_view otherwise) {
  for (const auto& [v, name] : table)
    if (v == value) return name;
  return otherwise;
}

// The value named `text`, or nothing.
template <typename E, std::size_t N>
constexpr std::optional<E> ValueIn(const NameTable<E, N>& table, std::string_view text) {
  for (const auto& [v, name] : table)
    if (name == text) return v;
  return std::nullopt;
}

}  // namespace gpuledger
