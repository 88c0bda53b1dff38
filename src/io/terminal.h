#pragma once
// How wide the terminal a command prints to is (issue 60: tables that fit it).

#include <cstddef>

#include "common/text_columns.h"

namespace gpuledger {

// The narrowest layout the tables are made for: a COLUMNS below it is taken as it.
inline constexpr std::size_t kMinColumns = 60;

// The terminal's width: COLUMNS when it is a number (at least kMinColumns), else the width of
// the terminal on standard output, else kDefaultColumns (a pipe, a file).
std::size_t TerminalColumns();

}  // namespace gpuledger
