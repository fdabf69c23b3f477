#include "store/record_json.h"

#include "gtest/gtest.h"
#include "store/testing.h"

namespace compatlab {
namespace {

TEST(RecordJsonTest, TestSpecRoundTrips) {
  const TestSpec spec = test::FullRun("s1").spec;
  auto json = TestSpecToJson(spec);
  ASSERT_TRUE(json.ok()) << json.status();
  auto parsed = TestSpecFromJson(*json);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*TestSpecToJson(*parsed), *json);
  EXPECT_EQ(parsed->TestId(), spec.TestId());
  EXPECT_EQ(parsed->model_path, spec.model_path);
  EXPECT_EQ(parsed->timeout_s, spec.timeout_s);
  EXPECT_EQ(parsed->kind_params, spec.kind_params);
}

TEST(RecordJsonTest, TestSpecJsonHasSpecFieldsAndNestedKindParams) {
  TestSpec spec = test::MakeSpec("gpt2");
  spec.kind_params = {{"rep", "3"}};
  const nlohmann::json json = nlohmann::json::parse(*TestSpecToJson(spec));
  EXPECT_EQ(json["model_id"], "hf:gpt2");
  EXPECT_EQ(json["seq_len"], 32);
  EXPECT_EQ(json["kind_params"], nlohmann::json({{"rep", "3"}}));
  EXPECT_FALSE(json.contains("run_id"));
  EXPECT_FALSE(json.contains("status"));
  EXPECT_EQ(json.size(), 13u);  // no "ranks": one rank, as before schema 28
  spec.ranks = 2;
  const nlohmann::json two = nlohmann::json::parse(*TestSpecToJson(spec));
  EXPECT_EQ(two["ranks"], 2);
  EXPECT_EQ(TestSpecFromJson(two.dump())->ranks, 2);
}

TEST(RecordJsonTest, TestSpecFromJsonKeepsDefaultsForMissingKeys) {
  auto spec = TestSpecFromJson(R"({"model_id": "hf:bert", "timeout_s": 7})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->model_id, "hf:bert");
  EXPECT_EQ(spec->timeout_s, 7.0);
  EXPECT_EQ(spec->target, "cpu");
  EXPECT_EQ(spec->seq_len, 32);
}

TEST(RecordJsonTest, TestSpecFromJsonRejectsBadInput) {
  EXPECT_FALSE(TestSpecFromJson("").ok());
  EXPECT_FALSE(TestSpecFromJson("[]").ok());
  EXPECT_FALSE(TestSpecFromJson(R"({"model_id": "x")").ok());
  EXPECT_FALSE(TestSpecFromJson(R"({"modelid": "x"})").ok());
  EXPECT_FALSE(TestSpecFromJson(R"({"status": "pass"})").ok());
  EXPECT_FALSE(TestSpecFromJson(R"({"seq_len": "32"})").ok());
  EXPECT_FALSE(TestSpecFromJson(R"({"seq_len": 1.5})").ok());
  EXPECT_FALSE(TestSpecFromJson(R"({"seq_len": 18446744073709551615})").ok());
  EXPECT_FALSE(TestSpecFromJson(R"({"model_id": null})").ok());
  EXPECT_FALSE(TestSpecFromJson(R"({"kind_params": {"a": 1}})").ok());
}

TEST(RecordJsonTest, TestSpecToJsonRejectsInvalidUtf8) {
  TestSpec spec = test::MakeSpec("gpt2");
  spec.model_path = "/bad/\xff";
  EXPECT_EQ(TestSpecToJson(spec).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RecordJsonTest, RunRecordJsonHasSchemaKeysInOrderWithTypedValues) {
  RunRecord record = test::MakeRun("s1", test::MakeSpec("gpt2"));
  record.result.build_s = 0.5;
  record.result.param_count = 42;
  const nlohmann::ordered_json json = RunRecordToJson(record);
  ASSERT_EQ(json.size(), ResultFields().size());
  size_t i = 0;
  for (const auto& [key, value] : json.items()) {
    EXPECT_EQ(key, ResultFields()[i++].name);
  }
  EXPECT_TRUE(json["build_s"].is_number_float());
  EXPECT_TRUE(json["param_count"].is_number_integer());
  EXPECT_TRUE(json["prepare_s"].is_null());
  EXPECT_EQ(json["status"], "pass");
  EXPECT_EQ(json["kind_params"], "{}");
}

TEST(RecordJsonTest, CurvesAreArraysAndTextThatIsNoListStaysText) {
  RunRecord record = test::MakeRun("s1", test::MakeSpec("gpt2"));
  record.result.train_loss = "[2.5, NaN, 1.0]";  // Python's text for a loss that was not finite
  record.result.gen_decode_curve = "[[1, 0.5]]";
  record.result.gen_match_curve = "not a list";  // as an older compatlab might have stored
  const nlohmann::ordered_json json = RunRecordToJson(record);
  EXPECT_EQ(json["train_loss"], nlohmann::ordered_json::parse("[2.5,null,1.0]"));
  EXPECT_EQ(json["gen_decode_curve"], nlohmann::ordered_json::parse("[[1,0.5]]"));
  EXPECT_EQ(json["gen_match_curve"], "not a list");
  EXPECT_TRUE(json["gen_mem_curve"].is_null());
}

TEST(RecordJsonTest, PlannedTestRoundTripsWithItsExecution) {
  ResolvedTest test{test::FullRun("s1").spec, TestExecution{}};
  test.execution->target_profile_json = R"({"name":"x","compile":{"options":{}}})";
  test.execution->compile_options_json = R"({"dynamic":false})";
  test.execution->warm = true;
  test.execution->measure.min_time_s = 0.5;
  test.execution->measure.max_time_s = 30.0;
  test.execution->python = "/p/python";
  test.execution->grace_s = 0.25;
  test.execution->mem_limit_bytes = 123456789;
  test.execution->mem_limit_method = "rlimit";
  auto json = PlannedTestToJson(test);
  ASSERT_TRUE(json.ok()) << json.status();
  auto back = PlannedTestFromJson(*json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->spec.TestId(), test.spec.TestId());
  ASSERT_TRUE(back->execution.has_value());
  EXPECT_TRUE(*back->execution == *test.execution);
  // A spec alone (an older compatlab's) reads without execution settings.
  auto old = PlannedTestFromJson(*TestSpecToJson(test.spec));
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_FALSE(old->execution.has_value());
  // TestSpecFromJson still refuses the key; a bad execution object is refused.
  EXPECT_FALSE(TestSpecFromJson(*json).ok());
  auto bad = PlannedTestFromJson(R"({"model_id":"none","execution":{"warm":1}})");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace compatlab
