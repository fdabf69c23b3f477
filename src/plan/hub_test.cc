#include "plan/hub.h"

#include "gtest/gtest.h"
#include "plan/plan.h"

namespace compatlab {
namespace {

constexpr char kCommit[] = "0123456789abcdef0123456789abcdef01234567";

std::map<std::string, TargetProfile> CpuProfile() {
  TargetProfile p;
  p.name = "cpu";
  p.device = "cpu";
  p.backend = "inductor";
  return {{"cpu", p}};
}

std::map<std::string, HubModelInfo> Resolved() {
  auto models =
      ParseHubModels(std::string(R"json({"models":{
      "hub:Qwen/Qwen3-0.6B":{"model_id":"hub:Qwen/Qwen3-0.6B@)json") +
                     kCommit + R"json(","repo_id":"Qwen/Qwen3-0.6B","commit":")json" + kCommit +
                     R"json(","config_hash":"ab","model_type":"qwen3",
        "head_class":"Qwen3ForCausalLM","head_kind":"causal_lm",
        "head_classes":["Qwen3ForCausalLM","Qwen3ForSequenceClassification"]},
      "hub:org/gone":{"model_id":"hub:org/gone@main","repo_id":"org/gone",
        "error":"repo org/gone not found on the Hub (or private)"}}})json");
  EXPECT_TRUE(models.ok()) << models.status();
  return *models;
}

TEST(HubTest, IdsAreOrgSlashNameWithAnOptionalRevision) {
  EXPECT_TRUE(CheckHubId("hub:Qwen/Qwen3-0.6B").ok());
  EXPECT_TRUE(CheckHubId("hub:meta-llama/Llama-3.2-1B@v1.0").ok());
  for (const char* bad :
       {"hub:gpt2", "hub:a/b/c", "hub:../x", "hub:a/b@", "hub:a/b@..", "hub: a/b"}) {
    EXPECT_FALSE(CheckHubId(bad).ok()) << bad;
  }
}

TEST(HubTest, AnIdWithoutRevisionMatchesEveryCommitCaseInsensitively) {
  const std::string id = std::string("hub:Qwen/Qwen3-0.6B@") + kCommit;
  EXPECT_TRUE(HubIdMatches("hub:Qwen/Qwen3-0.6B", id));
  EXPECT_TRUE(HubIdMatches("hub:qwen/qwen3-0.6b", id));
  EXPECT_TRUE(HubIdMatches(id, id));
  EXPECT_FALSE(HubIdMatches("hub:Qwen/Qwen3-0.6B@main", id));
  EXPECT_FALSE(HubIdMatches("hub:Qwen/Qwen3", id));
  EXPECT_FALSE(HubIdMatches("hf:qwen3", id));
}

TEST(HubTest, ParsesTheResolverAnswerWithReasons) {
  std::map<std::string, HubModelInfo> models = Resolved();
  const HubModelInfo& qwen = models.at("hub:Qwen/Qwen3-0.6B");
  EXPECT_EQ(qwen.commit, kCommit);
  EXPECT_EQ(qwen.head_classes.size(), 2u);
  EXPECT_TRUE(qwen.error.empty());
  EXPECT_NE(models.at("hub:org/gone").error.find("not found"), std::string::npos);
  EXPECT_FALSE(ParseHubModels(R"({"models":{"x":{"model_id":"nope"}}})").ok());
  EXPECT_FALSE(ParseHubModels("[]").ok());
}

TEST(HubTest, PlansHubModelsByCommitAndUnresolvedOnesForTheirReason) {
  Suite suite;
  suite.name = "t";
  PlanOverrides o;
  o.models = {"hub:Qwen/Qwen3-0.6B", "hub:org/gone"};
  o.hub_models = Resolved();
  EXPECT_FALSE(PlanNeedsCatalog(suite, o));
  EXPECT_EQ(PlanHubModels(suite, o), o.models);
  auto plan = ExpandPlan(suite, o, nullptr, CpuProfile());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 2u);
  EXPECT_EQ((*plan)[0].model_id, std::string("hub:Qwen/Qwen3-0.6B@") + kCommit);
  EXPECT_EQ((*plan)[0].model_type, "qwen3");
  EXPECT_EQ((*plan)[0].model_class, "Qwen3ForCausalLM");
  EXPECT_TRUE((*plan)[0].kind_params.empty());  // reduced, random weights: the defaults
  EXPECT_EQ((*plan)[1].model_id, "hub:org/gone@main");
  EXPECT_EQ((*plan)[1].model_type, "");
}

TEST(HubTest, FullSizeAndWeightsAreKindParamsOfTheTest) {
  Suite suite;
  suite.name = "t";
  PlanOverrides o;
  o.models = {"hub:Qwen/Qwen3-0.6B"};
  o.hub_models = Resolved();
  o.size = "full";
  o.weights = true;
  auto plan = ExpandPlan(suite, o, nullptr, CpuProfile());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ((*plan)[0].kind_params.at("size"), "full");
  EXPECT_EQ((*plan)[0].kind_params.at("weights"), "pretrained");
  o.size = "huge";
  EXPECT_FALSE(ExpandPlan(suite, o, nullptr, CpuProfile()).ok());
}

TEST(HubTest, AnUnresolvedHubEntryIsAnInternalError) {
  Suite suite;
  suite.name = "t";
  PlanOverrides o;
  o.models = {"hub:a/b"};
  auto plan = ExpandPlan(suite, o, nullptr, CpuProfile());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInternal);
}

TEST(HubTest, HeadsAllPlansEveryHeadClassAsItsOwnTest) {
  Suite suite;
  suite.name = "t";
  PlanOverrides o;
  o.models = {"hub:Qwen/Qwen3-0.6B", "hub:org/gone"};
  o.hub_models = Resolved();
  o.heads = {"all"};
  auto plan = ExpandPlan(suite, o, nullptr, CpuProfile());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 3u);  // two head classes, and the unresolved repo's one row
  EXPECT_EQ((*plan)[0].model_class, "Qwen3ForCausalLM");
  EXPECT_EQ((*plan)[1].model_class, "Qwen3ForSequenceClassification");
  EXPECT_NE((*plan)[0].TestId(), (*plan)[1].TestId());
  o.heads = {"Qwen3ForSequenceClassification"};
  plan = ExpandPlan(suite, o, nullptr, CpuProfile());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ((*plan)[0].model_class, "Qwen3ForSequenceClassification");
  o.heads = {"BertForMaskedLM"};
  plan = ExpandPlan(suite, o, nullptr, CpuProfile());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("registers none of them"), std::string::npos);
  o.heads = {"all", "rule"};
  EXPECT_FALSE(ExpandPlan(suite, o, nullptr, CpuProfile()).ok());
}

TEST(HubTest, WritesASuiteOfHubIds) {
  EXPECT_EQ(
      HubSuiteJson("top", {"a/b", "c/d"}),
      "{\n  \"models\": [\n    \"hub:a/b\",\n    \"hub:c/d\"\n  ],\n  \"name\": \"top\"\n}\n");
}

}  // namespace
}  // namespace compatlab
