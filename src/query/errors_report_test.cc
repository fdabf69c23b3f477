#include "query/errors_report.h"

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "store/testing.h"

namespace compatlab {
namespace {

using test::MakeRun;
using test::MakeSpec;

constexpr const char* kKb = R"kb({"entries": [
  {"id": "matmul-shapes", "pattern": "^fail_to_run RuntimeError: mat1 and mat2 shapes",
   "explanation": "A linear layer got the wrong width.", "cause": "A sub-config size.",
   "workaround": "Align the sizes.",
   "observed": [{"model_type": "lilt", "status": "fail_to_run",
                 "signature": "RuntimeError: mat1 and mat2 shapes cannot be multiplied (NxN and NxN)",
                 "torch_version": "2.13.0+cpu", "transformers_version": "5.23.0"}]}]})kb";

RunRecord Failure(const std::string& model_type, const std::string& message,
                  const std::string& started_at, const std::string& torch = "2.13.0+cpu") {
  RunRecord run = MakeRun("s1", MakeSpec(model_type), TestStatus::kFailToRun);
  run.run_id = "run-" + model_type + "-" + started_at;
  run.result.stage = "prepare";
  run.result.error_type = "RuntimeError";
  run.result.error_message = message;
  run.result.torch_version = torch;
  run.result.transformers_version = "5.23.0";
  run.result.error_signature = FailureSignature(run.result);  // as when it was recorded
  run.started_at = started_at;
  return run;
}

std::vector<RunRecord> FailedRuns() {
  std::vector<RunRecord> runs = {
      Failure("lilt", "mat1 and mat2 shapes cannot be multiplied (1x32 and 64x64)", "T2"),
      Failure("align", "mat1 and mat2 shapes cannot be multiplied (2x32 and 4x64)", "T1"),
      Failure("lilt", "mat1 and mat2 shapes cannot be multiplied (1x32 and 64x64)", "T3", "2.12.0"),
      Failure("sam", "The size of tensor a (4) must match the size of tensor b (5)", "T0"),
      MakeRun("s1", MakeSpec("bert")),                       // pass: left out
      MakeRun("s1", MakeSpec("blt"), TestStatus::kSkipped),  // skipped: left out
  };
  RunRecord crash = MakeRun("s1", MakeSpec("segv"), TestStatus::kCrash);
  crash.run_id = "run-crash";
  crash.result.status_detail = "SIGSEGV";
  crash.result.error_signature = FailureSignature(crash.result);
  runs.push_back(crash);
  return runs;
}

TEST(ErrorsReportTest, GroupsFailuresBySignature) {
  auto kb = ErrorKnowledgeBase::Parse(kKb, "kb.json");
  ASSERT_TRUE(kb.ok()) << kb.status();
  std::vector<ErrorGroup> groups = GroupErrors(FailedRuns(), &*kb);
  ASSERT_EQ(groups.size(), 3u);
  const ErrorGroup& g = groups[0];  // most runs first
  EXPECT_EQ(g.status, TestStatus::kFailToRun);
  EXPECT_EQ(g.signature, "RuntimeError: mat1 and mat2 shapes cannot be multiplied (Nx32 and Nx64)");
  EXPECT_EQ(g.runs, 3);
  EXPECT_EQ(g.model_ids, (std::vector<std::string>{"hf:align", "hf:lilt"}));
  EXPECT_EQ(g.model_types, (std::vector<std::string>{"align", "lilt"}));
  EXPECT_EQ(g.stages, (std::vector<std::string>{"prepare"}));
  ASSERT_EQ(g.stacks.size(), 2u);
  EXPECT_EQ(g.stacks[0].torch_version, "2.12.0");
  EXPECT_EQ(g.stacks[0].runs, 1);
  EXPECT_EQ(g.stacks[1].torch_version, "2.13.0+cpu");
  EXPECT_EQ(g.stacks[1].runs, 2);
  EXPECT_EQ(g.first_seen, "T1");
  EXPECT_EQ(g.last_seen, "T3");
  EXPECT_EQ(g.example_run_id, "run-lilt-T3");
  ASSERT_NE(g.known, nullptr);
  EXPECT_EQ(g.known->id, "matmul-shapes");
  // Then one run each, in status order (fail_to_run before crash), unexplained.
  EXPECT_EQ(groups[1].status, TestStatus::kFailToRun);
  EXPECT_EQ(groups[1].signature,
            "RuntimeError: The size of tensor a (N) must match the size of tensor b (N)");
  EXPECT_EQ(groups[2].status, TestStatus::kCrash);
  EXPECT_EQ(groups[2].signature, "SIGSEGV");
  EXPECT_EQ(groups[2].known, nullptr);
  EXPECT_TRUE(GroupErrors(FailedRuns(), nullptr)[0].known == nullptr);
}

