#include "cache/entry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "cache/testing.h"
#include "nlohmann/json.hpp"
#include "util/fs.h"

namespace compatlab::cache {
namespace {
namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(EntryTest, ReadsAStagedEntryNamedByItsKeysDigest) {
  test::TempDir temp;
  const std::string id = test::WriteEntry(temp.path() / "e", test::TestKey("hf:llama/forward"));
  absl::StatusOr<Entry> entry = ReadStagedEntry(temp.path() / "e");
  ASSERT_TRUE(entry.ok()) << entry.status();
  EXPECT_EQ(entry->id, id);
  EXPECT_EQ(entry->key.at("torch"), "2.13.0+cpu");
  EXPECT_EQ(entry->files.size(), 2u);
  EXPECT_EQ(entry->artifacts.at("inductor"), 1);
}

TEST(EntryTest, RefusesContentThatDoesNotMatchItsDigest) {
  test::TempDir temp;
  const std::string id = test::WriteEntry(temp.path() / "e", test::TestKey("t"));
  ASSERT_TRUE(WriteFileAtomic(temp.path() / "e/artifacts.bin", "bundle bytez").ok());
  EXPECT_TRUE(ReadEntry(temp.path() / "e", id, /*verify_content=*/false).ok());
  absl::StatusOr<Entry> entry = ReadEntry(temp.path() / "e", id, /*verify_content=*/true);
  ASSERT_FALSE(entry.ok());
  EXPECT_THAT(entry.status().message(), HasSubstr("artifacts.bin: content does not match"));
}

TEST(EntryTest, RefusesAnEntryNamedByAnotherKey) {
  test::TempDir temp;
  test::WriteEntry(temp.path() / "e", test::TestKey("t"));
  absl::StatusOr<Entry> entry = ReadEntry(temp.path() / "e", std::string(64, 'a'), true);
  ASSERT_FALSE(entry.ok());
  EXPECT_THAT(entry.status().message(), HasSubstr("key.json does not match the entry's name"));
  EXPECT_FALSE(ReadEntry(temp.path() / "e", "../x", false).ok());
}

TEST(EntryTest, RefusesAPathOutsideTheEntryAndUnlistedFilesAndLinks) {
  test::TempDir temp;
  const fs::path dir = temp.path() / "e";
  const std::string id = test::WriteEntry(dir, test::TestKey("t"));
  nlohmann::json manifest = nlohmann::json::parse(*ReadFile(dir / "entry.json"));
  manifest["files"][1]["path"] = "kernels/ab/../../../etc/passwd";
  ASSERT_TRUE(WriteFileAtomic(dir / "entry.json", manifest.dump()).ok());
  EXPECT_THAT(ReadEntry(dir, id, false).status().message(), HasSubstr("is not one of an entry"));

  test::WriteEntry(dir, test::TestKey("t"));
  ASSERT_TRUE(WriteFileAtomic(dir / "kernels/ab/extra.so", "x").ok());
  EXPECT_THAT(ReadEntry(dir, id, false).status().message(),
              HasSubstr("does not list: kernels/ab/extra.so"));
  fs::remove(dir / "kernels/ab/extra.so");
  fs::create_symlink("/etc/passwd", dir / "kernels/ab/link.so");
  EXPECT_THAT(ReadEntry(dir, id, false).status().message(), HasSubstr("symbolic link"));
}

TEST(EntryTest, RefusesAKeyThatIsNotAnObjectOfStrings) {
  EXPECT_FALSE(ParseKey("[1]").ok());
  EXPECT_FALSE(ParseKey(R"({"torch": 2})").ok());
  EXPECT_FALSE(ParseKey("{}").ok());
  EXPECT_TRUE(ParseKey(R"({"torch": "2.13.0"})").ok());
}

TEST(EntryTest, NamesTheDifferingParts) {
  KeyParts here = test::TestKey("t"), there = test::TestKey("t");
  there["torch"] = "2.14.1";
  there["extra"] = "x";
  here.erase("dtype");
  EXPECT_THAT(DifferingParts(here, there), ElementsAre("torch", "dtype", "extra"));
}

}  // namespace
}  // namespace compatlab::cache
