#include "plan/plan.h"

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "core/fields.h"
#include "gtest/gtest.h"
#include "plan/testing.h"

namespace compatlab {
namespace {

ModelCatalog TestCatalog() { return PlanTestCatalog(); }
std::map<std::string, TargetProfile> Profiles() { return PlanTestProfiles(); }

TEST(PlanTest, ExpandsTheMatrixInOrderWithHeadClasses) {
  Suite suite;
  suite.name = "t";
  suite.models = {"llama", "bert"};
  suite.seq_lens = {32, 64};
  ModelCatalog catalog = TestCatalog();
  auto plan = ExpandPlan(suite, {}, &catalog, Profiles());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 4u);
  EXPECT_EQ((*plan)[0].model_id, "hf:llama");
  EXPECT_EQ((*plan)[0].model_class, "LlamaForCausalLM");
  EXPECT_EQ((*plan)[1].seq_len, 64);
  EXPECT_EQ((*plan)[2].model_class, "BertForMaskedLM");
  EXPECT_EQ(PlanModelTypes(*plan), (std::vector<std::string>{"llama", "bert"}));
}

TEST(PlanTest, OverridesReplaceModelsKindsAndTimeout) {
  Suite suite;
  suite.name = "t";
  suite.models = {"llama"};
  ModelCatalog catalog = TestCatalog();
  PlanOverrides o;
  o.models = {"bert"};
  o.kinds = {"forward", "train"};
  o.timeout_s = 7;
  auto plan = ExpandPlan(suite, o, &catalog, Profiles());
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->size(), 2u);
  EXPECT_EQ((*plan)[1].kind, "train");
  EXPECT_EQ((*plan)[1].model_type, "bert");
  EXPECT_EQ((*plan)[1].timeout_s, 7);
}

TEST(PlanTest, UnknownModelTypeIsAnError) {
  Suite suite;
  suite.name = "t";
  suite.models = {"llama", "gpt-17"};
  ModelCatalog catalog = TestCatalog();
  auto plan = ExpandPlan(suite, {}, &catalog, Profiles());
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(std::string(plan.status().message()).find("gpt-17"), std::string::npos);
}

TEST(PlanTest, AllModelsTakesEveryRegisteredType) {
  Suite suite;
  suite.name = "t";
  suite.all_models = true;
  ModelCatalog catalog = TestCatalog();
  auto plan = ExpandPlan(suite, {}, &catalog, Profiles());
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->size(), 3u);
}

TEST(PlanTest, RepeatedHarnessTestsHaveDistinctIds) {
  Suite suite;
  suite.name = "noop";
  suite.tests.push_back({"noop", std::nullopt, 300, {}});
  suite.tests.push_back({"hang", 2.0, 1, {}});
  EXPECT_FALSE(PlanNeedsCatalog(suite, {}));
  auto plan = ExpandPlan(suite, {}, nullptr, Profiles());
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->size(), 301u);
  std::set<std::string> ids;
  for (const TestSpec& s : *plan) ids.insert(s.TestId());
  EXPECT_EQ(ids.size(), 301u);
  EXPECT_EQ(plan->back().timeout_s, 2.0);
  EXPECT_EQ(plan->front().model_id, "none");
}

TEST(PlanTest, CheckpointReplacesTheSuiteModels) {
  Suite suite;
  suite.name = "t";
  suite.models = {"llama", "bert"};
  PlanOverrides o;
  o.checkpoint = CheckpointInfo{"llama", "LlamaForCausalLM", "causal_lm"};
  o.checkpoint_dir = "/tmp/ckpt";
  o.checkpoint_hash = "abc";
  EXPECT_FALSE(PlanNeedsCatalog(suite, o));
  auto plan = ExpandPlan(suite, o, nullptr, Profiles());
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->size(), 1u);
  EXPECT_EQ((*plan)[0].model_id, "ckpt:abc");
  EXPECT_EQ((*plan)[0].model_path, "/tmp/ckpt");
}

