// User-named files are read within their kind's size, tokens are one header-safe line, and a
// --out names a regular file or a new one (issue 58: /dev/zero as a catalog aborted the process,
// a token with a NUL locked the API, --out /dev/full replaced the device with a file).
#include "io/file_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace gpuledger {
namespace {

class FileUtilTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpuledger-file-util-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& content) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(FileUtilTest, ReadsAFileWithinItsKindAndNamesTheLimitPastIt) {
  const std::string small = Write("small.yaml", std::string(1000, 'x'));
  auto read = ReadFile(small, kConfigFile);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->size(), 1000u);
  const std::string big = Write("big", std::string(kSecretFile.max_bytes + 1, 'x'));
  auto refused = ReadFile(big, kSecretFile);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.error().message.find(big), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("65536 bytes a token or password file may hold"),
            std::string::npos)
      << refused.error().message;
  // A device that never ends: refused at the limit, not read into all memory.
  auto zero = ReadFile("/dev/zero", kConfigFile);
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message.find("configuration file"), std::string::npos);
  EXPECT_FALSE(ReadFile((dir_ / "missing").string()).ok());
}

TEST_F(FileUtilTest, ATokenIsOneLineOfVisibleAscii) {
  auto ok = ReadTokenFile(Write("t", "s3cr3t-Token_1\n"));
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(*ok, "s3cr3t-Token_1");
  for (const std::string& bad :
       {std::string(""), std::string("\n"), std::string("ab\0cd", 5), std::string("two words"),
        std::string("a\nb"), std::string(4097, 'a'), std::string("caf\xc3\xa9")}) {
    auto t = ReadTokenFile(Write("bad", bad));
    EXPECT_FALSE(t.ok()) << bad.size();
  }
  auto nul = ReadTokenFile(Write("nul", std::string("ab\0cd", 5)));
  ASSERT_FALSE(nul.ok());
  EXPECT_NE(nul.error().message.find("byte 3 of the token is 0x00"), std::string::npos)
      << nul.error().message;
  EXPECT_FALSE(ReadTokenFile("/dev/zero").ok());
}

TEST_F(FileUtilTest, AnOutputIsARegularFileOrANewNameInAFolderThatExists) {
  EXPECT_TRUE(CheckOutputPath(Write("old.csv", "a"), "--out").ok());
  EXPECT_TRUE(CheckOutputPath((dir_ / "new.csv").string(), "--out").ok());
  for (const std::string& bad : {std::string("/dev/full"), std::string("/dev/null"), dir_.string(),
                                 (dir_ / "no-such-folder" / "x.csv").string()}) {
    Status s = CheckOutputPath(bad, "--out");
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
    EXPECT_TRUE(s.error().message.starts_with("--out '" + bad + "'")) << s.error().message;
  }
  const std::string a = Write("a", "1");
  EXPECT_TRUE(SameFile(a, (dir_ / "." / "a").string()));
  EXPECT_FALSE(SameFile(a, Write("b", "1")));
}

}  // namespace
}  // namespace gpuledger
