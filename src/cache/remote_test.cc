#include "cache/remote.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "cache/testing.h"

namespace compatlab::cache {
namespace {
namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(RemoteTest, ParsesAHubRepositoryOrADirectory) {
  absl::StatusOr<Remote> hub = ParseRemote("hub:org/compile-cache");
  ASSERT_TRUE(hub.ok());
  EXPECT_EQ(hub->kind, Remote::Kind::kHub);
  EXPECT_EQ(hub->location, "org/compile-cache");
  EXPECT_EQ(RemoteName(*hub), "hub:org/compile-cache");
  absl::StatusOr<Remote> dir = ParseRemote("/mnt/fsx/cache");
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(dir->kind, Remote::Kind::kDirectory);
  EXPECT_THAT(ParseRemote("hub:../x").status().message(), HasSubstr("not a Hub repository"));
  EXPECT_FALSE(ParseRemote("hub:org").ok());
  EXPECT_FALSE(ParseRemote("").ok());
}

TEST(RemoteTest, PushesToADirectoryAndPullsBackIntoAnEmptyStore) {
  test::TempDir temp;
  const fs::path a = temp.path() / "a", b = temp.path() / "b";
  const std::string id =
      test::WriteEntry(temp.path() / "staged", test::TestKey("hf:llama/forward"));
  ASSERT_TRUE(Keep(a, temp.path() / "staged", kDefaultStoreMaxBytes).ok());
  const Remote remote{Remote::Kind::kDirectory, (temp.path() / "shared").string()};
  absl::StatusOr<CopyReport> pushed = Push(a, remote, {}, nullptr);
  ASSERT_TRUE(pushed.ok()) << pushed.status();
  EXPECT_THAT(pushed->copied, ElementsAre(id));
  absl::StatusOr<CopyReport> pulled = Pull(remote, b, {}, nullptr);
  ASSERT_TRUE(pulled.ok()) << pulled.status();
  EXPECT_THAT(pulled->copied, ElementsAre(id));
  EXPECT_TRUE(ReadEntry(EntriesDir(b) / id, id, /*verify_content=*/true).ok());
}

TEST(RemoteTest, PullFromADirectoryThatHoldsNoStoreIsRefused) {
  test::TempDir temp;
  const Remote remote{Remote::Kind::kDirectory, (temp.path() / "nothing").string()};
  absl::StatusOr<CopyReport> pulled = Pull(remote, temp.path() / "b", {}, nullptr);
  ASSERT_FALSE(pulled.ok());
  EXPECT_THAT(pulled.status().message(), HasSubstr("no compile store there"));
}

}  // namespace
}  // namespace compatlab::cache
