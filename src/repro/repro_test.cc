#include "repro/repro.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "core/error_signature.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "store/testing.h"
#include "util/fs.h"
#include "util/hash.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

// A failing gpt2 run with a recorded thread count, compile options and a
// two-line message.
RunRecord FailingRun() {
  TestSpec spec = test::MakeSpec("gpt2");
  spec.mode = "compile";
  spec.backend = "inductor";
  spec.seq_len = 64;
  RunRecord run = test::MakeRun("s1", spec, TestStatus::kFailToRun);
  run.result.stage = "prepare";
  run.result.error_type = "RuntimeError";
  run.result.error_message = "\n  shapes 3x4 and 5x6 differ\nsecond line";
  run.result.error_signature = FailureSignature(run.result);  // as the record is made
  run.result.torch_num_threads = 2;
  run.result.compile_options = R"({"dynamic":false})";
  run.result.torch_version = "2.13.0";
  return run;
}

// A harness test: no model.
RunRecord HarnessRun() {
  TestSpec spec;
  spec.model_id = "none";
  spec.kind = "noop";
  return test::MakeRun("s1", spec);
}

void WriteExecutable(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
  chmod(path.c_str(), 0755);
}

std::string Slurp(const fs::path& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  return text.ok() ? *text : "<" + std::string(text.status().message()) + ">";
}

class ReproTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A stand-in interpreter: records its arguments, PYTHONPATH and standard
    // input, and prints a script.
    env_.python = (temp_.path() / "python").string();
    env_.probe_dir = (temp_.path() / "probe").string();
    WriteExecutable(env_.python,
                    "#!/bin/sh\n"
                    "printf '%s\\n' \"$@\" > \"$0.args\"\n"
                    "printf '%s' \"$PYTHONPATH\" > \"$0.path\"\n"
                    "cat > \"$0.stdin\"\n"
                    "echo '#!/usr/bin/env python3'\n");
    targets_ = temp_.path() / "targets";
    fs::create_directories(targets_);
  }

  fs::path Recorded(const std::string& suffix) const { return env_.python + suffix; }

  test::ScopedTempDir temp_;
  ProbeEnv env_;
  fs::path targets_;
};

TEST_F(ReproTest, InputIsTheSupervisorsRequestPlusWhatWasRecorded) {
  const RunRecord run = FailingRun();
  KnownError known;
  known.id = "shape-mismatch";
  known.explanation = "the layers disagree";
  const json input = json::parse(ReproInputJson(run, &known, R"({"name":"cpu","device":"cpu"})"));

  const json& request = input["request"];
  EXPECT_EQ(request["run_id"], run.run_id);
  EXPECT_EQ(request["test_id"], run.spec.TestId());
  EXPECT_EQ(request["model_type"], "gpt2");
  EXPECT_EQ(request["mode"], "compile");
  EXPECT_EQ(request["seq_len"], 64);
  EXPECT_EQ(request["torch_num_threads"], 2);  // the stored count, not this machine's
  EXPECT_EQ(request["compile_options"], json({{"dynamic", false}}));
  EXPECT_EQ(request["target_profile"]["device"], "cpu");
  const json& recorded = input["recorded"];
  EXPECT_EQ(recorded["status"], "fail_to_run");
  EXPECT_EQ(recorded["stage"], "prepare");
  EXPECT_EQ(recorded["torch_version"], "2.13.0");
  EXPECT_EQ(recorded["error_message"], "shapes 3x4 and 5x6 differ");  // the first line
  EXPECT_EQ(recorded["signature"], FailureSignature(run.result));
  EXPECT_EQ(input["known_error"]["id"], "shape-mismatch");
  EXPECT_EQ(input["known_error"]["explanation"], "the layers disagree");
  EXPECT_TRUE(json::parse(ReproInputJson(run, nullptr))["known_error"].is_null());
}

