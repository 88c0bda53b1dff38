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

}  // namespace
}  // namespace gpuledger
