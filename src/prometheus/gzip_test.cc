#include "prometheus/gzip.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace gpuledger::prometheus {
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

}  // namespace
}  // namespace gpuledger::prometheus
