#include "common/dense_id_map.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

namespace gpuledger {
namespace {

TEST(DenseIdMap, HoldsDenseSparseAndNegativeIdsAlike) {
  DenseIdMap<std::string> m;
  for (std::int64_t id : {std::int64_t{5}, std::int64_t{1}, DenseIdMap<std::string>::kDense,
                          std::int64_t{-3}, INT64_MAX}) {
    auto [value, added] = m.Emplace(id);
    EXPECT_TRUE(added) << id;
    value = std::to_string(id);
  }
  EXPECT_FALSE(m.Emplace(5).second);
  EXPECT_EQ(m.size(), 5u);
  EXPECT_EQ(*m.Find(INT64_MAX), std::to_string(INT64_MAX));
  EXPECT_EQ(*m.Find(-3), "-3");
  EXPECT_EQ(m.Find(2), nullptr);
  EXPECT_EQ(m.Find(1 << 30), nullptr);
  EXPECT_EQ(m.ids(),
            (std::vector<std::int64_t>{5, 1, DenseIdMap<std::string>::kDense, -3, INT64_MAX}));
  m.clear();
  EXPECT_TRUE(m.empty());
  EXPECT_FALSE(m.contains(5));
  EXPECT_FALSE(m.contains(INT64_MAX));
  EXPECT_TRUE(m.Emplace(5).second);
}

// Against std::map on random ids, with clears in between.
TEST(DenseIdMap, AgreesWithAMap) {
  std::mt19937_64 rng(7);
  DenseIdMap<int> m;
  std::map<std::int64_t, int> want;
  for (int step = 0; step < 20'000; ++step) {
    const std::int64_t id = step % 5'000 == 4'999 ? -1 : static_cast<std::int64_t>(rng() % 3'000);
    if (id < 0) {
      m.clear();
      want.clear();
      continue;
    }
    auto [value, added] = m.Emplace(id);
    EXPECT_EQ(added, !want.contains(id));
    value += 1;
    want[id] += 1;
  }
  EXPECT_EQ(m.size(), want.size());
  for (const auto& [id, count] : want) EXPECT_EQ(*m.Find(id), count);
}

}  // namespace
}  // namespace gpuledger
