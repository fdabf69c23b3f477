#include "runner/decide_status.h"

#include <signal.h>
#include <sys/wait.h>

#include <set>
#include <string>

#include "gtest/gtest.h"

namespace compatlab {
namespace {

constexpr int kExited0 = W_EXITCODE(0, 0);

ExitFacts Exited(int code, const std::string& result_text) {
  ExitFacts facts;
  facts.wait_status = W_EXITCODE(code, 0);
  facts.result_text = result_text;
  facts.wall_s = 1.5;
  facts.mem_limit_bytes = 1 << 30;
  facts.mem_limit_method = "cgroup_v2";
  facts.stdout_tail = "out";
  facts.stderr_tail = "err";
  facts.stack = {"3.11", "2.5", "4.50"};
  return facts;
}

ExitFacts Signaled(int sig) {
  ExitFacts facts = Exited(0, "");
  facts.wait_status = W_EXITCODE(0, sig);
  return facts;
}

std::string ChildResult(const std::string& status) {
  return R"({"status":")" + status +
         R"(","stage":"run","error_message":"m",)"
         R"("stack":{"torch_version":"9.9"},"metrics":{"build_s":0.25}})";
}

class DecideStatusTest : public ::testing::Test {
 protected:
  RunResult Decide(const ExitFacts& facts) { return DecideStatus(facts); }
};

TEST_F(DecideStatusTest, TheChildsResultDecidesWhenNoSupervisorFactDoes) {
  for (const char* status : {"pass", "fail_accuracy", "fail_to_load", "fail_to_compile",
                             "fail_to_run", "skipped", "oom", "harness_error"}) {
    SCOPED_TRACE(status);
    RunResult r = Decide(Exited(0, ChildResult(status)));
    EXPECT_EQ(TestStatusName(r.status), status);
    EXPECT_DOUBLE_EQ(r.build_s.value_or(-1), 0.25);
    EXPECT_DOUBLE_EQ(r.wall_s, 1.5);  // the supervisor's facts stay
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.stdout_tail, "out");
    EXPECT_EQ(r.mem_limit_method, "cgroup_v2");
  }
}

TEST_F(DecideStatusTest, DeadlineComesFirst) {
  ExitFacts facts = Signaled(SIGKILL);
  facts.result_text = ChildResult("pass");
  facts.timed_out = true;
  facts.killed = true;
  facts.timeout_s = 5;
  facts.oom_kills = 1;
  RunResult r = Decide(facts);
  EXPECT_EQ(r.status, TestStatus::kTimeout);
  EXPECT_EQ(r.stage, "run");
  EXPECT_EQ(r.status_detail, "deadline 5 s; SIGKILL after grace");
  EXPECT_EQ(r.term_signal, SIGKILL);
  facts.killed = false;
  EXPECT_EQ(Decide(facts).status_detail, "deadline 5 s; SIGTERM");
}

TEST_F(DecideStatusTest, OomKillsComeBeforeTheSignalAndTheResult) {
  ExitFacts facts = Signaled(SIGKILL);
  facts.oom_kills = 2;
  RunResult r = Decide(facts);
  EXPECT_EQ(r.status, TestStatus::kOom);
  EXPECT_EQ(r.status_detail, "memory limit 1073741824 bytes (cgroup_v2, 2 OOM kills)");
  facts = Exited(0, ChildResult("pass"));
  facts.oom_kills = 1;
  EXPECT_EQ(Decide(facts).status, TestStatus::kOom);
}

TEST_F(DecideStatusTest, ATerminatingSignalIsACrashNamedBySignal) {
  ExitFacts facts = Signaled(SIGSEGV);
  facts.result_text = ChildResult("pass");  // written before it died
  RunResult r = Decide(facts);
  EXPECT_EQ(r.status, TestStatus::kCrash);
  EXPECT_EQ(r.status_detail, "SIGSEGV");
  EXPECT_EQ(r.error_type, "Signal");
  EXPECT_EQ(r.error_message, "killed by SIGSEGV");
  EXPECT_EQ(r.torch_version, "9.9");  // stack versions are facts whatever the status
}

TEST_F(DecideStatusTest, AChildThatDiesIsPlacedAtItsLastStageMark) {
  const std::string marks = "{\"stage\": \"export\"}\n{\"stage\": \"load\"}\n";
  ExitFacts crash = Signaled(SIGSEGV);
  crash.result_text = marks;
  EXPECT_EQ(Decide(crash).stage, "load");
  ExitFacts timeout = Signaled(SIGTERM);
  timeout.timed_out = true;
  timeout.result_text = "{\"stage\": \"compile\"}\n";
  EXPECT_EQ(Decide(timeout).stage, "compile");
  EXPECT_EQ(Decide(Signaled(SIGSEGV)).stage, "run");  // no mark: the old answer
  RunResult none = Decide(Exited(70, marks));
  EXPECT_EQ(none.error_type, "NoResult");
  EXPECT_EQ(none.error_message, "the child exited with code 70 without a result (in stage load)");
}

