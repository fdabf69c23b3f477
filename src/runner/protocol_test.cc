#include "runner/protocol.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "core/fields.h"
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
  req.compile_threads = 4;
  auto j = nlohmann::json::parse(TestRequestJson(req, 42));
  EXPECT_EQ(j["run_id"], "r1");
  EXPECT_EQ(j["test_id"], req.spec.TestId());
  EXPECT_EQ(j["model_type"], "llama");
  EXPECT_EQ(j["kind_params"]["rep"], "2");
  EXPECT_EQ(j["supervisor_pid"], 42);
  EXPECT_EQ(j["torch_num_threads"], 2);
  EXPECT_EQ(j["compile_threads"], 4);
  EXPECT_TRUE(j["memory_limit"].is_object());
}

TEST(ProtocolTest, RequestCarriesTheLoadBaseOnlyWhenSet) {
  LaunchRequest req;
  req.spec.kind = "load";
  EXPECT_FALSE(nlohmann::json::parse(TestRequestJson(req, 1)).contains("load_base"));
  req.load_base = LoadBase{2.5, "run-offline"};
  auto j = nlohmann::json::parse(TestRequestJson(req, 1));
  EXPECT_DOUBLE_EQ(j["load_base"]["offline_requests_per_s"].get<double>(), 2.5);
  EXPECT_EQ(j["load_base"]["run_id"], "run-offline");
}

TEST(ProtocolTest, RequestCarriesTheGroupsObjectiveOnlyWhenSet) {
  LaunchRequest req;
  req.spec.kind = "load";
  EXPECT_FALSE(nlohmann::json::parse(TestRequestJson(req, 1)).contains("load_slo"));
  req.load_slo = LoadSlo{0.25, 0.03, "run-single"};
  auto j = nlohmann::json::parse(TestRequestJson(req, 1));
  EXPECT_DOUBLE_EQ(j["load_slo"]["ttft_s"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(j["load_slo"]["itl_s"].get<double>(), 0.03);
  EXPECT_EQ(j["load_slo"]["run_id"], "run-single");
  EXPECT_FALSE(j.contains("load_base"));
}

TEST(ProtocolTest, ResultReportsTheObjectivesRunId) {
  RunResult r;
  ASSERT_TRUE(ParseChildResult(R"({"status":"pass","metrics":{"load_slo_source":"single_stream_row",
      "load_slo_ttft_s":0.25,"load_slo_run_id":"run-single"}})",
                               &r)
                  .ok());
  EXPECT_EQ(r.load_slo_source, "single_stream_row");
  EXPECT_EQ(r.load_slo_run_id, "run-single");
  EXPECT_DOUBLE_EQ(r.load_slo_ttft_s.value_or(0), 0.25);
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

TEST(ProtocolTest, RawJsonMemberIsInsertedVerbatim) {
  EXPECT_EQ(WithRawJsonMember("{}", "a", R"({"x":[1]})"), R"({"a":{"x":[1]}})");
  EXPECT_EQ(WithRawJsonMember(R"({"b":1})", "a\"", "2"), R"({"b":1,"a\"":2})");
}

TEST(ProtocolTest, UnknownMetricKeyIsAHarnessErrorNamingTheKey) {
  RunResult r;
  ASSERT_TRUE(ParseChildResult(R"({"status":"pass","error_traceback":"tb",
      "metrics":{"build_s":1.5,"steady_fastest_s":0.1}})",
                               &r)
                  .ok());
  EXPECT_EQ(r.status, TestStatus::kHarnessError);
  EXPECT_EQ(r.stage, "harness");
  EXPECT_EQ(r.error_type, "BadMetric");
  EXPECT_NE(r.error_message.find("'steady_fastest_s'"), std::string::npos) << r.error_message;
  EXPECT_EQ(r.status_detail, "the child reported pass");
  EXPECT_EQ(r.error_traceback, "");
  EXPECT_DOUBLE_EQ(*r.build_s, 1.5);  // what else it reported is kept
}

TEST(ProtocolTest, MetricOfTheWrongTypeIsAHarnessErrorNamingTheKey) {
  RunResult r;
  ASSERT_TRUE(ParseChildResult(R"({"status":"pass","metrics":{"steady_iters":"many"}})", &r).ok());
  EXPECT_EQ(r.status, TestStatus::kHarnessError);
  EXPECT_NE(r.error_message.find("'steady_iters'"), std::string::npos) << r.error_message;
  EXPECT_FALSE(r.steady_iters.has_value());
}

