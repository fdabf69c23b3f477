#include "runner/protocol.h"

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace compatlab {
namespace {

TEST(ProtocolTest, RequestCarriesIdentityAndLimits) {
  LaunchRequest req;
  req.run_id = "r1";
  req.spec.model_id = "hf:llama";
  req.spec.model_type = "llama";
  req.spec.kind_params["rep"] = "2";
  req.torch_num_threads = 2;
  auto j = nlohmann::json::parse(TestRequestJson(req, 42));
  EXPECT_EQ(j["run_id"], "r1");
  EXPECT_EQ(j["test_id"], req.spec.TestId());
  EXPECT_EQ(j["model_type"], "llama");
  EXPECT_EQ(j["kind_params"]["rep"], "2");
  EXPECT_EQ(j["supervisor_pid"], 42);
  EXPECT_EQ(j["torch_num_threads"], 2);
  EXPECT_TRUE(j["memory_limit"].is_object());
}

TEST(ProtocolTest, ParsesResultObject) {
  RunResult r;
  ASSERT_TRUE(ParseChildResult(R"({"status":"fail_to_run","stage":"run","error_type":"E",
      "error_message":"m","model_class":"LlamaForCausalLM",
      "metrics":{"build_s":1.5,"steady_iters":12,"host_peak_rss_bytes":1000,"memory_method":"x"},
      "stack":{"torch_version":"2.13.0+cpu"}})",
                               &r)
                  .ok());
  EXPECT_EQ(r.status, TestStatus::kFailToRun);
  EXPECT_EQ(r.resolved_model_class, "LlamaForCausalLM");
  EXPECT_DOUBLE_EQ(*r.build_s, 1.5);
  EXPECT_EQ(*r.steady_iters, 12);
  EXPECT_FALSE(r.prepare_s.has_value());
  EXPECT_EQ(r.torch_version, "2.13.0+cpu");
}

TEST(ProtocolTest, CarriesProfileCompileOptionsAndCacheAndReadsNewMetrics) {
  LaunchRequest req;
  req.spec.mode = "compile";
  req.target_profile_json = R"({"name":"ctest","device":"ctest"})";
  req.compile_options_json = R"({"dynamic":false})";
  req.compile_cache_dir = "/tmp/c/r1";
  req.cache_phase = "cold";
  auto j = nlohmann::json::parse(TestRequestJson(req, 1));
  EXPECT_EQ(j["target_profile"]["device"], "ctest");
  EXPECT_EQ(j["compile_options"]["dynamic"], false);
  EXPECT_EQ(j["compile_cache_dir"], "/tmp/c/r1");
  EXPECT_EQ(j["cache_phase"], "cold");
  EXPECT_FALSE(
      nlohmann::json::parse(TestRequestJson(LaunchRequest{}, 1)).contains("target_profile"));

  RunResult r;
  ASSERT_TRUE(ParseChildResult(R"({"status":"fail_accuracy","stage":"compare","metrics":{
      "speedup":1.5,"acc_rule":"failed","acc_rmse":0.25,"graph_breaks":2,
      "fallback_ops":{"aten::tanh":3},"graph_break_reasons":["x"],"train_loss":[1.5,1.25],
      "gen_first_divergence":null,"cache_hits":4,"device_peak_bytes":1024}})",
                               &r)
                  .ok());
  EXPECT_EQ(r.status, TestStatus::kFailAccuracy);
  EXPECT_DOUBLE_EQ(*r.speedup, 1.5);
  EXPECT_EQ(r.acc_rule, "failed");
  EXPECT_EQ(*r.graph_breaks, 2);
  EXPECT_EQ(r.fallback_ops, R"({"aten::tanh":3})");
  EXPECT_EQ(r.graph_break_reasons, R"(["x"])");
  EXPECT_EQ(r.train_loss, "[1.5,1.25]");
  EXPECT_FALSE(r.gen_first_divergence.has_value());
  EXPECT_EQ(*r.cache_hits, 4);
  EXPECT_EQ(*r.device_peak_bytes, 1024);
}

TEST(ProtocolTest, RejectsStatusesOnlyTheSupervisorDecides) {
  RunResult r;
  EXPECT_FALSE(ParseChildResult(R"({"status":"timeout"})", &r).ok());
  EXPECT_FALSE(ParseChildResult(R"({"status":"crash"})", &r).ok());
  EXPECT_FALSE(ParseChildResult(R"({"status":"passed"})", &r).ok());
  EXPECT_FALSE(ParseChildResult("[]", &r).ok());
  EXPECT_FALSE(ParseChildResult("{", &r).ok());
  EXPECT_EQ(r.status, TestStatus::kHarnessError);  // untouched
}

}  // namespace
}  // namespace compatlab
