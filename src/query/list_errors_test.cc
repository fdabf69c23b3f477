#include "query/list_errors.h"

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

class ListErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.db = temp_.path() / "compatlab.db";
    options_.kb_path = temp_.path() / "errors.json";
    std::ofstream(options_.kb_path) << test::kMat1KnowledgeFile;
    std::vector<RunRecord> runs = {test::MakeRun("s1", test::MakeSpec("gpt2"))};
    for (const char* model : {"lilt", "align"}) {
      RunRecord failing = test::MakeRun("s1", test::MakeSpec(model), TestStatus::kFailToRun);
      failing.result.error_type = "RuntimeError";
      failing.result.error_message = "mat1 and mat2 shapes cannot be multiplied";
      failing.result.error_signature = FailureSignature(failing.result);  // as the record is made
      runs.push_back(failing);
    }
    test::WriteRuns(options_.db, "s1", runs);
  }

  test::ScopedTempDir temp_;
  ListErrorsOptions options_;
};

TEST_F(ListErrorsTest, GroupsFailuresWithTheirExplanation) {
  options_.json = true;
  absl::StatusOr<std::string> text = ListErrors(options_);
  ASSERT_TRUE(text.ok()) << text.status();
  const nlohmann::json report = nlohmann::json::parse(*text);
  ASSERT_EQ(report["groups"].size(), 1u);
  EXPECT_EQ(report["groups"][0]["runs"], 2);
  EXPECT_EQ(report["groups"][0]["known"]["id"], "mat1-shapes");

  options_.json = false;
  options_.filter.model = "lilt";
  absl::StatusOr<std::string> table = ListErrors(options_);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(*table, HasSubstr("the layers disagree"));
  EXPECT_THAT(*table, ::testing::Not(HasSubstr("hf:align")));
}

TEST_F(ListErrorsTest, RefusesNonFailureStatusesAndAMissingKnowledgeFile) {
  options_.filter.status = TestStatus::kPass;
  absl::StatusOr<std::string> pass = ListErrors(options_);
  EXPECT_EQ(pass.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(pass.status().message(),
            "errors lists failures; --status pass is not one (use query for it)");

  options_.filter.status = TestStatus::kFailToRun;
  options_.kb_path = temp_.path() / "missing.json";
  absl::StatusOr<std::string> no_kb = ListErrors(options_);
  EXPECT_EQ(no_kb.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(no_kb.status().message(), HasSubstr("cannot use the knowledge base: "));

  std::ofstream(options_.kb_path) << test::kMat1KnowledgeFile;
  options_.db = temp_.path() / "missing.db";
  EXPECT_EQ(ListErrors(options_).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace compatlab
