#include "io/file_reader.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace gpuledger {
namespace {

namespace fs = std::filesystem;

// A throwaway host root: <tmp>/host/{proc/42/cgroup, etc/passwd, ...}.
class TempRoot {
 public:
  TempRoot() {
    std::string tmpl = (fs::temp_directory_path() / "file_reader_test.XXXXXX").string();
    char* made = ::mkdtemp(tmpl.data());
    EXPECT_NE(made, nullptr);
    path_ = tmpl;
  }
  ~TempRoot() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  void Write(const std::string& rel, const std::string& content) const {
    const fs::path p = fs::path(path_) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(PosixFileReader, ReadsHostAbsolutePathsUnderTheRoot) {
  TempRoot root;
  root.Write("proc/42/cgroup", "0::/init.scope\n");
  auto files = MakePosixFileReader(root.path());
  auto content = files->Read("/proc/42/cgroup");
  ASSERT_TRUE(content) << content.error().message;
  EXPECT_EQ(*content, "0::/init.scope\n");
  EXPECT_TRUE(files->Exists("/proc/42"));
  EXPECT_FALSE(files->Exists("/proc/43"));
  EXPECT_EQ(files->Resolve("/proc/42/cgroup"), root.path() + "/proc/42/cgroup");
}

TEST(PosixFileReader, TrailingSlashOnTheRootAndDotComponentsAreHarmless) {
  TempRoot root;
  root.Write("etc/passwd", "root:x:0:0::/root:/bin/sh\n");
  auto files = MakePosixFileReader(root.path() + "/");
  auto content = files->Read("//etc/./passwd");
  ASSERT_TRUE(content) << content.error().message;
  EXPECT_EQ(files->Resolve("/etc/passwd"), root.path() + "/etc/passwd");
  // ".." inside the tree is fine as long as it stays below the root.
  EXPECT_TRUE(files->Read("/proc/../etc/passwd"));
}

TEST(PosixFileReader, MissingFileIsNotFoundAndNamesTheResolvedPath) {
  TempRoot root;
  auto files = MakePosixFileReader(root.path());
  auto content = files->Read("/proc/99999/status");
  ASSERT_FALSE(content);
  EXPECT_EQ(content.error().code, ErrorCode::kNotFound);
  EXPECT_NE(content.error().message.find(root.path() + "/proc/99999/status"), std::string::npos)
      << content.error().message;
}

TEST(PosixFileReader, RefusesEscapesAndRelativePaths) {
  TempRoot root;
  auto files = MakePosixFileReader(root.path());
  for (const char* bad : {"/../etc/passwd", "/proc/../../etc/shadow", "proc/1/cgroup", ""}) {
    auto content = files->Read(bad);
    ASSERT_FALSE(content) << bad;
    EXPECT_EQ(content.error().code, ErrorCode::kInvalidArgument) << bad;
    EXPECT_FALSE(files->List(bad)) << bad;
    EXPECT_FALSE(files->Exists(bad)) << bad;
  }
}

TEST(PosixFileReader, ListsDirectoryEntriesSorted) {
  TempRoot root;
  root.Write("proc/42/cgroup", "");
  root.Write("proc/7/cgroup", "");
  root.Write("proc/uptime", "1.0 2.0\n");
  auto files = MakePosixFileReader(root.path());
  auto names = files->List("/proc");
  ASSERT_TRUE(names) << names.error().message;
  EXPECT_EQ(*names, (std::vector<std::string>{"42", "7", "uptime"}));
  auto missing = files->List("/sys");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  // A path through a regular file (ENOTDIR) is as gone as a missing one.
  EXPECT_EQ(files->Read("/proc/uptime/x").error().code, ErrorCode::kNotFound);
}

TEST(PosixFileReader, UnreadableFileIsAnIoError) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: permission bits are not enforced";
  TempRoot root;
  root.Write("proc/42/environ", "A=1");
  ::chmod((root.path() + "/proc/42/environ").c_str(), 0);
  auto files = MakePosixFileReader(root.path());
  auto content = files->Read("/proc/42/environ");
  ASSERT_FALSE(content);
  EXPECT_EQ(content.error().code, ErrorCode::kIo);
}

TEST(PosixFileReader, ReadsTheRealProcfsWhoseSizesAreZero) {
  auto files = MakePosixFileReader("/");
  if (!files->Exists("/proc/self/status")) GTEST_SKIP() << "no /proc on this machine";
  auto status = files->Read("/proc/self/status");
  ASSERT_TRUE(status) << status.error().message;
  EXPECT_NE(status->find("Uid:"), std::string::npos);
  EXPECT_EQ(files->Resolve("/proc/self/status"), "/proc/self/status");
}

}  // namespace
}  // namespace gpuledger
