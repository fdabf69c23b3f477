#include "plan/models.h"

#include "gtest/gtest.h"
#include "plan/testing.h"

namespace compatlab {
namespace {

constexpr char kQwenCommit[] = "0123456789abcdef0123456789abcdef01234567";

// Holds what a PlanInput refers to.
struct ModelsFixture {
  Suite suite;
  PlanOverrides overrides;
  ModelCatalog catalog = PlanTestCatalog();
  std::map<std::string, TargetProfile> profiles = PlanTestProfiles();
  PlanInput In() const { return {suite, overrides, &catalog, profiles}; }
};

HubModelInfo QwenInfo() {
  HubModelInfo info;
  info.model_id = std::string("hub:Qwen/Qwen3-0.6B@") + kQwenCommit;
  info.model_type = "qwen3";
  info.head_class = "Qwen3ForCausalLM";
  info.head_classes = {"Qwen3ForCausalLM", "Qwen3ForSequenceClassification"};
  return info;
}

std::vector<std::string> Ids(const std::vector<ModelChoice>& models) {
  std::vector<std::string> ids;
  for (const ModelChoice& m : models) ids.push_back(m.model_id + " " + m.model_class);
  return ids;
}

TEST(ModelSourceTest, ACheckpointIsItsHashAndRunsCustomCodeOnlyWhenTrusted) {
  PlanOverrides o;
  o.checkpoint = CheckpointInfo{"llama", "LlamaForCausalLM", "causal_lm", false};
  o.checkpoint_dir = "/tmp/ckpt";
  o.checkpoint_hash = "abc";
  absl::StatusOr<ModelChoice> m = CheckpointModel(o);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->model_id, "ckpt:abc");
  EXPECT_EQ(m->model_path, "/tmp/ckpt");
  EXPECT_EQ(m->model_class, "LlamaForCausalLM");
  EXPECT_TRUE(m->kind_params.empty());
  o.checkpoint->custom_code = true;
  EXPECT_NE(CheckpointModel(o).status().message().find("--trust-remote-code"), std::string::npos);
  o.trust_remote_code = true;
  m = CheckpointModel(o);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->kind_params, (std::map<std::string, std::string>{{"trust_remote_code", "true"}}));
}

TEST(ModelSourceTest, ACodeModelIsItsIdAndSpec) {
  PlanOverrides o;
  o.code_model = CodeModelInfo{"llama", "MyLlama", "LlamaForCausalLM", "causal_lm", "", {}};
  o.code_model_id = "code:attn.build@0123456789abcdef";
  o.code_model_spec = "/m/attn.py:build";
  absl::StatusOr<ModelChoice> m = CodeModel(o);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->model_id, o.code_model_id);
  EXPECT_EQ(m->model_path, "/m/attn.py:build");
  EXPECT_EQ(m->model_class, "MyLlama");
  EXPECT_TRUE(HasOwnModel(o));
  EXPECT_FALSE(HasOwnModel({}));
}

TEST(ModelSourceTest, AHubModelIsWhatTheResolverAnswered) {
  ModelsFixture f;
  f.overrides.hub_models["hub:Qwen/Qwen3-0.6B"] = QwenInfo();
  HubModelInfo gone;
  gone.model_id = "hub:org/gone@main";
  gone.head_class = "X";
  gone.error = "repo org/gone not found";
  f.overrides.hub_models["hub:org/gone"] = gone;
  absl::StatusOr<ModelChoice> m = HubModel("hub:Qwen/Qwen3-0.6B", f.In());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->model_id, QwenInfo().model_id);
  EXPECT_EQ(m->head_classes.size(), 2u);
  m = HubModel("hub:org/gone", f.In());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->model_class, "");  // planned for its fail_to_load row
  EXPECT_TRUE(absl::IsInternal(HubModel("hub:org/other", f.In()).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(HubModel("hub:a/b/c", f.In()).status()));
}

TEST(ModelSourceTest, AnHfModelIsNamedByItsTypeOrItsId) {
  ModelsFixture f;
  absl::StatusOr<ModelChoice> bare = HfModel("llama", f.In());
  absl::StatusOr<ModelChoice> prefixed = HfModel("hf:llama", f.In());
  ASSERT_TRUE(bare.ok() && prefixed.ok());
  EXPECT_EQ(bare->model_id, "hf:llama");
  EXPECT_EQ(prefixed->model_id, "hf:llama");
  EXPECT_EQ(prefixed->model_type, "llama");
  EXPECT_EQ(prefixed->model_class, "LlamaForCausalLM");
  EXPECT_EQ(HfModelType("hf:llama"), "llama");
  EXPECT_EQ(HfModelType("llama"), "llama");
  EXPECT_EQ(HfModel("hf:gpt-17", f.In()).status().message(),
            "unknown model type 'gpt-17' (transformers 5.x registers 3 types; `compatlab suites "
            "hf-all` lists them)");
  EXPECT_TRUE(
      absl::IsInternal(HfModel("llama", {f.suite, f.overrides, nullptr, f.profiles}).status()));
}

TEST(ModelSourceTest, AnUnknownNameOfAnotherKindOfModelSaysHowToSweepIt) {
  ModelsFixture f;
  auto message = [&](const std::string& name) {
    return std::string(HfModel(name, f.In()).status().message());
  };
  EXPECT_NE(message("org/name").find("--models hub:org/name"), std::string::npos);
  EXPECT_NE(message("hf:org/name").find("--models hub:org/name"), std::string::npos);
  EXPECT_NE(message("code:attn.build@0123").find("--model-code"), std::string::npos);
  EXPECT_NE(message("ckpt:abc").find("--model-path"), std::string::npos);
}