TEST(PlanTest, CompileModeTakesTheProfilesBackendAndKindsGetTheirParameters) {
  Suite suite;
  suite.name = "t";
  suite.models = {"llama"};
  ModelCatalog catalog = TestCatalog();
  PlanOverrides o;
  o.targets = {"cpu", "dev"};
  o.modes = {"eager", "compile"};
  o.kinds = {"generate", "train"};
  o.seq_lens = {128, 512};
  o.new_tokens = 4;
  auto plan = ExpandPlan(suite, o, &catalog, Profiles());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 2u * 2 * 2 * 2);
  std::set<std::string> seen;
  for (const TestSpec& s : *plan) {
    seen.insert(absl::StrCat(s.target, "/", s.mode, "/", s.backend));
    if (s.kind == "generate") {
      EXPECT_EQ(s.kind_params.at("new_tokens"), "4");
    } else {
      EXPECT_EQ(s.kind_params.at("steps"), "3");
    }
  }
  EXPECT_EQ(seen, (std::set<std::string>{"cpu/eager/", "cpu/compile/cpu-backend", "dev/eager/",
                                         "dev/compile/dev-backend"}));
  o.backend = "aot_eager";
  plan = ExpandPlan(suite, o, &catalog, Profiles());
  ASSERT_TRUE(plan.ok());
  for (const TestSpec& s : *plan) EXPECT_EQ(s.backend, s.mode == "compile" ? "aot_eager" : "");
}

TEST(PlanTest, RefusesUnknownModesDtypesAndShapes) {
  Suite suite;
  suite.name = "t";
  suite.models = {"llama"};
  ModelCatalog catalog = TestCatalog();
  PlanOverrides o;
  o.modes = {"jit"};
  EXPECT_FALSE(ExpandPlan(suite, o, &catalog, Profiles()).ok());
  o.modes = {"export"};
  EXPECT_TRUE(ExpandPlan(suite, o, &catalog, Profiles()).ok());
  o = {};
  o.dtypes = {"int8"};
  EXPECT_FALSE(ExpandPlan(suite, o, &catalog, Profiles()).ok());
  o = {};
  o.seq_lens = {0};
  EXPECT_FALSE(ExpandPlan(suite, o, &catalog, Profiles()).ok());
  o = {};
  o.new_tokens = 0;
  EXPECT_FALSE(ExpandPlan(suite, o, &catalog, Profiles()).ok());
}

TEST(PlanTest, LoadExpandsIntoSingleStreamOfflineAndOneServerTestPerRate) {
  Suite suite;
  suite.name = "t";
  suite.models = {"llama"};
  ModelCatalog catalog = TestCatalog();
  PlanOverrides o;
  o.kinds = {"load"};
  auto plan = ExpandPlan(suite, o, &catalog, Profiles());
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::vector<std::string> rows;
  for (const TestSpec& s : *plan) {
    rows.push_back(KindParamsToJson(s.kind_params));
  }
  EXPECT_EQ(rows, (std::vector<std::string>{
                      R"({"new_tokens":"16","requests":"32","scenario":"single_stream"})",
                      R"({"new_tokens":"16","requests":"32","scenario":"offline"})",
                      R"({"new_tokens":"16","rate":"0.5x","requests":"32","scenario":"server"})",
                      R"({"new_tokens":"16","rate":"0.9x","requests":"32","scenario":"server"})",
                      R"({"new_tokens":"16","rate":"1.5x","requests":"32","scenario":"server"})"}));

  // Rates and the objective in canonical form; a rate given twice is planned once.
  o.load_rates = {"2.50x", "2.5x", "0.25x"};
  o.load_slo = "itl=0.050,ttft=1";
  o.load_requests = 8;
  o.new_tokens = 4;
  plan = ExpandPlan(suite, o, &catalog, Profiles());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 4u);
  EXPECT_EQ(
      KindParamsToJson((*plan)[2].kind_params),
      R"({"new_tokens":"4","rate":"2.5x","requests":"8","scenario":"server","slo":"ttft=1,itl=0.05"})");
  EXPECT_EQ((*plan)[3].kind_params.at("rate"), "0.25x");
}

// Expects every test of `plan` for which `group_row` names a row to name one planned before
// it, of its model, mode and shape, with `scenario`. Returns how many tests named one.
int ExpectLoadGroupRowsPlannedBefore(const std::vector<TestSpec>& plan, std::string_view scenario,
                                     std::optional<std::string> (*group_row)(const TestSpec&)) {
  std::map<std::string, size_t> at;  // test id -> plan position
  int named = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    const TestSpec& s = plan[i];
    if (s.kind == "load" && s.kind_params.at("scenario") == scenario) at[s.TestId()] = i;
    const std::optional<std::string> row = group_row(s);
    if (!row) continue;
    ++named;
    if (!at.count(*row)) {
      ADD_FAILURE() << "no " << scenario << " row before " << KindParamsToJson(s.kind_params);
      continue;
    }
    const TestSpec& before = plan[at[*row]];
    EXPECT_EQ(before.model_id, s.model_id);
    EXPECT_EQ(before.mode, s.mode);
    EXPECT_EQ(before.seq_len, s.seq_len);
  }
  return named;
}