TEST_F(ReproTest, ALoadRowRerunsWithTheBaseAndObjectiveItsGroupGaveIt) {
  TestSpec spec = test::MakeSpec("gpt2");
  spec.kind = "load";
  spec.kind_params = {{"scenario", "server"}, {"rate", "0.5x"}};
  RunRecord run = test::MakeRun("s1", spec);
  run.result.load_base_source = "offline_row";
  run.result.load_offline_requests_per_s = 4.0;
  run.result.load_base_run_id = "run-offline";
  run.result.load_slo_source = "single_stream_row";
  run.result.load_slo_ttft_s = 0.3;
  run.result.load_slo_itl_s = 0.02;
  run.result.load_slo_run_id = "run-single";
  json request = json::parse(ReproInputJson(run, nullptr))["request"];
  EXPECT_EQ(request["load_base"],
            json({{"offline_requests_per_s", 4.0}, {"run_id", "run-offline"}}));
  EXPECT_EQ(request["load_slo"],
            json({{"ttft_s", 0.3}, {"itl_s", 0.02}, {"run_id", "run-single"}}));

  // Its own objective (the group's single_stream row did not pass): none sent, it calibrates again.
  run.result.load_slo_source = "single_stream_p50x3";
  run.result.load_slo_run_id = "";
  request = json::parse(ReproInputJson(run, nullptr))["request"];
  EXPECT_FALSE(request.contains("load_slo"));
  EXPECT_TRUE(request.contains("load_base"));
}

TEST_F(ReproTest, GeneratorReadsTheInputOnStandardInputNeverArgv) {
  RunRecord run = FailingRun();
  run.result.error_message = "marker-7f3a9 in the message";
  absl::StatusOr<ReproScript> script = GenerateReproScript(run, nullptr, env_, targets_, true);
  ASSERT_TRUE(script.ok()) << script.status();
  EXPECT_EQ(script->script, "#!/usr/bin/env python3\n");
  EXPECT_EQ(Slurp(Recorded(".args")), "-m\ncompatlab_probe.repro\n");
  EXPECT_EQ(Slurp(Recorded(".path")), env_.probe_dir);
  const std::string input = Slurp(Recorded(".stdin"));
  EXPECT_THAT(input, HasSubstr("marker-7f3a9"));
  EXPECT_EQ(input,
            ReproInputJson(run, nullptr, "", true));  // no cpu profile file here: the built-in one
  EXPECT_TRUE(script->warnings.empty());
}

TEST_F(ReproTest, TargetProfileComesFromTheTargetsFolderOrWarns) {
  RunRecord run = FailingRun();
  run.spec.target = "ctest";
  absl::StatusOr<ReproScript> missing = GenerateReproScript(run, nullptr, env_, targets_, true);
  ASSERT_TRUE(missing.ok()) << missing.status();
  ASSERT_EQ(missing->warnings.size(), 1u);
  EXPECT_THAT(missing->warnings[0], HasSubstr("ctest"));
  EXPECT_THAT(Slurp(Recorded(".stdin")), Not(HasSubstr("target_profile")));

  const char* source_dir = std::getenv("COMPATLAB_SOURCE_DIR");
  ASSERT_NE(source_dir, nullptr);
  fs::copy_file(fs::path(source_dir) / "targets" / "ctest.json", targets_ / "ctest.json");
  absl::StatusOr<ReproScript> found = GenerateReproScript(run, nullptr, env_, targets_, true);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_TRUE(found->warnings.empty()) << found->warnings[0];
  EXPECT_THAT(Slurp(Recorded(".stdin")), HasSubstr("compatlab_testdevice:load"));
}

