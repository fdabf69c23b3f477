#include "sweep/resolve.h"

#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "store/testing.h"

namespace compatlab {
namespace {

ModelCatalog Catalog() {
  ModelCatalog catalog;
  catalog.transformers_version = "5.x";
  catalog.models["llama"] = {"LlamaConfig",
                             "LlamaForCausalLM",
                             "causal_lm",
                             "text",
                             {"LlamaForCausalLM", "LlamaForSequenceClassification"}};
  catalog.models["bert"] = {"BertConfig", "BertForMaskedLM", "masked_lm", "text", {}};
  return catalog;
}

// A profile given as a value, as if read from a file whose compile options
// leave "dynamic" unset.
std::map<std::string, TargetProfile> Profiles() {
  TargetProfile p;
  p.name = "dev";
  p.device = "cpu";
  p.backend = "aot_eager";
  p.compile_options_json = R"({"fullgraph":false})";
  p.json = R"({"name":"dev","device":"cpu","compile":{"backend":"aot_eager"}})";
  return {{"dev", p}};
}

Suite CompileSuite() {
  Suite suite;
  suite.name = "s";
  suite.models = {"llama"};
  suite.targets = {"dev"};
  suite.modes = {"eager", "compile"};
  suite.seq_lens = {16, 32};
  HarnessTest noop;
  noop.kind = "noop";
  suite.tests = {noop};
  return suite;
}

TestExecution Base() {
  TestExecution base;
  base.python = "/venv/bin/python";
  base.probe_dir = "/home/probe";
  base.warm = true;
  base.measure.min_iters = 4;
  base.mem_limit_bytes = int64_t{1} << 30;
  return base;
}

TEST(ResolvePlanTest, EveryCompiledShapeOfASeveralShapePlanGetsStaticShapes) {
  ModelCatalog catalog = Catalog();
  auto plan = ResolvePlan(CompileSuite(), {}, Base(), &catalog, Profiles());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->tests.size(), 5u);  // 2 modes x 2 shapes + noop
  EXPECT_EQ(plan->suite, "s");
  int compiled = 0;
  for (const ResolvedTest& t : plan->tests) {
    ASSERT_TRUE(t.execution.has_value());
    SCOPED_TRACE(t.spec.kind + " " + t.spec.mode + " " + std::to_string(t.spec.seq_len));
    EXPECT_EQ(t.execution->python, "/venv/bin/python");
    EXPECT_EQ(t.execution->measure.min_iters, 4);
    EXPECT_TRUE(t.execution->warm);
    if (t.spec.model_id == "none") {
      EXPECT_EQ(t.execution->target_profile_json, "");
      EXPECT_EQ(t.execution->compile_options_json, "");
      continue;
    }
    EXPECT_EQ(t.execution->target_profile_json, Profiles().at("dev").json);
    if (t.spec.mode == "compile") {
      ++compiled;
      EXPECT_EQ(t.execution->compile_options_json, R"({"dynamic":false,"fullgraph":false})");
    } else {
      EXPECT_EQ(t.execution->compile_options_json, "");
    }
  }
  EXPECT_EQ(compiled, 2);
}

TEST(ResolvePlanTest, OneShapeKeepsTheProfilesCompileOptions) {
  Suite suite = CompileSuite();
  suite.seq_lens = {16};
  ModelCatalog catalog = Catalog();
  auto plan = ResolvePlan(suite, {}, Base(), &catalog, Profiles());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->tests[1].spec.mode, "compile");
  EXPECT_EQ(plan->tests[1].execution->compile_options_json, R"({"fullgraph":false})");
}

TEST(ResolvePlanTest, TheDecisionDoesNotDependOnWhichTestsAreLeft) {
  // The same plan, resolved twice, is equal test by test: nothing depends on
  // what a resume would still have to run.
  ModelCatalog catalog = Catalog();
  auto a = ResolvePlan(CompileSuite(), {}, Base(), &catalog, Profiles());
  auto b = ResolvePlan(CompileSuite(), {}, Base(), &catalog, Profiles());
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < a->tests.size(); ++i) {
    EXPECT_EQ(a->tests[i].spec.TestId(), b->tests[i].spec.TestId());
    EXPECT_TRUE(*a->tests[i].execution == *b->tests[i].execution);
  }
}

