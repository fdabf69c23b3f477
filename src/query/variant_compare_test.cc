#include "query/variant_compare.h"

#include <set>
#include <utility>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "store/testing.h"

namespace compatlab {
namespace {

using test::MakeRun;
using test::MakeSpec;

// A passing run of `model_id` (type llama) in `mode` with figures.
RunRecord Measured(const std::string& model_id, const std::string& mode, double steady,
                   double prepare) {
  TestSpec spec = MakeSpec("llama");
  spec.model_id = model_id;
  spec.mode = mode;
  if (mode == "compile") spec.backend = "aot_eager";
  if (model_id.starts_with("code:")) {
    spec.model_class = "LlamaForCausalLM";
    spec.model_path = "/m/attn.py:build";
  }
  RunRecord run = MakeRun("s1", spec);
  run.run_id = model_id + "-" + mode;
  run.cpu_model = "cpu-A";
  run.result.steady_median_s = steady;
  run.result.steady_p90_s = steady * 1.01;
  run.result.prepare_s = prepare;
  run.result.tokens_per_s = 32 / steady;
  run.result.acc_max_abs_err = 1e-6;
  run.result.acc_cosine = 1.0;
  run.result.graph_breaks = 0;
  run.result.fallback_ops = "{}";
  run.result.host_mem_bytes = int64_t{100} << 20;
  return run;
}

TEST(ParseCompareSideTest, TakesModelIdsSweepsStacksAndCombinations) {
  absl::StatusOr<CompareSide> model = ParseCompareSide("code:attn.build@0123456789abcdef");
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->model_id, "code:attn.build@0123456789abcdef");
  EXPECT_TRUE(model->runs.sweep_id.empty());
  absl::StatusOr<CompareSide> sweep = ParseCompareSide("abc123");
  ASSERT_TRUE(sweep.ok());
  EXPECT_EQ(sweep->runs.sweep_id, "abc123");
  EXPECT_EQ(sweep->bare_word, "abc123");
  absl::StatusOr<CompareSide> both = ParseCompareSide("model=hf:llama,torch=2.13.0+cpu");
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->model_id, "hf:llama");
  EXPECT_EQ(both->runs.torch_version, "2.13.0+cpu");
  EXPECT_EQ(both->Describe(), "model=hf:llama,torch=2.13.0+cpu");
  EXPECT_FALSE(ParseCompareSide("model=a,model=b").ok());
  EXPECT_FALSE(ParseCompareSide("model=").ok());
  EXPECT_FALSE(ParseCompareSide("color=red").ok());
  EXPECT_FALSE(ParseCompareSide("").ok());
}

TEST(ParseCompareSideTest, AModelIsNamedByItsIdOrItsType) {
  EXPECT_EQ(ParseCompareSide("model=llama,sweep=s")->model_id, "hf:llama");
  EXPECT_EQ(ParseCompareSide("model=hf:llama,sweep=s")->model_id, "hf:llama");
  EXPECT_EQ(ParseCompareSide("model=hub:org/name")->model_id, "hub:org/name");
  EXPECT_TRUE(ParseCompareSide("hf:llama")->bare_word.empty());
  // A bare word is a sweep id, or where the store has no such sweep a model type.
  CompareSide llama = ModelTypeSide(*ParseCompareSide("llama"));
  EXPECT_EQ(llama.model_id, "hf:llama");
  EXPECT_TRUE(llama.runs.sweep_id.empty());
  EXPECT_EQ(llama.Describe(), "model=hf:llama");
}

