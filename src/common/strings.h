#pragma once
// Small text helpers every layer shares, one of each. ASCII only: the texts they see (flags,
// query strings, CSV and YAML fields, label values) are compared byte for byte elsewhere.

#include <string>
#include <string_view>

namespace gpuledger {

// `s` without leading and trailing ASCII whitespace (space, \t, \n, \v, \f, \r).
std::string_view Trim(std::string_view s);

// `s` with ASCII letters lowered; other bytes kept.
std::string Lower(std::string_view s);

}  // namespace gpuledger