TEST(ResolvePlanTest, ReportsExpansionErrors) {
  ModelCatalog catalog = Catalog();
  PlanOverrides overrides;
  overrides.models = {"nosuch"};
  auto plan = ResolvePlan(CompileSuite(), overrides, Base(), &catalog, Profiles());
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("nosuch"), std::string::npos);
}

std::vector<ResolvedTest> StoredPlan() {
  ModelCatalog catalog = Catalog();
  auto plan = ResolvePlan(CompileSuite(), {}, Base(), &catalog, Profiles());
  EXPECT_TRUE(plan.ok());
  return plan->tests;
}

TEST(ResolvePlanTest, ADynamicTestIsOneTestOverEveryShapeWithItsOwnCompileOptions) {
  ModelCatalog catalog = Catalog();
  PlanOverrides overrides;
  overrides.dynamic = {"static", "true", "mark"};
  overrides.seq_lens = {16, 32, 64};
  auto plan = ResolvePlan(CompileSuite(), overrides, Base(), &catalog, Profiles());
  ASSERT_TRUE(plan.ok()) << plan.status();
  // eager: 3 shapes; compile: 3 static shapes, one true and one mark test; noop.
  ASSERT_EQ(plan->tests.size(), 3u + 3u + 2u + 1u);
  std::map<std::string, const ResolvedTest*> dynamic;
  std::set<std::string> ids;
  for (const ResolvedTest& t : plan->tests) {
    ids.insert(t.spec.TestId());
    if (t.spec.mode == "eager") {
      EXPECT_FALSE(t.spec.IsDynamic());
    }
    if (t.spec.IsDynamic()) dynamic[t.spec.dynamic] = &t;
  }
  EXPECT_EQ(ids.size(), plan->tests.size());
  ASSERT_EQ(dynamic.size(), 2u);
  for (const auto& [setting, test] : dynamic) {
    SCOPED_TRACE(setting);
    EXPECT_EQ(test->spec.shapes, "1x16,1x32,1x64");
    EXPECT_EQ(test->spec.seq_len, 16);  // its first shape
    EXPECT_EQ(test->spec.batch_size, 1);
  }
  EXPECT_EQ(dynamic.at("true")->execution->compile_options_json,
            R"({"dynamic":true,"fullgraph":false})");
  EXPECT_EQ(dynamic.at("mark")->execution->compile_options_json,
            R"({"dynamic":false,"fullgraph":false})");
}

TEST(ResolvePlanTest, DynamicTrueOrMarkNeedsACompiledForwardTest) {
  ModelCatalog catalog = Catalog();
  PlanOverrides overrides;
  overrides.dynamic = {"true"};
  overrides.modes = {"eager"};
  auto plan = ResolvePlan(CompileSuite(), overrides, Base(), &catalog, Profiles());
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("--dynamic true or mark applies to mode compile"),
            std::string::npos)
      << plan.status();
  overrides.modes = {};
  overrides.dynamic = {"sometimes"};
  plan = ResolvePlan(CompileSuite(), overrides, Base(), &catalog, Profiles());
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("unknown --dynamic 'sometimes'"), std::string::npos);
  overrides.dynamic = {"true", "true"};
  plan = ResolvePlan(CompileSuite(), overrides, Base(), &catalog, Profiles());
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("twice"), std::string::npos);
}

