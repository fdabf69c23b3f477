#include "core/blame.h"

#include "gtest/gtest.h"

namespace compatlab {
namespace {

RunResult Result(TestStatus status, const std::string& stage = "") {
  RunResult r;
  r.status = status;
  r.stage = stage;
  return r;
}

TEST(BlameTest, HarnessErrorsAndReferenceFailuresAreCompatlabsNotTheModels) {
  EXPECT_EQ(Blame(Result(TestStatus::kHarnessError, "harness")), "harness");
  EXPECT_EQ(Blame(Result(TestStatus::kOom, "compare")), "reference");
  EXPECT_EQ(Blame(Result(TestStatus::kFailToRun, "compare")), "reference");
}

TEST(BlameTest, EverythingElseIsTheModelsPassesIncluded) {
  EXPECT_EQ(Blame(Result(TestStatus::kPass)), "model");
  EXPECT_EQ(Blame(Result(TestStatus::kFailAccuracy, "compare")), "model");
  EXPECT_EQ(Blame(Result(TestStatus::kFailToLoad, "build")), "model");
  EXPECT_EQ(Blame(Result(TestStatus::kOom, "prepare")), "model");
  EXPECT_EQ(Blame(Result(TestStatus::kSkipped)), "model");
}

RunResult Rerun(TestStatus status, const std::string& rerun_status,
                const std::string& rerun_signature) {
  RunResult r = Result(status, "prepare");
  r.error_signature = "RuntimeError: size mismatch";
  r.rerun_status = rerun_status;
  r.rerun_error_signature = rerun_signature;
  return r;
}

TEST(BlameTest, AReductionIsBlamedOnlyWhenAConclusiveRerunDoesNotFailTheSameWay) {
  EXPECT_EQ(Blame(Rerun(TestStatus::kFailToRun, "pass", "")), "reduction");
  EXPECT_EQ(Blame(Rerun(TestStatus::kFailToRun, "fail_accuracy", "AccuracyError: x")), "reduction");
  EXPECT_EQ(Blame(Rerun(TestStatus::kFailToRun, "fail_to_run", "RuntimeError: size mismatch")),
            "model");
  // A rerun that could not finish proves nothing.
  EXPECT_EQ(Blame(Rerun(TestStatus::kFailToRun, "timeout", "timeout")), "model");
  EXPECT_EQ(Blame(Rerun(TestStatus::kFailToRun, "oom", "MemoryError")), "model");
  EXPECT_EQ(Blame(Rerun(TestStatus::kFailToRun, "harness_error", "x")), "model");
}

TEST(BlameTest, OnlyReducedHfAndHubFailuresAreRerun) {
  TestSpec spec;
  spec.model_id = "hf:bert";
  RunResult failed = Result(TestStatus::kFailToRun, "prepare");
  EXPECT_TRUE(NeedsReductionRerun(spec, failed));
  EXPECT_FALSE(NeedsReductionRerun(spec, Result(TestStatus::kPass)));
  EXPECT_FALSE(NeedsReductionRerun(spec, Result(TestStatus::kTimeout)));
  EXPECT_FALSE(NeedsReductionRerun(spec, Result(TestStatus::kOom, "prepare")));
  EXPECT_FALSE(NeedsReductionRerun(spec, Result(TestStatus::kFailToRun, "compare")));  // reference
  RunResult full = failed;
  full.reduced = 0;
  EXPECT_FALSE(NeedsReductionRerun(spec, full));
  TestSpec sized = spec;
  sized.kind_params["size"] = "full";
  EXPECT_FALSE(NeedsReductionRerun(sized, failed));
  TestSpec code = spec;
  code.model_id = "code:attn@ab12";
  EXPECT_FALSE(NeedsReductionRerun(code, failed));
  TestSpec hub = spec;
  hub.model_id = "hub:Qwen/Qwen3-0.6B";
  EXPECT_TRUE(NeedsReductionRerun(hub, failed));
}

TEST(BlameTest, OlderRowsWithoutABlameCountAsTheModels) {
  RunResult old;
  EXPECT_TRUE(BlamedOnModel(old));
  old.blame = "reference";
  EXPECT_FALSE(BlamedOnModel(old));
}

// A configuration-only model type (no modelling class) or a kind the model does not
// take is skipped: never run, so neither a pass nor a failure of the model. hf-all's
// 155 configuration-only types once showed 0.0% and lowered the sweep's rate from
// 87.1% to 70.0%.
TEST(PassRateTest, SkippedRunsAreCountedApartAndDoNotLowerTheRate) {
  PassRate rate;
  rate.Add(TestStatus::kPass, "model");
  rate.Add(TestStatus::kFailToRun, "model");
  rate.Add(TestStatus::kFailToRun, "reduction");
  rate.Add(TestStatus::kSkipped, "model");
  rate.Add(TestStatus::kSkipped, "");
  EXPECT_EQ(rate.passes, 1);
  EXPECT_EQ(rate.model_runs, 2);
  EXPECT_EQ(rate.not_model, 1);
  EXPECT_EQ(rate.skipped, 2);
  EXPECT_EQ(*rate.Rate(), 0.5);
  EXPECT_EQ(rate.Describe(),
            "50.0% (1 of 2 runs blamed on the model; 1 not the model's; 2 skipped)");
}

TEST(PassRateTest, OnlySkippedRunsHaveNoRate) {
  PassRate rate;
  rate.Add(TestStatus::kSkipped, "model");
  EXPECT_FALSE(rate.Rate().has_value());
  EXPECT_EQ(rate.Describe(), "- (no run blamed on the model; 1 skipped)");
}

}  // namespace
}  // namespace compatlab
