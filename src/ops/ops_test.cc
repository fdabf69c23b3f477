#include "ops/ops.h"

#include <sys/wait.h>

#include "gtest/gtest.h"

namespace compatlab {
namespace {

std::string CaseLine(const std::string& key, const std::string& status) {
  return "{\"op_case\": {\"key\": \"" + key + "\", \"status\": \"" + status + "\"}}\n";
}

ExitFacts Exited(std::string result_text) {
  ExitFacts facts;
  facts.wait_status = 0;  // exit code 0
  facts.result_text = std::move(result_text);
  facts.wall_s = 3;
  return facts;
}

const OpBatch kBatch = {"float32", {"add", "tanh", "mul", "neg"}};

TEST(SettleBatchTest, EveryReportedCaseIsAResultAndNothingRunsAgain) {
  std::string text;
  for (const std::string& key : kBatch.keys)
    text += "{\"op_start\": \"" + key + "\"}\n" + CaseLine(key, "pass");
  BatchSettlement s = SettleBatch(kBatch, Exited(text + "{\"status\": \"pass\"}"), "s", {});
  ASSERT_EQ(s.results.size(), 4u);
  EXPECT_EQ(s.results[0].op_sweep_id, "s");
  EXPECT_EQ(s.results[0].dtype, "float32");
  EXPECT_FALSE(s.rest.has_value());
}

TEST(SettleBatchTest, ACrashCostsTheOpItWasRunningAndTheRestRunsAgain) {
  ExitFacts facts =
      Exited("{\"op_start\": \"add\"}\n" + CaseLine("add", "pass") + "{\"op_start\": \"tanh\"}\n");
  facts.wait_status = SIGSEGV;  // killed by the signal
  BatchSettlement s = SettleBatch(kBatch, facts, "s", {});
  ASSERT_EQ(s.results.size(), 2u);
  EXPECT_EQ(s.results[0].status, TestStatus::kPass);
  EXPECT_EQ(s.results[1].Key(), "tanh");
  EXPECT_EQ(s.results[1].status, TestStatus::kCrash);
  ASSERT_TRUE(s.rest.has_value());
  EXPECT_EQ(s.rest->keys, (std::vector<std::string>{"mul", "neg"}));
}

TEST(SettleBatchTest, ATimeoutIsTheRunningOpsAndCountsAsTimedOut) {
  ExitFacts facts = Exited("{\"op_start\": \"add\"}\n");
  facts.timed_out = true;
  facts.killed = true;
  facts.wait_status = SIGKILL;
  facts.timeout_s = 10;
  BatchSettlement s = SettleBatch(kBatch, facts, "s", {});
  ASSERT_EQ(s.results.size(), 1u);
  EXPECT_EQ(s.results[0].status, TestStatus::kTimeout);
  EXPECT_EQ(s.results[0].timed_out, 1);
  ASSERT_TRUE(s.rest.has_value());
  EXPECT_EQ(s.rest->keys.size(), 3u);
}

TEST(SettleBatchTest, AChildThatStartedNoOpGivesEveryOpItsStatus) {
  BatchSettlement s = SettleBatch(
      kBatch, Exited("{\"status\": \"skipped\", \"status_detail\": \"no device here\"}"), "s", {});
  ASSERT_EQ(s.results.size(), 4u);
  for (const OpResult& r : s.results) {
    EXPECT_EQ(r.status, TestStatus::kSkipped);
    EXPECT_EQ(r.detail, "no device here");
  }
  EXPECT_FALSE(s.rest.has_value());
}

TEST(SettleBatchTest, AnOpTheChildNeverReportedIsAHarnessError) {
  BatchSettlement s =
      SettleBatch(kBatch, Exited(CaseLine("add", "pass") + "{\"status\": \"pass\"}"), "s", {});
  ASSERT_EQ(s.results.size(), 4u);
  EXPECT_EQ(s.results[1].status, TestStatus::kHarnessError);
  EXPECT_FALSE(s.rest.has_value());
}

TEST(SettleBatchTest, ARefusedOpLineCostsOnlyItsOp) {
  BatchSettlement s =
      SettleBatch(kBatch,
                  Exited("{\"op_case\": {\"key\": \"add\", \"max_abs_err\": NaN}}\n" +
                         CaseLine("tanh", "pass") + CaseLine("mul", "pass") +
                         CaseLine("neg", "pass") + "{\"status\": \"pass\"}"),
                  "s", {});
  ASSERT_EQ(s.results.size(), 4u);
  EXPECT_EQ(s.results[0].Key(), "tanh");
  EXPECT_EQ(s.results[0].status, TestStatus::kPass);
  EXPECT_EQ(s.results[3].Key(), "add");
  EXPECT_EQ(s.results[3].status, TestStatus::kHarnessError);
  EXPECT_NE(s.results[3].detail.find("was refused (an op line does not parse"), std::string::npos)
      << s.results[3].detail;
}

TEST(SettleBatchTest, MoreLinesThanOpsMakeTheBatchAHarnessError) {
  const std::string line = CaseLine("add", "pass");
  BatchSettlement s =
      SettleBatch({"float32", {"add"}}, Exited(line + line + "{\"status\": \"pass\"}"), "s", {});
  ASSERT_EQ(s.results.size(), 1u);
  EXPECT_EQ(s.results[0].status, TestStatus::kHarnessError);
}

TEST(SettleBatchTest, AnExcludedOpRunAnywayCarriesItsExclusion) {
  std::map<std::string, OpExclusion> excluded = {{"add", {"add", "not on this chip", "doc"}}};
  BatchSettlement s =
      SettleBatch({"float32", {"add"}}, Exited(CaseLine("add", "pass") + "{\"status\": \"pass\"}"),
                  "s", excluded);
  ASSERT_EQ(s.results.size(), 1u);
  EXPECT_EQ(s.results[0].skip_source, "target");
  EXPECT_TRUE(IsStaleSkip(s.results[0]));
}

}  // namespace
}  // namespace compatlab