TEST_F(DecideStatusTest, ARankThatDiesIsNamedByItsLastStageMark) {
  const std::string marks =
      "{\"stage\": \"prepare\", \"rank\": 0}\n"
      "{\"stage\": \"load\", \"rank\": 1}\n";
  ExitFacts crash = Signaled(SIGSEGV);
  crash.result_text = marks;
  RunResult r = Decide(crash);
  EXPECT_EQ(r.status, TestStatus::kCrash);
  EXPECT_EQ(r.stage, "load");
  EXPECT_EQ(r.status_detail, "SIGSEGV (rank 1)");
  EXPECT_EQ(r.error_message, "killed by SIGSEGV (rank 1)");
  ExitFacts timeout = Signaled(SIGTERM);
  timeout.timed_out = true;
  timeout.timeout_s = 6;
  timeout.result_text = marks;
  EXPECT_EQ(Decide(timeout).status_detail, "deadline 6 s; SIGTERM (rank 1)");
  ExitFacts oom = Signaled(SIGKILL);
  oom.oom_kills = 1;
  oom.result_text = marks;
  EXPECT_EQ(Decide(oom).status_detail,
            "memory limit 1073741824 bytes (cgroup_v2, 1 OOM kill) (rank 1)");
  // A mark whose rank is not a rank makes the pipe unreadable.
  crash.result_text = "{\"stage\": \"load\", \"rank\": 64}\n";
  EXPECT_EQ(Decide(crash).stage, "run");
}

TEST_F(DecideStatusTest, TheResultAfterTheStageMarksIsTheChilds) {
  RunResult r = Decide(Exited(0, "{\"stage\": \"build\"}\n" + ChildResult("fail_to_run")));
  EXPECT_EQ(r.status, TestStatus::kFailToRun);
  EXPECT_EQ(r.stage, "run");  // the result's own stage, not the last mark
  RunResult bad = Decide(Exited(0, "{\"stage\": 3}\n" + ChildResult("pass")));
  EXPECT_EQ(bad.error_type, "BadResult");
  EXPECT_EQ(bad.error_message.rfind("the child's result pipe could not be read: a line before", 0),
            0u)
      << bad.error_message;
}

TEST_F(DecideStatusTest, NoOrBadResultIsAHarnessError) {
  RunResult none = Decide(Exited(3, ""));
  EXPECT_EQ(none.status, TestStatus::kHarnessError);
  EXPECT_EQ(none.error_type, "NoResult");
  EXPECT_EQ(none.error_message, "the child exited with code 3 without a result");
  EXPECT_EQ(none.torch_version, "2.5");  // the launcher's stack
  RunResult bad = Decide(Exited(0, "{not json"));
  EXPECT_EQ(bad.error_type, "BadResult");
  EXPECT_EQ(bad.stage, "harness");
  // A child may not claim the supervisor's statuses.
  EXPECT_EQ(Decide(Exited(0, ChildResult("timeout"))).error_type, "BadResult");
}

TEST_F(DecideStatusTest, NoProcessIsALaunchError) {
  ExitFacts facts;
  facts.launch_error = "fork failed";
  facts.mem_limit_bytes = 7;
  RunResult r = Decide(facts);
  EXPECT_EQ(r.status, TestStatus::kHarnessError);
  EXPECT_EQ(r.error_type, "LaunchError");
  EXPECT_EQ(r.error_message, "fork failed");
  EXPECT_EQ(r.mem_limit_bytes, 7);
  EXPECT_FALSE(r.exit_code.has_value());
}

TEST_F(DecideStatusTest, EveryStatusIsDecidedFromFactsAlone) {
  ExitFacts timeout = Signaled(SIGTERM);
  timeout.timed_out = true;
  ExitFacts oom = Signaled(SIGKILL);
  oom.oom_kills = 1;
  std::vector<ExitFacts> cases = {timeout, oom, Signaled(SIGABRT), Exited(0, "")};
  for (TestStatus s : AllTestStatuses()) {
    cases.push_back(Exited(0, ChildResult(std::string(TestStatusName(s)))));
  }
  std::set<TestStatus> decided;
  for (const ExitFacts& facts : cases) decided.insert(Decide(facts).status);
  for (TestStatus s : AllTestStatuses()) {
    EXPECT_TRUE(decided.count(s)) << TestStatusName(s);
  }
  EXPECT_EQ(Exited(0, "").wait_status, kExited0);
}

}  // namespace
}  // namespace compatlab
