// One vocabulary for rightsizing and guardrails: every action reads back from its word, and
// every finding kind has a remedy from it.
#include "model/action.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace gpuledger {
namespace {

TEST(Action, EveryWordReadsBackAndIsItsOwn) {
  std::set<std::string> words;
  for (int i = 0; i <= static_cast<int>(Action::kInvestigate); ++i) {
    const auto action = static_cast<Action>(i);
    const std::string word(ToString(action));
    EXPECT_TRUE(words.insert(word).second) << word;
    EXPECT_EQ(ParseAction(word), action) << word;
  }
  EXPECT_EQ(ParseAction("Release"), std::nullopt);
  EXPECT_EQ(ParseAction(""), std::nullopt);
}

TEST(Action, EveryFindingKindHasARemedy) {
  for (int i = 0; i < kFindingKinds; ++i) {
    const auto kind = static_cast<FindingKind>(i);
    EXPECT_TRUE(ParseAction(ToString(RemedyFor(kind))).has_value()) << ToString(kind);
  }
  // A GPU held and unused is given back, whichever side says so.
  EXPECT_EQ(RemedyFor(FindingKind::kIdleAllocation), Action::kRelease);
  EXPECT_EQ(RemedyFor(FindingKind::kStaleGrant), Action::kRelease);
  EXPECT_EQ(RemedyFor(FindingKind::kUnallocatedAccess), Action::kRequestGpu);
  EXPECT_EQ(RemedyFor(FindingKind::kPodSetsVisibleDevices), Action::kDropDeviceOverride);
  EXPECT_EQ(RemedyFor(FindingKind::kIsolationBreach), Action::kMigProfile);
  EXPECT_EQ(RemedyFor(FindingKind::kUnmanagedProcess), Action::kInvestigate);
}

}  // namespace
}  // namespace gpuledger
