#include "runner/test_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "runner/fake_launcher.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;

// Where a supervisor can die while it owns a test's cgroup.
enum class DieAt { kNever, kJustAfterCreatingTheCgroup, kWhileFinishing };

// A real limit whose OomKills (read by Finish while the cgroup still exists)
// can kill the calling process.
class DyingLimit : public MemoryLimit {
 public:
  DyingLimit(std::unique_ptr<MemoryLimit> real, bool die) : real_(std::move(real)), die_(die) {}
  std::string Method() const override { return real_->Method(); }
  int64_t Bytes() const override { return real_->Bytes(); }
  std::string ProcsPath() const override { return real_->ProcsPath(); }
  std::string Dir() const override { return real_->Dir(); }
  int64_t OomKills() const override {
    if (die_) raise(SIGKILL);
    return real_->OomKills();
  }
  std::optional<int64_t> PeakBytes() const override { return real_->PeakBytes(); }
  void KillAll() override { real_->KillAll(); }

 private:
  std::unique_ptr<MemoryLimit> real_;
  bool die_;
};

// The machine's limiter, killing the calling process at `die_at`.
class DyingLimiter : public MemoryLimiter {
 public:
  DyingLimiter(MemoryLimiter* real, DieAt die_at) : real_(real), die_at_(die_at) {}
  std::string Method() const override { return real_->Method(); }
  std::string DirFor(const std::string& name) const override { return real_->DirFor(name); }
  absl::StatusOr<std::unique_ptr<MemoryLimit>> Create(const std::string& name,
                                                      int64_t bytes) override {
    auto limit = real_->Create(name, bytes);
    if (!limit.ok()) return limit;
    if (die_at_ == DieAt::kJustAfterCreatingTheCgroup) raise(SIGKILL);
    return std::make_unique<DyingLimit>(std::move(*limit), die_at_ == DieAt::kWhileFinishing);
  }

 private:
  MemoryLimiter* real_;
  DieAt die_at_;
};

class TestProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto limiter = MakeMemoryLimiter("");
    ASSERT_TRUE(limiter.ok()) << limiter.status();
    limiter_ = std::move(*limiter);
    if (limiter_->DirFor("x").empty()) GTEST_SKIP() << "no writable memory cgroup here";
  }

  // Forks a "supervisor" with a guardian that runs one noop test and dies at
  // `die_at`; returns the test's cgroup directory once the supervisor is dead.
  std::string RunSupervisorThatDies(DieAt die_at) {
    const std::string name = "compatlab-test-process-test-" + std::to_string(getpid());
    const std::string dir = limiter_->DirFor(name);
    pid_t supervisor = fork();
    if (supervisor == 0) {
      auto guardian = Guardian::Start();
      if (!guardian.ok()) _exit(1);
      FakeLauncher launcher;
      DyingLimiter limiter(limiter_.get(), die_at);
      TestJob job;
      job.run_id = "run-noop";
      job.spec.model_id = "none";
      job.spec.kind = "noop";
      job.spec.timeout_s = 30;
      ProcessContext ctx{&launcher, &limiter, &*guardian};
      auto p = TestProcess::Start(job, name, 0, ctx);
      if (!p.ok()) _exit(2);
      siginfo_t info;
      if (waitid(P_PID, (*p)->pid(), &info, WEXITED | WNOWAIT) != 0) _exit(3);
      (*p)->Finish(1);
      _exit(0);
    }
    int status = 0;
    waitpid(supervisor, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "the supervisor did not die where it was meant to (status " << status << ")";
    return dir;
  }

  static bool GoneWithin(const std::string& dir, double seconds) {
    for (int i = 0; i < static_cast<int>(seconds * 100); ++i) {
      if (!fs::exists(dir)) return true;
      usleep(10000);
    }
    return false;
  }

  std::unique_ptr<MemoryLimiter> limiter_;
};

TEST_F(TestProcessTest, GuardianRemovesCgroupOfSupervisorKilledRightAfterCreatingIt) {
  std::string dir = RunSupervisorThatDies(DieAt::kJustAfterCreatingTheCgroup);
  EXPECT_TRUE(GoneWithin(dir, 5)) << dir << " outlived its supervisor";
  rmdir(dir.c_str());
}

TEST_F(TestProcessTest, GuardianRemovesCgroupOfSupervisorKilledWhileFinishingTheTest) {
  std::string dir = RunSupervisorThatDies(DieAt::kWhileFinishing);
  EXPECT_TRUE(GoneWithin(dir, 5)) << dir << " outlived its supervisor";
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace compatlab
