#include "ops/op_report.h"

#include "gtest/gtest.h"

namespace compatlab {
namespace {

OpResult Case(const std::string& op, TestStatus status, const std::string& fallback = "{}") {
  OpResult r;
  r.op = op;
  r.dtype = "float32";
  r.status = status;
  r.fallback_ops = fallback;
  return r;
}

TEST(CountOpsTest, CountsByCategorySkipSourceAndStaleSkips) {
  OpResult skipped = Case("a", TestStatus::kSkipped);
  skipped.skip_source = "pytorch";
  OpResult stale = Case("b", TestStatus::kPass);
  stale.skip_source = "target";
  OpCounts counts = CountOps({skipped, stale, Case("c", TestStatus::kPass, R"({"aten::c":1})"),
                              Case("d", TestStatus::kCrash)});
  EXPECT_EQ(counts.total, 4);
  EXPECT_EQ(counts.by_category[OpCategory::kNative], 1);
  EXPECT_EQ(counts.by_category[OpCategory::kFallback], 1);
  EXPECT_EQ(counts.skipped_by_source["pytorch"], 1);
  EXPECT_EQ(counts.stale, 1);
  EXPECT_EQ(CountsInline(counts), "1 native, 1 fallback, 1 crash, 1 skipped");
}

TEST(OpRowsTest, MostUsedFirstCountingDistinctModelsOverTheOpsOverloads) {
  OpUsers users = {{"aten::tanh", {"hf:llama", "hf:gpt2"}}, {"aten::neg", {"hf:llama"}}};
  OpResult tanh = Case("tanh", TestStatus::kPass, R"({"aten::tanh":1})");
  OpResult both = Case("softsign", TestStatus::kFailAccuracy);
  both.aten_ops = R"(["aten::neg", "aten::tanh"])";
  OpResult add = Case("add", TestStatus::kPass);
  std::vector<OpResult> results = {add, both, tanh};
  std::vector<OpRow> rows = OpRows(results, users, {});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].result->op, "softsign");
  EXPECT_EQ(rows[0].models, 2);
  EXPECT_EQ(rows[1].result->op, "tanh");
  EXPECT_EQ(rows[2].models, 0);
  rows = OpRows(results, users, {{OpCategory::kFail}, 0});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NE(OpTableText(rows).find("softsign"), std::string::npos);
}

TEST(DiffOpsTest, SortsChangesIntoTheirListsAndCountsTheRest) {
  OpResult excluded = Case("e", TestStatus::kSkipped);
  excluded.skip_source = "target";
  OpResult stale = Case("s", TestStatus::kPass);
  stale.skip_source = "pytorch";
  std::vector<OpResult> base = {Case("a", TestStatus::kFailToRun), Case("b", TestStatus::kPass),
                                Case("c", TestStatus::kPass),      excluded,
                                Case("s", TestStatus::kSkipped),   Case("k", TestStatus::kPass)};
  std::vector<OpResult> head = {Case("a", TestStatus::kPass),
                                Case("b", TestStatus::kCrash),
                                Case("c", TestStatus::kPass),
                                excluded,
                                stale,
                                Case("k", TestStatus::kSkipped),
                                Case("new", TestStatus::kPass)};
  OpDiff diff = DiffOps(base, head);
  ASSERT_EQ(diff.newly_supported.size(), 3u);  // a, s (its skip ran and passed), new
  ASSERT_EQ(diff.newly_failing.size(), 1u);
  EXPECT_EQ(diff.newly_failing[0].key, "b");
  EXPECT_EQ(diff.newly_failing[0].head, "crash");
  ASSERT_EQ(diff.newly_skipped.size(), 1u);
  ASSERT_EQ(diff.still_excluded.size(), 1u);
  ASSERT_EQ(diff.stale_skips.size(), 1u);
  EXPECT_EQ(diff.stale_skips[0].key, "s");
  EXPECT_EQ(diff.unchanged, 1);
}

}  // namespace
}  // namespace compatlab
