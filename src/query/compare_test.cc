#include "query/compare.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/store.h"
#include "store/testing.h"
#include "util/fs.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class CompareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.db = temp_.path() / "compatlab.db";
    // gpt2 passes in s1 and fails in s2; bert passes in both.
    const TestSpec gpt2 = test::MakeSpec("gpt2");
    const TestSpec bert = test::MakeSpec("bert");
    test::WriteRuns(options_.db, "s1", {test::MakeRun("s1", gpt2), test::MakeRun("s1", bert)});
    RunRecord failing = test::MakeRun("s2", gpt2, TestStatus::kFailToRun);
    failing.result.error_type = "RuntimeError";
    failing.result.error_message = "boom";
    test::WriteRuns(options_.db, "s2", {failing, test::MakeRun("s2", bert)});
  }

  test::ScopedTempDir temp_;
  CompareOptions options_;
};

TEST_F(CompareTest, RegressionFailsOnlyWhenAskedTo) {
  options_.base = "s1";
  options_.head = "s2";
  absl::StatusOr<CompareOutcome> outcome = Compare(options_);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_THAT(outcome->text, HasSubstr("hf:gpt2"));
  EXPECT_FALSE(outcome->failed);
  options_.fail_on_regression = true;
  outcome = Compare(options_);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_TRUE(outcome->failed);
  options_.base = "s2";
  outcome = Compare(options_);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_FALSE(outcome->failed);  // a side against itself
}

TEST_F(CompareTest, WrittenExpectedFileChecksTheSameSideAndCatchesAnother) {
  options_.head = "s1";
  options_.write_expected = temp_.path() / "expected.txt";
  absl::StatusOr<CompareOutcome> written = Compare(options_);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_THAT(written->text, HasSubstr("wrote " + options_.write_expected.string() + " (2 tests"));
  EXPECT_TRUE(fs::exists(options_.write_expected));

  options_.expected = options_.write_expected;
  options_.write_expected.clear();
  absl::StatusOr<CompareOutcome> same = Compare(options_);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_FALSE(same->failed) << same->text;
  options_.head = "s2";
  absl::StatusOr<CompareOutcome> changed = Compare(options_);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(changed->failed);
  EXPECT_THAT(changed->text, HasSubstr("hf:gpt2"));
}

TEST_F(CompareTest, BadInputIsInvalidArgumentAndAMissingStoreFailedPrecondition) {
  options_.head = "s2";
  EXPECT_EQ(Compare(options_).status().message(),
            "diff: give --base (compare), --expected or --write-expected");
  options_.base = "nope";
  absl::StatusOr<CompareOutcome> unknown = Compare(options_);
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.status().message(), HasSubstr("--base: no sweep or stack named nope in "));
  options_.base = "torch=0.0.1";
  absl::StatusOr<CompareOutcome> empty = Compare(options_);
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(empty.status().message(), HasSubstr("--base torch=0.0.1: no runs in"));
  options_.base = "s1";
  options_.expected = temp_.path() / "missing.txt";
  EXPECT_EQ(Compare(options_).status().code(), absl::StatusCode::kInvalidArgument);
  options_.expected.clear();
  options_.db = temp_.path() / "missing.db";
  EXPECT_EQ(Compare(options_).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace compatlab