TEST(CheckResumeFlagsTest, ADynamicPlanResumesWithItsDynamicSettingAndAllItsShapes) {
  ModelCatalog catalog = Catalog();
  PlanOverrides overrides;
  overrides.dynamic = {"true"};
  overrides.modes = {"compile"};
  overrides.seq_lens = {16, 32, 64};
  auto plan = ResolvePlan(CompileSuite(), overrides, Base(), &catalog, Profiles());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->tests.size(), 2u);  // the dynamic test and noop
  PlanFlags flags;
  flags.dynamic = {"true"};
  flags.seq_lens = {64, 16, 32};  // a dynamic test's seq_len is its first shape's only
  absl::Status s = CheckResumeFlags(flags, "s", plan->tests);
  EXPECT_TRUE(s.ok()) << s;
  flags.seq_lens = {16};
  s = CheckResumeFlags(flags, "s", plan->tests);
  EXPECT_NE(s.message().find("--seq-lens 16 differs from the stored plan (--seq-lens 16,32,64)"),
            std::string::npos)
      << s;
  flags.seq_lens = {};
  flags.dynamic = {"static"};
  s = CheckResumeFlags(flags, "s", plan->tests);
  EXPECT_NE(s.message().find("--dynamic static differs from the stored plan (--dynamic true)"),
            std::string::npos)
      << s;
  // A static plan's compiled forward tests are static.
  flags.dynamic = {"static"};
  s = CheckResumeFlags(flags, "s", StoredPlan());
  EXPECT_TRUE(s.ok()) << s;
}

TEST(CheckResumeFlagsTest, AcceptsNoFlagsAndFlagsEqualToTheStoredPlan) {
  EXPECT_TRUE(CheckResumeFlags({}, "s", StoredPlan()).ok());
  PlanFlags flags;
  flags.suite = "suites/s.json";
  flags.models = {"llama"};
  flags.modes = {"compile", "eager"};
  flags.seq_lens = {32, 16};
  flags.targets = {"/tmp/gone/dev.json"};
  flags.backend = "aot_eager";
  flags.python = "/venv/bin/python";
  flags.warm = true;
  absl::Status s = CheckResumeFlags(flags, "s", StoredPlan());
  EXPECT_TRUE(s.ok()) << s;
}

TEST(CheckResumeFlagsTest, RanksAndParallelMustBeTheStoredPlans) {
  PlanFlags flags;
  flags.ranks = {1};
  EXPECT_TRUE(CheckResumeFlags(flags, "s", StoredPlan()).ok());
  flags.ranks = {2};
  EXPECT_EQ(CheckResumeFlags(flags, "s", StoredPlan()).message(),
            "--resume: --ranks 2 differs from the stored plan (--ranks 1)");
  flags = {};
  flags.parallel = "dp";
  EXPECT_NE(CheckResumeFlags(flags, "s", StoredPlan()).message().find("--parallel dp"),
            std::string::npos);
}

TEST(CheckResumeFlagsTest, AHarnessOnlyPlanTakesItsOwnPython) {
  ResolvedTest noop;
  noop.spec.model_id = std::string(kHarnessModelId);
  noop.spec.kind = "noop";
  noop.execution = Base();
  PlanFlags flags;
  flags.python = "/venv/bin/python";
  absl::Status s = CheckResumeFlags(flags, "s", {noop});
  EXPECT_TRUE(s.ok()) << s;
  flags.python = "/usr/bin/python3";
  EXPECT_EQ(CheckResumeFlags(flags, "s", {noop}).message(),
            "--resume: --python /usr/bin/python3 differs from the stored plan (--python "
            "/venv/bin/python)");
}

TEST(CheckResumeFlagsTest, NamesTheFirstFlagThatDiffers) {
  PlanFlags flags;
  flags.seq_lens = {16, 64};
  flags.backend = "inductor";
  absl::Status s = CheckResumeFlags(flags, "s", StoredPlan());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "--resume: --seq-lens 16,64 differs from the stored plan (--seq-lens 16,32)");
  flags = {};
  flags.backend = "inductor";
  EXPECT_NE(CheckResumeFlags(flags, "s", StoredPlan()).message().find("--backend inductor"),
            std::string::npos);
  flags = {};
  flags.suite = "other";
  EXPECT_NE(CheckResumeFlags(flags, "s", StoredPlan()).message().find("--suite"),
            std::string::npos);
  flags = {};
  flags.python = "/usr/bin/python3";
  EXPECT_NE(CheckResumeFlags(flags, "s", StoredPlan()).message().find("--python"),
            std::string::npos);
  flags = {};
  flags.new_tokens = 8;  // the plan has no generate test
  EXPECT_NE(CheckResumeFlags(flags, "s", StoredPlan()).message().find("--new-tokens 8"),
            std::string::npos);
}

