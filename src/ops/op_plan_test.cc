#include "ops/op_plan.h"

#include "gtest/gtest.h"

namespace compatlab {
namespace {

OpCatalog Catalog() {
  return {
      "2.13.0+cpu", "3.11.7", {"add", "max:reduction_with_dim", "max:binary", "maximum", "mul"}};
}

TEST(OpCatalogTest, ParsesTheProbesAnswerAndRefusesBadKeysAndDuplicates) {
  auto catalog = ParseOpCatalog(
      R"({"torch_version": "2.13.0+cpu", "python_version": "3.11.7", "ops": [{"key": "add", "op": "add"}, {"key": "max:binary"}]})");
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  EXPECT_EQ(catalog->python_version, "3.11.7");
  EXPECT_EQ(catalog->keys, (std::vector<std::string>{"add", "max:binary"}));
  EXPECT_FALSE(ParseOpCatalog(R"({"torch_version": "x", "ops": [{"key": "a b"}]})").ok());
  EXPECT_FALSE(
      ParseOpCatalog(R"({"torch_version": "x", "ops": [{"key": "a"}, {"key": "a"}]})").ok());
  EXPECT_FALSE(ParseOpCatalog(R"({"ops": []})").ok());
  EXPECT_FALSE(ParseOpCatalog("not json").ok());
}

TEST(SelectOpsTest, MatchesExactKeysNeverSubstrings) {
  OpSelection selection;
  selection.ops = {"max:binary"};
  auto keys = SelectOps(Catalog(), selection);
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ(*keys, (std::vector<std::string>{"max:binary"}));
  selection.ops = {"max"};  // a prefix of three entries, an entry of none
  auto unknown = SelectOps(Catalog(), selection);
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("no op max in torch 2.13.0+cpu"), std::string::npos);
}

TEST(SelectOpsTest, LimitThenShardRoundRobin) {
  OpSelection selection;
  selection.limit = 4;
  selection.shard = 1;
  selection.shards = 2;
  auto keys = SelectOps(Catalog(), selection);
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ(*keys, (std::vector<std::string>{"max:reduction_with_dim", "maximum"}));
  selection.shard = 2;
  EXPECT_FALSE(SelectOps(Catalog(), selection).ok());
}

TEST(MakeBatchesTest, BatchesPerDtypeLeaveExcludedOpsOutUnlessTheyRunAnyway) {
  std::map<std::string, OpExclusion> excluded = {{"mul", {"mul", "no kernel", "doc"}}};
  std::vector<OpBatch> batches =
      MakeBatches({"add", "mul", "maximum"}, {"float32", "bfloat16"}, 1, excluded, false);
  ASSERT_EQ(batches.size(), 4u);
  EXPECT_EQ(batches[0].dtype, "float32");
  EXPECT_EQ(batches[1].keys, std::vector<std::string>{"maximum"});
  EXPECT_EQ(batches[3].dtype, "bfloat16");
  batches = MakeBatches({"add", "mul", "maximum"}, {"float32"}, 2, excluded, true);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0].keys, (std::vector<std::string>{"add", "mul"}));
}

TEST(ExcludedCaseTest, IsSkippedWithTheTargetAsSourceAndTheCitation) {
  OpResult r = ExcludedCase("s", "max:binary", "float32", {"max:binary", "no kernel", "doc §3"});
  EXPECT_EQ(r.op, "max");
  EXPECT_EQ(r.variant, "binary");
  EXPECT_EQ(r.status, TestStatus::kSkipped);
  EXPECT_EQ(r.skip_source, "target");
  EXPECT_EQ(r.skip_reason, "no kernel (doc §3)");
}

}  // namespace
}  // namespace compatlab
