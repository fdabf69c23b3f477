#include "core/blame.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

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

RunResult Failed(TestStatus status, const std::string& type, const std::string& message) {
  RunResult r = Result(status, "build");
  r.error_type = type;
  r.error_message = message;
  return r;
}

TEST(BlameTest, APackageTheEnvironmentLacksIsTheEnvironmentsAndNamed) {
  RunResult pil = Failed(TestStatus::kFailToLoad, "ImportError",
                         "\nTimmWrapperModel requires the PIL library but it was not found in your "
                         "environment. You can install it with pip:\n`pip install pillow`.\n\n"
                         "TimmWrapperModel requires the timm library but it was not found in your "
                         "environment. You can install it with pip:\n`pip install timm`.");
  EXPECT_EQ(Blame(pil), "environment");
  EXPECT_EQ(MissingPackagesText(pil), "PIL, timm");
  RunResult module = Failed(TestStatus::kFailToRun, "ModuleNotFoundError",
                            "No module named 'torchaudio.functional'");
  EXPECT_EQ(Blame(module), "environment");
  EXPECT_EQ(MissingPackages(module), std::vector<std::string>{"torchaudio"});
  RunResult datasets = Failed(TestStatus::kFailToLoad, "ImportError",
                              "X requires the \xF0\x9F\xA4\x97 Datasets library but it was not "
                              "found in your environment.");
  EXPECT_EQ(MissingPackagesText(datasets), "Datasets");
  // A missing package is not a reduction's: no rerun.
  TestSpec spec;
  spec.model_id = "hf:timm_wrapper";
  EXPECT_FALSE(NeedsReductionRerun(spec, pil));
}

TEST(BlameTest, AMissingSubmoduleOfTorchOrTransformersIsNotAMissingPackage) {
  EXPECT_EQ(Blame(Failed(TestStatus::kFailToLoad, "ValueError",
                         "X requires the accelerate library to be configured first")),
            "model");
  EXPECT_EQ(MissingPackagesText(Failed(TestStatus::kFailToLoad, "ImportError",
                                       "X requires the accelerate library version >=1.1. That "
                                       "library was not found with this version in your "
                                       "environment.")),
            "accelerate");
  RunResult internal = Failed(TestStatus::kFailToLoad, "ModuleNotFoundError",
                              "No module named 'transformers.models.foo'");
  EXPECT_EQ(Blame(internal), "model");
  EXPECT_EQ(MissingPackagesText(internal), "");
  EXPECT_EQ(Blame(Failed(TestStatus::kFailToRun, "ModuleNotFoundError",
                         "No module named 'torch._inductor.foo'")),
            "model");
  // A pass that logged such a line names nothing.
  RunResult pass = Failed(TestStatus::kPass, "", "No module named 'timm'");
  EXPECT_TRUE(MissingPackages(pass).empty());
  // A harness error stays the harness's, its package named.
  RunResult harness =
      Failed(TestStatus::kHarnessError, "ModuleNotFoundError", "No module named 'x'");
  EXPECT_EQ(Blame(harness), "harness");
}

TEST(BlameTest, AnOlderRowIsBlamedOnTheEnvironmentWhenImported) {
  RunResult old = Failed(TestStatus::kFailToRun, "ModuleNotFoundError", "No module named 'natten'");
  old.blame = "model";
  FillMissingPackages(&old);
  EXPECT_EQ(old.missing_packages, "natten");
  EXPECT_EQ(old.blame, "environment");
  RunResult reduction = old;
  reduction.missing_packages.clear();
  reduction.blame = "reduction";
  FillMissingPackages(&reduction);
  EXPECT_EQ(reduction.blame, "reduction");
  RunResult model = Failed(TestStatus::kFailToRun, "RuntimeError", "size mismatch");
  model.blame = "model";
  FillMissingPackages(&model);
  EXPECT_EQ(model.blame, "model");
  EXPECT_EQ(model.missing_packages, "");
}

// Real failure messages (src/core/testdata/failure_messages.json): each is blamed as it
// should be and names the packages it should.
TEST(BlameFixtureTest, RealFailureMessagesAreBlamedAsTheyShouldBe) {
  const char* source_dir = std::getenv("COMPATLAB_SOURCE_DIR");
  ASSERT_NE(source_dir, nullptr) << "ctest sets COMPATLAB_SOURCE_DIR";
  std::ifstream in(std::filesystem::path(source_dir) / "src/core/testdata/failure_messages.json");
  ASSERT_TRUE(in) << "no fixture";
  const nlohmann::json fixture = nlohmann::json::parse(in);
  int environment = 0;
  int harness = 0;
  int model = 0;
  for (const nlohmann::json& c : fixture.at("cases")) {
    RunResult r;
    absl::StatusOr<TestStatus> status = ParseTestStatus(c.at("status").get<std::string>());
    ASSERT_TRUE(status.ok()) << c.dump();
    r.status = *status;
    r.stage = c.value("stage", "build");
    r.error_type = c.at("error_type").get<std::string>();
    r.error_message = c.at("message").get<std::string>();
    const std::string want = c.at("blame").get<std::string>();
    EXPECT_EQ(Blame(r), want) << c.at("model") << ": " << r.error_message;
    EXPECT_EQ(MissingPackagesText(r), c.at("missing_packages").get<std::string>()) << c.at("model");
    environment += want == kBlameEnvironment;
    harness += want == kBlameHarness;
    model += want == kBlameModel;
  }
  EXPECT_GE(environment, 8);
  EXPECT_GE(harness, 6);  // inputs compatlab did not build (issue 47 item 3)
  EXPECT_GE(model, 20);
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
  rate.Add(TestStatus::kFailToLoad, "environment");
  rate.Add(TestStatus::kSkipped, "model");
  rate.Add(TestStatus::kSkipped, "");
  EXPECT_EQ(rate.passes, 1);
  EXPECT_EQ(rate.model_runs, 2);
  EXPECT_EQ(rate.not_model, 2);
  EXPECT_EQ(rate.skipped, 2);
  EXPECT_EQ(*rate.Rate(), 0.5);
  EXPECT_EQ(rate.Describe(),
            "50.0% (1 of 2 runs blamed on the model; 2 not the model's; 2 skipped)");
}

TEST(PassRateTest, OnlySkippedRunsHaveNoRate) {
  PassRate rate;
  rate.Add(TestStatus::kSkipped, "model");
  EXPECT_FALSE(rate.Rate().has_value());
  EXPECT_EQ(rate.Describe(), "- (no run blamed on the model; 1 skipped)");
}

}  // namespace
}  // namespace compatlab
