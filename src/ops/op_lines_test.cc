#include "ops/op_lines.h"

#include "core/error_signature.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

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

TEST(SplitOpLinesTest, ReadsEveryKeyOfACaseIntoItsField) {
  const nlohmann::json c = {{"key", "nn.functional.conv2d:v"},
                            {"dtype", "float16"},
                            {"status", "fail_to_run"},
                            {"detail", "d"},
                            {"samples", 9},
                            {"passed", 1},
                            {"failed", 2},
                            {"errored", 3},
                            {"timed_out", 4},
                            {"first_failure", "boom"},
                            {"error_type", "RuntimeError"},
                            {"max_abs_err", 0.25},
                            {"max_rel_err", 0.5},
                            {"atol", 1e-05},
                            {"rtol", 0.001},
                            {"tol_source", "toleranceOverride"},
                            {"ref_dtype", "float64"},
                            {"fallback_audit", "audited"},
                            {"skip_source", "pytorch"},
                            {"skip_kind", "xfail"},
                            {"skip_reason", "why"},
                            {"wall_s", 1.5}};
  const std::string text = nlohmann::json{{"op_case", c}}.dump() + "\n";
  auto lines = SplitOpLines(text, 1);
  ASSERT_TRUE(lines.ok()) << lines.status();
  ASSERT_EQ(lines->cases.size(), 1u);
  const OpResult& r = lines->cases[0];
  EXPECT_EQ(r.Key(), "nn.functional.conv2d:v");
  EXPECT_EQ(r.dtype, "float16");
  EXPECT_EQ(r.status, TestStatus::kFailToRun);
  EXPECT_EQ(r.detail, "d");
  EXPECT_EQ(r.samples, 9);
  EXPECT_EQ(r.passed, 1);
  EXPECT_EQ(r.failed, 2);
  EXPECT_EQ(r.errored, 3);
  EXPECT_EQ(r.timed_out, 4);
  EXPECT_EQ(r.first_failure, "boom");
  EXPECT_EQ(r.error_type, "RuntimeError");
  EXPECT_EQ(r.signature, ErrorSignature("RuntimeError", "boom"));
  EXPECT_EQ(r.max_abs_err, 0.25);
  EXPECT_EQ(r.max_rel_err, 0.5);
  EXPECT_EQ(r.atol, 1e-05);
  EXPECT_EQ(r.rtol, 0.001);
  EXPECT_EQ(r.tol_source, "toleranceOverride");
  EXPECT_EQ(r.ref_dtype, "float64");
  EXPECT_EQ(r.fallback_audit, "audited");
  EXPECT_EQ(r.skip_source, "pytorch");
  EXPECT_EQ(r.skip_kind, "xfail");
  EXPECT_EQ(r.skip_reason, "why");
  EXPECT_EQ(r.wall_s, 1.5);
  EXPECT_EQ(r.aten_ops, "[]");  // absent listings read as empty
  EXPECT_EQ(r.fallback_ops, "{}");
}

TEST(SplitOpLinesTest, CountsAreNeverNegativeAndFiguresAbsentWhenNotNumbers) {
  auto lines = SplitOpLines(
      "{\"op_case\": {\"key\": \"add\", \"status\": \"pass\", \"samples\": -3, \"passed\": 1.5, "
      "\"atol\": \"big\"}}\n",
      1);
  ASSERT_TRUE(lines.ok()) << lines.status();
  EXPECT_EQ(lines->cases[0].samples, 0);
  EXPECT_EQ(lines->cases[0].passed, 0);
  EXPECT_FALSE(lines->cases[0].atol.has_value());
  EXPECT_TRUE(lines->cases[0].signature.empty());  // a pass has no failure signature
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
