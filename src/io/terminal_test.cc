// The terminal's width, from COLUMNS within reason.
#include "io/terminal.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace gpuledger {
namespace {

TEST(Terminal, ColumnsComeFromTheEnvironmentWithinReason) {
  ::setenv("COLUMNS", "80", 1);
  EXPECT_EQ(TerminalColumns(), 80u);
  ::setenv("COLUMNS", "20", 1);
  EXPECT_EQ(TerminalColumns(), kMinColumns);
  // Not a number: the terminal's own width, or the default where there is none (a pipe).
  ::setenv("COLUMNS", "wide", 1);
  EXPECT_GE(TerminalColumns(), kMinColumns);
  ::unsetenv("COLUMNS");
  EXPECT_GE(TerminalColumns(), kMinColumns);
}

}  // namespace
}  // namespace gpuledger
