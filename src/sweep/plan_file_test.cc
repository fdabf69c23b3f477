#include "sweep/plan_file.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "store/testing.h"
#include "util/fs.h"

namespace compatlab {
namespace {

// A resolved test of `model_type`, with execution settings.
ResolvedTest Resolved(const std::string& model_type, const std::string& kind = "forward") {
  ResolvedTest t;
  t.spec = test::MakeSpec(model_type, kind);
  t.execution = TestExecution{};
  t.execution->python = "/usr/bin/python3";
  return t;
}

// The shard of each model type of `plan`.
std::map<std::string, int64_t> ShardOfType(const ShardedPlan& plan) {
  std::map<std::string, int64_t> shards;
  for (const PlannedShardTest& t : plan.tests) shards[t.test.spec.model_type] = t.shard;
  return shards;
}

TEST(PlanFileTest, ShardSpecsAreIndexOverCountFromZero) {
  absl::StatusOr<ShardSpec> ok = ParseShardSpec("2/3");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->index, 2);
  EXPECT_EQ(ok->count, 3);
  for (const char* bad : {"3/3", "-1/3", "0/0", "1", "a/b", "0/10001", "", "1/2/3"}) {
    EXPECT_TRUE(absl::IsInvalidArgument(ParseShardSpec(bad).status())) << bad;
  }
}

TEST(PlanFileTest, LongestTestsGoFirstEachToTheLeastLoadedShard) {
  std::vector<ResolvedTest> tests;
  std::map<std::string, double> costs;
  const std::map<std::string, double> wall = {{"a", 10}, {"b", 8}, {"c", 5}, {"d", 4}, {"e", 3}};
  for (const auto& [type, seconds] : wall) {
    tests.push_back(Resolved(type));
    costs[tests.back().spec.TestId()] = seconds;
  }
  absl::StatusOr<ShardedPlan> plan = PartitionPlan(tests, "s", 2, costs);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // a→0 (10), b→1 (8), c→1 (13), d→0 (14), e→1 (16).
  const std::map<std::string, int64_t> expected = {
      {"a", 0}, {"b", 1}, {"c", 1}, {"d", 0}, {"e", 1}};
  EXPECT_EQ(ShardOfType(*plan), expected);
  const std::vector<ShardLoad> loads = ShardLoads(*plan);
  ASSERT_EQ(loads.size(), 2u);
  EXPECT_DOUBLE_EQ(loads[0].predicted_s, 14);
  EXPECT_DOUBLE_EQ(loads[1].predicted_s, 16);
  EXPECT_EQ(loads[0].measured + loads[1].measured, 5);
  // The plan's order is kept and its id is the id of the tests, whatever the shards.
  EXPECT_EQ(plan->tests.front().test.spec.model_type, "a");
  EXPECT_EQ(plan->plan_id, *PlanId(tests));
}

TEST(PlanFileTest, TestsWithoutHistoryAreCostedByTheEstimate) {
  absl::StatusOr<ShardedPlan> plan =
      PartitionPlan({Resolved("a"), Resolved("b", "train")}, "s", 1, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->tests[0].measured);
  EXPECT_DOUBLE_EQ(plan->tests[0].cost_s, EstimatedCostS(plan->tests[0].test.spec));
  EXPECT_GT(plan->tests[1].cost_s, plan->tests[0].cost_s);
}

TEST(PlanFileTest, TheFileIsTheSameBytesForTheSameInputsAndReadsBackExactly) {
  std::vector<ResolvedTest> tests = {Resolved("gpt2"), Resolved("bert"), Resolved("vit")};
  absl::StatusOr<ShardedPlan> a = PartitionPlan(tests, "ci", 2, {});
  absl::StatusOr<ShardedPlan> b = PartitionPlan(tests, "ci", 2, {});
  ASSERT_TRUE(a.ok() && b.ok());
  absl::StatusOr<std::string> text = PlanFileText(*a);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, *PlanFileText(*b));
  absl::StatusOr<ShardedPlan> read = ParsePlanFile(*text, "plan.json");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*PlanFileText(*read), *text);
  EXPECT_EQ(read->plan_id, a->plan_id);
  size_t total = 0;
  for (int64_t s = 0; s < 2; ++s) total += ShardTests(*read, s).size();
  EXPECT_EQ(total, tests.size());
}

