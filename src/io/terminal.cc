#include "io/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string_view>

namespace gpuledger {

std::size_t TerminalColumns() {
  if (const char* env = std::getenv("COLUMNS"); env != nullptr && *env != '\0') {
    std::size_t columns = 0;
    const std::string_view text(env);
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), columns);
    if (ec == std::errc() && end == text.data() + text.size() && columns > 0)
      return std::max(columns, kMinColumns);
  }
  winsize size{};
  if (::isatty(STDOUT_FILENO) != 0 && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 &&
      size.ws_col > 0)
    return std::max<std::size_t>(size.ws_col, kMinColumns);
  return kDefaultColumns;
}

}  // namespace gpuledger