TEST(PlanTest, EveryLoadRowNamesTheRowsOfItsGroupItWaitsForPlannedBeforeIt) {
  Suite suite;
  suite.name = "t";
  suite.models = {"llama", "bert"};
  suite.modes = {"eager", "compile"};
  suite.seq_lens = {16, 32};
  ModelCatalog catalog = TestCatalog();
  PlanOverrides o;
  o.kinds = {"load", "forward"};
  auto plan = ExpandPlan(suite, o, &catalog, Profiles());
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (const TestSpec& s : *plan) {
    const std::string scenario = s.kind == "load" ? s.kind_params.at("scenario") : "";
    EXPECT_EQ(IsLoadSingleStream(s), scenario == "single_stream");
    EXPECT_EQ(IsLoadOffline(s), scenario == "offline");
    EXPECT_EQ(LoadBaseTestId(s).has_value(), scenario == "server");
    EXPECT_EQ(LoadSloTestId(s).has_value(), scenario == "offline" || scenario == "server");
  }
  // Server rows: their offline row, the base; offline and server rows: their single_stream
  // row, the objective. models x modes x shapes x (3 rates, and the offline row).
  EXPECT_EQ(ExpectLoadGroupRowsPlannedBefore(*plan, "offline", &LoadBaseTestId), 2 * 2 * 2 * 3);
  EXPECT_EQ(ExpectLoadGroupRowsPlannedBefore(*plan, "single_stream", &LoadSloTestId),
            2 * 2 * 2 * 4);

  o.load_slo = "ttft=1,itl=0.05";  // an objective given: no row takes another's
  plan = ExpandPlan(suite, o, &catalog, Profiles());
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (const TestSpec& s : *plan) EXPECT_FALSE(LoadSloTestId(s).has_value()) << s.TestId();
}

TEST(PlanTest, RefusesBadLoadRatesObjectivesAndRequestCounts) {
  Suite suite;
  suite.name = "t";
  suite.models = {"llama"};
  ModelCatalog catalog = TestCatalog();
  for (const char* rate : {"0.9", "x", "-1x", "0x", "nanx", "infx", "1e9x", "2xx"}) {
    PlanOverrides o;
    o.kinds = {"load"};
    o.load_rates = {rate};
    auto plan = ExpandPlan(suite, o, &catalog, Profiles());
    ASSERT_FALSE(plan.ok()) << rate;
    EXPECT_NE(plan.status().message().find("--rates"), std::string::npos) << plan.status();
  }
  for (const char* slo :
       {"ttft=1", "ttft=1,itl=0", "ttft=1,itl=1,ttft=2", "ttft=1,tpot=1", "ttft=a,itl=1"}) {
    PlanOverrides o;
    o.kinds = {"load"};
    o.load_slo = slo;
    auto plan = ExpandPlan(suite, o, &catalog, Profiles());
    ASSERT_FALSE(plan.ok()) << slo;
    EXPECT_NE(plan.status().message().find("--slo"), std::string::npos) << plan.status();
  }
  PlanOverrides o;
  o.kinds = {"load"};
  o.load_requests = 0;
  EXPECT_FALSE(ExpandPlan(suite, o, &catalog, Profiles()).ok());
}

TEST(PlanTest, AnHfIdIsPlannedExactlyAsItsType) {
  Suite suite;
  suite.name = "t";
  suite.models = {"llama"};
  suite.modes = {"eager", "compile"};
  ModelCatalog catalog = TestCatalog();
  PlanOverrides bare;
  bare.models = {"llama"};
  bare.baseline = {"bert"};
  PlanOverrides prefixed;
  prefixed.models = {"hf:llama", "llama"};
  prefixed.baseline = {"hf:bert"};
  auto a = ExpandPlan(suite, bare, &catalog, Profiles());
  auto b = ExpandPlan(suite, prefixed, &catalog, Profiles());
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  std::vector<std::string> ids_a, ids_b;
  for (const TestSpec& s : *a) ids_a.push_back(s.TestId());
  for (const TestSpec& s : *b) ids_b.push_back(s.TestId());
  EXPECT_EQ(ids_a, ids_b);
  EXPECT_EQ(ids_a.size(), 4u);
  suite.models = {"hf:bert"};  // a suite's list too
  auto c = ExpandPlan(suite, {}, &catalog, Profiles());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)[0].model_id, "hf:bert");
}

