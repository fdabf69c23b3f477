#include "query/sweeps_report.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "store/testing.h"

namespace compatlab {
namespace {

// A sweep of shard `shard` of 2 of plan "p1" planning `types`.
SweepInfo ShardSweep(const std::string& id, int64_t shard) {
  SweepInfo sweep;
  sweep.sweep_id = id;
  sweep.created_at = "2026-12-05T10:00:00.000Z";
  sweep.suite = "ci";
  sweep.plan_id = "p1";
  sweep.shard = shard;
  sweep.shards = 2;
  return sweep;
}

TEST(SweepsReportTest, ShowsEachShardsProgressAndThePlansMissingTests) {
  test::ScopedTempDir dir;
  auto store = Store::Open(dir.path() / "s.db", OpenMode::kReadWriteCreate);
  ASSERT_TRUE(store.ok()) << store.status();
  const TestSpec gpt2 = test::MakeSpec("gpt2");
  const TestSpec bert = test::MakeSpec("bert");
  const TestSpec vit = test::MakeSpec("vit");
  ASSERT_TRUE((*store)->CreateSweep(ShardSweep("s0", 0), {gpt2}).ok());
  ASSERT_TRUE((*store)->CreateSweep(ShardSweep("s1", 1), {bert, vit}).ok());
  // A retried shard 1 stored vit; the first try stored bert: both count once.
  ASSERT_TRUE((*store)->CreateSweep(ShardSweep("s1b", 1), {bert, vit}).ok());
  ASSERT_TRUE((*store)->InsertRun(test::MakeRun("s0", gpt2)).ok());
  ASSERT_TRUE((*store)->InsertRun(test::MakeRun("s1", bert)).ok());
  absl::StatusOr<std::string> report = SweepsReport(**store);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(absl::StrContains(*report, "plan p1: 3 sweeps, 3 tests planned, 2 stored, 1 missing"))
      << *report;
  EXPECT_TRUE(absl::StrContains(*report, vit.TestId())) << *report;
  EXPECT_FALSE(absl::StrContains(*report, bert.TestId())) << *report;
  EXPECT_TRUE(absl::StrContains(*report, "1/2")) << *report;
  ASSERT_TRUE((*store)->InsertRun(test::MakeRun("s1b", vit)).ok());
  report = SweepsReport(**store);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(absl::StrContains(*report, "3 tests planned, 3 stored, 0 missing")) << *report;
  EXPECT_FALSE(absl::StrContains(*report, "no sweep of it here")) << *report;
}

TEST(SweepsReportTest, NamesAShardOfWhichNoSweepIsStored) {
  test::ScopedTempDir dir;
  auto store = Store::Open(dir.path() / "s.db", OpenMode::kReadWriteCreate);
  ASSERT_TRUE(store.ok()) << store.status();
  const TestSpec gpt2 = test::MakeSpec("gpt2");
  ASSERT_TRUE((*store)->CreateSweep(ShardSweep("s0", 0), {gpt2}).ok());
  ASSERT_TRUE((*store)->InsertRun(test::MakeRun("s0", gpt2)).ok());
  absl::StatusOr<std::string> report = SweepsReport(**store);
  ASSERT_TRUE(report.ok()) << report.status();
  // Shard 1 of 2 never stored its sweep (its task died before): not "0 missing" alone.
  EXPECT_TRUE(absl::StrContains(*report, "1 tests planned, 1 stored, 0 missing")) << *report;
  EXPECT_TRUE(absl::StrContains(*report, "shard 1/2: no sweep of it here")) << *report;
}

}  // namespace
}  // namespace compatlab