TEST_F(ReproTest, HarnessRunHasNoScriptAndStartsNoGenerator) {
  absl::StatusOr<ReproScript> script =
      GenerateReproScript(HarnessRun(), nullptr, env_, targets_, true);
  EXPECT_EQ(script.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(script.status().message(), HasSubstr("harness test (kind noop, model none)"));
  EXPECT_FALSE(fs::exists(Recorded(".args")));
}

TEST_F(ReproTest, FailingGeneratorIsInternalWithItsStderr) {
  WriteExecutable(env_.python, "#!/bin/sh\necho 'Traceback: no module' >&2\nexit 1\n");
  absl::StatusOr<ReproScript> script =
      GenerateReproScript(FailingRun(), nullptr, env_, targets_, true);
  EXPECT_EQ(script.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(script.status().message(), HasSubstr("(exit 1): Traceback: no module"));
  env_.python = (temp_.path() / "no-such-python").string();
  script = GenerateReproScript(FailingRun(), nullptr, env_, targets_, true);
  EXPECT_EQ(script.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(script.status().message(), HasSubstr("cannot run the probe"));
}

TEST_F(ReproTest, StoredRunIsFoundByIdAndErrorsSayWhatIsWrong) {
  ReproOptions options;
  options.db = temp_.path() / "compatlab.db";
  options.kb_path = temp_.path() / "no-kb.json";
  options.targets_dir = targets_;
  options.probe = env_;
  options.run_id = "nope";
  EXPECT_EQ(ReproduceStoredRun(options).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(fs::exists(options.db));

  const RunRecord run = FailingRun();
  const RunRecord harness = HarnessRun();
  test::WriteRuns(options.db, "s1", {run, harness});
  absl::StatusOr<ReproScript> unknown = ReproduceStoredRun(options);
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(unknown.status().message(), HasSubstr("no run nope in"));

  options.run_id = harness.run_id;
  EXPECT_EQ(ReproduceStoredRun(options).status().code(), absl::StatusCode::kFailedPrecondition);

  options.run_id = run.run_id;
  absl::StatusOr<ReproScript> script = ReproduceStoredRun(options);
  ASSERT_TRUE(script.ok()) << script.status();
  EXPECT_EQ(script->script, "#!/usr/bin/env python3\n");
  ASSERT_EQ(script->warnings.size(), 1u);  // the knowledge file is missing
  EXPECT_THAT(script->warnings[0], HasSubstr("no explanations: "));
  EXPECT_EQ(json::parse(Slurp(Recorded(".stdin")))["request"]["run_id"], run.run_id);
}

}  // namespace
}  // namespace compatlab

namespace compatlab {
namespace {

// A run of a code model whose file is `file` with `content`, its id holding the hash.
RunRecord CodeRun(const std::filesystem::path& file, const std::string& content) {
  TestSpec spec = test::MakeSpec("llama");
  spec.model_id = "code:attn.build@" + Sha256Hex(content).substr(0, 16);
  spec.model_path = file.string() + ":build";
  return test::MakeRun("s1", spec);
}

TEST(CheckCodeFilesTest, ALocalRunNeedsItsUnchangedFile) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "code-files";
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / "attn.py";
  ASSERT_TRUE(WriteFileAtomic(file, "def build(): pass\n").ok());
  const RunRecord run = CodeRun(file, "def build(): pass\n");
  EXPECT_TRUE(CheckCodeFiles(run, /*trusted=*/true).ok());
  ASSERT_TRUE(WriteFileAtomic(file, "def build(): return 1\n").ok());
  absl::Status changed = CheckCodeFiles(run, true);
  EXPECT_EQ(changed.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(changed.message(), ::testing::HasSubstr("recorded no code files"));
  std::filesystem::remove(file);
  EXPECT_THAT(CheckCodeFiles(run, true).message(), ::testing::HasSubstr("not readable"));
}

TEST(CheckCodeFilesTest, EveryRecordedCodeFileIsChecked) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "code-files-2";
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / "model.py";
  const std::filesystem::path helper = dir / "helper.py";
  ASSERT_TRUE(WriteFileAtomic(file, "from helper import f\n").ok());
  ASSERT_TRUE(WriteFileAtomic(helper, "f = 1\n").ok());
  RunRecord run = CodeRun(file, "a manifest");
  run.result.code_files = fmt::format(R"([{{"path": "{}", "rel": "helper.py", "sha256": "{}"}}, )"
                                      R"({{"path": "{}", "rel": "model.py", "sha256": "{}"}}])",
                                      helper.string(), Sha256Hex("f = 1\n"), file.string(),
                                      Sha256Hex("from helper import f\n"));
  EXPECT_TRUE(CheckCodeFiles(run, /*trusted=*/true).ok());
  ASSERT_TRUE(WriteFileAtomic(helper, "f = 2\n").ok());
  absl::Status changed = CheckCodeFiles(run, true);
  EXPECT_EQ(changed.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(changed.message(), ::testing::HasSubstr(helper.string() + " changed since the run"));
  EXPECT_THAT(changed.message(), ::testing::HasSubstr(Sha256Hex("f = 2\n").substr(0, 16)));
  EXPECT_THAT(changed.message(), ::testing::HasSubstr(Sha256Hex("f = 1\n").substr(0, 16)));
}

TEST(CheckCodeFilesTest, AnImportedCodeRunIsNeverReproduced) {
  const RunRecord run = CodeRun("/nowhere/attn.py", "x");
  absl::Status s = CheckCodeFiles(run, /*trusted=*/false);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("came through `compatlab import`"));
  EXPECT_TRUE(CheckCodeFiles(test::MakeRun("s1", test::MakeSpec("gpt2")), false).ok());
}

}  // namespace
}  // namespace compatlab
