#include "cache/entry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "cache/store.h"
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

TEST(EntryTest, KeepsItsGraphDetailsAsAListedFile) {
  test::TempDir temp;
  const std::string details =
      test::GraphDetailsText("fabc", {"[h1] inductor_config[max_autotune]: False"});
  const std::string id = test::WriteEntry(temp.path() / "e", test::TestKey("t"), "b", details);
  absl::StatusOr<Entry> entry = ReadEntry(temp.path() / "e", id, /*verify_content=*/true);
  ASSERT_TRUE(entry.ok()) << entry.status();
  absl::StatusOr<GraphDetails> read = ReadGraphDetails(temp.path() / "e", *entry);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->graphs.size(), 1u);
  EXPECT_EQ(read->graphs[0].key, "fabc");
  EXPECT_THAT(read->graphs[0].lines, ElementsAre("[h1] inductor_config[max_autotune]: False"));
  // An entry without them (kept before they were captured) stays valid.
  const std::string old_id = test::WriteEntry(temp.path() / "old", test::TestKey("t"));
  absl::StatusOr<Entry> old = ReadEntry(temp.path() / "old", old_id, true);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(ReadGraphDetails(temp.path() / "old", *old).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(EntryTest, APulledEntryWhoseGraphDetailsAreOversizeOrNotJsonIsRefused) {
  test::TempDir temp;
  const fs::path remote = temp.path() / "remote";
  auto plant = [&](const std::string& test_id, const std::string& details) {
    const fs::path staged = temp.path() / test_id;
    const std::string id = test::WriteEntry(staged, test::TestKey(test_id), "b", details);
    fs::create_directories(EntriesDir(remote));
    fs::rename(staged, EntriesDir(remote) / id);
  };
  plant("big", std::string(kMaxGraphDetailsBytes + 1, ' '));
  plant("bad", R"({"format": 1, [)");
  plant("shape", R"({"format": 1, "graphs": [{"key": "k", "lines": [3]}]})");
  absl::StatusOr<CopyReport> pulled = CopyEntries(remote, temp.path() / "local", nullptr);
  ASSERT_TRUE(pulled.ok()) << pulled.status();
  EXPECT_TRUE(pulled->copied.empty());
  std::string refused;
  for (const std::string& r : pulled->refused) refused += r + "\n";
  EXPECT_THAT(refused, HasSubstr("fx_graph_details.json: larger than 1048576 bytes"));
  EXPECT_THAT(refused, HasSubstr("fx_graph_details.json: not JSON"));
  EXPECT_THAT(refused, HasSubstr("fx_graph_details.json: a line is not a string"));
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
