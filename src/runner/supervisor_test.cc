#include "runner/supervisor.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runner/fake_launcher.h"

namespace compatlab {
namespace {

TestJob Job(const std::string& kind, double timeout_s = 30) {
  TestJob job;
  job.run_id = "run-" + kind;
  job.spec.model_id = "none";
  job.spec.kind = kind;
  job.spec.timeout_s = timeout_s;
  job.grace_s = 0.3;
  return job;
}

class SupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto limiter = MakeMemoryLimiter("");
    ASSERT_TRUE(limiter.ok()) << limiter.status();
    limiter_ = std::move(*limiter);
  }

  // Runs every job at once to its end; the results in job order.
  std::vector<RunResult> RunAll(const std::vector<TestJob>& jobs, SupervisorOptions options = {}) {
    Supervisor supervisor(options, &launcher_, limiter_.get(), nullptr);
    EXPECT_TRUE(supervisor.Begin().ok());
    for (const TestJob& job : jobs) supervisor.Add(&job);
    std::vector<RunResult> results(jobs.size());
    size_t finished = 0;
    while (finished < jobs.size()) {
      absl::Status s = supervisor.DoWork(1.0);
      EXPECT_TRUE(s.ok()) << s;
      for (const FinishedTest& f : supervisor.TakeFinished()) {
        results[static_cast<size_t>(f.job - jobs.data())] = DecideStatus(f.facts);
        ++finished;
      }
    }
    supervisor.End();
    return results;
  }

  FakeLauncher launcher_;
  std::unique_ptr<MemoryLimiter> limiter_;
};

TEST_F(SupervisorTest, TakesStatusAndMetricsFromChildResult) {
  std::vector<RunResult> r = RunAll({Job("noop"), Job("fail")});
  EXPECT_EQ(r[0].status, TestStatus::kPass);
  ASSERT_TRUE(r[0].build_s.has_value());
  EXPECT_DOUBLE_EQ(*r[0].build_s, 0.5);
  EXPECT_EQ(r[0].exit_code, 0);
  EXPECT_EQ(r[1].status, TestStatus::kFailToRun);
  EXPECT_EQ(r[1].error_message, "boom");
  EXPECT_EQ(r[1].stage, "run");
}

TEST_F(SupervisorTest, KillsProcessGroupOnTimeout) {
  std::vector<RunResult> r = RunAll({Job("hang", 0.3), Job("hang-hard", 0.3)});
  EXPECT_EQ(r[0].status, TestStatus::kTimeout);
  EXPECT_EQ(r[0].term_signal, SIGTERM);
  EXPECT_EQ(r[1].status, TestStatus::kTimeout);
  EXPECT_EQ(r[1].term_signal, SIGKILL);  // ignored SIGTERM, killed after the grace delay
  // The grandchild that held the output pipes is gone too.
  size_t at = r[1].stdout_tail.find("grandchild ");
  ASSERT_NE(at, std::string::npos) << r[1].stdout_tail;
  pid_t grandchild = std::stoi(r[1].stdout_tail.substr(at + 11));
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    waitpid(grandchild, nullptr, WNOHANG);  // we are its subreaper
    gone = kill(grandchild, 0) != 0;
    if (!gone) usleep(10000);
  }
  EXPECT_TRUE(gone) << "grandchild " << grandchild << " survived";
}

TEST_F(SupervisorTest, RecordsCrashWithSignalName) {
  std::vector<RunResult> r = RunAll({Job("segfault"), Job("abort")});
  EXPECT_EQ(r[0].status, TestStatus::kCrash);
  EXPECT_EQ(r[0].status_detail, "SIGSEGV");
  EXPECT_EQ(r[1].status, TestStatus::kCrash);
  EXPECT_EQ(r[1].status_detail, "SIGABRT");
}

TEST_F(SupervisorTest, RecordsOomFromTheLimitsOwnCounter) {
  TestJob job = Job("oom");
  job.mem_limit_bytes = 256 << 20;
  std::vector<RunResult> r = RunAll({job});
  EXPECT_EQ(r[0].status, TestStatus::kOom) << r[0].error_message;
  EXPECT_EQ(r[0].mem_limit_method, limiter_->Method());
  EXPECT_EQ(r[0].mem_limit_bytes, 256 << 20);
}

TEST_F(SupervisorTest, KeepsOnlyTheTailOfFloodedOutput) {
  TestJob job = Job("flood");
  job.spec.kind_params["bytes"] = std::to_string(8 << 20);
  SupervisorOptions options;
  options.tail_bytes = 4096;
  std::vector<RunResult> r = RunAll({job}, options);
  EXPECT_EQ(r[0].status, TestStatus::kPass);
  EXPECT_EQ(r[0].stdout_tail.size(), 4096u);
  EXPECT_TRUE(r[0].stdout_tail.ends_with("END-OF-FLOOD"));
  EXPECT_EQ(r[0].stderr_tail.size(), 4096u);
}

TEST_F(SupervisorTest, MissingOrBadResultIsHarnessError) {
  std::vector<RunResult> r = RunAll({Job("exit3"), Job("bad-result")});
  EXPECT_EQ(r[0].status, TestStatus::kHarnessError);
  EXPECT_EQ(r[0].exit_code, 3);
  EXPECT_EQ(r[0].error_type, "NoResult");
  EXPECT_EQ(r[1].status, TestStatus::kHarnessError);
  EXPECT_EQ(r[1].error_type, "BadResult");
}

TEST_F(SupervisorTest, InterruptingSignalKillsEveryRunningTest) {
  Supervisor supervisor({}, &launcher_, limiter_.get(), nullptr);
  ASSERT_TRUE(supervisor.Begin().ok());
  std::vector<TestJob> jobs = {Job("hang", 60), Job("hang-hard", 60)};
  for (const TestJob& job : jobs) supervisor.Add(&job);
  ASSERT_TRUE(supervisor.DoWork(0.1).ok());
  EXPECT_EQ(supervisor.running(), 2u);
  kill(getpid(), SIGTERM);  // blocked: it arrives through the signalfd
  std::vector<FinishedTest> finished;
  for (int i = 0; i < 100 && finished.size() < 2; ++i) {
    ASSERT_TRUE(supervisor.DoWork(0.1).ok());
    for (FinishedTest& f : supervisor.TakeFinished()) finished.push_back(std::move(f));
  }
  EXPECT_EQ(supervisor.interrupt_signal(), SIGTERM);
  ASSERT_EQ(finished.size(), 2u);  // killed at once, before any deadline
  for (const FinishedTest& f : finished) {
    EXPECT_FALSE(f.facts.timed_out);
    EXPECT_TRUE(WIFSIGNALED(f.facts.wait_status));
    EXPECT_EQ(WTERMSIG(f.facts.wait_status), SIGKILL);
  }
  supervisor.End();
}

TEST(SignalNameTest, NamesCommonSignals) {
  EXPECT_EQ(SignalName(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(SignalName(SIGKILL), "SIGKILL");
}

}  // namespace
}  // namespace compatlab
