// Text in a terminal's columns: widths by code point, cuts that end in "…" and never split one.
#include "common/text_columns.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuledger {
namespace {

TEST(Terminal, CutsAndPadsByColumnsNotBytes) {
  EXPECT_EQ(DisplayWidth("namespace"), 9u);
  EXPECT_EQ(DisplayWidth("GPU-29\xe2\x80\xa6"), 7u);
  EXPECT_EQ(Ellipsize("research/Pod/notebook-erin", 30), "research/Pod/notebook-erin");
  EXPECT_EQ(Ellipsize("research/Pod/notebook-erin", 10), "research/\xe2\x80\xa6");
  EXPECT_EQ(DisplayWidth(Ellipsize("research/Pod/notebook-erin", 10)), 10u);
  // A cut never splits a code point: "é" is two bytes, one column.
  EXPECT_EQ(Ellipsize("\xc3\xa9\xc3\xa9\xc3\xa9", 2), "\xc3\xa9\xe2\x80\xa6");
  EXPECT_EQ(PadRight("ml", 5), "ml   ");
  EXPECT_EQ(PadLeft("$1.00", 7), "  $1.00");
  EXPECT_EQ(PadRight("abcdefgh", 4), "abc\xe2\x80\xa6");
  EXPECT_EQ(DisplayWidth(PadRight("abcdefgh", 4)), 4u);
}

TEST(Terminal, WrapsAtSpacesAndCutsWordsLongerThanALine) {
  EXPECT_EQ(Wrap("one two three", "  ", 10), "  one two\n  three\n");
  EXPECT_EQ(Wrap("GPU-0123456789abcdef", "", 8), "GPU-0123\n456789ab\ncdef\n");
  EXPECT_EQ(Wrap("x " + std::string(12, 'y'), "    ", 12), "    x\n    yyyyyyyy\n    yyyy\n");
}

}  // namespace
}  // namespace gpuledger