TEST(CheckPlanFlagsTest, CountsSizeAndWeightsBesideAnOwnModel) {
  EXPECT_TRUE(CheckPlanFlags({}).ok());
  PlanOverrides o;
  o.train_steps = 4097;
  EXPECT_EQ(CheckPlanFlags(o).message(), "--new-tokens and --train-steps must be from 1 to 4096");
  o = {};
  o.size = "huge";
  EXPECT_EQ(CheckPlanFlags(o).message(), "--size huge: not reduced or full");
  o.size = "full";
  EXPECT_TRUE(CheckPlanFlags(o).ok());
  o.code_model = CodeModelInfo{};
  EXPECT_NE(CheckPlanFlags(o).message().find("a checkpoint or code model"), std::string::npos);
  o.size = "reduced";
  EXPECT_TRUE(CheckPlanFlags(o).ok());
  o.weights = true;
  EXPECT_FALSE(CheckPlanFlags(o).ok());
}

TEST(ModelTestTest, APartialTestCarriesTheModelItsBuildSettingsAndTheDeadline) {
  ModelChoice m{"ckpt:abc", "llama", "LlamaForCausalLM",
                "/c",       {"X"},   {{"trust_remote_code", "true"}}};
  TestSpec s = ModelTest(m, 42);
  EXPECT_EQ(s.model_id, "ckpt:abc");
  EXPECT_EQ(s.model_type, "llama");
  EXPECT_EQ(s.model_class, "LlamaForCausalLM");
  EXPECT_EQ(s.model_path, "/c");
  EXPECT_EQ(s.kind_params, m.kind_params);
  EXPECT_EQ(s.timeout_s, 42);
}

TEST(HarnessTestsTest, RepeatsAreNumberedAndTheTimeoutFlagWins) {
  Suite suite;
  suite.timeout_s = 9;
  suite.tests.push_back({"noop", std::nullopt, 2, {}});
  suite.tests.push_back({"hang", 2.0, 1, {{"x", "1"}}});
  std::vector<TestSpec> tests = HarnessTests(suite, {});
  ASSERT_EQ(tests.size(), 3u);
  EXPECT_EQ(tests[1].kind_params.at("rep"), "1");
  EXPECT_EQ(tests[1].timeout_s, 9);
  EXPECT_EQ(tests[2].kind_params, (std::map<std::string, std::string>{{"x", "1"}}));
  EXPECT_EQ(tests[2].timeout_s, 2);
  EXPECT_TRUE(tests[2].IsHarness());
  PlanOverrides o;
  o.timeout_s = 5;
  EXPECT_EQ(HarnessTests(suite, o)[2].timeout_s, 5);
}

TEST(CheckDistinctTestsTest, NamesTheFirstTestPlannedTwice) {
  TestSpec a;
  a.model_id = "hf:a";
  TestSpec b = a;
  b.model_id = "hf:b";
  b.kind = "train";
  EXPECT_TRUE(CheckDistinctTests({a, b}).ok());
  EXPECT_EQ(CheckDistinctTests({a, b, a, b}).message(),
            "the plan holds the same test twice (hf:a forward); give repeated harness tests a "
            "'repeat' instead");
}

}  // namespace
}  // namespace compatlab

