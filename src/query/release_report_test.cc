#include "query/release_report.h"

#include "core/error_signature.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/testing.h"

namespace compatlab {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kKb = R"kb({"entries": [
    {"id": "shape-boom", "pattern": "^fail_to_run RuntimeError: shape",
     "explanation": "Shapes | disagree.", "cause": "C", "workaround": "Pin the old release.",
     "observed": [{"model_type": "llama", "status": "fail_to_run",
                   "signature": "RuntimeError: shape mismatch: N vs N",
                   "torch_version": "2.14.1", "transformers_version": "5.23.0"}]}]})kb";

RunRecord Measured(const std::string& sweep, const std::string& model_type) {
  RunRecord run = test::MakeRun(sweep, test::MakeSpec(model_type));
  run.run_id = sweep + "-" + model_type;
  run.result.steady_median_s = 0.100;
  run.result.steady_p90_s = 0.102;
  run.result.prepare_s = 2.0;
  run.cpu_model = "cpu-A";
  return run;
}

TEST(ReleaseReportTest, ListsNewFailuresWithTheirKnowledgeBaseEntryFixesAndTimings) {
  std::vector<RunRecord> base = {Measured("a", "llama"), Measured("a", "gpt2"),
                                 Measured("a", "bert")};
  base[2].result.status = TestStatus::kFailToRun;
  base[2].result.error_message = "ValueError: old";
  base[2].result.error_signature = FailureSignature(base[2].result);
  std::vector<RunRecord> head = {Measured("b", "llama"), Measured("b", "gpt2"),
                                 Measured("b", "bert")};
  head[0].result.status = TestStatus::kFailToRun;
  head[0].result.error_type = "RuntimeError";
  head[0].result.error_message = "shape mismatch: 4 vs 8";
  head[0].result.error_signature = FailureSignature(head[0].result);
  head[1].result.steady_median_s = 0.150;
  head[1].result.steady_p90_s = 0.152;
  absl::StatusOr<ErrorKnowledgeBase> kb = ErrorKnowledgeBase::Parse(kKb, "kb.json");
  ASSERT_TRUE(kb.ok()) << kb.status();
  const std::string md =
      FormatReleaseReport(DiffRuns(base, head), "stack=default", "stack=t2141", &*kb);
  EXPECT_THAT(md, HasSubstr("# Release report: stack=default -> stack=t2141\n"));
  EXPECT_THAT(md, HasSubstr("## New failures (1)"));
  EXPECT_THAT(md, HasSubstr("`RuntimeError: shape mismatch: N vs N`"));
  EXPECT_THAT(md, HasSubstr("**shape-boom**: Shapes \\| disagree. Workaround: Pin the old"));
  EXPECT_THAT(md, HasSubstr("## Fixes (1)"));
  EXPECT_THAT(md, HasSubstr("| hf:bert |"));
  EXPECT_THAT(md, HasSubstr("## Slower (1)"));
  EXPECT_THAT(md, HasSubstr("slower steady | +50.0% (100.00 ms -> 150.00 ms"));
  EXPECT_THAT(md, HasSubstr("intervals apart and > 5%"));
  EXPECT_THAT(md, HasSubstr("## Faster (0)\n\nNone."));
  EXPECT_THAT(md, Not(HasSubstr("\n\n\n")));
}

TEST(ReleaseReportTest, ATestOverRanksOrWithDynamicShapesIsToldFromItsTwin) {
  std::vector<RunRecord> base = {Measured("b", "llama")};
  base[0].spec.ranks = 2;
  base[0].test_id = base[0].spec.TestId();
  RunRecord dynamic = Measured("b", "llama");
  dynamic.spec.mode = "compile";
  dynamic.spec.dynamic = "true";
  dynamic.spec.shapes = "1x32,1x64";
  dynamic.test_id = dynamic.spec.TestId();
  dynamic.run_id = "b-dynamic";
  base.push_back(dynamic);
  std::vector<RunRecord> head = base;
  for (RunRecord& run : head) {
    run.sweep_id = "h";
    run.run_id = "h-" + run.run_id;
    run.result.status = TestStatus::kFailToRun;
    run.result.error_message = "RuntimeError: boom";
  }
  const std::string md = FormatReleaseReport(DiffRuns(base, head), "a", "b", nullptr);
  EXPECT_THAT(md, HasSubstr("| cpu/eager/2 ranks |"));
  EXPECT_THAT(md, HasSubstr("| cpu/compile dynamic=true |"));
}

TEST(ReleaseReportTest, NamesOpsThatNewlyFallBackOnAuditedRunsOnly) {
  RunResult base;
  base.fallback_audit = "audited";
  base.fallback_ops = R"({"aten::add": 2})";
  RunResult head = base;
  head.fallback_ops = R"({"aten::add": 2, "aten::gelu": 1})";
  EXPECT_EQ(NewFallbackOps(base, head), (std::vector<std::string>{"aten::gelu"}));
  head.fallback_audit = "not_applicable";
  EXPECT_TRUE(NewFallbackOps(base, head).empty());
}

}  // namespace
}  // namespace compatlab
