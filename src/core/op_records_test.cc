#include "core/op_records.h"

#include "gtest/gtest.h"

namespace compatlab {
namespace {

OpResult Case(TestStatus status, const std::string& fallback_ops = "{}") {
  OpResult r;
  r.op = "add";
  r.status = status;
  r.fallback_ops = fallback_ops;
  return r;
}

TEST(OpCategoryTest, APassIsNativeUnlessAnOpRanThroughTheFallback) {
  EXPECT_EQ(CategoryOf(Case(TestStatus::kPass)), OpCategory::kNative);
  EXPECT_EQ(CategoryOf(Case(TestStatus::kPass, "")), OpCategory::kNative);
  EXPECT_EQ(CategoryOf(Case(TestStatus::kPass, R"({"aten::tanh": 1})")), OpCategory::kFallback);
}

TEST(OpCategoryTest, FailuresFallIntoTheirCategories) {
  EXPECT_EQ(CategoryOf(Case(TestStatus::kFailAccuracy)), OpCategory::kFail);
  EXPECT_EQ(CategoryOf(Case(TestStatus::kFailToRun)), OpCategory::kError);
  EXPECT_EQ(CategoryOf(Case(TestStatus::kFailToCompile)), OpCategory::kError);
  EXPECT_EQ(CategoryOf(Case(TestStatus::kHarnessError)), OpCategory::kError);
  EXPECT_EQ(CategoryOf(Case(TestStatus::kTimeout)), OpCategory::kTimeout);
  EXPECT_EQ(CategoryOf(Case(TestStatus::kCrash)), OpCategory::kCrash);
  EXPECT_EQ(CategoryOf(Case(TestStatus::kOom)), OpCategory::kCrash);
  EXPECT_EQ(CategoryOf(Case(TestStatus::kSkipped)), OpCategory::kSkipped);
}

TEST(OpCategoryTest, NamesRoundTripAndAnUnknownNameIsRefused) {
  for (OpCategory c : AllOpCategories()) {
    absl::StatusOr<OpCategory> parsed = ParseOpCategory(OpCategoryName(c));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, c);
  }
  EXPECT_FALSE(ParseOpCategory("passed").ok());
}

TEST(OpRecordsTest, OnlyASkippedCaseThatPassedIsAStaleSkip) {
  OpResult r = Case(TestStatus::kPass);
  EXPECT_FALSE(IsStaleSkip(r));
  r.skip_source = std::string(kSkipSourcePytorch);
  EXPECT_TRUE(IsStaleSkip(r));
  r.status = TestStatus::kFailAccuracy;
  EXPECT_FALSE(IsStaleSkip(r));
}

TEST(OpRecordsTest, KeyIsNameOrNameColonVariant) {
  OpResult r = Case(TestStatus::kPass);
  EXPECT_EQ(r.Key(), "add");
  r.op = "max";
  r.variant = "reduction_with_dim";
  EXPECT_EQ(r.Key(), "max:reduction_with_dim");
}

TEST(OpRecordsTest, CheckOpKeyTakesExactKeysOnly) {
  EXPECT_TRUE(CheckOpKey("nn.functional.conv2d").ok());
  EXPECT_TRUE(CheckOpKey("max:reduction_with_dim").ok());
  EXPECT_TRUE(CheckOpKey("nn.functional.interpolate:nearest-exact").ok());
  EXPECT_FALSE(CheckOpKey("").ok());
  EXPECT_FALSE(CheckOpKey(":variant").ok());
  EXPECT_FALSE(CheckOpKey("max:").ok());
  EXPECT_FALSE(CheckOpKey("conv*").ok());
  EXPECT_FALSE(CheckOpKey("a:b:c").ok());
  EXPECT_FALSE(CheckOpKey(std::string(201, 'a')).ok());
}

}  // namespace
}  // namespace compatlab