namespace compatlab {
namespace {

PlanOverrides CodeModel() {
  PlanOverrides o;
  o.code_model = CodeModelInfo{
      "llama",     "LlamaForCausalLM",   "LlamaForCausalLM",
      "causal_lm", std::string(64, 'a'), {{"/m/attn.py", "attn.py", std::string(64, 'a')}}};
  o.code_model_id = CodeModelId("/m/attn.py", "build", std::string(64, 'a'));
  o.code_model_spec = "/m/attn.py:build";
  return o;
}

TEST(CodeModelTest, IdNamesTheFileAndFunctionAndHoldsTheHashPrefix) {
  EXPECT_EQ(CodeModelId("/m/attn.py", "build", "0123456789abcdef" + std::string(48, '0')),
            "code:attn.build@0123456789abcdef");
  EXPECT_TRUE(IsCodeModelId("code:attn.build@0123456789abcdef"));
  EXPECT_FALSE(IsCodeModelId("hf:llama"));
}

TEST(CodeModelTest, OneFileKeepsItsOwnHashAndSeveralHashTheirManifestByRelativePath) {
  EXPECT_EQ(CodeFilesDigest({{"/m/attn.py", "attn.py", std::string(64, 'c')}}),
            std::string(64, 'c'));
  // The same value as the probe's code_model.files_digest (probe/tests/test_code_model.py).
  const std::string digest = "d928dfe3a1ab3743d8b28b35649b7d00f9161e0b91fb5043a9fdc1be93a8a55e";
  EXPECT_EQ(CodeFilesDigest({{"/m/b.py", "b.py", std::string(64, 'b')},
                             {"/m/a/x.py", "a/x.py", std::string(64, 'a')}}),
            digest);
  EXPECT_NE(CodeFilesDigest({{"/m/b.py", "b.py", std::string(64, 'b')},
                             {"/m/a/x.py", "a/x.py", std::string(63, 'a') + "0"}}),
            digest);
}

TEST(CodeModelTest, SplitsFileAndFunctionAndRefusesMalformedSpecs) {
  auto parts = SplitModelCode("/a:b/attn.py:build_2");
  ASSERT_TRUE(parts.ok()) << parts.status();
  EXPECT_EQ(parts->first, "/a:b/attn.py");
  EXPECT_EQ(parts->second, "build_2");
  for (const char* bad :
       {"attn.py", "attn.py:", ":build", "attn.txt:build", "attn.py:2x", "attn.py:a-b"}) {
    EXPECT_FALSE(SplitModelCode(bad).ok()) << bad;
  }
}

TEST(CodeModelTest, ReplacesTheSuitesModelsAndPlansTheBaselineBeside) {
  Suite suite;
  suite.name = "t";
  suite.models = {"bert"};
  suite.modes = {"eager", "compile"};
  suite.seq_lens = {16};
  PlanOverrides o = CodeModel();
  EXPECT_FALSE(PlanNeedsCatalog(suite, o));
  auto alone = ExpandPlan(suite, o, nullptr, Profiles());
  ASSERT_TRUE(alone.ok()) << alone.status();
  ASSERT_EQ(alone->size(), 2u);
  EXPECT_EQ((*alone)[0].model_id, "code:attn.build@aaaaaaaaaaaaaaaa");
  EXPECT_EQ((*alone)[0].model_path, "/m/attn.py:build");
  EXPECT_EQ((*alone)[0].model_type, "llama");

  o.baseline = {"llama"};
  EXPECT_TRUE(PlanNeedsCatalog(suite, o));
  ModelCatalog catalog = TestCatalog();
  auto plan = ExpandPlan(suite, o, &catalog, Profiles());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 4u);
  std::multiset<std::string> variant, baseline;
  for (const TestSpec& s : *plan) {
    (s.model_id == "hf:llama" ? baseline : variant).insert(s.mode + " " + s.backend);
    EXPECT_EQ(s.seq_len, 16);
  }
  EXPECT_EQ(variant, baseline);
  EXPECT_EQ(baseline.size(), 2u);
}

TEST(CodeModelTest, ASuitesCodeModelsArePlannedInItsOrderUnlessModelsReplaceThem) {
  Suite suite;
  suite.name = "t";
  suite.code_models = {"a.py:one", "a.py:two"};
  suite.kinds = {"forward", "train"};
  PlanOverrides o;
  CodeModelInfo info;
  info.model_class = "Layer";
  o.suite_code_models = {{"code:a.one@aaaaaaaaaaaaaaaa", "/s/a.py:one", info},
                         {"code:a.two@aaaaaaaaaaaaaaaa", "/s/a.py:two", info}};
  EXPECT_FALSE(PlanNeedsCatalog(suite, o));
  auto plan = ExpandPlan(suite, o, nullptr, Profiles());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 4u);
  EXPECT_EQ((*plan)[0].model_id, "code:a.one@aaaaaaaaaaaaaaaa");
  EXPECT_EQ((*plan)[0].model_path, "/s/a.py:one");
  EXPECT_EQ((*plan)[0].model_class, "Layer");
  EXPECT_EQ((*plan)[1].kind, "train");
  EXPECT_EQ((*plan)[3].model_id, "code:a.two@aaaaaaaaaaaaaaaa");