TEST(PlanFileTest, AnEditedOrMalformedFileIsRefused) {
  absl::StatusOr<ShardedPlan> plan =
      PartitionPlan({Resolved("gpt2"), Resolved("bert")}, "ci", 2, {});
  ASSERT_TRUE(plan.ok());
  const std::string text = *PlanFileText(*plan);
  const std::vector<std::pair<std::string, std::string>> edits = {
      {"/usr/bin/python3", "/tmp/evil/python"},  // a test changed: not the plan id's tests
      {"\"shards\": 2", "\"shards\": 1"},        // a test's shard past the count
      {"\"shards\": 2", "\"shards\": 10001"},    // too many shards
      {"\"cost_s\":10.0", "\"cost_s\":-1.0"},    // a negative cost
      {"\"compatlab_plan\": 1", "\"compatlab_plan\": 2"},
      {"\"suite\": \"ci\"", "\"suite\": \"ci\", \"extra\": 1"},
      {"\"suite\": \"ci\"", "\"suite\": \"ci\", \"suite\": \"x\""},
      {"\"cost\":\"estimated\"", "\"cost\":\"guessed\""},
  };
  for (const auto& [from, to] : edits) {
    const std::string edited = absl::StrReplaceAll(text, {{from, to}});
    ASSERT_NE(edited, text) << from;
    absl::StatusOr<ShardedPlan> read = ParsePlanFile(edited, "plan.json");
    EXPECT_TRUE(absl::IsInvalidArgument(read.status())) << to;
    EXPECT_TRUE(absl::StrContains(read.status().message(), "plan.json: ")) << read.status();
  }
  // A test listed twice (with its plan id made to match) is refused too.
  ShardedPlan twice = *plan;
  twice.tests.push_back(twice.tests.front());
  std::vector<ResolvedTest> tests;
  for (const PlannedShardTest& t : twice.tests) tests.push_back(t.test);
  twice.plan_id = *PlanId(tests);
  EXPECT_TRUE(absl::StrContains(ParsePlanFile(*PlanFileText(twice), "p").status().message(),
                                "appears twice"));
}

TEST(PlanFileTest, StableHashShardsCoverThePlanExactlyOnce) {
  std::vector<ResolvedTest> tests;
  for (int i = 0; i < 60; ++i) tests.push_back(Resolved(absl::StrCat("m", i)));
  std::vector<int64_t> counts(3, 0);
  for (const ResolvedTest& t : tests) {
    const int64_t shard = StableShardOf(t.spec, 3);
    ASSERT_GE(shard, 0);
    ASSERT_LT(shard, 3);
    EXPECT_EQ(StableShardOf(t.spec, 3), shard);
    ++counts[static_cast<size_t>(shard)];
  }
  for (int64_t count : counts) EXPECT_GT(count, 0);
  EXPECT_EQ(StableShardOf(tests[0].spec, 1), 0);
}

TEST(PlanFileTest, CostsAreTheLatestStoredWallTimeOfEachTest) {
  test::ScopedTempDir dir;
  const TestSpec spec = test::MakeSpec("gpt2");
  RunRecord first = test::MakeRun("s1", spec);
  first.result.wall_s = 4;
  RunRecord later = test::MakeRun("s2", spec);
  later.result.wall_s = 6;
  test::WriteRuns(dir.path() / "a.db", "s1", {first});
  test::WriteRuns(dir.path() / "b.db", "s2", {later});
  absl::StatusOr<std::map<std::string, double>> costs =
      LoadCosts({dir.path() / "a.db", dir.path() / "b.db"});
  ASSERT_TRUE(costs.ok()) << costs.status();
  EXPECT_EQ(costs->at(spec.TestId()), 6);
  EXPECT_FALSE(LoadCosts({dir.path() / "missing.db"}).ok());
}

}  // namespace
}  // namespace compatlab