TEST(RunVariantCompareTest, ABareWordIsASweepOfThatIdElseAModelType) {
  test::ScopedTempDir dir;
  const std::filesystem::path db = dir.path() / "store.db";
  test::WriteRuns(db, "s1",
                  {Measured("hf:llama", "eager", 0.01, 1), Measured("code:a@0", "eager", 0.01, 1)});
  VariantCompareOptions options{db, "llama", "code:a@0", true, {}, false};
  absl::StatusOr<std::string> by_type = RunVariantCompare(options);
  ASSERT_TRUE(by_type.ok()) << by_type.status();
  const nlohmann::json report = nlohmann::json::parse(*by_type);
  EXPECT_EQ(report["base"], "model=hf:llama");
  EXPECT_EQ(report["cross_model"], true);
  EXPECT_EQ(report["compared"], 1);
  options.base = "s1";  // the sweep
  by_type = RunVariantCompare(options);
  ASSERT_TRUE(by_type.ok()) << by_type.status();
  EXPECT_EQ(nlohmann::json::parse(*by_type)["base"], "sweep=s1");
  {  // a sweep named like the type but without runs: the word is still the model type
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(db, OpenMode::kReadWrite);
    ASSERT_TRUE(store.ok()) << store.status();
    SweepInfo info;
    info.sweep_id = "llama";
    info.created_at = "2026-12-05T00:00:00.000Z";
    ASSERT_TRUE((*store)->CreateResolvedSweep(info, {{MakeSpec("gpt2"), TestExecution{}}}).ok());
  }
  options.base = "llama";
  by_type = RunVariantCompare(options);
  ASSERT_TRUE(by_type.ok()) << by_type.status();
  EXPECT_EQ(nlohmann::json::parse(*by_type)["base"], "model=hf:llama");
  options.base = "lama";
  EXPECT_EQ(RunVariantCompare(options).status().message(),
            "--base lama: no runs of sweep lama or of hf:lama in " + db.string());
}

// One of four twins of a test of `model_id`: one rank or `ranks`, static or dynamic
// (compile mode, dynamic=true over two seq lens); `steady` tells the twins apart.
RunRecord Twin(const std::string& model_id, const std::string& sweep_id, int64_t ranks,
               bool dynamic, double steady) {
  RunRecord run = Measured(model_id, dynamic ? "compile" : "eager", steady, 1.0);
  run.spec.ranks = ranks;
  if (dynamic) {
    run.spec.dynamic = std::string(kDynamicTrue);
    run.spec.shapes = "1x32,1x64";
  }
  run.sweep_id = sweep_id;
  run.test_id = run.spec.TestId();
  run.run_id = fmt::format("{}-{}-r{}-{}", sweep_id, model_id, ranks, dynamic ? "dyn" : "static");
  return run;
}

// A 2-rank test and its 1-rank twin, a dynamic test and its static twin (compile): each
// pairs with its own twin on the other side, within one model (by test id) as across two
// (CrossModelKey), read back from the store; the report names their ranks and dynamic shapes.
TEST(RunVariantCompareTest, PairsATestWithItsOwnRanksAndDynamicTwinOnly) {
  test::ScopedTempDir dir;
  const std::filesystem::path db = dir.path() / "store.db";
  auto twins = [](const std::string& model, const std::string& sweep) {
    return std::vector<RunRecord>{
        Twin(model, sweep, 1, false, 0.01), Twin(model, sweep, 2, false, 0.02),
        Twin(model, sweep, 1, true, 0.03), Twin(model, sweep, 2, true, 0.04)};
  };
  test::WriteRuns(db, "s1", twins("hf:llama", "s1"));
  std::vector<RunRecord> s2 = twins("hf:llama", "s2");
  for (RunRecord& r : twins("code:a@0", "s2")) s2.push_back(r);
  test::WriteRuns(db, "s2", s2);
  for (const std::string head : {"model=hf:llama,sweep=s2", "code:a@0"}) {
    VariantCompareOptions options{db, "model=hf:llama,sweep=s1", head, true, {}, false};
    absl::StatusOr<std::string> out = RunVariantCompare(options);
    ASSERT_TRUE(out.ok()) << out.status();
    const nlohmann::json report = nlohmann::json::parse(*out);
    EXPECT_EQ(report["cross_model"], head == "code:a@0");
    ASSERT_EQ(report["compared"], 4) << report.dump(1);
    EXPECT_TRUE(report["only_in_base"].empty() && report["only_in_head"].empty());
    std::set<std::pair<int64_t, std::string>> seen;
    for (const nlohmann::json& t : report["tests"]) {
      // Twins differ in their steady figure: a test paired with a twin's run would not be 1.0.
      EXPECT_DOUBLE_EQ(t["steady_ratio"].get<double>(), 1.0) << t.dump(1);
      const std::string suffix =
          fmt::format("-r{}-{}", t["ranks"].get<int64_t>(), t["dynamic"] == "" ? "static" : "dyn");
      EXPECT_TRUE(t["base"]["run_id"].get<std::string>().ends_with(suffix)) << t.dump(1);
      EXPECT_TRUE(t["head"]["run_id"].get<std::string>().ends_with(suffix)) << t.dump(1);
      EXPECT_EQ(t["shapes"], t["dynamic"] == "" ? "" : "1x32,1x64");
      seen.insert({t["ranks"].get<int64_t>(), t["dynamic"].get<std::string>()});
    }
    EXPECT_EQ(seen.size(), 4u);
  }
  VariantCompareOptions text{db, "model=hf:llama,sweep=s1", "code:a@0", false, {}, false};
  absl::StatusOr<std::string> table = RunVariantCompare(text);
  ASSERT_TRUE(table.ok()) << table.status();
  // The table's heading names ranks and dynamic beside the shape.
  const size_t start = table->find("target");
  const std::string header = table->substr(start, table->find('\n', start) - start);
  size_t at = 0;
  for (const char* column : {"mode", "ranks", "kind", "dtype", "dynamic", "shape"}) {
    at = header.find(column, at);
    ASSERT_NE(at, std::string::npos) << column << " in " << *table;
  }
  EXPECT_NE(table->find("1x32,1x64"), std::string::npos) << *table;
}