// A value of `field`'s type that no default has: the field's name as text,
// 7 or 0.5.
nlohmann::json SampleValue(const FieldDef& field) {
  switch (field.type) {
    case FieldType::kText:
      return std::string("x-") + std::string(field.name);
    case FieldType::kInteger:
      return 7;
    case FieldType::kReal:
      return 0.5;
  }
  return nullptr;
}

// The parser reads every field the table marks as the child's, under its key,
// into that field; keys are unique within their section.
TEST(ProtocolTest, ReadsEveryChildFieldOfTheFieldTable) {
  nlohmann::json j = {{"metrics", nlohmann::json::object()}, {"stack", nlohmann::json::object()}};
  std::map<ChildSection, std::set<std::string_view>> keys;
  for (const FieldDef& field : ResultFields()) {
    if (field.child == ChildSection::kNone || field.name == "status") continue;
    SCOPED_TRACE(field.name);
    EXPECT_TRUE(keys[field.child].insert(field.child_key).second) << "key used twice";
    EXPECT_EQ(field.group, FieldGroup::kResult);
    nlohmann::json& section = field.child == ChildSection::kMetrics ? j["metrics"]
                              : field.child == ChildSection::kStack ? j["stack"]
                                                                    : j;
    section[std::string(field.child_key)] = SampleValue(field);
  }
  j["status"] = "fail_to_run";
  RunRecord parsed;
  ASSERT_TRUE(ParseChildResult(j.dump(), &parsed.result).ok());
  EXPECT_EQ(parsed.result.status, TestStatus::kFailToRun);
  for (const FieldDef& field : ResultFields()) {
    if (field.child == ChildSection::kNone || field.name == "status") continue;
    const FieldValue value = field.get(parsed);
    const nlohmann::json expected = SampleValue(field);
    EXPECT_TRUE(field.type == FieldType::kText
                    ? std::get<std::string>(value) == expected.get<std::string>()
                : field.type == FieldType::kInteger ? std::get<int64_t>(value) == 7
                                                    : std::get<double>(value) == 0.5)
        << field.name << " was not read from key " << field.child_key;
  }
}

// Every metric key of the field table is in a metrics table of
// doc/worker-protocol.md (by name, or by a prefix such as `acc_*`), and every
// key those tables name is a metric key of the field table.
TEST(ProtocolTest, WorkerProtocolDocAndFieldTableAgreeOnMetricKeys) {
  const char* source_dir = std::getenv("COMPATLAB_SOURCE_DIR");
  ASSERT_NE(source_dir, nullptr) << "COMPATLAB_SOURCE_DIR is not set";
  const std::filesystem::path doc = std::filesystem::path(source_dir) / "doc/worker-protocol.md";
  std::ifstream file(doc);
  ASSERT_TRUE(file) << "cannot read " << doc;
  std::set<std::string> named, prefixes;
  std::string line;
  bool in_metrics = false;
  while (std::getline(file, line)) {
    if (line.starts_with("| metric |")) in_metrics = true;
    if (!line.starts_with("|")) in_metrics = false;
    if (!in_metrics) continue;
    const std::string first = line.substr(1, line.find('|', 1) - 1);
    for (size_t at = first.find('`'); at != std::string::npos; at = first.find('`', at)) {
      const size_t end = first.find('`', at + 1);
      const std::string key = first.substr(at + 1, end - at - 1);
      (key.ends_with("*") ? prefixes : named).insert(key.substr(0, key.find('*')));
      at = end + 1;
    }
  }
  std::set<std::string> metrics;
  for (const FieldDef& field : ResultFields()) {
    if (field.child != ChildSection::kMetrics) continue;
    const std::string key(field.child_key);
    metrics.insert(key);
    bool documented = named.contains(key);
    for (const std::string& prefix : prefixes) documented = documented || key.starts_with(prefix);
    EXPECT_TRUE(documented) << "metric " << key << " is not in the metrics tables of " << doc;
  }
  ASSERT_FALSE(named.empty()) << "no metrics table in " << doc;
  for (const std::string& key : named) {
    EXPECT_TRUE(metrics.contains(key))
        << doc << " names metric " << key << ", which no result field has as its metric key";
  }
}

}  // namespace
}  // namespace compatlab
