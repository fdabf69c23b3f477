#include "server/repro_scripts.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace compatlab {
namespace {

TEST(ReproScriptsTest, AnAnswerIsKeptByRunId) {
  ReproScripts scripts;
  EXPECT_FALSE(scripts.Find("r1").has_value());
  scripts.Put("r1", "{\"script\":\"a\"}");
  EXPECT_EQ(scripts.Find("r1").value_or(""), "{\"script\":\"a\"}");
  EXPECT_FALSE(scripts.Find("r2").has_value());
}

TEST(ReproScriptsTest, TheCacheStaysWithinItsBytes) {
  ReproScripts scripts(2, 100);
  scripts.Put("a", std::string(60, 'x'));
  scripts.Put("b", std::string(60, 'y'));  // over 100 together: starts again
  EXPECT_FALSE(scripts.Find("a").has_value());
  EXPECT_TRUE(scripts.Find("b").has_value());
  EXPECT_LE(scripts.bytes(), 100u);
  scripts.Put("c", std::string(200, 'z'));  // larger than the whole cache: not kept
  EXPECT_FALSE(scripts.Find("c").has_value());
  EXPECT_TRUE(scripts.Find("b").has_value());
}

TEST(ReproScriptsTest, AtMostMaxGeneratorsRunAtOnce) {
  ReproScripts scripts(2);
  std::vector<ReproScripts::Slot> held;
  for (int i = 0; i < 2; ++i) {
    std::optional<ReproScripts::Slot> slot = scripts.TryStart();
    ASSERT_TRUE(slot.has_value());
    held.push_back(*std::move(slot));
  }
  EXPECT_FALSE(scripts.TryStart().has_value());
  EXPECT_EQ(scripts.running(), 2);
  held.pop_back();
  EXPECT_EQ(scripts.running(), 1);
  EXPECT_TRUE(scripts.TryStart().has_value());  // given back at once when dropped
  EXPECT_EQ(scripts.running(), 1);
}

}  // namespace
}  // namespace compatlab