TEST(ErrorsReportTest, TextShowsModelsStacksAndExplanations) {
  auto kb = ErrorKnowledgeBase::Parse(kKb, "kb.json");
  ASSERT_TRUE(kb.ok()) << kb.status();
  const std::string text = FormatErrorsText(GroupErrors(FailedRuns(), &*kb), "kb.json");
  for (const char* expected : {
           "[1] fail_to_run, 3 runs, 2 models: RuntimeError: mat1 and mat2 shapes cannot be "
           "multiplied (Nx32 and Nx64)\n",
           "    models   hf:align, hf:lilt\n",
           "    stage    prepare\n",
           "    stacks   torch 2.12.0, transformers 5.23.0 (1 run); torch 2.13.0+cpu, transformers "
           "5.23.0 (2 runs)\n",
           "    seen     T1 .. T3\n",
           "    example  compatlab repro run-lilt-T3\n",
           "    known    [matmul-shapes] A linear layer got the wrong width.\n",
           "    cause    A sub-config size.\n",
           "    fix      Align the sizes.\n",
           "[3] crash, 1 run, 1 model: SIGSEGV\n",
           "summary: 5 failures in 3 signatures; 1 signature (3 failures) explained by kb.json\n",
       }) {
    EXPECT_NE(text.find(expected), std::string::npos) << "missing: " << expected << "\n" << text;
  }
  EXPECT_EQ(FormatErrorsText({}, "kb.json"), "no failures\n");
}

