#pragma once
// Text laid out in a terminal's columns (issue 60: tables that never break): how many columns a
// UTF-8 text takes, a text cut or padded to a width ("…" where it was cut), and prose wrapped
// to one. How wide the terminal is: io/terminal.h.

#include <cstddef>
#include <string>
#include <string_view>

namespace gpuledger {

// What a table keeps to when the terminal does not say (a pipe, a file): 100 columns.
inline constexpr std::size_t kDefaultColumns = 100;
// The columns `text` takes: its code points (the CLI prints no wide or combining characters).
std::size_t DisplayWidth(std::string_view text);

// `text` in at most `width` columns: itself, or its start and "…" (never a code point cut).
std::string Ellipsize(std::string_view text, std::size_t width);

// `text` ellipsized to `width` and padded with spaces to it, on the right (left-aligned) or
// the left.
std::string PadRight(std::string_view text, std::size_t width);
std::string PadLeft(std::string_view text, std::size_t width);

// `text` as lines of at most `width` columns, each starting with `indent`, broken at spaces (a
// word longer than a line is cut into lines of it); each line ends with '\n'. Text that fits
// on one line is that line as it is.
std::string Wrap(std::string_view text, std::string_view indent,
                 std::size_t width = kDefaultColumns);

}  // namespace gpuledger
