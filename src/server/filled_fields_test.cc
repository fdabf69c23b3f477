#include "server/filled_fields.h"

#include <thread>

#include "gtest/gtest.h"

namespace compatlab {
namespace {

std::vector<bool> Flags(size_t n, std::initializer_list<size_t> set) {
  std::vector<bool> flags(n, false);
  for (size_t i : set) flags[i] = true;
  return flags;
}

TEST(FilledFieldsTest, UnionIsUnknownUntilEveryRunIsLearned) {
  FilledFields filled(5);
  EXPECT_EQ(filled.Union({1}), std::nullopt);
  filled.Learn({1}, {Flags(5, {0, 3})});
  EXPECT_EQ(filled.Union({1, 2}), std::nullopt);
  EXPECT_EQ(filled.Union({1}), (std::vector<size_t>{0, 3}));
  EXPECT_EQ(filled.Union({}), std::vector<size_t>{});
}

TEST(FilledFieldsTest, UnionOrsTheFieldsOfItsRunsAcrossWords) {
  // 150 fields: three 64-bit words.
  FilledFields filled(150);
  filled.Learn({7, 8, 9}, {Flags(150, {1, 70}), Flags(150, {149}), Flags(150, {1, 70})});
  EXPECT_EQ(filled.Union({7, 8}), (std::vector<size_t>{1, 70, 149}));
  EXPECT_EQ(filled.Union({9, 7}), (std::vector<size_t>{1, 70}));
  EXPECT_EQ(filled.runs(), 3u);
  EXPECT_EQ(filled.sets(), 2u);  // runs 7 and 9 share theirs
}

TEST(FilledFieldsTest, ARunThatFillsNothingAddsNoField) {
  FilledFields filled(3);
  filled.Learn({1, 2}, {Flags(3, {}), Flags(3, {2})});
  EXPECT_EQ(filled.Union({1}), std::vector<size_t>{});
  EXPECT_EQ(filled.Union({1, 2}), (std::vector<size_t>{2}));
}

TEST(FilledFieldsTest, LearningARunAgainKeepsTheLatestSet) {
  FilledFields filled(3);
  filled.Learn({1}, {Flags(3, {0})});
  filled.Learn({1}, {Flags(3, {1})});
  EXPECT_EQ(filled.Union({1}), (std::vector<size_t>{1}));
  EXPECT_EQ(filled.runs(), 1u);
}

TEST(FilledFieldsTest, ReadersAndLearnersRunAtOnce) {
  FilledFields filled(100);
  std::thread learner([&] {
    for (int64_t r = 1; r <= 2000; ++r)
      filled.Learn({r}, {Flags(100, {static_cast<size_t>(r % 100)})});
  });
  for (int i = 0; i < 2000; ++i) {
    // Unknown until both are learned, then their two fields.
    if (std::optional<std::vector<size_t>> u = filled.Union({1, 2})) {
      EXPECT_EQ(*u, (std::vector<size_t>{1, 2}));
    }
  }
  learner.join();
  EXPECT_EQ(filled.runs(), 2000u);
  EXPECT_EQ(filled.sets(), 100u);
  EXPECT_EQ(filled.Union({1, 2}), (std::vector<size_t>{1, 2}));
}

}  // namespace
}  // namespace compatlab
