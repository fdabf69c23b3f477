#include "ops/op_lines.h"

#include "gtest/gtest.h"

namespace compatlab {
namespace {

TEST(SplitOpLinesTest, TakesOpLinesAndLeavesStageMarksAndTheResult) {
  const std::string text =
      "{\"stage\": \"run\"}\n"
      "{\"op_start\": \"add\"}\n"
      "{\"op_case\": {\"key\": \"add\", \"dtype\": \"float32\", \"status\": \"fail_accuracy\", "
      "\"samples\": 3, \"passed\": 2, \"failed\": 1, \"first_failure\": \"output 0: Tensor-likes "
      "are not close!\", \"error_type\": \"\", \"max_abs_err\": 0.5, \"fallback_ops\": "
      "{\"aten::add.Tensor\": 2}, \"aten_ops\": [\"aten::add.Tensor\"], \"skip_source\": \"\"}}\n"
      "{\"op_start\": \"tanh\"}\n"
      "{\"status\": \"pass\"}";
  auto lines = SplitOpLines(text, 10);
  ASSERT_TRUE(lines.ok()) << lines.status();
  EXPECT_EQ(lines->rest, "{\"stage\": \"run\"}\n{\"status\": \"pass\"}");
  EXPECT_EQ(lines->last_started, "tanh");
  ASSERT_EQ(lines->cases.size(), 1u);
  const OpResult& r = lines->cases[0];
  EXPECT_EQ(r.op, "add");
  EXPECT_EQ(r.status, TestStatus::kFailAccuracy);
  EXPECT_EQ(r.failed, 1);
  EXPECT_EQ(r.max_abs_err, 0.5);
  EXPECT_EQ(r.fallback_ops, "{\"aten::add.Tensor\":2}");
  EXPECT_EQ(r.aten_ops, "[\"aten::add.Tensor\"]");
  EXPECT_FALSE(r.signature.empty());
}

TEST(SplitOpLinesTest, LeavesOutARefusedLineAndNamesTheFirst) {
  const std::string good = "{\"op_case\": {\"key\": \"add\", \"status\": \"pass\"}}\n";
  for (const std::string bad : {"{\"op_case\": {\"key\": \"mul\", \"status\": \"great\"}}\n",
                                "{\"op_case\": {\"key\": \"a b\", \"status\": \"pass\"}}\n",
                                "{\"op_case\": {\"key\": \"mul\", \"max_abs_err\": NaN}}\n",
                                "{\"op_case\": [1, 2\n", "{\"op_other\": 1}\n"}) {
    auto lines = SplitOpLines(bad + good, 5);
    ASSERT_TRUE(lines.ok()) << lines.status();
    ASSERT_EQ(lines->cases.size(), 1u) << bad;
    EXPECT_EQ(lines->cases[0].op, "add");
    EXPECT_FALSE(lines->bad_line.empty()) << bad;
  }
  EXPECT_TRUE(SplitOpLines(good, 1)->bad_line.empty());
  EXPECT_FALSE(SplitOpLines(good + good, 1).ok());  // more cases than the batch has ops
}

TEST(SplitOpLinesTest, BoundsTextAndDropsMalformedListings) {
  const std::string text = "{\"op_case\": {\"key\": \"add\", \"status\": \"pass\", \"detail\": \"" +
                           std::string(10000, 'x') +
                           "\", \"fallback_ops\": {\"a\": \"many\"}, \"aten_ops\": [1]}}\n";
  auto lines = SplitOpLines(text, 1);
  ASSERT_TRUE(lines.ok()) << lines.status();
  EXPECT_EQ(lines->cases[0].detail.size(), kMaxOpText);
  EXPECT_EQ(lines->cases[0].fallback_ops, "{}");
  EXPECT_EQ(lines->cases[0].aten_ops, "[]");
}

}  // namespace
}  // namespace compatlab
