#include "runner/supervisor.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
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
  return job;
}

class SupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto limiter = MakeMemoryLimiter("");
    ASSERT_TRUE(limiter.ok()) << limiter.status();
    limiter_ = std::move(*limiter);
  }

  std::vector<RunResult> RunAll(const std::vector<TestJob>& jobs, SupervisorOptions options = {}) {
    options.grace_s = 0.3;
    Supervisor supervisor(options, &launcher_, limiter_.get(), nullptr);
    std::vector<RunResult> results(jobs.size());
    SupervisorCallbacks callbacks;
    callbacks.on_result = [&](const TestOutcome& o) {
      results[static_cast<size_t>(o.job - jobs.data())] = o.result;
      return absl::OkStatus();
    };
    absl::Status s = supervisor.Run(jobs, callbacks);
    EXPECT_TRUE(s.ok()) << s;
    return results;
  }

  FakeLauncher launcher_;
  std::unique_ptr<MemoryLimiter> limiter_;
};

TestJob CompiledJob(const std::string& run_id) {
  TestJob job = Job("compile-cache");
  job.run_id = run_id;
  job.spec.mode = "compile";
  return job;
}

TEST_F(SupervisorTest, WarmRerunSharesTheColdCacheDirectoryAndIsFoldedIntoOneResult) {
  const std::filesystem::path root =
      std::filesystem::path(::testing::TempDir()) / ("cache-" + std::to_string(getpid()));
  SupervisorOptions options;
  options.compile_cache_root = root.string();
  options.warm = true;
  options.jobs = 2;
  std::vector<TestJob> jobs = {CompiledJob("a"), CompiledJob("b"), Job("noop")};
  std::vector<RunResult> r = RunAll(jobs, options);
  for (int i : {0, 1}) {
    SCOPED_TRACE(i);
    EXPECT_EQ(r[i].status, TestStatus::kPass);
    EXPECT_DOUBLE_EQ(r[i].prepare_s.value_or(-1), 5.0);  // the cold run's
    EXPECT_EQ(r[i].cache_hits.value_or(-1), 0);
    EXPECT_DOUBLE_EQ(r[i].warm_prepare_s.value_or(-1), 1.0);
    EXPECT_EQ(r[i].warm_cache_hits.value_or(-1), 2);
    EXPECT_EQ(r[i].warm_state, "warm");
  }
  EXPECT_EQ(r[2].warm_state, "");  // eager tests have no warm rerun
  EXPECT_FALSE(std::filesystem::exists(root / "a"));
  EXPECT_FALSE(std::filesystem::exists(root / "b"));

  options.warm = false;
  r = RunAll({CompiledJob("c")}, options);
  EXPECT_EQ(r[0].status, TestStatus::kPass);  // it had a cache directory
  EXPECT_EQ(r[0].warm_state, "");
  EXPECT_FALSE(std::filesystem::exists(root / "c"));
  std::filesystem::remove_all(root);
}

TEST(MergeWarmResultTest, NamesWarmRunsWithoutHitsAndFailedOnes) {
  RunResult cold;
  RunResult warm;
  warm.status = TestStatus::kPass;
  warm.prepare_s = 3;
  warm.cache_hits = 0;
  MergeWarmResult(warm, &cold);
  EXPECT_EQ(cold.warm_state, "no_cache_hits");
  EXPECT_DOUBLE_EQ(*cold.warm_prepare_s, 3);
  warm.status = TestStatus::kFailToCompile;
  warm.error_message = "backend refused";
  MergeWarmResult(warm, &cold);
  EXPECT_EQ(cold.warm_state, "failed: fail_to_compile (backend refused)");
}

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
  SupervisorOptions options;
  options.mem_limit_bytes = 256 << 20;
  std::vector<RunResult> r = RunAll({Job("oom")}, options);
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

TEST_F(SupervisorTest, RunsUpToJobsTestsAtOnce) {
  SupervisorOptions options;
  options.jobs = 3;
  options.grace_s = 0.1;
  Supervisor supervisor(options, &launcher_, limiter_.get(), nullptr);
  std::vector<TestJob> jobs;
  for (int i = 0; i < 7; ++i) jobs.push_back(Job("hang", 0.2));
  int active = 0, peak = 0, done = 0;
  SupervisorCallbacks callbacks;
  callbacks.on_start = [&](const TestJob&) { peak = std::max(peak, ++active); };
  callbacks.on_result = [&](const TestOutcome&) {
    --active;
    ++done;
    return absl::OkStatus();
  };
  ASSERT_TRUE(supervisor.Run(jobs, callbacks).ok());
  EXPECT_EQ(done, 7);
  EXPECT_EQ(peak, 3);
}

TEST_F(SupervisorTest, StoreFailureStopsTheRunAndKillsRunningTests) {
  SupervisorOptions options;
  options.jobs = 2;
  Supervisor supervisor(options, &launcher_, limiter_.get(), nullptr);
  std::vector<TestJob> jobs = {Job("noop"), Job("hang", 60), Job("noop"), Job("noop")};
  int reported = 0;
  SupervisorCallbacks callbacks;
  callbacks.on_result = [&](const TestOutcome&) {
    ++reported;
    return absl::DataLossError("disk full");
  };
  absl::Status s = supervisor.Run(jobs, callbacks);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(reported, 1);
  EXPECT_LE(launcher_.launches(), 3);
}

TEST(SignalNameTest, NamesCommonSignals) {
  EXPECT_EQ(SignalName(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(SignalName(SIGKILL), "SIGKILL");
}

}  // namespace
}  // namespace compatlab
