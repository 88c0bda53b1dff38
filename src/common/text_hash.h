#pragma once
// A hash for unordered containers keyed by std::string that look keys up by std::string_view
// without making a string (heterogeneous lookup, with std::equal_to<>).

#include <cstddef>
#include <functional>
#include <string_view>

namespace gpuledger {

struct TextHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view text) const {
    return std::hash<std::string_view>{}(text);
  }
};

}  // namespace gpuledger
