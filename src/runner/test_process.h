// One test process (ninja's Subprocess): started through a TestLauncher in
// its own process group and memory limit, with its stdout, stderr and result
// pipe read as they become readable, its deadline enforced, and its end
// turned into ExitFacts. Decides nothing: DecideStatus (decide_status.h) does.
#ifndef COMPATLAB_RUNNER_TEST_PROCESS_H_
#define COMPATLAB_RUNNER_TEST_PROCESS_H_

#include <poll.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/records.h"
#include "core/resolved_test.h"
#include "runner/decide_status.h"
#include "runner/guardian.h"
#include "runner/launcher.h"
#include "runner/memlimit.h"

namespace compatlab {

// What a test process runs and with which limits.
struct TestJob {
  std::string run_id;
  TestSpec spec;                      // spec.timeout_s is the deadline
  std::string target_profile_json;    // see LaunchRequest
  std::string compile_options_json;   // see LaunchRequest
  std::string compile_cache_dir;      // see LaunchRequest; the caller owns the directory
  std::string cache_phase;            // see LaunchRequest
  std::string compile_store_dir;      // see LaunchRequest
  std::string compile_entry_out;      // see LaunchRequest; the caller owns the directory
  std::optional<LoadBase> load_base;  // see LaunchRequest
  std::optional<LoadSlo> load_slo;    // see LaunchRequest
  std::string profile;                // see LaunchRequest
  std::string profile_trace_path;     // see LaunchRequest; the caller owns the file
  MeasureOptions measure;
  double grace_s = 2.0;  // SIGTERM to SIGKILL
  int64_t mem_limit_bytes = int64_t{8} << 30;
  int64_t torch_num_threads = 1;
  int64_t compile_threads = 0;  // LaunchRequest::compile_threads
};

// Where a test process starts: the launcher, the limiter and the guardian
// (may be null) are not owned and outlive every process.
struct ProcessContext {
  TestLauncher* launcher = nullptr;
  MemoryLimiter* limiter = nullptr;
  Guardian* guardian = nullptr;
  size_t tail_bytes = 64 * 1024;  // kept per stream
};

class TestProcess {
 public:
  // Starts `job` (which must outlive the process) at monotonic time `now`,
  // its memory limit named `limit_name`. An error means no process was
  // started and nothing is left behind; its message is the launch error.
  static absl::StatusOr<std::unique_ptr<TestProcess>> Start(const TestJob& job,
                                                            const std::string& limit_name,
                                                            double now, const ProcessContext& ctx);
  ~TestProcess();
  TestProcess(const TestProcess&) = delete;
  TestProcess& operator=(const TestProcess&) = delete;

  pid_t pid() const { return pid_; }
  const TestJob& job() const { return *job_; }
  const std::string& started_at() const { return started_at_; }

  // Adds the open output pipes to `fds`, and `this` to `owners` for each.
  void AddPollFds(std::vector<pollfd>* fds, std::vector<TestProcess*>* owners) const;
  // Reads what is available on `fd` (one of the process's pipes).
  void OnReadable(int fd);
  // At `now`: SIGTERM to the group at the deadline, SIGKILL after the grace.
  void CheckDeadline(double now);
  // When CheckDeadline next has something to do.
  double NextDeadline() const { return kill_at_ > 0 ? kill_at_ : deadline_; }
  // SIGKILL to the group and the tasks of its memory limit.
  void Kill();
  // REQUIRES: the process has exited and is not yet reaped (so its pid and
  // group cannot be reused). Kills what is left of its group, reaps it,
  // drains its pipes, forgets its memory limit, and returns the facts.
  ExitFacts Finish(double now);

 private:
  TestProcess(const TestJob& job, const ProcessContext& ctx, double now);
  bool Drain(int i);  // false once stream i is closed

  const TestJob* job_;
  ProcessContext ctx_;
  pid_t pid_ = -1;
  int fds_[3] = {-1, -1, -1};  // stdout, stderr, result (read ends)
  std::string tails_[2];       // stdout, stderr: the last tail_bytes (up to twice that)
  std::string result_text_;
  std::unique_ptr<MemoryLimit> limit_;
  double start_ = 0;
  std::string started_at_;
  double deadline_ = 0;
  double kill_at_ = 0;  // when SIGKILL follows SIGTERM; 0 before the deadline
  bool timed_out_ = false;
  bool killed_ = false;
};

}  // namespace compatlab

#endif  // COMPATLAB_RUNNER_TEST_PROCESS_H_
