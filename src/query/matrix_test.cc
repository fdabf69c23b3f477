#include "query/matrix.h"

#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "store/testing.h"

namespace compatlab {
namespace {

using ::testing::HasSubstr;

// A run of `model_type` on `target`/`mode` and a stack, finished at `finished`.
RunRecord Cell(const std::string& model_type, const std::string& target, const std::string& mode,
               TestStatus status, const std::string& finished,
               const std::string& torch = "2.13.0+cpu",
               const std::string& transformers = "5.23.0") {
  TestSpec spec = test::MakeSpec(model_type);
  spec.target = target;
  spec.mode = mode;
  if (mode == "compile") spec.backend = "inductor";
  RunRecord run = test::MakeRun("s-" + torch, spec, status);
  run.run_id = fmt::format("{}-{}-{}-{}-{}", model_type, target, mode, torch, finished);
  run.finished_at = finished;
  run.result.torch_version = torch;
  run.result.transformers_version = transformers;
  run.result.param_count = 1000;
  run.result.prepare_s = 1.5;
  run.result.steady_median_s = 0.002;
  return run;
}

// The verdict (status, or "-") of each cell of `row`, by column name.
std::vector<std::string> Cells(const Matrix& m, size_t row) {
  std::vector<std::string> out;
  for (int cell : m.rows[row].cells) {
    out.push_back(cell < 0 ? "-" : std::string(TestStatusName(m.runs[cell].result.status)));
  }
  return out;
}

TEST(MatrixTest, ComparesVersionsPieceByPiece) {
  EXPECT_GT(CompareVersions("2.10.0", "2.9.1"), 0);
  EXPECT_LT(CompareVersions("2.13.0", "2.13.1"), 0);
  EXPECT_EQ(CompareVersions("2.13.0", "2.13.00"), 0);
  EXPECT_GT(CompareVersions("5.23.0.post1", "5.23.0"), 0);
  EXPECT_EQ(TorchRelease("2.13.0+cu128"), "2.13.0");
  EXPECT_EQ(TorchRelease("2.13.0"), "2.13.0");
  EXPECT_EQ(NewestStack({{"2.9.0", "5.30.0"}, {"2.10.0", "5.1.0"}, {"2.10.0", "5.2.0"}}), 2u);
}

TEST(MatrixTest, ATestOverTwoRanksIsItsOwnCellInItsOwnColumn) {
  RunRecord one = Cell("llama", "cpu", "eager", TestStatus::kPass, "2026-12-01T10:00:00.000Z");
  RunRecord two = Cell("llama", "cpu", "eager", TestStatus::kCrash, "2026-12-01T11:00:00.000Z");
  two.spec.ranks = 2;
  two.run_id += "-2";
  const Matrix m = BuildMatrix({one, two}, StackSelection{});
  EXPECT_EQ(m.columns,
            (std::vector<MatrixColumn>{{"cpu", "eager", "", 1}, {"cpu", "eager", "", 2}}));
  ASSERT_EQ(m.rows.size(), 1u);
  EXPECT_EQ(Cells(m, 0), (std::vector<std::string>{"pass", "crash"}));
  EXPECT_THAT(FormatMatrixTable(m), HasSubstr("cpu/eager/2 ranks"));
}

TEST(MatrixTest, OneCurrentVerdictPerCellOnTheNewestStack) {
  std::vector<RunRecord> runs = {
      Cell("llama", "cpu", "eager", TestStatus::kFailToRun, "2026-12-01T10:00:00.000Z"),
      Cell("llama", "cpu", "eager", TestStatus::kPass, "2026-12-01T11:00:00.000Z"),
      // Imported later (last in the input) but finished earlier: superseded.
      Cell("llama", "cpu", "eager", TestStatus::kTimeout, "2026-12-01T10:30:00.000Z"),
      Cell("llama", "cpu", "compile", TestStatus::kFailToCompile, "2026-12-01T11:00:00.000Z"),
      Cell("gpt2", "ctest", "eager", TestStatus::kSkipped, "2026-12-01T11:00:00.000Z"),
      // +cu128 is the same release as +cpu: one stack.
      Cell("gpt2", "cuda", "eager", TestStatus::kPass, "2026-12-01T09:00:00.000Z", "2.13.0+cu128"),
      // An older stack, finished later: not in the default selection.
      Cell("llama", "cpu", "eager", TestStatus::kOom, "2026-12-02T00:00:00.000Z", "2.12.0+cpu",
           "5.22.0"),
  };
  RunRecord harness = Cell("x", "cpu", "eager", TestStatus::kPass, "2026-12-01T11:00:00.000Z");
  harness.spec.model_id = std::string(kHarnessModelId);
  runs.push_back(harness);

  const Matrix m = BuildMatrix(runs, StackSelection{});
  ASSERT_TRUE(m.newest.has_value());
  EXPECT_EQ(m.newest->torch_release, "2.13.0");
  EXPECT_EQ(m.stacks, 2);
  EXPECT_EQ(m.DescribeStack(), "torch 2.13.0, transformers 5.23.0 (newest of 2 stacks)");
  ASSERT_EQ(m.columns.size(), 4u);
  EXPECT_EQ(m.columns[0], (MatrixColumn{"cpu", "eager", ""}));
  EXPECT_EQ(m.columns[1], (MatrixColumn{"cpu", "compile", ""}));
  EXPECT_EQ(m.columns[2], (MatrixColumn{"ctest", "eager", ""}));
  EXPECT_EQ(m.columns[3], (MatrixColumn{"cuda", "eager", ""}));
  ASSERT_EQ(m.rows.size(), 2u);  // the harness test is not a model
  EXPECT_EQ(m.rows[0].model_id, "hf:gpt2");
  EXPECT_EQ(Cells(m, 0), (std::vector<std::string>{"-", "-", "skipped", "pass"}));
  EXPECT_EQ(Cells(m, 1), (std::vector<std::string>{"pass", "fail_to_compile", "-", "-"}));
  EXPECT_EQ(m.runs[m.rows[1].cells[0]].finished_at, "2026-12-01T11:00:00.000Z");
  EXPECT_EQ(m.superseded, 2);
  EXPECT_EQ(m.rows[1].size, "reduced");
  EXPECT_EQ(m.rows[1].param_count, 1000);
  EXPECT_EQ(m.rows[1].test, "forward 1x32 float32");
  EXPECT_EQ(VerdictOf(TestStatus::kSkipped), Verdict::kCouldNotTest);
  EXPECT_EQ(VerdictOf(TestStatus::kOom), Verdict::kFail);
  RunResult reduced;
  reduced.status = TestStatus::kFailToRun;
  EXPECT_EQ(VerdictOf(reduced), Verdict::kFail);
  reduced.blame = "reduction";  // a rerun at full size passed: compatlab could not test it
  EXPECT_EQ(VerdictOf(reduced), Verdict::kCouldNotTest);

  // All stacks: the older stack's later oom is current there.
  const Matrix all = BuildMatrix(runs, *ParseStackSelection("all"));
  EXPECT_EQ(Cells(all, 1)[0], "oom");
  // A given stack: by release, or exactly when the version holds '+'.
  const Matrix older = BuildMatrix(runs, *ParseStackSelection("torch=2.12.0"));
  ASSERT_EQ(older.rows.size(), 1u);
  EXPECT_EQ(Cells(older, 0), std::vector<std::string>{"oom"});
  const Matrix cuda_build = BuildMatrix(runs, *ParseStackSelection("torch=2.13.0+cu128"));
  ASSERT_EQ(cuda_build.rows.size(), 1u);
  EXPECT_EQ(cuda_build.columns, std::vector<MatrixColumn>{(MatrixColumn{"cuda", "eager", ""})});
}

TEST(MatrixTest, RowsKeepTestsApartAndPagesKeepTheirColumns) {
  RunRecord forward = Cell("llama", "cpu", "eager", TestStatus::kPass, "2026-12-01T10:00:00.000Z");
  RunRecord generate = forward;
  generate.spec.kind = "generate";
  generate.spec.kind_params = {{"new_tokens", "8"}};
  generate.run_id = "generate";
  const Matrix m =
      BuildMatrix({forward, generate}, StackSelection{},
                  std::vector<MatrixColumn>{{"neuron", "compile", ""}, {"cpu", "eager", ""}});
  ASSERT_EQ(m.rows.size(), 2u);
  EXPECT_EQ(m.rows[0].test, "forward 1x32 float32");
  EXPECT_EQ(m.rows[1].test, R"(generate 1x32 float32 {"new_tokens":"8"})");
  EXPECT_EQ(m.columns,
            (std::vector<MatrixColumn>{{"cpu", "eager", ""}, {"neuron", "compile", ""}}));
  EXPECT_EQ(m.rows[1].cells, (std::vector<int>{1, -1}));
}

TEST(MatrixTest, ParsesStackSelections) {
  EXPECT_EQ(ParseStackSelection("newest")->choice, StackSelection::Choice::kNewest);
  EXPECT_EQ(ParseStackSelection("all")->choice, StackSelection::Choice::kAll);
  EXPECT_EQ(ParseStackSelection("sweep-1")->given.sweep_id, "sweep-1");
  EXPECT_EQ(ParseStackSelection("torch=2.12.0,transformers=5.22.0")->Describe(),
            "torch=2.12.0,transformers=5.22.0");
  for (const char* bad : {"", "cuda=1", "torch="}) {
    EXPECT_EQ(ParseStackSelection(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(MatrixTest, FormatsGiveEachCellItsRunAndFigures) {
  RunRecord pass = Cell("llama", "ctest", "eager", TestStatus::kPass, "2026-12-01T10:00:00.000Z");
  pass.result.fallback_audit = "audited";
  pass.result.fallback_ops = R"({"aten::foo": 3, "aten::bar": 1})";
  RunRecord fail =
      Cell("llama", "ctest", "compile", TestStatus::kFailToCompile, "2026-12-01T10:00:00.000Z");
  fail.result.error_message = "backend refused\x1b[31m aten::foo\nsecond line";
  const Matrix m = BuildMatrix({pass, fail}, StackSelection{});

  const std::string table = FormatMatrixTable(m);
  EXPECT_THAT(table, HasSubstr("stack: torch 2.13.0, transformers 5.23.0 (newest of 1 stack); "
                               "1 rows, 2 current runs, 0 superseded"));
  EXPECT_THAT(table, HasSubstr("ctest/eager"));
  EXPECT_THAT(table, HasSubstr("pass 1.50s/2.00ms +2 fb"));
  EXPECT_THAT(table, HasSubstr("hf:llama ctest/compile fail_to_compile: backend refused"));
  EXPECT_EQ(table.find('\x1b'), std::string::npos);
  EXPECT_EQ(table.find("second line"), std::string::npos);

  const nlohmann::json json = nlohmann::json::parse(FormatMatrixJson(m));
  EXPECT_EQ(json["stack"]["torch_release"], "2.13.0");
  const nlohmann::json& cells = json["rows"][0]["cells"];
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[0]["verdict"], "pass");
  EXPECT_EQ(cells[0]["run_id"], pass.run_id);
  EXPECT_EQ(cells[0]["fallback_ops"], 2);
  EXPECT_EQ(cells[0]["prepare_s"], 1.5);
  EXPECT_EQ(cells[1]["verdict"], "fail");
  EXPECT_EQ(cells[1]["status"], "fail_to_compile");
  EXPECT_EQ(cells[1]["fallback_ops"], nullptr);
  EXPECT_EQ(cells[1]["error_message"], fail.result.error_message);  // whole, as stored

  const std::string csv = FormatMatrixCsv(m);
  EXPECT_THAT(csv, HasSubstr("model_id,name,size,param_count,test,target,mode,ranks,dynamic,"
                             "verdict,status,run_id,"));
  EXPECT_THAT(csv, HasSubstr("hf:llama,hf:llama,reduced,1000,forward 1x32 float32,ctest,eager,1,,"
                             "pass,pass," +
                             pass.run_id));
  EXPECT_THAT(csv, HasSubstr("\"backend refused\x1b[31m aten::foo\nsecond line\"\r\n"));
}

TEST(MatrixTest, ADynamicTestIsAColumnOfItsOwnOnTheRowOfItsShapes) {
  RunRecord shape16 =
      Cell("llama", "cpu", "compile", TestStatus::kPass, "2026-12-01T10:00:00.000Z");
  shape16.spec.seq_len = 16;
  RunRecord dynamic = shape16;
  dynamic.run_id = "dyn";
  dynamic.spec.dynamic = "true";
  dynamic.spec.shapes = "1x16,1x32";
  dynamic.result.status = TestStatus::kFailToCompile;
  RunRecord mark = dynamic;
  mark.run_id = "mark";
  mark.spec.dynamic = "mark";
  mark.result.status = TestStatus::kPass;
  const Matrix m = BuildMatrix({shape16, dynamic, mark}, StackSelection{});
  ASSERT_EQ(m.columns.size(), 3u);
  EXPECT_EQ(m.columns[0].dynamic, "");
  EXPECT_EQ(m.columns[1].dynamic, "mark");
  EXPECT_EQ(m.columns[2].dynamic, "true");
  ASSERT_EQ(m.rows.size(), 2u);
  EXPECT_EQ(m.rows[0].test, "forward 1x16 float32");
  EXPECT_EQ(m.rows[0].cells, (std::vector<int>{m.rows[0].cells[0], -1, -1}));
  EXPECT_EQ(m.rows[1].test, "forward 1x16,1x32 float32");
  EXPECT_EQ(m.rows[1].cells[0], -1);
  EXPECT_EQ(m.runs[static_cast<size_t>(m.rows[1].cells[1])].run_id, "mark");
  EXPECT_EQ(m.runs[static_cast<size_t>(m.rows[1].cells[2])].run_id, "dyn");
  EXPECT_THAT(FormatMatrixTable(m), HasSubstr("cpu/compile dynamic=true"));
}

TEST(MatrixTest, ShowMatrixReadsTheStoreWithQuerysFilters) {
  test::ScopedTempDir temp;
  const auto db = temp.path() / "compatlab.db";
  RunRecord llama = Cell("llama", "cpu", "eager", TestStatus::kPass, "2026-12-01T10:00:00.000Z");
  RunRecord gpt2 = Cell("gpt2", "cpu", "eager", TestStatus::kPass, "2026-12-01T10:00:00.000Z");
  llama.sweep_id = gpt2.sweep_id = "s1";
  test::WriteRuns(db, "s1", {llama, gpt2});
  MatrixOptions options;
  options.db = db;
  options.filter.model = "LLA";
  options.format = RunsFormat::kJson;
  absl::StatusOr<std::string> text = ShowMatrix(options);
  ASSERT_TRUE(text.ok()) << text.status();
  const nlohmann::json json = nlohmann::json::parse(*text);
  ASSERT_EQ(json["rows"].size(), 1u);
  EXPECT_EQ(json["rows"][0]["model_id"], "hf:llama");

  options.filter = {};
  options.filter.sweep_id = "nope";
  EXPECT_EQ(ShowMatrix(options).status().code(), absl::StatusCode::kInvalidArgument);
  options.db = temp.path() / "missing.db";
  EXPECT_EQ(ShowMatrix(options).status().code(), absl::StatusCode::kFailedPrecondition);
}

// A run of `model_type` on the cpu in eager mode on the named stack `stack`.
RunRecord StackCell(const std::string& model_type, const std::string& stack, TestStatus status) {
  RunRecord run = Cell(model_type, "cpu", "eager", status, "2026-12-01T10:00:00.000Z");
  run.run_id += "-" + stack;
  run.sweep_id = "s-" + stack;
  run.result.stack = stack;
  return run;
}

TEST(MatrixTest, NamedStacksSideBySideMarkWhatChangedFromTheFirstByDiffsRule) {
  RunRecord broken = StackCell("gpt2", "t5", TestStatus::kFailToRun);
  broken.result.error_message = "RuntimeError: boom";
  std::vector<RunRecord> runs = {StackCell("gpt2", "default", TestStatus::kPass), broken,
                                 StackCell("llama", "default", TestStatus::kPass),
                                 StackCell("llama", "t5", TestStatus::kPass),
                                 StackCell("llama", "other", TestStatus::kFailToRun)};
  absl::StatusOr<StackSelection> selection = ParseNamedStacks("default,t5");
  ASSERT_TRUE(selection.ok()) << selection.status();
  const Matrix m = BuildMatrix(runs, *selection);
  ASSERT_EQ(m.columns.size(), 2u);
  EXPECT_EQ(m.columns[0], (MatrixColumn{"cpu", "eager", "default"}));
  EXPECT_EQ(m.columns[1], (MatrixColumn{"cpu", "eager", "t5"}));
  ASSERT_EQ(m.rows.size(), 2u);  // gpt2, llama; the stack "other" is not selected
  EXPECT_EQ(Cells(m, 0), (std::vector<std::string>{"pass", "fail_to_run"}));
  ASSERT_EQ(m.rows[0].changes[1].size(), 1u);
  EXPECT_EQ(m.rows[0].changes[1][0].kind, "newly failing");
  EXPECT_TRUE(m.rows[0].changes[0].empty());  // the base column
  EXPECT_TRUE(m.rows[1].changes[1].empty());  // llama: the same on both
  const std::string table = FormatMatrixTable(m);
  EXPECT_THAT(table, HasSubstr("default:cpu/eager"));
  EXPECT_THAT(table, HasSubstr("* fail_to_run"));
  EXPECT_THAT(table, HasSubstr("* changed from default"));
  EXPECT_THAT(table, HasSubstr("hf:gpt2 t5:cpu/eager: newly failing"));
  const nlohmann::ordered_json json = MatrixJson(m);
  EXPECT_EQ(json["columns"][1]["stack"], "t5");
  EXPECT_EQ(json["rows"][0]["cells"][1]["changes"][0]["kind"], "newly failing");
  // A stack's cell that was not measured still says whose it is in the CSV.
  std::vector<RunRecord> only_default = {runs[0], runs[2], runs[3]};
  const std::string csv = FormatMatrixCsv(BuildMatrix(only_default, *selection));
  EXPECT_THAT(csv, HasSubstr(",cpu,eager,1,,not_measured,,,,,,t5,"));
}

TEST(MatrixTest, RefusesABadListOfNamedStacks) {
  for (const char* bad :
       {"", "default,", "default,default", "Default", "a/b", "a,b,c,d,e,f,g,h,i"}) {
    EXPECT_FALSE(ParseNamedStacks(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace compatlab