TEST(CrossModelKeyTest, IgnoresTheModelButNotTheTest) {
  TestSpec a = MakeSpec("llama");
  TestSpec b = a;
  b.model_id = "code:attn.build@0123456789abcdef";
  b.model_class = "MyLlama";
  b.model_path = "/m/attn.py:build";
  EXPECT_EQ(CrossModelKey(a), CrossModelKey(b));
  EXPECT_NE(a.TestId(), b.TestId());
  TestSpec c = b;
  c.mode = "compile";
  EXPECT_NE(CrossModelKey(a), CrossModelKey(c));
  TestSpec d = b;
  d.seq_len = 64;
  EXPECT_NE(CrossModelKey(a), CrossModelKey(d));
}

TEST(CompareVariantTest, PairsAcrossModelsAndUsesDiffsChanges) {
  std::vector<RunRecord> base = {Measured("hf:llama", "eager", 0.010, 0.5),
                                 Measured("hf:llama", "compile", 0.010, 2.0)};
  // The variant: as fast in eager, twice as slow compiled (a regression diff reports).
  std::vector<RunRecord> head = {
      Measured("code:attn.build@0123456789abcdef", "eager", 0.010, 0.5),
      Measured("code:attn.build@0123456789abcdef", "compile", 0.020, 2.0)};
  VariantReport report = CompareVariant(base, head, /*cross_model=*/true);
  ASSERT_EQ(report.tests.size(), 2u);
  EXPECT_TRUE(report.only_in_base.empty());
  EXPECT_TRUE(report.only_in_head.empty());
  EXPECT_EQ(report.regressions, 1);
  int slower = 0;
  for (const ComparedTest& t : report.tests) {
    EXPECT_EQ(t.base.spec.mode, t.head.spec.mode);
    for (const Change& c : t.changes) slower += c.kind == ChangeKind::kSlowerSteady;
  }
  EXPECT_EQ(slower, 1);
  // Paired by test_id instead, the two models share no test.
  VariantReport same_model = CompareVariant(base, head, /*cross_model=*/false);
  EXPECT_TRUE(same_model.tests.empty());
  EXPECT_EQ(same_model.only_in_base.size(), 2u);
  EXPECT_EQ(same_model.only_in_head.size(), 2u);
}

