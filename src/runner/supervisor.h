// The supervisor: the set of running test processes (ninja's SubprocessSet).
// It owns the one poll loop over their pipes, their deadlines (SIGTERM to the
// group, SIGKILL after the grace delay), the reaping of every child (it is a
// child subreaper) and the interrupting signals (a signalfd). It decides
// nothing: each finished test comes back as ExitFacts, which DecideStatus
// (decide_status.h) turns into a result; what runs next is the caller's
// choice (src/sweep/execute.h).
#ifndef COMPATLAB_RUNNER_SUPERVISOR_H_
#define COMPATLAB_RUNNER_SUPERVISOR_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "runner/decide_status.h"
#include "runner/test_process.h"

namespace compatlab {

struct SupervisorOptions {
  size_t tail_bytes = 64 * 1024;           // kept per stream
  std::string limit_prefix = "compatlab";  // prefix of per-test cgroup names
};

// A test that ended (or never started: facts.launch_error), with when (UTC).
struct FinishedTest {
  const TestJob* job;
  ExitFacts facts;
  std::string started_at;
  std::string finished_at;
};

class Supervisor {
 public:
  // `launcher` and `limiter` are not owned and must outlive the supervisor;
  // `guardian` may be null.
  Supervisor(SupervisorOptions options, TestLauncher* launcher, MemoryLimiter* limiter,
             Guardian* guardian);
  // Ends supervision (see End) if it is still on.
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Makes the calling process a child subreaper and blocks SIGCHLD, SIGINT,
  // SIGTERM and SIGHUP into a signalfd. REQUIRES: a single thread; called
  // before Add.
  absl::Status Begin();
  // Restores the signal mask. REQUIRES: no test running.
  void End();

  // Starts `job`, which must outlive its process. A job that cannot start is
  // finished at once (its facts name the launch error).
  void Add(const TestJob* job);

  // Waits up to `max_wait_s` for output, exits, signals and deadlines, and
  // handles them: finished tests are reaped and queued for TakeFinished. On
  // SIGINT, SIGTERM or SIGHUP every running test is killed and
  // interrupt_signal() is set. Internal when poll fails.
  absl::Status DoWork(double max_wait_s);

  // The tests finished since the last call, in the order they were reaped.
  std::vector<FinishedTest> TakeFinished();

  // SIGKILL to every running test; they finish through DoWork as usual.
  void KillAll();

  size_t running() const { return running_.size(); }
  // Signal that interrupted the run, 0 if none.
  int interrupt_signal() const { return interrupt_signal_; }

 private:
  void ReadSignals();
  void Reap();

  SupervisorOptions options_;
  ProcessContext context_;
  int signal_fd_ = -1;
  int interrupt_signal_ = 0;
  int64_t limit_counter_ = 0;
  std::map<pid_t, std::unique_ptr<TestProcess>> running_;
  std::vector<FinishedTest> finished_;
  struct SavedMask;
  std::unique_ptr<SavedMask> saved_mask_;
};

}  // namespace compatlab

#endif  // COMPATLAB_RUNNER_SUPERVISOR_H_
