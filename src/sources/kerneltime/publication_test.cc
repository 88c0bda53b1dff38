#include "sources/kerneltime/publication.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include "temp_dir.h"

namespace gpuledger::kerneltime {
namespace {

std::string Bytes(const FileLayout& f) {
  return std::string(reinterpret_cast<const char*>(&f), sizeof f);
}

Publication Sample(std::uint64_t k) {
  Publication p;
  p.pid = 4242;
  p.started_unix_ns = 1'700'000'000'000'000'000;
  p.updated_unix_ns = p.started_unix_ns + static_cast<std::int64_t>(k);
  for (int d = 0; d < 3; ++d)
    p.devices.push_back({"GPU-" + std::to_string(d) + "-2d0c5d1e-8a3a-4bfb-a7f9-36a0e3e8e1c5",
                         k * 1000 + static_cast<std::uint64_t>(d), k, 0});
  return p;
}

TEST(Publication, RoundTripsAndAdvancesItsSequence) {
  FileLayout f{};
  WritePublication(Sample(7), f);
  auto first = DecodePublication(Bytes(f), "f");
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->seq, 2u);
  Publication want = Sample(7);
  want.seq = 2;
  EXPECT_EQ(*first, want);
  WritePublication(Sample(8), f);
  EXPECT_EQ(DecodePublication(Bytes(f), "f")->seq, 4u);
}

TEST(Publication, RefusesTornForeignAndOverfullFiles) {
  FileLayout f{};
  WritePublication(Sample(1), f);
  FileLayout torn = f;
  torn.seq_end = torn.seq_begin + 1;  // a write under way
  EXPECT_EQ(DecodePublication(Bytes(torn), "f").error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(DecodePublication(Bytes(f).substr(1), "f").error().code, ErrorCode::kInvalidArgument);
  FileLayout foreign = f;
  foreign.magic[0] = 'X';
  EXPECT_EQ(DecodePublication(Bytes(foreign), "f").error().code, ErrorCode::kInvalidArgument);
  FileLayout newer = f;
  newer.version = 2;
  EXPECT_NE(DecodePublication(Bytes(newer), "f").error().message.find("format version 2"),
            std::string::npos);
  FileLayout unterminated = f;
  std::memset(unterminated.devices[0].uuid, 'A', kUuidBytes);
  EXPECT_EQ(DecodePublication(Bytes(unterminated), "f").error().code, ErrorCode::kInvalidArgument);
  Publication many = Sample(1);
  while (many.devices.size() < kMaxDevices + 2) many.devices.push_back(many.devices[0]);
  FileLayout capped{};
  WritePublication(many, capped);
  auto read = DecodePublication(Bytes(capped), "f");
  ASSERT_TRUE(read);
  EXPECT_EQ(read->devices.size(), kMaxDevices);
  EXPECT_EQ(read->errors, 2u);  // the two dropped, counted
}

// A writer rewriting a mapped file as fast as it can and a reader reading it with pread, as
// the tracer and the agent do: every read the reader accepts is one whole publication (all its
// figures from the same write), the rest are reported torn, never mixed. (Decoding a single
// pread accepted mixed files here on a 2-core VM: publication.h says why.)
TEST(Publication, AConcurrentReaderNeverAcceptsAMixedFile) {
  gpuledger::testing::TempDir dir("gpuledger-kerneltime");
  const std::string path = (dir.path() / "4242").string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, sizeof(FileLayout)), 0);
  void* map = ::mmap(nullptr, sizeof(FileLayout), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(map, MAP_FAILED);
  auto* layout = static_cast<FileLayout*>(map);
  WritePublication(Sample(0), *layout);

  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (std::uint64_t k = 1; k < 200'000 && !done.load(std::memory_order_relaxed); ++k)
      WritePublication(Sample(k), *layout);
    done = true;
  });
  int accepted = 0, torn = 0;
  std::string buf(sizeof(FileLayout), '\0');
  const int reader = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(reader, 0);
  auto read = [&]() -> Result<std::string> {
    if (::pread(reader, buf.data(), buf.size(), 0) != static_cast<ssize_t>(buf.size()))
      return IoError("short read");
    return buf;
  };
  while (!done.load()) {
    auto p = ReadPublication(read, path);
    if (!p) {
      ASSERT_EQ(p.error().code, ErrorCode::kUnavailable) << p.error().message;
      ++torn;
      continue;
    }
    ++accepted;
    const std::uint64_t k = p->devices[0].kernels;
    for (std::size_t d = 0; d < p->devices.size(); ++d) {
      ASSERT_EQ(p->devices[d].kernels, k);
      ASSERT_EQ(p->devices[d].busy_ns, k * 1000 + d);
    }
    ASSERT_EQ(p->updated_unix_ns, p->started_unix_ns + static_cast<std::int64_t>(k));
  }
  writer.join();
  ::close(reader);
  ::munmap(map, sizeof(FileLayout));
  ::close(fd);
  EXPECT_GT(accepted, 0);
  std::cout << "[ kerneltime ] " << accepted << " whole reads, " << torn << " torn\n";
}

}  // namespace
}  // namespace gpuledger::kerneltime
