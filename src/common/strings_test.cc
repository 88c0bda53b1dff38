#include "common/strings.h"

#include <gtest/gtest.h>

namespace gpuledger {
namespace {

TEST(Trim, StripsAsciiWhitespaceAtBothEndsOnly) {
  EXPECT_EQ(Trim("  a b\t"), "a b");
  EXPECT_EQ(Trim("\r\n x \n\r"), "x");
  EXPECT_EQ(Trim("\v\fy"), "y");
  EXPECT_EQ(Trim(""), "");
  EXPECT_EQ(Trim(" \t "), "");
  EXPECT_EQ(Trim("\xc2\xa0z"), "\xc2\xa0z");  // a UTF-8 no-break space is not ASCII whitespace
}

TEST(Lower, LowersAsciiLettersAndKeepsOtherBytes) {
  EXPECT_EQ(Lower("H100-SXM5 80GB"), "h100-sxm5 80gb");
  EXPECT_EQ(Lower("a_Z[@`{"), "a_z[@`{");
  EXPECT_EQ(Lower("\xc3\x89t\xc3\xa9"), "\xc3\x89t\xc3\xa9");  // "Été": only ASCII changes
}

TEST(Utf8, ValidAndInvalidSequences) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("team-\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80"));
  EXPECT_FALSE(IsValidUtf8("\xff"));              // never valid
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // a surrogate
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("ok\xe2\x82"));        // cut short
}

TEST(HexDigitValue, ReadsBothCasesAndRefusesTheRest) {
  EXPECT_EQ(HexDigitValue('0'), 0);
  EXPECT_EQ(HexDigitValue('9'), 9);
  EXPECT_EQ(HexDigitValue('a'), 10);
  EXPECT_EQ(HexDigitValue('F'), 15);
  for (char c : {'g', 'G', '/', ':', '@', '`', ' ', '\0'}) EXPECT_EQ(HexDigitValue(c), -1) << c;
}

}  // namespace
}  // namespace gpuledger
