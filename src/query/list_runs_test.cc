#include "query/list_runs.h"

#include <fstream>

#include "core/error_signature.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "query/testing.h"
#include "store/testing.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

class ListRunsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.db = temp_.path() / "compatlab.db";
    options_.kb_path = temp_.path() / "errors.json";
    RunRecord failing = test::MakeRun("s1", test::MakeSpec("lilt"), TestStatus::kFailToRun);
    failing.result.error_type = "RuntimeError";
    failing.result.error_message = "mat1 and mat2 shapes cannot be multiplied";
    failing.result.error_signature = FailureSignature(failing.result);  // as the record is made
    test::WriteRuns(options_.db, "s1",
                    {test::MakeRun("s1", test::MakeSpec("gpt2")), failing,
                     test::MakeRun("s1", test::MakeSpec("bert"))});
  }

  test::ScopedTempDir temp_;
  ListRunsOptions options_;
};

TEST_F(ListRunsTest, FiltersSortsAndLimitsInEachFormat) {
  options_.format = RunsFormat::kJson;
  options_.filter.status = TestStatus::kPass;
  options_.filter.sort = {{"model_id", false}};
  absl::StatusOr<std::string> json_text = ListRuns(options_);
  ASSERT_TRUE(json_text.ok()) << json_text.status();
  const nlohmann::json runs = nlohmann::json::parse(*json_text);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0]["model_id"], "hf:bert");
  EXPECT_EQ(runs[1]["model_id"], "hf:gpt2");
  EXPECT_EQ(json_text->back(), '\n');

  options_.format = RunsFormat::kCsv;
  options_.filter.limit = 1;
  absl::StatusOr<std::string> csv = ListRuns(options_);
  ASSERT_TRUE(csv.ok()) << csv.status();
  EXPECT_THAT(*csv, StartsWith("run_id,"));
  EXPECT_EQ(std::count(csv->begin(), csv->end(), '\n'), 2);  // the header and one run
}

TEST_F(ListRunsTest, TableExplainsKnownErrorsWhenTheKnowledgeFileIsUsable) {
  absl::StatusOr<std::string> alone = ListRuns(options_);
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_THAT(*alone, HasSubstr("hf:lilt"));
  EXPECT_THAT(*alone, Not(HasSubstr("mat1-shapes")));
  std::ofstream(options_.kb_path) << test::kMat1KnowledgeFile;
  absl::StatusOr<std::string> explained = ListRuns(options_);
  ASSERT_TRUE(explained.ok()) << explained.status();
  EXPECT_THAT(*explained, StartsWith(*alone));
  EXPECT_THAT(*explained, HasSubstr("mat1-shapes"));
}

TEST_F(ListRunsTest, MissingStoreIsFailedPreconditionAndNotCreated) {
  options_.db = temp_.path() / "missing.db";
  absl::StatusOr<std::string> text = ListRuns(options_);
  EXPECT_EQ(text.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(text.status().message(), HasSubstr("no such store"));
  EXPECT_FALSE(fs::exists(options_.db));
}

}  // namespace
}  // namespace compatlab