TEST(CheckResumeFlagsTest, MaxMeasureSMustEqualTheStoredBudget) {
  PlanFlags flags;
  flags.max_measure_s = kDefaultMaxMeasureS;  // the stored plan's
  EXPECT_TRUE(CheckResumeFlags(flags, "s", StoredPlan()).ok());
  flags.max_measure_s = 30.0;
  absl::Status s = CheckResumeFlags(flags, "s", StoredPlan());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--max-measure-s 30 differs"), std::string::npos) << s;
}

TEST(CheckResumeFlagsTest, LoadFlagsCompareInCanonicalForm) {
  ModelCatalog catalog = Catalog();
  PlanOverrides overrides;
  overrides.kinds = {"load"};
  overrides.load_rates = {"0.5x", "2x"};
  overrides.load_slo = "ttft=0.5,itl=0.05";
  auto plan = ResolvePlan(CompileSuite(), overrides, Base(), &catalog, Profiles());
  ASSERT_TRUE(plan.ok()) << plan.status();
  PlanFlags flags;
  flags.load_rates = {"2.0x", "0.50x"};
  flags.load_slo = "itl=0.05,ttft=0.5";
  flags.load_requests = 32;
  flags.new_tokens = 16;
  absl::Status s = CheckResumeFlags(flags, "s", plan->tests);
  EXPECT_TRUE(s.ok()) << s;
  flags = {};
  flags.load_rates = {"0.5x", "0.9x", "2x"};
  EXPECT_EQ(CheckResumeFlags(flags, "s", plan->tests).message(),
            "--resume: --rates 0.5x,0.9x,2x differs from the stored plan (--rates 0.5x,2x)");
  flags = {};
  flags.load_slo = "ttft=1,itl=0.05";
  EXPECT_NE(CheckResumeFlags(flags, "s", plan->tests).message().find("--slo ttft=1,itl=0.05"),
            std::string::npos);
  flags = {};
  flags.load_requests = 8;
  EXPECT_NE(CheckResumeFlags(flags, "s", plan->tests).message().find("--load-requests 8"),
            std::string::npos);
  flags = {};
  flags.load_rates = {"fast"};  // malformed: the plan's own error
  EXPECT_NE(CheckResumeFlags(flags, "s", plan->tests).message().find("--rates: 'fast'"),
            std::string::npos);
}

TEST(CheckResumeFlagsTest, HeadsCompareWithTheClassesPlannedPerModel) {
  ModelCatalog catalog = Catalog();
  std::vector<ResolvedTest> rule = StoredPlan();  // one class per model
  PlanOverrides overrides;
  overrides.heads = {"all"};
  auto all = ResolvePlan(CompileSuite(), overrides, Base(), &catalog, Profiles());
  ASSERT_TRUE(all.ok()) << all.status();
  PlanFlags flags;
  flags.heads = {"rule"};
  EXPECT_TRUE(CheckResumeFlags(flags, "s", rule).ok());
  EXPECT_NE(CheckResumeFlags(flags, "s", all->tests).message().find("--heads rule differs"),
            std::string::npos);
  flags.heads = {"all"};
  absl::Status s = CheckResumeFlags(flags, "s", all->tests);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_NE(CheckResumeFlags(flags, "s", rule).message().find("resume without --heads"),
            std::string::npos);
  std::set<std::string> classes;
  for (const ResolvedTest& t : all->tests) {
    if (!t.spec.IsHarness()) classes.insert(t.spec.model_class);
  }
  flags.heads.assign(classes.begin(), classes.end());
  s = CheckResumeFlags(flags, "s", all->tests);
  EXPECT_TRUE(s.ok()) << s;
  flags.heads.pop_back();
  EXPECT_NE(CheckResumeFlags(flags, "s", all->tests).message().find("differs from the stored plan"),
            std::string::npos);
}

}  // namespace
}  // namespace compatlab