TEST(ModelNamesTest, ModelsReplaceTheSuitesListAndTheBaselineComesLast) {
  ModelsFixture f;
  f.suite.models = {"bert"};
  EXPECT_EQ(*ModelNames(f.In()), (std::vector<std::string>{"bert"}));
  f.overrides.models = {"hf:llama", "hub:org/name"};
  f.overrides.baseline = {"bert"};
  EXPECT_EQ(*ModelNames(f.In()), (std::vector<std::string>{"hf:llama", "hub:org/name", "bert"}));
  f.overrides.code_model = CodeModelInfo{};
  EXPECT_EQ(*ModelNames(f.In()), (std::vector<std::string>{"bert"}));
}

TEST(ModelNamesTest, ASuiteOfAllModelsNamesEveryTypeOfTheCatalog) {
  ModelsFixture f;
  f.suite.all_models = true;
  EXPECT_EQ(*ModelNames(f.In()), (std::vector<std::string>{"bert", "llama", "odd"}));
  EXPECT_TRUE(absl::IsInternal(ModelNames({f.suite, f.overrides, nullptr, f.profiles}).status()));
}

TEST(ChooseModelsTest, TheOwnModelFirstThenEachNameFromTheSourceThatTakesIt) {
  ModelsFixture f;
  f.overrides.checkpoint = CheckpointInfo{"llama", "LlamaForCausalLM", "causal_lm", false};
  f.overrides.checkpoint_hash = "abc";
  f.overrides.baseline = {"bert", "hub:Qwen/Qwen3-0.6B", "hf:llama"};
  f.overrides.hub_models["hub:Qwen/Qwen3-0.6B"] = QwenInfo();
  absl::StatusOr<std::vector<ModelChoice>> models = ChooseModels(f.In());
  ASSERT_TRUE(models.ok()) << models.status();
  EXPECT_EQ(Ids(*models),
            (std::vector<std::string>{"ckpt:abc LlamaForCausalLM", "hf:bert BertForMaskedLM",
                                      QwenInfo().model_id + " Qwen3ForCausalLM",
                                      "hf:llama LlamaForCausalLM"}));
  f.overrides.baseline = {"nosuch"};
  EXPECT_TRUE(absl::IsInvalidArgument(ChooseModels(f.In()).status()));
}

TEST(ExpandHeadsTest, RuleKeepsAllTakesEveryClassAndNamesTakeThoseRegistered) {
  ModelsFixture f;
  ModelChoice qwen{"hub:q", "qwen3", "Qwen3ForCausalLM", "", QwenInfo().head_classes, {}};
  ModelChoice gone{"hub:gone", "", "", "", {}, {}};
  ModelChoice bert{"hf:bert", "bert", "BertForMaskedLM", "", {}, {}};
  const std::vector<ModelChoice> models = {qwen, gone, bert};
  f.overrides.heads = {"rule"};
  EXPECT_EQ(Ids(*ExpandHeads(models, f.In())), Ids(models));
  f.overrides.heads = {"all"};
  EXPECT_EQ(
      Ids(*ExpandHeads(models, f.In())),
      (std::vector<std::string>{"hub:q Qwen3ForCausalLM", "hub:q Qwen3ForSequenceClassification",
                                "hub:gone ", "hf:bert BertForMaskedLM"}));
  f.overrides.heads = {"Qwen3ForSequenceClassification"};
  EXPECT_EQ(ExpandHeads(models, f.In()).status().message(),
            "--heads Qwen3ForSequenceClassification: hf:bert (bert) registers none of them (its "
            "classes: BertForMaskedLM)");
  EXPECT_EQ(Ids(*ExpandHeads({qwen}, f.In())),
            (std::vector<std::string>{"hub:q Qwen3ForSequenceClassification"}));
  f.overrides.heads = {"all", "X"};
  EXPECT_EQ(ExpandHeads(models, f.In()).status().message(), "--heads: rule and all stand alone");
}

TEST(ApplyBuildSettingsTest, SizeAndWeightsGoIntoEveryModelsKindParams) {
  ModelsFixture f;
  const std::vector<ModelChoice> hub = {{"hub:org/name@c", "llama", "C", "", {}, {}}};
  f.overrides.size = "full";
  f.overrides.weights = true;
  absl::StatusOr<std::vector<ModelChoice>> built = ApplyBuildSettings(hub, f.In());
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_EQ((*built)[0].kind_params,
            (std::map<std::string, std::string>{{"size", "full"}, {"weights", "pretrained"}}));
  EXPECT_EQ(ApplyBuildSettings({{"hf:llama", "llama", "C", "", {}, {}}}, f.In()).status().message(),
            "--weights loads a Hub repo's own weights; hf:llama is not a hub: model");
  f.overrides = {};
  EXPECT_TRUE((*ApplyBuildSettings(hub, f.In()))[0].kind_params.empty());
}

TEST(PlanModelsTest, ModelsNamedTwiceArePlannedOncePerClass) {
  ModelsFixture f;
  f.overrides.models = {"llama", "hf:llama", "bert", "llama"};
  absl::StatusOr<std::vector<ModelChoice>> models = PlanModels(f.In());
  ASSERT_TRUE(models.ok()) << models.status();
  EXPECT_EQ(Ids(*models),
            (std::vector<std::string>{"hf:llama LlamaForCausalLM", "hf:bert BertForMaskedLM"}));
}

}  // namespace
}  // namespace compatlab
