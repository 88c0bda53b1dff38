#include "http/gzip.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace gpuledger::http {
namespace {

TEST(Gzip, RoundTrips) {
  const std::string text(100000, 'a');
  const std::string gz = Gzip(text);
  ASSERT_GE(gz.size(), 18u);
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b);
  EXPECT_LT(gz.size(), text.size());
  auto back = Gunzip(gz);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, text);

  auto empty = Gunzip(Gzip(""));
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_EQ(*empty, "");

  // Incompressible input bigger than the first output guess.
  std::mt19937 rng(3);
  std::string noise(1 << 20, '\0');
  for (char& c : noise) c = static_cast<char>(rng());
  auto noise_back = Gunzip(Gzip(noise));
  ASSERT_TRUE(noise_back) << noise_back.error().message;
  EXPECT_EQ(*noise_back, noise);

  // The fast level: the same bytes back.
  for (std::string_view data : {std::string_view(text), std::string_view(noise)}) {
    auto fast = Gunzip(Gzip(data, GzipLevel::kFast), 2 << 20);
    ASSERT_TRUE(fast) << fast.error().message;
    EXPECT_EQ(*fast, data);
  }
}

TEST(Gunzip, RejectsBrokenStreams) {
  const std::string gz = Gzip("hello hello hello hello");
  EXPECT_FALSE(Gunzip(gz.substr(0, gz.size() - 4)));
  EXPECT_FALSE(Gunzip(gz + "x"));
  EXPECT_FALSE(Gunzip("not gzip at all"));
  EXPECT_FALSE(Gunzip(""));
}

// 64 MiB of zeros gzip to about 64 KB: inflating them must stop at the cap with an error.
TEST(Gunzip, StopsAGzipBombAtTheCap) {
  const std::string bomb = Gzip(std::string(64u << 20, '\0'));
  ASSERT_LT(bomb.size(), 100'000u);
  auto capped = Gunzip(bomb, 1u << 20);
  ASSERT_FALSE(capped);
  EXPECT_NE(capped.error().message.find("limit of 1048576 bytes"), std::string::npos)
      << capped.error().message;
  auto fits = Gunzip(bomb, 64u << 20);  // exactly at the cap is allowed
  ASSERT_TRUE(fits) << fits.error().message;
  EXPECT_EQ(fits->size(), 64u << 20);
}

// Lines of every length, some longer than a piece (256 KiB), come back one by one and whole.
TEST(Gunzip, HandsOverLinesThatCrossPieces) {
  std::mt19937 rng(5);
  std::vector<std::string> lines;
  std::string text;
  for (int i = 0; i < 400; ++i) {
    const std::size_t length = i % 50 == 7 ? 300'000 + rng() % 1000 : rng() % 20'000;
    std::string line(length, '\0');
    for (char& c : line) c = static_cast<char>('a' + rng() % 26);
    text += line;
    text += '\n';
    lines.push_back(std::move(line));
  }
  lines.emplace_back("a last line without its newline");
  text += lines.back();
  std::vector<std::string> back;
  ASSERT_TRUE(GunzipLines(Gzip(text), kMaxGunzipBytes, [&](std::string_view line) {
    back.emplace_back(line);
    return Status::Ok();
  }));
  EXPECT_EQ(back, lines);

  // The reader's error stops it, and is what comes back.
  int seen = 0;
  const Status stopped = GunzipLines(Gzip(text), kMaxGunzipBytes, [&](std::string_view) {
    return ++seen == 3 ? InvalidArgument("line 3 is wrong") : Status::Ok();
  });
  ASSERT_FALSE(stopped);
  EXPECT_EQ(stopped.error().message, "line 3 is wrong");
  EXPECT_EQ(seen, 3);
  // A broken stream or one past the cap is an error as for Gunzip.
  EXPECT_FALSE(GunzipLines(Gzip(text).substr(0, 1000), kMaxGunzipBytes,
                           [](std::string_view) { return Status::Ok(); }));
  EXPECT_FALSE(GunzipLines(Gzip(text), 1u << 20, [](std::string_view) { return Status::Ok(); }));
}

}  // namespace
}  // namespace gpuledger::http