namespace compatlab {
namespace {

// A stored plan of a code model with its baseline llama.
std::vector<ResolvedTest> CodePlan() {
  ModelCatalog catalog = Catalog();
  PlanOverrides overrides;
  overrides.code_model = CodeModelInfo{
      "llama",     "LlamaForCausalLM",   "LlamaForCausalLM",
      "causal_lm", std::string(64, 'c'), {{"/m/attn.py", "attn.py", std::string(64, 'c')}}};
  overrides.code_model_id = CodeModelId("/m/attn.py", "build", std::string(64, 'c'));
  overrides.code_model_spec = "/m/attn.py:build";
  overrides.baseline = {"llama"};
  auto plan = ResolvePlan(CompileSuite(), overrides, Base(), &catalog, Profiles());
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan->tests;
}

TEST(CheckResumeFlagsTest, ModelCodeAndBaselineMustBeTheStoredOnes) {
  PlanFlags flags;
  flags.model_code = "/m/attn.py:build";
  flags.baseline = {"llama"};
  absl::Status same = CheckResumeFlags(flags, "s", CodePlan());
  EXPECT_TRUE(same.ok()) << same;
  flags.model_code = "/m/other.py:build";
  EXPECT_NE(CheckResumeFlags(flags, "s", CodePlan()).message().find("--model-code"),
            std::string::npos);
  flags.model_code = "";
  flags.baseline = {"bert"};
  EXPECT_NE(CheckResumeFlags(flags, "s", CodePlan()).message().find("--baseline bert"),
            std::string::npos);
}

TEST(CheckResumeFlagsTest, AModelIsNamedByItsTypeOrItsHfId) {
  PlanFlags flags;
  flags.models = {"hf:llama"};
  absl::Status s = CheckResumeFlags(flags, "s", StoredPlan());
  EXPECT_TRUE(s.ok()) << s;
  flags.models = {"hf:bert"};
  EXPECT_EQ(CheckResumeFlags(flags, "s", StoredPlan()).message(),
            "--resume: --models bert differs from the stored plan (--models llama)");
  flags = {};
  flags.model_code = "/m/attn.py:build";
  flags.baseline = {"hf:llama"};
  s = CheckResumeFlags(flags, "s", CodePlan());
  EXPECT_TRUE(s.ok()) << s;
  flags.baseline = {"hf:bert"};
  EXPECT_EQ(CheckResumeFlags(flags, "s", CodePlan()).message(),
            "--resume: --baseline hf:bert is not in the stored plan");
}

TEST(CheckResumeFlagsTest, ModelsAndTheirBaselineAreTheStoredModelsTogether) {
  ModelCatalog catalog = Catalog();
  PlanOverrides overrides;
  overrides.models = {"bert"};
  overrides.baseline = {"llama"};
  auto plan = ResolvePlan(CompileSuite(), overrides, Base(), &catalog, Profiles());
  ASSERT_TRUE(plan.ok()) << plan.status();
  PlanFlags flags;
  flags.models = {"bert"};
  flags.baseline = {"hf:llama"};
  absl::Status s = CheckResumeFlags(flags, "s", plan->tests);
  EXPECT_TRUE(s.ok()) << s;
  flags.baseline = {};
  EXPECT_EQ(CheckResumeFlags(flags, "s", plan->tests).message(),
            "--resume: --models bert differs from the stored plan (--models bert,llama)");
}

TEST(CheckResumeFlagsTest, ValueFlagsAreComparedInOrderAfterEveryOneIsParsed) {
  PlanFlags flags;
  flags.size = "full";
  flags.weights = true;
  EXPECT_EQ(CheckResumeFlags(flags, "s", StoredPlan()).message(),
            "--resume: --size full differs from the stored plan (--size reduced)");
  flags.size = "";
  EXPECT_EQ(CheckResumeFlags(flags, "s", StoredPlan()).message(),
            "--resume: --weights pretrained differs from the stored plan (--weights random)");
  flags = {};
  flags.train_steps = 3;  // no train test: differs
  flags.mem_limit_method = "rlimit";
  EXPECT_NE(CheckResumeFlags(flags, "s", StoredPlan()).message().find("--train-steps 3"),
            std::string::npos);
  flags.train_steps.reset();
  EXPECT_NE(CheckResumeFlags(flags, "s", StoredPlan()).message().find("--mem-limit-method"),
            std::string::npos);
  flags.backend = "inductor";     // named first
  flags.model_code = "attn.txt";  // malformed: refused before any comparison
  EXPECT_NE(CheckResumeFlags(flags, "s", StoredPlan()).message().find("--model-code attn.txt"),
            std::string::npos);
}

// A plan request of the shipped suite `suite` whose probe cannot run: only plans that need
// neither the catalog nor the probe load.
PlanRequest NoProbeRequest(const std::string& suite) {
  PlanRequest request;
  request.suite = suite;
  request.base.python = "/nonexistent/python";
  return request;
}

std::filesystem::path ShippedHome() {
  const char* dir = std::getenv("COMPATLAB_SOURCE_DIR");
  return dir != nullptr ? std::filesystem::path(dir) : std::filesystem::current_path();
}

TEST(LoadPlanTest, AsksTheProbeForTheCatalogOnlyWhenThePlanNeedsIt) {
  absl::StatusOr<ResolvedPlan> noop = LoadPlan(NoProbeRequest("noop"), ShippedHome());
  ASSERT_TRUE(noop.ok()) << noop.status();
  EXPECT_EQ(noop->tests.size(), 300u);
  EXPECT_TRUE(absl::IsInternal(LoadPlan(NoProbeRequest("ci"), ShippedHome()).status()));
}

TEST(LoadPlanTest, ABackendOfThePlansProfilesNeedsNoProbe) {
  PlanRequest request = NoProbeRequest("noop");
  request.overrides.backend = "inductor";  // targets/cpu.json's
  EXPECT_TRUE(LoadPlan(request, ShippedHome()).ok());
  request.overrides.backend = "aot_eager";  // checked by the probe, which cannot run
  EXPECT_FALSE(LoadPlan(request, ShippedHome()).ok());
}

TEST(LoadPlanTest, RefusesTwoModelsInPlaceOfTheSuitesBeforeAskingTheProbe) {
  PlanRequest request = NoProbeRequest("ci");
  request.model_code = "/m/attn.py:build";
  request.overrides.models = {"llama"};
  EXPECT_EQ(LoadPlan(request, ShippedHome()).status().message(),
            "--model-code replaces the suite's models; name the model to compare with by "
            "--baseline, not --models");
  request.overrides.models.clear();
  request.model_path = "/m/ckpt";
  EXPECT_EQ(LoadPlan(request, ShippedHome()).status().message(),
            "--model-path and --model-code each name the model: give one");
}

TEST(LoadPlanTest, ASuitesProfilePathNeedsAllowProfilePaths) {
  test::ScopedTempDir dir;
  const std::filesystem::path suite = dir.path() / "p.json";
  std::ofstream(suite) << R"({"name": "p", "targets": ["/tmp/p/prof.json"],
                              "tests": [{"kind": "noop"}]})";
  PlanRequest request = NoProbeRequest(suite.string());
  EXPECT_NE(LoadPlan(request, ShippedHome()).status().message().find("--allow-profile-paths"),
            std::string::npos);
  request.overrides.targets = {"cpu"};  // --targets replaces the suite's
  absl::Status s = LoadPlan(request, ShippedHome()).status();
  EXPECT_TRUE(s.ok()) << s;
}

}  // namespace
}  // namespace compatlab
