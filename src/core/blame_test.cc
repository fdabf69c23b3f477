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

TEST(BlameTest, OlderRowsWithoutABlameCountAsTheModels) {
  RunResult old;
  EXPECT_TRUE(BlamedOnModel(old));
  old.blame = "reference";
  EXPECT_FALSE(BlamedOnModel(old));
}

}  // namespace
}  // namespace compatlab