  o.models = {"llama"};  // --models replaces the suite's models, its code models too
  ModelCatalog catalog = TestCatalog();
  auto replaced = ExpandPlan(suite, o, &catalog, Profiles());
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  for (const TestSpec& s : *replaced) EXPECT_EQ(s.model_id, "hf:llama");
  EXPECT_FALSE(PlansSuiteCodeModels(o));
}

TEST(CodeModelTest, BaselineHubIdsAreResolvedLikeModels) {
  Suite suite;
  suite.name = "t";
  PlanOverrides o = CodeModel();
  o.baseline = {"hub:org/name"};
  EXPECT_EQ(PlanHubModels(suite, o), (std::vector<std::string>{"hub:org/name"}));
  EXPECT_FALSE(PlanNeedsCatalog(suite, o));
}

TEST(CheckpointTest, CustomCodeRunsOnlyWithTrustRemoteCode) {
  Suite suite;
  suite.name = "t";
  PlanOverrides o;
  o.checkpoint = CheckpointInfo{"tiny", "TinyForCausalLM", "causal_lm", true};
  o.checkpoint_dir = "/tmp/ckpt";
  o.checkpoint_hash = "abc";
  auto refused = ExpandPlan(suite, o, nullptr, Profiles());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("--trust-remote-code"), std::string::npos);
  o.trust_remote_code = true;
  auto plan = ExpandPlan(suite, o, nullptr, Profiles());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ((*plan)[0].kind_params.at("trust_remote_code"), "true");
}

TEST(CatalogTest, ProbeFailureTextIsTheWholeError) {
  EXPECT_EQ(ProbeFailureText("noise\n{\"error\": \"PermissionError: custom code\"}\n", ""),
            "PermissionError: custom code");
  EXPECT_EQ(ProbeFailureText("", "Traceback\nValueError: bad\n"), "Traceback\nValueError: bad");
  EXPECT_EQ(ProbeFailureText("Do you wish to run the custom code? [y/N] ", ""),
            "Do you wish to run the custom code? [y/N]");
  EXPECT_EQ(ProbeFailureText("", ""), "(no output)");
  auto info = ParseCodeModelInfo(
      R"({"code": {"model_type": "llama", "model_class": "MyLlama", "head_class": "LlamaForCausalLM",
                   "head_kind": "causal_lm", "sha256": ")" +
      std::string(64, 'b') + R"(", "files": [{"path": "/m/a.py", "rel": "a.py", "sha256": ")" +
      std::string(64, 'b') + "\"}]}}");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->model_class, "MyLlama");
  ASSERT_EQ(info->files.size(), 1u);
  EXPECT_EQ(info->files[0].rel, "a.py");
  EXPECT_FALSE(ParseCodeModelInfo(R"({"code": {"model_class": "X", "sha256": ")" +
                                  std::string(64, 'b') + "\"}}")
                   .ok());  // no code files
  EXPECT_FALSE(ParseCodeModelInfo(R"({"code": {"model_class": "X", "sha256": "short"}})").ok());

  const std::string one = R"({"model_class": "L", "sha256": ")" + std::string(64, 'c') +
                          R"(", "files": [{"path": "/s/a.py", "rel": "a.py", "sha256": ")" +
                          std::string(64, 'c') + "\"}]}";
  auto infos = ParseCodeModelInfos(R"({"codes": [)" + one + "," + one + "]}", 2);
  ASSERT_TRUE(infos.ok()) << infos.status();
  EXPECT_EQ(infos->size(), 2u);
  EXPECT_EQ((*infos)[1].model_class, "L");
  EXPECT_FALSE(ParseCodeModelInfos(R"({"codes": [)" + one + "]}", 2).ok());  // one short
  EXPECT_FALSE(ParseCodeModelInfos(R"({"codes": [1, 2]})", 2).ok());
  EXPECT_FALSE(ParseCodeModelInfos(R"({"code": )" + one + "}", 1).ok());
}

}  // namespace
}  // namespace compatlab