TEST(ErrorsReportTest, ExplainsAnEntryInFullOnce) {
  auto kb = ErrorKnowledgeBase::Parse(kKb, "kb.json");
  ASSERT_TRUE(kb.ok()) << kb.status();
  const std::string text = FormatErrorsText(
      GroupErrors(
          {Failure("lilt", "mat1 and mat2 shapes cannot be multiplied (1x60 and 64x16)", "T1"),
           Failure("lilt", "mat1 and mat2 shapes cannot be multiplied (1x60 and 64x16)", "T2"),
           Failure("neucodec", "mat1 and mat2 shapes cannot be multiplied (1x128 and 2048x8)",
                   "T3")},
          &*kb),
      "kb.json");
  EXPECT_NE(text.find("    known    [matmul-shapes] A linear layer got the wrong width.\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    known    [matmul-shapes] as in [1]\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("cause", text.find("as in [1]")), std::string::npos) << text;
  EXPECT_NE(text.find("summary: 3 failures in 2 signatures; 2 signatures (3 failures) explained"),
            std::string::npos)
      << text;
}

TEST(ErrorsReportTest, NamesAFewModelsAndCountsTheRest) {
  std::vector<RunRecord> runs;
  for (const char* m : {"a", "b", "c", "d", "e", "f", "g"}) runs.push_back(Failure(m, "boom", "T"));
  const std::string text = FormatErrorsText(GroupErrors(runs, nullptr), "");
  EXPECT_NE(text.find("    models   hf:a, hf:b, hf:c, hf:d, hf:e, +2\u00a0more\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("explained by no knowledge base"), std::string::npos) << text;
}

TEST(ErrorsReportTest, JsonHasEveryGroupField) {
  auto kb = ErrorKnowledgeBase::Parse(kKb, "kb.json");
  ASSERT_TRUE(kb.ok()) << kb.status();
  auto j = nlohmann::json::parse(FormatErrorsJson(GroupErrors(FailedRuns(), &*kb), "kb.json"));
  EXPECT_EQ(j["knowledge_base"], "kb.json");
  EXPECT_EQ(j["summary"]["failures"], 5);
  EXPECT_EQ(j["summary"]["signatures"], 3);
  EXPECT_EQ(j["summary"]["explained_signatures"], 1);
  EXPECT_EQ(j["summary"]["explained_failures"], 3);
  const auto& g = j["groups"][0];
  EXPECT_EQ(g["status"], "fail_to_run");
  EXPECT_EQ(g["runs"], 3);
  EXPECT_EQ(g["models"], 2);
  EXPECT_EQ(g["model_types"], nlohmann::json::array({"align", "lilt"}));
  EXPECT_EQ(g["stacks"][1]["runs"], 2);
  EXPECT_EQ(g["known"]["id"], "matmul-shapes");
  EXPECT_EQ(g["known"]["workaround"], "Align the sizes.");
  EXPECT_TRUE(j["groups"][2]["known"].is_null());
}

TEST(ErrorsReportTest, JsonCutsLongStoredTextWhenAskedTo) {
  // An imported run's text may be long (up to the import limits); serve's
  // /api/errors passes a cap so one group cannot make the answer huge.
  RunRecord run = Failure("lilt", "x", "T1");
  run.spec.model_id = "hf:" + std::string(300 << 10, 'm');
  run.result.error_signature = std::string(300 << 10, 's');
  run.result.torch_version = std::string(5000, 'v');
  const std::vector<ErrorGroup> groups = GroupErrors({run}, nullptr);
  const nlohmann::ordered_json capped = ErrorsJson(groups, "", 1024);
  const auto& g = capped["groups"][0];
  for (const std::string& text :
       {g["signature"].get<std::string>(), g["model_ids"][0].get<std::string>(),
        g["stacks"][0]["torch_version"].get<std::string>()}) {
    EXPECT_LT(text.size(), 1100u);
    EXPECT_NE(text.find("more bytes]"), std::string::npos) << text.substr(0, 40);
  }
  EXPECT_LT(capped.dump().size(), size_t{8} << 10);
  const nlohmann::ordered_json whole = ErrorsJson(groups, "");
  EXPECT_EQ(whole["groups"][0]["signature"].get<std::string>().size(), size_t{300} << 10);
}

std::vector<RunRecord> BlamedRuns() {
  std::vector<RunRecord> runs = FailedRuns();
  RunRecord pil = Failure("timm_wrapper", "X requires the PIL library but it was not found", "T4");
  pil.result.missing_packages = "PIL";
  pil.result.blame = "environment";
  RunRecord both = Failure("gemma3n", "X requires the timm library but it was not found", "T5");
  both.result.missing_packages = "timm, PIL";
  both.result.blame = "environment";
  // The message of a model's failure, here the harness's: a group of its own.
  RunRecord harness =
      Failure("noop", "The size of tensor a (4) must match the size of tensor b (5)", "T6");
  harness.result.blame = "harness";
  runs.push_back(pil);
  runs.push_back(both);
  runs.push_back(harness);
  runs[0].result.blame = "model";  // the rest have none (stored before schema 6): the model's
  return runs;
}

TEST(ErrorsReportTest, ByBlameGroupsTheModelsFirstThenWhatCompatlabCouldNotTest) {
  const std::vector<ErrorGroup> groups = GroupErrors(BlamedRuns(), nullptr, /*by_blame=*/true);
  ASSERT_EQ(groups.size(), 6u);
  std::vector<std::string> blames;
  for (const ErrorGroup& g : groups) blames.push_back(g.blame);
  EXPECT_EQ(blames, (std::vector<std::string>{"model", "model", "model", "environment",
                                              "environment", "harness"}));
  EXPECT_EQ(groups[3].missing_packages, (std::vector<std::string>{"PIL"}));
  EXPECT_EQ(groups[4].missing_packages, (std::vector<std::string>{"PIL", "timm"}));
  EXPECT_EQ(groups[5].runs, 1);
  const std::string text = FormatErrorsText(groups, "");
  EXPECT_NE(text.find("blame model: 5 failures in 3 signatures\n"), std::string::npos) << text;
  EXPECT_NE(text.find("blame environment: 2 failures in 2 signatures (not the model's: not in "
                      "the pass rate)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    needs    PIL, timm\n"), std::string::npos) << text;
  const nlohmann::json json = nlohmann::json::parse(FormatErrorsJson(groups, ""));
  EXPECT_EQ(json["groups"][3]["blame"], "environment");
  EXPECT_EQ(json["groups"][4]["missing_packages"], nlohmann::json({"PIL", "timm"}));
  EXPECT_EQ(json["summary"]["blames"][1],
            nlohmann::json({{"blame", "environment"}, {"failures", 2}, {"signatures", 2}}));
  // Without --blame nothing changes: no blame, no header.
  const std::vector<ErrorGroup> plain = GroupErrors(BlamedRuns(), nullptr);
  ASSERT_EQ(plain.size(), 5u);
  EXPECT_EQ(plain[1].runs, 2);  // the model's and the harness's failure of one signature
  EXPECT_EQ(FormatErrorsText(plain, "").find("blame "), std::string::npos);
  EXPECT_FALSE(nlohmann::json::parse(FormatErrorsJson(plain, ""))["summary"].contains("blames"));
}

TEST(ErrorsReportTest, QueryFooterExplainsTheShownErrors) {
  auto kb = ErrorKnowledgeBase::Parse(kKb, "kb.json");
  ASSERT_TRUE(kb.ok()) << kb.status();
  const std::string footer = FormatKnownErrorsFooter(FailedRuns(), *kb, "kb.json");
  EXPECT_EQ(footer,
            "\nknown errors (kb.json):\n"
            "  [matmul-shapes] hf:lilt, hf:align: A linear layer got the wrong width.\n"
            "                  workaround: Align the sizes.\n");
  EXPECT_EQ(FormatKnownErrorsFooter({MakeRun("s1", MakeSpec("bert"))}, *kb, "kb.json"), "");
}

}  // namespace
}  // namespace compatlab
