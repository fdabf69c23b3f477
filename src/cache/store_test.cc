#include "cache/store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "cache/testing.h"
#include "util/fs.h"

namespace compatlab::cache {
namespace {
namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

TEST(StoreTest, KeepsAStagedEntryUnderItsIdAndListsIt) {
  test::TempDir temp;
  const std::string id = test::WriteEntry(temp.path() / "staged", test::TestKey("a"));
  absl::StatusOr<std::string> kept =
      Keep(temp.path() / "store", temp.path() / "staged", kDefaultStoreMaxBytes);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(*kept, id);
  EXPECT_FALSE(fs::exists(temp.path() / "staged"));
  std::vector<std::string> problems;
  std::vector<Entry> entries = ListEntries(temp.path() / "store", &problems);
  ASSERT_THAT(entries, SizeIs(1));
  EXPECT_EQ(entries[0].id, id);
  EXPECT_THAT(problems, IsEmpty());
}

TEST(StoreTest, EvictsTheLeastRecentlyUsedPastItsBound) {
  test::TempDir temp;
  const fs::path store = temp.path() / "store";
  const std::string old_id = test::WriteEntry(temp.path() / "s1", test::TestKey("old"));
  ASSERT_TRUE(Keep(store, temp.path() / "s1", kDefaultStoreMaxBytes).ok());
  fs::last_write_time(EntriesDir(store) / old_id / "entry.json",
                      fs::file_time_type::clock::now() - std::chrono::hours(1));
  const std::string new_id = test::WriteEntry(temp.path() / "s2", test::TestKey("new"));
  ASSERT_TRUE(Keep(store, temp.path() / "s2", kDefaultStoreMaxBytes).ok());
  std::vector<std::string> problems;
  const int64_t one = ListEntries(store, &problems)[0].bytes;
  GcReport report = Collect(store, one + 10);
  EXPECT_EQ(report.evicted, 1);
  EXPECT_EQ(report.entries, 1u);
  std::vector<Entry> left = ListEntries(store, &problems);
  ASSERT_THAT(left, SizeIs(1));
  EXPECT_EQ(left[0].id, new_id);
}

TEST(StoreTest, CopiesMissingEntriesAndRefusesOnesWhoseContentIsNotTheirDigest) {
  test::TempDir temp;
  const fs::path from = temp.path() / "remote", to = temp.path() / "local";
  const std::string good = test::WriteEntry(EntriesDir(from) / "x", test::TestKey("good"));
  fs::rename(EntriesDir(from) / "x", EntriesDir(from) / good);
  const std::string bad = test::WriteEntry(EntriesDir(from) / "y", test::TestKey("bad"));
  fs::rename(EntriesDir(from) / "y", EntriesDir(from) / bad);
  ASSERT_TRUE(WriteFileAtomic(EntriesDir(from) / bad / "kernels/ab/cabc.so", "ELF kernex").ok());
  fs::create_directories(EntriesDir(from) / "not-a-digest");

  absl::StatusOr<CopyReport> report = CopyEntries(from, to, nullptr);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->copied, ElementsAre(good));
  ASSERT_THAT(report->refused, SizeIs(2));
  EXPECT_THAT(report->refused[0], HasSubstr("kernels/ab/cabc.so: content does not match"));
  EXPECT_THAT(report->refused[1], HasSubstr("not-a-digest: not an entry"));
  EXPECT_FALSE(fs::exists(EntriesDir(to) / bad));
  EXPECT_TRUE(fs::is_empty(to / "staging"));

  // A second copy (a stopped one resumed) copies only what is missing.
  report = CopyEntries(from, to, nullptr);
  ASSERT_TRUE(report.ok());
  EXPECT_THAT(report->copied, IsEmpty());
  EXPECT_THAT(report->present, ElementsAre(good));
}

TEST(StoreTest, CopiesOnlyTheEntriesItIsAskedFor) {
  test::TempDir temp;
  const fs::path from = temp.path() / "remote";
  for (const char* test_id : {"a", "b"}) {
    const std::string id = test::WriteEntry(EntriesDir(from) / "x", test::TestKey(test_id));
    fs::rename(EntriesDir(from) / "x", EntriesDir(from) / id);
  }
  absl::StatusOr<CopyReport> report = CopyEntries(
      from, temp.path() / "local", [](const Entry& e) { return e.key.at("test_id") == "b"; });
  ASSERT_TRUE(report.ok());
  ASSERT_THAT(report->copied, SizeIs(1));
  std::vector<std::string> problems;
  EXPECT_EQ(ListEntries(temp.path() / "local", &problems)[0].key.at("test_id"), "b");
}

TEST(StoreTest, GcRemovesStagingLeftoversAndMalformedEntries) {
  test::TempDir temp;
  const fs::path store = temp.path() / "store";
  fs::create_directories(store / "staging" / "abc.123");
  const std::string id = test::WriteEntry(EntriesDir(store) / "x", test::TestKey("t"));
  fs::rename(EntriesDir(store) / "x", EntriesDir(store) / id);
  fs::remove(EntriesDir(store) / id / "entry.json");
  GcReport report = Collect(store, kDefaultStoreMaxBytes);
  EXPECT_EQ(report.removed, 2);
  EXPECT_FALSE(fs::exists(EntriesDir(store) / id));
}

}  // namespace
}  // namespace compatlab::cache