TEST(CompareVariantTest, ReportsRatiosInTextAndJson) {
  std::vector<RunRecord> base = {Measured("hf:llama", "eager", 0.010, 0.5)};
  std::vector<RunRecord> head = {Measured("code:attn.build@0123456789abcdef", "eager", 0.015, 1.0)};
  head[0].result.status = TestStatus::kFailAccuracy;
  head[0].result.baseline_max_abs_err = 0.125;
  head[0].result.baseline_cosine = 0.5;
  VariantReport report = CompareVariant(base, head, true);
  report.base_name = "model=hf:llama";
  report.head_name = "model=code:attn.build@0123456789abcdef";
  const std::string text = FormatVariantReport(report);
  EXPECT_NE(text.find("pass->fail_accuracy"), std::string::npos) << text;
  EXPECT_NE(text.find("1.50x"), std::string::npos) << text;
  EXPECT_NE(text.find("2.00x"), std::string::npos) << text;
  EXPECT_NE(text.find("newly failing"), std::string::npos) << text;
  EXPECT_NE(text.find("1.25e-01 / 0.500000"), std::string::npos) << text;
  EXPECT_NE(text.find("summary: 1 compared"), std::string::npos) << text;
  nlohmann::json j = nlohmann::json::parse(VariantReportJson(report));
  ASSERT_EQ(j["tests"].size(), 1u);
  EXPECT_DOUBLE_EQ(j["tests"][0]["steady_ratio"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j["tests"][0]["prepare_ratio"].get<double>(), 2.0);
  EXPECT_EQ(j["tests"][0]["base"]["status"], "pass");
  EXPECT_EQ(j["tests"][0]["head"]["status"], "fail_accuracy");
  EXPECT_EQ(j["tests"][0]["changes"][0]["kind"], "newly failing");
  EXPECT_EQ(j["regressions"], 1);
  EXPECT_DOUBLE_EQ(j["tests"][0]["head"]["baseline_cosine"].get<double>(), 0.5);
}

TEST(RatioTest, NeedsTwoPositiveFigures) {
  EXPECT_EQ(Ratio(2.0, 3.0), 1.5);
  EXPECT_EQ(Ratio(std::nullopt, 3.0), std::nullopt);
  EXPECT_EQ(Ratio(0.0, 3.0), std::nullopt);
}

TEST(CompareVariantTest, RatiosComeWithTheRangeTheirIntervalsAllowAndNoisyRowsWiden) {
  std::vector<RunRecord> base = {Measured("hf:llama", "eager", 0.010, 0.5)};
  std::vector<RunRecord> head = {Measured("code:attn.build@0123456789abcdef", "eager", 0.020, 0.5)};
  base[0].result.steady_ci_low_s = 0.009;
  base[0].result.steady_ci_high_s = 0.011;
  head[0].result.steady_ci_low_s = 0.018;
  head[0].result.steady_ci_high_s = 0.022;
  VariantReport quiet = CompareVariant(base, head, true);
  nlohmann::json j = nlohmann::json::parse(VariantReportJson(quiet));
  const nlohmann::json& t = j["tests"][0];
  EXPECT_NEAR(t["steady_ratio_interval"][0].get<double>(), 0.018 / 0.011, 1e-12);
  EXPECT_NEAR(t["steady_ratio_interval"][1].get<double>(), 0.022 / 0.009, 1e-12);
  EXPECT_NEAR(t["head"]["steady_interval"][1].get<double>(), 0.022, 1e-12);
  EXPECT_EQ(t["changes"][0]["kind"], "slower steady");  // the intervals are apart
  EXPECT_NE(FormatVariantReport(quiet).find("2.00x [1.64-2.44]"), std::string::npos)
      << FormatVariantReport(quiet);
  // A noisy head: its interval doubles both ways, the ranges overlap, diff sees no change.
  head[0].result.noisy = 1;
  VariantReport noisy = CompareVariant(base, head, true);
  j = nlohmann::json::parse(VariantReportJson(noisy));
  EXPECT_NEAR(j["tests"][0]["steady_ratio_interval"][0].get<double>(), 0.009 / 0.011, 1e-12);
  EXPECT_TRUE(j["tests"][0]["changes"].empty()) << j["tests"][0]["changes"];
  EXPECT_EQ(j["regressions"], 0);
  // Its ratio is shown marked, the reason under the table (query/noise_mark.h).
  const std::string text = FormatVariantReport(noisy);
  EXPECT_NE(text.find("~2.00x ["), std::string::npos) << text;
  EXPECT_NE(text.find("~ noisy: timed while the machine was busy"), std::string::npos) << text;
  EXPECT_EQ(FormatVariantReport(quiet).find('~'), std::string::npos);
  // Faster is an improvement, counted apart.
  VariantReport faster = CompareVariant(head, base, true);
  EXPECT_EQ(faster.improvements, 0);  // head (base here) noisy: overlap again
  head[0].result.noisy = 0;
  faster = CompareVariant(head, base, true);
  EXPECT_EQ(faster.improvements, 1);
  EXPECT_NE(FormatVariantReport(faster).find("0 regressions, 1 improvements"), std::string::npos);
}

}  // namespace
}  // namespace compatlab
