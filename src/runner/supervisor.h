// The supervisor: runs tests as separate process groups, at most `jobs` at a
// time, in one poll loop (ninja's style). It owns every deadline (SIGTERM to
// the group, SIGKILL after a grace delay), every memory limit, every wait
// status, and keeps the tail of each test's output. Statuses are decided from
// facts (see doc/worker-protocol.md, "How the supervisor decides").
#ifndef COMPATLAB_RUNNER_SUPERVISOR_H_
#define COMPATLAB_RUNNER_SUPERVISOR_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/records.h"
#include "runner/guardian.h"
#include "runner/launcher.h"
#include "runner/memlimit.h"

namespace compatlab {

struct SupervisorOptions {
  int jobs = 1;
  double grace_s = 2.0;  // SIGTERM to SIGKILL
  int64_t mem_limit_bytes = int64_t{8} << 30;
  int64_t torch_num_threads = 1;  // per child
  MeasureOptions measure;
  size_t tail_bytes = 64 * 1024;           // kept per stream
  std::string limit_prefix = "compatlab";  // prefix of per-test cgroup names
  // Compile mode: each test gets the empty directory <root>/<run_id> as its
  // compile cache (cold), removed when the test is reported. "" = no cache
  // directories (torch's defaults).
  std::string compile_cache_root;
  // Compile mode: after a cold run that compiled (pass or fail_accuracy), run
  // the test again in a new process on the same cache directory and record
  // the warm figures (warm_*) in the cold run's result.
  bool warm = false;
};

struct TestJob {
  std::string run_id;
  TestSpec spec;
  std::string target_profile_json;   // see LaunchRequest
  std::string compile_options_json;  // see LaunchRequest
};

// Folds the warm rerun's result into the cold run's: warm_prepare_s,
// warm_cache_hits/misses and warm_state (warm when the rerun passed with
// cache hits, no_cache_hits when it had none, "failed: STATUS" otherwise).
void MergeWarmResult(const RunResult& warm, RunResult* cold);

// A finished test: the job, what happened, and when (UTC).
struct TestOutcome {
  const TestJob* job;
  RunResult result;
  std::string started_at;
  std::string finished_at;
};

struct SupervisorCallbacks {
  std::function<void(const TestJob&)> on_start;
  // Called once per finished test, in the loop's thread, before the next
  // test starts in its slot. A non-OK status stops the run (e.g. the store
  // cannot be written): running tests are killed and Run returns it.
  std::function<absl::Status(const TestOutcome&)> on_result;
  // Called about once a second while tests run.
  std::function<void()> on_tick;
};

class Supervisor {
 public:
  // `launcher` and `limiter` are not owned and must outlive the supervisor;
  // `guardian` may be null.
  Supervisor(SupervisorOptions options, TestLauncher* launcher, MemoryLimiter* limiter,
             Guardian* guardian);

  // Runs every job. Makes the calling process a child subreaper and blocks
  // SIGCHLD, SIGINT, SIGTERM and SIGHUP while it runs. REQUIRES: a single
  // thread. On SIGINT/SIGTERM/SIGHUP it kills the running tests, reports
  // none of them, and returns Cancelled; the jobs not reported are the ones
  // a resume must run again.
  absl::Status Run(const std::vector<TestJob>& jobs, const SupervisorCallbacks& callbacks);

  // Signal that ended the last Run, 0 if none.
  int interrupt_signal() const { return interrupt_signal_; }

 private:
  struct Running;
  SupervisorOptions options_;
  TestLauncher* launcher_;
  MemoryLimiter* limiter_;
  Guardian* guardian_;
  int interrupt_signal_ = 0;
  int64_t limit_counter_ = 0;
};

// "SIGSEGV" for 11, "SIG42" for an unnamed one.
std::string SignalName(int sig);

}  // namespace compatlab

#endif  // COMPATLAB_RUNNER_SUPERVISOR_H_
