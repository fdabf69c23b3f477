#include "plan/plan.h"

#include <set>

#include "gtest/gtest.h"

namespace compatlab {
namespace {

ModelCatalog TestCatalog() {
  auto c = ParseCatalog(R"({"transformers_version":"5.x","models":{
      "llama":{"config_class":"LlamaConfig","head_class":"LlamaForCausalLM","head_kind":"causal_lm"},
      "bert":{"config_class":"BertConfig","head_class":"BertForMaskedLM","head_kind":"masked_lm"},
      "odd":{"config_class":"OddConfig","head_class":null}}})");
  EXPECT_TRUE(c.ok());
  return *c;
}

TEST(PlanTest, ExpandsTheMatrixInOrderWithHeadClasses) {
  Suite suite;
  suite.name = "t";
  suite.models = {"llama", "bert"};
  suite.seq_lens = {32, 64};
  ModelCatalog catalog = TestCatalog();
  auto plan = ExpandPlan(suite, {}, &catalog);
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
  auto plan = ExpandPlan(suite, o, &catalog);
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
  auto plan = ExpandPlan(suite, {}, &catalog);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(std::string(plan.status().message()).find("gpt-17"), std::string::npos);
}

TEST(PlanTest, AllModelsTakesEveryRegisteredType) {
  Suite suite;
  suite.name = "t";
  suite.all_models = true;
  ModelCatalog catalog = TestCatalog();
  auto plan = ExpandPlan(suite, {}, &catalog);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->size(), 3u);
}

TEST(PlanTest, RepeatedHarnessTestsHaveDistinctIds) {
  Suite suite;
  suite.name = "noop";
  suite.tests.push_back({"noop", std::nullopt, 300, {}});
  suite.tests.push_back({"hang", 2.0, 1, {}});
  EXPECT_FALSE(PlanNeedsCatalog(suite, {}));
  auto plan = ExpandPlan(suite, {}, nullptr);
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
  auto plan = ExpandPlan(suite, o, nullptr);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->size(), 1u);
  EXPECT_EQ((*plan)[0].model_id, "ckpt:abc");
  EXPECT_EQ((*plan)[0].model_path, "/tmp/ckpt");
}

}  // namespace
}  // namespace compatlab
